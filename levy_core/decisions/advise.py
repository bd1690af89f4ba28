"""Measure next: which measurement would narrow the calibrated band of the targets most.

For one series, a set of **target queries** (by default every channel the series has
observed, on a regular grid over the next ``horizon`` hours) and a set of **candidate
measurements** (a channel at a time from "now", the series' last observation, on), this
module predicts the calibrated band width the targets would have if that measurement were
taken, and splits the narrowing into two parts:

* **Evidence (exact, value-free).** In [`LevyModel`][levy_core.model.levy_model.LevyModel] an observation's
  intensity at a query, ``λ_i(q) = w_i e^{κ_h(cos(P c_q, P c_i) − 1)} e^{−(t_q − t_i)²/(2ℓ_h²)}``,
  is built from its channel code ``c_i`` (``Backbone.index_channel``), its time ``t_i`` and
  the padding mask (``LevyModel.operator``: ``q``, ``k``, ``key_weight`` and ``decay``); the
  prior's mass ``Λ_0`` is a per-(head, query channel) table. No value enters ``Λ_h(q)``, so
  the evidence with the candidate added, ``Λ'_h(q)``, is known exactly before the value is.
  The evidence part is the band with ``Λ'`` and today's disagreement,
  ``σ_ev(q)² = Σ_h trΣ_h(q) φ(Λ'_h(q))`` (times the lead factor ``s(h)`` of a fit on rolling
  origins at the new lead, also value-free).
* **Value (an expectation).** The values enter the disagreement ``trΣ_h`` (the atoms'
  values, the channel tokens, the query's read-out, the prior's variance), the mean, and
  the deterministic offset ``b(q)`` — the last value of the channel, or on rolling origins
  the classical forecaster of [`levy_core.offsets.base_forecast`][levy_core.offsets.base_forecast] refitted to the past with the
  new observation in it. That part is an expectation over the candidate's own calibrated
  predictive ``N(ŷ, (c·spread)²)`` at its time: ``draws`` values per candidate (antithetic
  pairs from a seeded generator), **all candidates × draws in one batched model pass**.
  It also holds what moves the disagreement whatever the value: a candidate ahead of now
  moves the encoder's "now" (the observations' lags, the queries' horizon features).
  In short: evidence part = the band with ``Λ'`` and today's ``trΣ``; value (disagreement)
  part = the rest of the expected change.

Widths are those of the calibrated split-conformal band at ``level`` (the scaled-Gaussian
band where a channel's conformal quantile is infinite), in the data's units; a channel's
narrowing is ``1 − E[mean width after] / mean width before`` over its target grid, and the
evidence and value parts add up to it.

A candidate ahead of now moves "now": on rolling origins the forecast origin moves to it
(the context window ``[o' − history, o']``, the leads and the offset follow, as a forecast
past the end of the data with the measurement appended would) and the targets before it keep
today's band (a forecast issued at ``o'`` does not reach back before it); otherwise the
measurement joins the series' context, and the model's time decay, symmetric in time, lets
it inform targets on both sides of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from levy_core.data import Observations, duration_text, say_duration
from levy_core.decisions.advise_bands import band_extent, evidence_spread, original_values
from levy_core.decisions.advise_inputs import (
    Candidate,
    advice_horizon,
    advised_series,
    candidate_pairs,
    normal_draws,
    target_channels,
)
from levy_core.decisions.advise_scenarios import (
    AdvisedSeries,
    PassOutput,
    collate,
    lead_factor,
    run_pass,
    scenario,
)
from levy_core.decisions.defaults import DEFAULT_DRAWS, DEFAULT_POINTS
from levy_core.operator.phi import log_phi
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.prepared import ModelData, as_model_data
from levy_core.runtime.budget import check_budget

__all__ = ["Advice", "advise"]


@dataclass(frozen=True)
class Advice:
    """What each candidate measurement would do to the targets' band (one series).

    Times are in the data's hours (the clock of ``Observations.frame``); widths and values in
    the data's units. ``J`` candidates, ``M`` target queries, ``H`` heads, ``D`` draws.

    Attributes
    ----------
    series_id : str
    now : float
        The series' last observation (hours).
    horizon : float
        Hours after ``now`` the targets span.
    level : float
        The band's nominal coverage.
    targets : tuple of str
        The target channels.
    candidates : pandas.DataFrame
        One row per candidate: ``channel, ahead`` (hours after now), ``time``,
        ``value_mean, value_std`` (its calibrated predictive, data units).
    target_time, target_channel : ndarray, shape (M,)
    mean_before, width_before : ndarray, shape (M,)
        Today's forecast and calibrated band width at the targets.
    mean_after, width_after : ndarray, shape (J, M)
        Expected (over the draws) forecast and width with the candidate taken.
    width_evidence : ndarray, shape (J, M)
        The width with the candidate's evidence alone (value-free, exact).
    log_evidence_before : ndarray, shape (H, M)
        ``log Λ_h`` at the targets today (data and prior).
    log_evidence_after : ndarray, shape (J, H, M)
        ``log Λ'_h`` with the candidate added (the same for every draw).
    draws : ndarray, shape (J, D)
        The candidate values the expectation ran over (data units).
    below_before, below_after : ndarray, shape (M,) and (J, M), optional
        How far the band reaches below the forecast (data units): half its width, except on
        a log / log1p channel, whose band is asymmetric (None: half the width).
    """

    series_id: str
    now: float
    horizon: float
    level: float
    targets: tuple[str, ...]
    candidates: pd.DataFrame
    target_time: np.ndarray
    target_channel: np.ndarray
    mean_before: np.ndarray
    width_before: np.ndarray
    mean_after: np.ndarray
    width_after: np.ndarray
    width_evidence: np.ndarray
    log_evidence_before: np.ndarray
    log_evidence_after: np.ndarray
    draws: np.ndarray
    below_before: np.ndarray | None = None
    below_after: np.ndarray | None = None

    def per_target(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Narrowing per (candidate, target channel) in percent: total, evidence part and
        value part, each (J, T) with ``T = len(targets)``; total = evidence + value."""
        before, after, evidence = [], [], []
        for name in self.targets:
            cols = self.target_channel == name
            before.append(self.width_before[cols].mean())
            after.append(self.width_after[:, cols].mean(axis=1))
            evidence.append(self.width_evidence[:, cols].mean(axis=1))
        w0 = np.asarray(before)[None, :]
        total = 100.0 * (1.0 - np.stack(after, axis=1) / w0)
        ev = 100.0 * (1.0 - np.stack(evidence, axis=1) / w0)
        return total, ev, total - ev

    def ranking(self) -> pd.DataFrame:
        """One row per candidate, best first: ``rank, channel, ahead, time, narrowing_pct``
        (mean over the target channels), ``evidence_pct, value_pct`` (its two parts) and
        ``value_mean, value_std``."""
        total, ev, val = self.per_target()
        out = self.candidates.copy()
        out["narrowing_pct"], out["evidence_pct"], out["value_pct"] = total.mean(1), ev.mean(1), val.mean(1)
        out = out.sort_values(["narrowing_pct", "ahead", "channel"], ascending=[False, True, True], kind="stable")
        out.insert(0, "rank", np.arange(1, len(out) + 1))
        return out.reset_index(names="candidate")

    def to_frame(self) -> pd.DataFrame:
        """One row per (candidate, target channel), candidates best first: ``rank, series_id,
        channel, ahead, time, target, width_before, width_after, narrowing_pct, evidence_pct,
        value_pct, score_pct`` (the candidate's mean narrowing over the targets)."""
        total, ev, val = self.per_target()
        rows = []
        for _, r in self.ranking().iterrows():
            j = int(r["candidate"])
            for t, name in enumerate(self.targets):
                cols = self.target_channel == name
                rows.append({"rank": int(r["rank"]), "series_id": self.series_id, "channel": r["channel"],
                             "ahead": r["ahead"], "time": r["time"], "target": name,
                             "width_before": float(self.width_before[cols].mean()),
                             "width_after": float(self.width_after[j, cols].mean()),
                             "narrowing_pct": float(total[j, t]), "evidence_pct": float(ev[j, t]),
                             "value_pct": float(val[j, t]), "score_pct": float(r["narrowing_pct"])})
        return pd.DataFrame(rows)

    def sentences(self, top: int = 3, targets: int = 4, clock: str | None = None) -> list[str]:
        """Plain words for the ``top`` candidates, e.g. "measuring K now would narrow the
        next 24h band of K by 38 %, of Lactate by 4 %" (the ``targets`` most narrowed
        target channels by name, the others summed up); ``clock``: the data's
        (``RecordedReading.clock``), durations said in it ("next 30 days"; None: "36h")."""
        def say(hours: float) -> str:
            return duration_text(hours, " ") if clock is None else say_duration(hours, clock)

        total, _, _ = self.per_target()
        out = []
        for _, r in self.ranking().head(top).iterrows():
            j = int(r["candidate"])
            when = "now" if r["ahead"] <= 0 else f"in {say(r['ahead'])}"
            order = np.argsort(-total[j], kind="stable")
            parts = [f"of {self.targets[t]} by {int(round(total[j, t]))} %" for t in order[:targets]]
            if len(order) > targets:
                rest = total[j, order[targets:]]
                parts.append(f"of the {len(rest)} other targets by {int(round(rest.min()))} to "
                             f"{int(round(rest.max()))} %")
            out.append(f"measuring {r['channel']} {when} would narrow the next {say(self.horizon)} "
                       f"band " + ", ".join(parts))
        return out

    def band(self, candidate: int | None = None) -> pd.DataFrame:
        """The targets' band today (``candidate=None``) or as it would be with candidate
        ``candidate`` (an index into `candidates`, expected over its draws): columns
        ``channel, time, mean, lower, upper``, data units."""
        if candidate is None:
            mean, width = self.mean_before, self.width_before
        else:
            if not 0 <= candidate < len(self.candidates):
                raise ValueError(f"candidate must be an index in [0, {len(self.candidates)}), got {candidate}")
            mean, width = self.mean_after[candidate], self.width_after[candidate]
        below = self.below_before if candidate is None else (
            None if self.below_after is None else self.below_after[candidate])
        lower = mean - (width / 2 if below is None else below)
        return pd.DataFrame({"channel": self.target_channel, "time": self.target_time, "mean": mean,
                             "lower": lower, "upper": lower + width})


def advise(fitted: FittedModel, data: Observations | ModelData, series_id: str | None = None, *,
           targets: Sequence[str] | None = None, candidates: Sequence[Candidate] | None = None,
           horizon: float | None = None, at: Sequence[float] | None = None, points: int = DEFAULT_POINTS,
           draws: int = DEFAULT_DRAWS, seed: int = 0, level: float = 0.9,
           values: Sequence[float] | None = None) -> Advice:
    """Which measurement would narrow the targets' calibrated band most.

    Parameters
    ----------
    fitted : FittedModel
    data : Observations or ModelData
        The observations; advice is for one series of them, from its last observation on.
    series_id : str, optional
        The series (the data's id); may be left out when the data hold one series.
    targets : sequence of str, optional
        Target channels (default: every channel the series has observed); each is queried
        at ``points`` regular times over ``(now, now + horizon]``.
    candidates : sequence of str or (str, float), optional
        Channels to consider measuring, each at every time of ``at``; or explicit
        ``(channel, hours after now)`` pairs. Default: every channel the model knows.
    horizon : float, optional
        Hours after now the targets span (default: the fit's horizon, else 24).
    at : sequence of float, optional
        Hours after now at which a named channel could be measured (0 = now; default: now,
        about an eighth and a quarter of the horizon ahead, to one significant figure). Each in
        ``[0, horizon]``.
    points : int
        Target grid points per channel (≥ 1).
    draws : int
        Values per candidate the value part averages over (≥ 1; pairs are antithetic).
    seed : int
        Seeds the draws: the same seed gives the same advice.
    level : float
        The band's coverage in (0, 1).
    values : sequence of float, optional
        One value per candidate (data units) to use instead of draws: "what if it reads
        this" (and what a real measurement, once known, did).

    Returns
    -------
    Advice

    Raises
    ------
    DataError
        An unknown series or channel, a candidate before now or past the horizon.
    ValueError
        An empty target or candidate set, or ``points``/``draws``/``level``/``values`` out of range.
    """
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise ValueError(f"points must be a whole number ≥ 1, got {points!r}")
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be a whole number ≥ 1, got {draws!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    data = as_model_data(fitted, data)
    series = advised_series(fitted, data, series_id)
    horizon = advice_horizon(fitted, horizon)
    target_names = target_channels(fitted, series, targets)
    pairs = candidate_pairs(fitted, series, candidates, at, horizon)
    n_draws = draws if values is None else 1
    if values is not None and len(values) != len(pairs):
        raise ValueError(f"values must hold one value per candidate ({len(pairs)}), got {len(values)}")
    check_budget("advise", {"target points": points * len(target_names), "draws": n_draws,
                            "candidate measurements": len(pairs)},
                 "give fewer --points, --draws, --at times or --candidates/--targets (draws= and points= in Python)")
    index = {c: i for i, c in enumerate(fitted.channels)}
    steps = np.linspace(0.0, horizon, points + 1)[1:]
    t_codes = np.repeat(np.array([index[c] for c in target_names], np.int64), points)
    t_time = np.tile(series.now + steps, len(target_names))  # model hours
    c_codes = np.array([index[c] for c, _ in pairs], np.int64)
    c_ahead = np.array([a for _, a in pairs], np.float64)
    m = len(t_time)

    # today: the targets and the candidates' own predictive, one pass
    base_q_time = np.concatenate([t_time, series.now + c_ahead])
    base_q_code = np.concatenate([t_codes, c_codes])
    row0 = scenario(fitted, series, base_q_time, base_q_code, ahead=0.0, extra=None, cache={})
    out0 = run_pass(fitted, collate([row0]))
    c_mean, c_std, v_norm = _candidate_values(fitted, out0, m, c_codes, n_draws, seed, values, series.model_id)
    return _assess(fitted, series, horizon, level, target_names, t_time, t_codes, c_codes, c_ahead, out0,
                   c_mean, c_std, v_norm)


def _candidate_values(fitted: FittedModel, out0: PassOutput, m: int, c_codes: np.ndarray, n_draws: int, seed: int,
                      values: Sequence[float] | None, series_id: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each candidate's calibrated predictive (mean, std; normalised, (J,)) from today's
    pass (its queries after the ``m`` targets), and the values to try, (J, D) normalised:
    antithetic draws from it, or the given ``values`` (data units)."""
    c_names = np.array(fitted.channels, dtype=object)[c_codes]
    c_mean = out0.mean[0, m:]
    c_std = fitted.calibration_for(series_id).predict_std(out0.spread[0, m:], c_names)
    if values is None:
        return c_mean, c_std, c_mean[:, None] + c_std[:, None] * normal_draws(len(c_codes), n_draws, seed)
    v = np.asarray(values, np.float64)
    if not np.isfinite(v).all():
        raise ValueError("values must be finite numbers (one per candidate)")
    v_norm = fitted.scaler.normalise(v, c_names)  # the channel's transform, then min-max
    if not np.isfinite(v_norm).all():
        i = int(np.flatnonzero(~np.isfinite(v_norm))[0])
        raise ValueError(f"value {v[i]:g} of {c_names[i]!r} is outside what its {fitted.scaler.transform_of(c_names[i])} "
                         "transform takes (log: > 0, log1p: ≥ 0); give a value the channel can take")
    return c_mean, c_std, v_norm[:, None]


def _assess(fitted: FittedModel, series: AdvisedSeries, horizon: float, level: float, target_names: list[str],
            t_time: np.ndarray, t_codes: np.ndarray, c_codes: np.ndarray, c_ahead: np.ndarray, out0: PassOutput,
            c_mean: np.ndarray, c_std: np.ndarray, v_norm: np.ndarray) -> Advice:
    """Every candidate × value in one batched pass; the widths, the evidence part, the Advice."""
    m, (J, n_draws) = len(t_time), v_norm.shape
    offsets: dict = {}
    rows = [scenario(fitted, series, t_time, t_codes, ahead=float(c_ahead[j]),
                 extra=(int(c_codes[j]), float(v_norm[j, d])), cache=offsets)
            for j in range(J) for d in range(n_draws)]
    out1 = run_pass(fitted, collate(rows))
    H = out0.log_evidence.shape[1]
    names_all = np.array(fitted.channels, dtype=object)
    t_names, c_names = names_all[t_codes], names_all[c_codes]
    sid = series.model_id
    width0, below0 = band_extent(fitted, out0.spread[0, :m], t_names, level, out0.mean[0, :m], sid)
    spread1 = out1.spread[:, :m].reshape(J, n_draws, m)
    width1, below1 = (x.reshape(J, n_draws, m) for x in band_extent(
        fitted, spread1.reshape(-1), np.tile(t_names, J * n_draws), level, out1.mean[:, :m].reshape(-1), sid))
    log_ev1 = out1.log_evidence[:, :, :m].reshape(J, n_draws, H, m)[:, 0]  # value-free: any draw
    # the evidence part: today's disagreement under tomorrow's evidence (and lead factor)
    phi1 = torch.exp(log_phi(torch.from_numpy(log_ev1), fitted.model_config.phi)).numpy()
    sigma_ev = np.sqrt((out0.disagreement[0, :, :m][None] * phi1).sum(axis=1))  # (J, M)
    lead1 = np.stack([r.q_time[:m] for r in rows[::n_draws]])  # (J, M) model time of each scenario
    sigma_ev = evidence_spread(fitted, sigma_ev, lead_factor(fitted, lead1), out0, out1, t_codes, m, n_draws)
    width_ev = band_extent(fitted, sigma_ev.reshape(-1), np.tile(t_names, J), level,
                           np.tile(out0.mean[0, :m], J), sid)[0].reshape(J, m)  # at today's mean: the evidence alone
    mean1 = out1.mean[:, :m].reshape(J, n_draws, m).mean(axis=1)
    if series.history is not None:  # rolling origins: a target before the measurement is past its forecast origin
        past = t_time[None, :] < series.now + c_ahead[:, None]  # (J, M): today's forecast stands there
        width1 = np.where(past[:, None, :], width0[None, None, :], width1)
        below1 = np.where(past[:, None, :], below0[None, None, :], below1)
        width_ev = np.where(past, width0[None, :], width_ev)
        mean1 = np.where(past, out0.mean[0, :m][None, :], mean1)
        log_ev1 = np.where(past[:, None, :], out0.log_evidence[0, :, :m][None], log_ev1)

    def original(x: np.ndarray) -> np.ndarray:
        flat = np.broadcast_to(t_names, x.shape).reshape(-1)
        return fitted.scaler.inverse_value(x.reshape(-1), flat).reshape(x.shape)

    scale = fitted.scaler.scale_at(c_mean, c_names)  # the delta method for a log channel
    now_user = series.origin + series.now
    table = pd.DataFrame({"channel": c_names.astype(str), "ahead": c_ahead, "time": now_user + c_ahead,
                          "value_mean": fitted.scaler.inverse_value(c_mean, c_names), "value_std": c_std * scale})
    return Advice(series.user_id, float(now_user), float(horizon), float(level), tuple(target_names), table,
                  series.origin + t_time, t_names.astype(str), original(out0.mean[0, :m]), width0,
                  original(mean1), width1.mean(axis=1), width_ev, out0.log_evidence[0, :, :m], log_ev1,
                  original_values(fitted, v_norm, c_names), below0, below1.mean(axis=1))
