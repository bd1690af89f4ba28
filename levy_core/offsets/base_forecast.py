"""The deterministic offset ``b(q)`` of a fit on rolling origins: a classical forecaster.

One series or a few give little data to learn a forecast from, and classical forecasters
are strong there. Any offset that is a function of the query and the context, not of the
Poisson draw, keeps ``σ̂`` exact (``docs/levy-math-model.md``): the Lévy layer predicts the
*correction* to one of them, fitted in closed form to each episode's **whole past**.

The candidates, per channel (times in hours; ``o`` the origin, ``t_q`` the query):

* ``last`` — the last value;
* ``level`` — an exponentially weighted mean with a half-life of ``LEVEL_HALF_LIFE_GAPS``
  sampling intervals (simple exponential smoothing for irregular times);
* ``drift`` — the last value plus the average slope of the past (the random walk with drift);
* ``damped_trend`` — Holt's damped-trend exponential smoothing on a regular grid
  (`levy_core.offsets.smoothing`; its parameters fitted once per channel);
* ``holt`` — the same undamped (``φ = 1``): Holt's linear trend, ETS(A,A,N), which carries
  a steady trend over the whole horizon (a price index, a sector's employment);
* ``seasonal`` — the value one season ``P`` before ``t_q`` (the latest such time at or before
  ``o``; the last value when none lies within ``P/8``), for each candidate period;
* ``seasonal_drift`` — the same plus the change of the season's mean from the season before;
* ``harmonic`` — ridge regression of the past on a linear trend and ``sin/cos`` harmonics of
  every candidate period (Prophet's additive model, in closed form);
* ``harmonic_level`` — the same seasonal profile without a trend, re-levelled by the
  exponentially weighted mean of its residuals (the seasonal profile with a local level);
* ``harmonic_recent`` — ``harmonic`` on the last ``RECENT_PERIODS`` longest periods only (a
  local trend, and a cycle whose phase drifts); without a period, on the last third of the
  past;
* ``harmonic_ar``, ``harmonic_level_ar``, ``harmonic_recent_ar`` — each harmonic candidate
  plus an AR(p) of its residuals on the regular grid, carried forward from the origin
  (regression with autoregressive errors: a deviation from trend and season that persists
  — a CO₂ anomaly, a warm spell, a strong sunspot cycle — fades as it did in the past; ``p``
  by AIC at each origin); seasonal data only;
* ``autoregressive`` — an AR(p) of the past on a regular grid of the median sampling
  interval, ``p`` picked by AIC;
* ``gp`` — a Gaussian process's posterior mean (`levy_core.offsets.gp`; few series);
* ``combination`` — the mean of the ``COMBINED`` candidates that score best.

Candidate periods: [`levy_core.offsets.seasonality.candidate_periods`][levy_core.offsets.seasonality.candidate_periods]. [`choose`][levy_core.offsets.base_forecast.choose] scores
every candidate on the later half of the training and calibration origins (the latest
before the test ones). The rule (``_pick``) keeps the one with the smallest squared error
there, a candidate over a simpler one (``METHODS`` is in order of complexity) only when its
error is lower by more than ``SIMPLER_MARGIN``, and the mean of the best ``COMBINED`` where
that is better still. It is applied to bootstrap resamples of the scored origins
(`levy_core.offsets.bagging`), and each channel's offset is the mean of the picks
weighted by how often each won: a clear winner alone, a close call a weighted combination.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from levy_core.offsets import gp as gp_forecast
from levy_core.offsets import smoothing
from levy_core.offsets.autoregression import MAX_PAST, ar_order, regular_grid
from levy_core.offsets.bagging import bagged_weights, overlap_lag
from levy_core.offsets.candidates import ChannelPast, best_observed, bounded, forecast
from levy_core.offsets.gp import GPSpec
from levy_core.offsets.harmonic import harmonic_ar
from levy_core.offsets.seasonality import candidate_periods, median_gap
from levy_core.offsets.spec import (
    COMBINED,
    HARMONIC,
    HARMONIC_AR,
    METHODS,
    SEASONAL,
    BaseForecastSpec,
)
from levy_core.runtime.threads import single_threaded_blas

__all__ = ["BaseForecast", "CandidateScores", "choose", "choose_offsets", "fitted_parameters",
           "score_candidates"]

MIN_SCORED_ORIGINS = 10  # candidates are scored on the later half of the origins from twice this many
CACHE_EPISODES = 4096  # episodes whose offsets are kept (training re-asks for the same ones every epoch)
SIMPLER_MARGIN = 0.02  # a candidate must beat every simpler one by this share of squared error


class BaseForecast:
    """The offsets of one model's episodes, from the whole past of their series.

    Parameters
    ----------
    spec : BaseForecastSpec
    frame : DataFrame
        The user's observations, normalised (columns series_id, channel, time, value; the
        user's ids and hours).
    origins : dict of str to (str, float)
        Model-space episode id → (user series id, origin in the user's hours)
        (``OriginClock.origins``).
    channels : list of str
        The model's channel vocabulary (position = channel code).
    """

    def __init__(self, spec: BaseForecastSpec, frame: pd.DataFrame, origins: dict[str, tuple[str, float]],
                 channels: list[str]) -> None:
        self.spec, self.origins, self.channels = spec, origins, list(channels)
        self._cache: dict[tuple[str, bytes, bytes], np.ndarray] = {}  # training asks for the same episodes every epoch
        self.past: dict[tuple[str, str], ChannelPast] = {}
        for (sid, channel), g in frame.groupby(["series_id", "channel"], sort=False):
            self.past[(str(sid), str(channel))] = ChannelPast(g["time"].to_numpy(np.float64),
                                                                g["value"].to_numpy(np.float64))

    def offsets(self, model_id: str, times: np.ndarray, channel_codes: np.ndarray) -> np.ndarray:
        """The offset of each query of one episode (model time ``times`` (m,), relative to
        its origin, and channel codes (m,)), in normalised units; NaN where the series never
        observed the channel before the origin (the model's own default applies there)."""
        times = np.asarray(times, np.float64)
        channel_codes = np.asarray(channel_codes, np.int64)
        key = (model_id, times.tobytes(), channel_codes.tobytes())
        cached = self._cache.get(key)
        if cached is not None:
            return cached.copy()
        sid, origin = self.origins[model_id]
        with single_threaded_blas():  # the same offsets whatever the machine's cores
            out = self._compute(sid, origin, times, channel_codes)
        if len(self._cache) >= CACHE_EPISODES:
            self._cache.clear()
        self._cache[key] = out
        return out.copy()

    def _compute(self, sid: str, origin: float, times: np.ndarray, channel_codes: np.ndarray) -> np.ndarray:
        out = np.full(len(times), np.nan)
        for code in np.unique(channel_codes):
            channel = self.channels[int(code)]
            method = self.spec.methods.get(channel)
            past = self.past.get((sid, channel))
            if method is None or past is None:
                continue
            t, y = past.before(origin)
            if not len(t):
                continue
            rows = np.flatnonzero(channel_codes == code)
            pairs = self.spec.members[channel] if method == "combination" else [
                (method, self.spec.periods.get(channel, 0.0))]
            weights = self.spec.weights.get(channel) if method == "combination" else None
            out[rows] = np.average([bounded(t, y, forecast(m, t, y, origin, origin + times[rows], period=period,
                                          harmonics=self.spec.harmonics, gap=self.spec.gap,
                                          order=self.spec.orders.get(channel, 0), gp=self.spec.gp.get(channel),
                                          smoothing_parameters=(self.spec.holt if m == "holt" else
                                                                self.spec.smoothing).get(channel)))
                                 for m, period in pairs], axis=0, weights=weights)
        return out


Smoothing = dict[str, tuple[float, float, float]]  # channel → (α, β, φ)


def fitted_parameters(richest: dict[str, ChannelPast], first: float, periods: tuple[float, ...], gap: float, *,
                      few: bool) -> tuple[dict[str, GPSpec], Smoothing, Smoothing]:
    """Per channel, from its best-observed series' past before ``first`` (the first scored
    origin: the choice never sees its own future): the Gaussian process's kernel (``few``
    series only), the damped trend's smoothing parameters and Holt's (``φ = 1``)."""
    kernels: dict[str, GPSpec] = {}
    damped: Smoothing = {}
    linear: Smoothing = {}
    for channel, p in richest.items():
        t, y = p.before(first)
        spec = gp_forecast.fit(t, y, periods, gap) if few and len(t) >= 30 else None
        if spec is not None:
            kernels[channel] = spec
        grid = regular_grid(t, y, float(t[-1]), gap) if len(t) >= 2 else None
        params = smoothing.fit(grid) if grid is not None else None
        if params is not None:
            damped[channel] = params
        params = smoothing.fit(grid, damped=False) if grid is not None else None
        if params is not None:
            linear[channel] = params
    return kernels, damped, linear


class CandidateScores(NamedTuple):
    """Every candidate's forecasts on the scored episodes ([`score_candidates`][levy_core.offsets.base_forecast.score_candidates]): the
    candidate ``periods`` and the sampling ``gap`` (hours); per channel the AR order, GP kernel,
    damped-trend and Holt parameters (fitted before the first scored origin); ``records``, per
    channel and scored episode in time order, each candidate ``(method, period)``'s forecast at
    the episode's queries (m,) and their values (m,), in normalised units."""

    periods: tuple[float, ...]
    gap: float
    orders: dict[str, int]
    kernels: dict[str, GPSpec]
    damped: Smoothing
    linear: Smoothing
    records: dict[str, list[tuple[dict[tuple[str, float], np.ndarray], np.ndarray]]]

    def forecasts(self, channel: str, t: np.ndarray, y: np.ndarray, origin: float,
                  tq: np.ndarray) -> dict[tuple[str, float], np.ndarray]:
        """Every candidate's forecast at ``tq`` (m,) from one channel's past ``(t, y)`` (n,):
        what the scoring computed at each scored origin, anywhere else (a held-out window)."""
        order, kernel = self.orders.get(channel, 0), self.kernels.get(channel)
        params = {"damped_trend": self.damped.get(channel), "holt": self.linear.get(channel)}
        names = [("last", 0.0), ("level", 0.0), ("drift", 0.0)]
        names += [(m, p) for p in self.periods for m in SEASONAL]
        # without a period, harmonic is Prophet's piecewise-linear trend alone and harmonic_recent a line
        # through the last third of the past; the residuals' AR only with a season (without one it repeats
        # the autoregressive and Holt candidates, and cost the development set's trending series 7-27 %)
        names += [(m, 0.0) for m in HARMONIC if self.periods or m != "harmonic_level"]
        names += [(m, 0.0) for m in HARMONIC_AR if self.periods]
        names += ([("autoregressive", 0.0)] if order else []) + ([("gp", 0.0)] if kernel else []) + [
            (m, 0.0) for m, v in params.items() if v]
        preds: dict[tuple[str, float], np.ndarray] = {}
        for method, period in names:
            if (method, period) in preds:
                continue
            if method in HARMONIC and self.periods:  # one harmonic fit gives it and its residual AR
                plain, with_ar = harmonic_ar(method, t, y, origin, tq, self.periods, self.gap)
                preds[(method, 0.0)], preds[(f"{method}_ar", 0.0)] = bounded(t, y, plain), bounded(t, y, with_ar)
                continue
            preds[(method, period)] = bounded(t, y, forecast(method, t, y, origin, tq, period=period,
                                                             harmonics=self.periods, gap=self.gap, order=order,
                                                             gp=kernel, smoothing_parameters=params.get(method)))
        return preds


def score_candidates(frame: pd.DataFrame, origins: dict[str, tuple[str, float]],
                     episodes: dict[str, pd.DataFrame], scored: list[str], *,
                     season: float | None = None) -> CandidateScores:
    """Every candidate's forecast at the queries of the episodes ``scored`` (ids of
    ``episodes``, in time order), from each one's past; parameters fitted once per channel,
    on its best-observed series' past before the first of them. Arguments as
    [`choose_offsets`][levy_core.offsets.base_forecast.choose_offsets]."""
    periods = candidate_periods(frame) if season is None else ((float(season),) if season > 0 else ())
    gap = median_gap(frame["time"].to_numpy(np.float64)) or 1.0
    past = {key: ChannelPast(g["time"].to_numpy(np.float64), g["value"].to_numpy(np.float64))
            for key, g in frame.groupby(["series_id", "channel"], sort=False)}
    longest = max(periods, default=0.0)
    richest = best_observed(past)  # one order per channel: from its best-observed series
    orders = {channel: ar_order(p.t[-MAX_PAST:], p.y[-MAX_PAST:], gap, longest)
              for channel, p in richest.items() if len(p.t) >= 30}
    first = origins[scored[0]][1] if scored else np.inf  # parameters from the past before it only
    kernels, damped, linear = fitted_parameters(richest, first, tuple(periods), gap,
                                                few=frame["series_id"].nunique() <= gp_forecast.MAX_SERIES)
    cands = CandidateScores(tuple(periods), float(gap), orders, kernels, damped, linear, {})
    for model_id in scored:
        sid, origin = origins[model_id]
        for channel, q in episodes[model_id].groupby("channel", sort=False):
            p = past.get((str(sid), str(channel)))
            if p is None:
                continue
            t, y = p.before(origin)
            if not len(t):
                continue
            preds = cands.forecasts(str(channel), t, y, origin, q["time"].to_numpy(np.float64))
            cands.records.setdefault(str(channel), []).append((preds, q["value"].to_numpy(np.float64)))
    return cands


def choose(frame: pd.DataFrame, origins: dict[str, tuple[str, float]], episodes: dict[str, pd.DataFrame],
           *, season: float | None = None) -> BaseForecastSpec:
    """[`choose_offsets`][levy_core.offsets.base_forecast.choose_offsets] with NumPy's BLAS on one thread: the same choice whatever the
    machine's cores or load."""
    with single_threaded_blas():
        return choose_offsets(frame, origins, episodes, season=season)


def choose_offsets(frame: pd.DataFrame, origins: dict[str, tuple[str, float]], episodes: dict[str, pd.DataFrame],
                   *, season: float | None = None) -> BaseForecastSpec:
    """Score every candidate on the later half of ``episodes`` and keep the best per channel.

    Parameters
    ----------
    frame : DataFrame
        The user's observations that may be seen (before the first test origin), normalised
        (columns series_id, channel, time, value).
    origins : dict of str to (str, float)
        Episode id → (user series id, origin hours).
    episodes : dict of str to DataFrame
        Scored episode id → its queries (columns channel, time in the user's hours, value).
    season : float, optional
        A period the user asked for (hours; 0: no seasonal or harmonic candidates); None:
        [`candidate_periods`][levy_core.offsets.seasonality.candidate_periods].
    """
    by_time = sorted(episodes, key=lambda m: (origins[m][1], m))
    # the later half of the origins: the nearest to what is forecast next, with the most past behind
    # them (the first origins' short past would decide for the candidates that need the least)
    scored = by_time[len(by_time) // 2:] if len(by_time) >= 2 * MIN_SCORED_ORIGINS else by_time
    cands = score_candidates(frame, origins, episodes, scored, season=season)
    lag = overlap_lag(np.array([origins[m][1] for m in scored], np.float64),
                      np.array([float(episodes[m]["time"].max()) for m in scored], np.float64))
    methods, chosen_periods, members, weights, scores = {}, {}, {}, {}, {}
    for channel, recs in cands.records.items():
        counts = np.array([len(yq) for _, yq in recs], np.float64)
        total = max(float(counts.sum()), 1.0)
        errors = _origin_errors(recs)
        keys = list(recs[0][0])
        scores[channel] = {f"{m}" + (f"@{p:g}h" if p else ""): round(float(errors([(m, p)]).sum()) / total, 8)
                           for m, p in keys}
        # the rule on bootstrap resamples of the scored origins, each pick weighted by how often it won
        won = bagged_weights(errors, counts, lag, lambda mse_of, keys=keys: _pick(keys, mse_of))
        if len(won) == 1:
            methods[channel], chosen_periods[channel] = next(iter(won))[0], float(next(iter(won))[1])
            continue
        ranked = sorted(won, key=lambda key: (-won[key], METHODS.index(key[0]), key[1]))
        methods[channel], chosen_periods[channel] = "combination", 0.0
        members[channel], weights[channel] = ranked, [won[key] for key in ranked]
        mixed = sum(float(np.sum((sum(w * p[k] for k, w in zip(ranked, weights[channel], strict=True)) - yq) ** 2))
                    for p, yq in recs)
        scores[channel]["combination"] = round(mixed / total, 8)

    def chosen(table: dict) -> dict:  # a fitted parameter of each channel that has one
        return {ch: table[ch] for ch in methods if ch in table}

    return BaseForecastSpec(methods, chosen_periods, cands.periods, cands.gap, {ch: cands.orders.get(ch, 0) for ch in methods},
                            members, scores, chosen(cands.kernels), chosen(cands.damped), chosen(cands.linear),
                            weights)


Records = list[tuple[dict[tuple[str, float], np.ndarray], np.ndarray]]


def _origin_errors(recs: Records) -> Callable[[Sequence[tuple[str, float]]], np.ndarray]:
    """Members → the summed squared error of their mean at each scored origin (n,), cached."""
    cache: dict[tuple[tuple[str, float], ...], np.ndarray] = {}

    def errors(members: Sequence[tuple[str, float]]) -> np.ndarray:
        key = tuple(members)
        if key not in cache:
            cache[key] = np.array([float(np.sum((np.mean([p[k] for k in key], axis=0) - yq) ** 2)) for p, yq in recs])
        return cache[key]

    return errors


def _pick(keys: list[tuple[str, float]], mse_of: Callable[[Sequence[tuple[str, float]]], float]) -> list[tuple[str, float]]:
    """The selection rule, given the mean squared error of any members: the simplest candidate
    (``METHODS`` order) unless a more complex one is ``SIMPLER_MARGIN`` better, then the mean of
    the best ``COMBINED`` where that is better still (forecasts combined often beat the best
    one chosen)."""
    each = {key: mse_of([key]) for key in keys}
    ordered = sorted(keys, key=lambda key: (METHODS.index(key[0]), key[1]))
    best = ordered[0]
    for key in ordered[1:]:  # a more complex candidate must be clearly better
        if each[key] < (1 - SIMPLER_MARGIN) * each[best]:
            best = key
    top = sorted(keys, key=lambda key: each[key])[:COMBINED]
    if len(top) >= 2 and mse_of(top) < (1 - SIMPLER_MARGIN) * each[best]:
        return top
    return [best]
