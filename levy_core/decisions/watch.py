"""Watch: is a new observation a surprise? Each one scored against the band issued before it.

A replay in time order, per series: the observations at the series' ``j``-th distinct time
``u_j`` are scored against the band the model issues from the observations *strictly
before* ``u_j`` (the past alone; nothing at or after ``u_j`` enters the pass), then join
the context of the next step. Each observation's score is ``SplitConformal``'s normalised
score ``s = |y − ŷ| / max(spread, floor)`` (normalised units, ``spread`` the band's raw
spread: σ̂, times ``s(h)`` on rolling origins), and its conformal p-value, per channel,

    p = (1 + #{calibration scores ≥ s}) / (n + 1),

among the ``n`` calibration scores of its channel (the pooled ones where the channel had
fewer than the calibrator's ``min_group_size``, or was not calibrated per channel). When
the observation is exchangeable with the calibration points, ``P(p ≤ α) ≤ α``: flagging
``p ≤ α`` raises false alarms at rate at most α. ``p ≤ α`` exactly when the observation
lies outside the split-conformal band at level ``1 − α`` that is reported beside it
(``lower``, ``upper``, data units). Exchangeable means calibration scores made the same way:
[`calibrate_watch`][levy_core.decisions.watch.calibrate_watch] replays held-out series one step ahead exactly as the watch does
(the fit's own calibration scores come from forecasts over the fitted horizon and flag 8 to
10 % of observations at α = 0.01; ``benchmarks/watch.py``, ``docs/guides/watch.md``).

Efficiency: every step of a series is one episode of one batched pass (context = a prefix
of the series' past, the queries = the observations at ``u_j``); episodes are packed into
batches of bounded size, so memory is that of one batch and one chunk of series.

Each step's episode is built the way the model was trained to see one:

* fitted on many series: the series' own clock, context = the past (at most
  ``max_context`` latest observations);
* fitted on windows of few series: time shifted so the last context time sits at the
  fitted cut-off, context = the past within the cut-off's span;
* fitted on rolling origins: the origin is the last context time, context = the plan's
  history before it, the classical offset ``b(q)`` from the series' past before it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from levy_core.calibration.calibrate import Calibrator
from levy_core.data import DataError, Observations
from levy_core.data.drift import refuse_unknown_channels
from levy_core.decisions.defaults import DEFAULT_ALPHA, DEFAULT_MAX_CONTEXT, check_alpha
from levy_core.decisions.watch_calibration import (
    WatchCalibration,
    between_series_se,
    calibration_part,
)
from levy_core.episodes.origins import OriginPlan
from levy_core.model.batch import Batch
from levy_core.offsets.base_forecast import BaseForecast
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import run_pass
from levy_core.pipeline.user_units import time_of

__all__ = ["DEFAULT_ALPHA", "WATCH_COLUMNS", "WatchCalibration", "WatchResult", "WatchTally", "calibrate_watch",
           "check_alpha", "iter_watch", "watch"]

BATCH_TOKENS = 2**16  # episodes × padded context per pass: bounds one pass's memory
BATCH_EPISODES = 256
WATCH_COLUMNS = ["series_id", "channel", "time", "value", "mean", "lower", "upper", "score", "p_value", "flagged",
                 "lead", "n_context"]


@dataclass
class _Steps:
    """The episodes of one chunk: per step, its series, context range, shift and queries."""

    series: list[str] = field(default_factory=list)
    ctx: list[tuple[int, int]] = field(default_factory=list)  # positions [lo, hi) in the series' arrays
    qry: list[tuple[int, int]] = field(default_factory=list)
    shift: list[float] = field(default_factory=list)  # model time = user time − shift
    origin: list[float] = field(default_factory=list)  # the last context time (user hours)


def _plan(fitted: FittedModel) -> tuple[str, float, float]:
    """(mode, history hours, cut-off) of the episodes the model was fitted on."""
    mode = fitted.split.mode
    if mode == "origin":
        return mode, OriginPlan.from_dict(fitted.split.origin_plan or {}).history, 0.0
    cutoff = float(fitted.task.cutoff) if fitted.task.kind == "forecast" and fitted.task.cutoff is not None else 0.0
    if mode == "window" and fitted.split.window_hours:
        span = cutoff if cutoff > 0 else float(fitted.split.window_hours)
        return mode, span, span
    return "series", math.inf, 0.0


def _series_steps(steps: _Steps, sid: str, times: np.ndarray, plan: tuple[str, float, float],
                  span: tuple[float, float], max_context: int) -> int:
    """Append the steps of one series (``times`` sorted, user hours); returns the number of
    observations not scored (the series' first time, and any outside ``span``)."""
    mode, history, cutoff = plan
    distinct, first = np.unique(times, return_index=True)
    bounds = np.append(first, len(times))
    skipped = int(bounds[1])  # the first time: nothing before it
    for j in range(1, len(distinct)):
        if not span[0] <= distinct[j] <= span[1]:
            skipped += int(bounds[j + 1] - bounds[j])
            continue
        hi, last = int(bounds[j]), float(distinct[j - 1])
        lo = int(np.searchsorted(times, last - history, side="left")) if math.isfinite(history) else 0
        lo = max(lo, hi - max_context)
        steps.series.append(sid)
        steps.ctx.append((lo, hi))
        steps.qry.append((hi, int(bounds[j + 1])))
        steps.shift.append({"series": 0.0, "window": last - cutoff, "origin": last}[mode])
        steps.origin.append(last)
    return skipped


def _batches(steps: _Steps) -> Iterator[list[int]]:
    """Step indices packed so that episodes × padded context stays under ``BATCH_TOKENS``."""
    chunk: list[int] = []
    widest = 1
    for i, (lo, hi) in enumerate(steps.ctx):
        n = max(1, hi - lo)
        if chunk and (len(chunk) >= BATCH_EPISODES or (len(chunk) + 1) * max(widest, n) > BATCH_TOKENS):
            yield chunk
            chunk, widest = [], 1
        chunk.append(i)
        widest = max(widest, n)
    if chunk:
        yield chunk


def _collate(arrays: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], steps: _Steps, idx: list[int],
             base: BaseForecast | None) -> Batch:
    """One padded batch of the steps ``idx`` (arrays per series: times, channel codes, values)."""
    B = len(idx)
    N = max(1, max(steps.ctx[i][1] - steps.ctx[i][0] for i in idx))
    M = max(1, max(steps.qry[i][1] - steps.qry[i][0] for i in idx))
    ctx_t, ctx_c, ctx_v, ctx_m = (np.zeros((B, N), np.float32), np.zeros((B, N), np.int64),
                                  np.zeros((B, N), np.float32), np.zeros((B, N), np.float32))
    q_t, q_c, q_m = np.zeros((B, M), np.float32), np.zeros((B, M), np.int64), np.zeros((B, M), np.float32)
    offset = np.full((B, M), np.nan, np.float32) if base is not None else None
    for b, i in enumerate(idx):
        t, c, v = arrays[steps.series[i]]
        (lo, hi), (qlo, qhi), shift = steps.ctx[i], steps.qry[i], steps.shift[i]
        n, m = hi - lo, qhi - qlo
        ctx_t[b, :n], ctx_c[b, :n], ctx_v[b, :n], ctx_m[b, :n] = t[lo:hi] - shift, c[lo:hi], v[lo:hi], 1.0
        q_t[b, :m], q_c[b, :m], q_m[b, :m] = t[qlo:qhi] - shift, c[qlo:qhi], 1.0
        if offset is not None:
            offset[b, :m] = base.offsets(f"{steps.series[i]}@watch{i}", t[qlo:qhi] - shift, c[qlo:qhi])
    f = torch.from_numpy
    return Batch(f(ctx_t), f(ctx_c), f(ctx_v), f(ctx_m), f(q_t), f(q_c), f(q_m), None,
                 f(offset) if offset is not None else None)


def _calibrator(fitted: FittedModel, mc_passes: int) -> Calibrator:
    """The Lévy calibrator, or with ``mc_passes`` MC-Dropout's (refused by name without a twin)."""
    if not mc_passes:
        return fitted.levy_calibration
    if isinstance(mc_passes, bool) or not isinstance(mc_passes, int) or mc_passes < 2:
        raise ValueError(f"mc_passes must be 0 (the Lévy band) or an integer of at least 2, got {mc_passes!r}")
    if fitted.twin is None or fitted.mc_calibration is None:
        raise DataError("this model has no MC-Dropout twin to watch with: fit it without --no-twin")
    return fitted.mc_calibration


def _check_frame(obs: Observations | pd.DataFrame, fitted: FittedModel | None = None) -> pd.DataFrame:
    """The observations' frame, refused (named, its times on ``fitted``'s clock) when it is
    not in time order within series."""
    frame = obs.frame if isinstance(obs, Observations) else obs
    need = ["series_id", "channel", "time", "value"]
    if not isinstance(frame, pd.DataFrame) or not set(need) <= set(frame.columns):
        raise DataError(f"watch needs Observations or a frame with the columns {need}")
    frame = frame[need]
    sid = frame["series_id"].astype(str).to_numpy()
    t = frame["time"].to_numpy(np.float64)
    if not np.isfinite(t).all() or not np.isfinite(frame["value"].to_numpy(np.float64)).all():
        raise DataError("watch: every time and value must be a finite number; read the file with "
                        "levy_core.data.read_csv (it drops or names such rows)")
    same = sid[1:] == sid[:-1]
    back = np.flatnonzero(same & (t[1:] < t[:-1]))
    seen_again = len(np.unique(sid)) != 1 + int((~same).sum()) if len(sid) else False
    if back.size or seen_again:
        i = int(back[0]) + 1 if back.size else None
        where = (f"row {i} of series {sid[i]!r} (time {_said(fitted, t[i])}) comes after time {_said(fitted, t[i - 1])}"
                 if i is not None else "the rows of a series are not together")
        raise DataError(f"watch replays each series in time order, but the observations are not sorted: {where}. "
                        "Sort them by series and time (frame.sort_values(['series_id', 'time'], kind='stable')), or "
                        "read the file with levy_core.data.read_csv / `levy watch`, which sort it.")
    return frame.reset_index(drop=True)


def _score_chunk(fitted: FittedModel, frame: pd.DataFrame, alpha: float, span: tuple[float, float],
                 max_context: int, calibration: WatchCalibration, mc_passes: int = 0,
                 progress: Callable[[int], object] | None = None) -> tuple[pd.DataFrame, int]:
    """The scored rows (`WATCH_COLUMNS`) of one chunk of whole series, and how many
    observations were not scored; ``progress`` is told how many more series are done after
    every batch of steps (a chunk of thousands of series shows its progress as it goes)."""
    refuse_unknown_channels(pd.unique(frame["channel"]).tolist(), fitted.channels)
    scaled = fitted.scaler.check_range(frame)
    index = {c: i for i, c in enumerate(fitted.channels)}
    codes = frame["channel"].map(index).to_numpy(np.int64)
    plan = _plan(fitted)
    steps, arrays, skipped = _Steps(), {}, 0
    groups = frame.groupby("series_id", sort=True).indices
    for sid, rows in groups.items():
        rows = np.asarray(rows)
        t = frame["time"].to_numpy(np.float64)[rows]
        arrays[str(sid)] = (t, codes[rows], scaled[rows])
        skipped += _series_steps(steps, str(sid), t, plan, span, max_context)
    base = None
    if plan[0] == "origin" and fitted.base_forecast is not None:
        origins = {f"{s}@watch{i}": (s, o) for i, (s, o) in enumerate(zip(steps.series, steps.origin, strict=True))}
        normalised = frame.assign(value=scaled, series_id=frame["series_id"].astype(str))
        base = BaseForecast(fitted.base_forecast, normalised, origins, fitted.channels)
    means, spreads = [], []
    remaining = pd.Series(steps.series, dtype=object).value_counts().to_dict()  # steps left per series
    unscored = len(groups) - len(remaining)  # series with nothing to score are done at once
    if progress is not None and unscored:
        progress(unscored)
    for idx in _batches(steps):
        res = run_pass(fitted, _collate(arrays, steps, idx, base), mc_passes)
        if progress is not None:
            done = 0
            for i in idx:
                remaining[steps.series[i]] -= 1
                done += remaining[steps.series[i]] == 0
            if done:
                progress(done)
        mean, spread = (res["mc_mean_norm"], res["mc_std_norm"]) if mc_passes else (res["mean_norm"], res["spread_norm"])
        for b, i in enumerate(idx):
            m = steps.qry[i][1] - steps.qry[i][0]
            means.append(mean[b, :m])
            spreads.append(spread[b, :m])
    floor = _calibrator(fitted, mc_passes).conformal.sigma_floor_
    return _rows(fitted, frame, scaled, groups, steps, means, spreads, (alpha, floor), calibration), skipped


def _rows(fitted: FittedModel, frame: pd.DataFrame, scaled: np.ndarray, groups: dict, steps: _Steps, means: list[np.ndarray],
          spreads: list[np.ndarray], level: tuple[float, float], calibration: WatchCalibration) -> pd.DataFrame:
    """Scores, p-values and bands of every scored observation, in the frame's order."""
    if not steps.series:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in WATCH_COLUMNS})
    rows = np.concatenate([np.asarray(groups[s])[qlo:qhi] for s, (qlo, qhi) in zip(steps.series, steps.qry,
                                                                                    strict=True)])
    lead = np.concatenate([frame["time"].to_numpy()[np.asarray(groups[s])[qlo:qhi]] - o
                           for s, (qlo, qhi), o in zip(steps.series, steps.qry, steps.origin, strict=True)])
    n_ctx = np.concatenate([np.full(qhi - qlo, hi - lo) for (lo, hi), (qlo, qhi) in zip(steps.ctx, steps.qry,
                                                                                         strict=True)])
    mean, spread = np.concatenate(means).astype(np.float64), np.concatenate(spreads).astype(np.float64)
    sub = frame.iloc[rows]
    channels = sub["channel"].astype(str).to_numpy()
    y = scaled[rows]
    alpha, floor = level
    spread = np.maximum(spread, floor)
    score = np.abs(y - mean) / spread
    p, _ = calibration.p_values(score, channels)
    levels = {ch: calibration.quantile(1.0 - alpha, ch) for ch in np.unique(channels)}
    q = np.array([levels[ch] for ch in channels])
    lower, upper = mean - q * spread, mean + q * spread  # ±inf where the level needs more scores
    scaler = fitted.scaler
    out = pd.DataFrame({
        "series_id": sub["series_id"].astype(str).to_numpy(), "channel": channels,
        "time": sub["time"].to_numpy(np.float64), "value": sub["value"].to_numpy(np.float64),
        "mean": scaler.inverse_value(mean, channels), "lower": scaler.inverse_value(lower, channels),
        "upper": scaler.inverse_value(upper, channels), "score": score, "p_value": p, "flagged": p <= alpha,
        "lead": lead, "n_context": n_ctx})
    return out.sort_values(["series_id", "time", "channel"], kind="stable").reset_index(drop=True)


@dataclass
class WatchTally:
    """Flags and scored observations per series, summed over chunks (bounded by the number
    of series); the flag rate and its between-series standard error."""

    alpha: float
    scored: dict[str, int] = field(default_factory=dict)
    flags: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    calibration_se: float = 0.0  # the calibration's share (WatchCalibration.standard_error)

    def add(self, rows: pd.DataFrame, skipped: int = 0) -> None:
        """Count one chunk's scored ``rows`` (`WATCH_COLUMNS`) and its unscored observations."""
        self.skipped += int(skipped)
        if rows.empty:
            return
        counts = rows.groupby("series_id", sort=False)["flagged"].agg(["size", "sum"])
        for sid, (n, f) in counts.iterrows():
            self.scored[str(sid)] = self.scored.get(str(sid), 0) + int(n)
            self.flags[str(sid)] = self.flags.get(str(sid), 0) + int(f)

    def clear(self) -> None:
        """Forget every chunk (a file read again from the start)."""
        self.scored, self.flags, self.skipped = {}, {}, 0  # calibration_se stays: the same calibration

    @property
    def n_scored(self) -> int:
        return int(sum(self.scored.values()))

    @property
    def n_flagged(self) -> int:
        return int(sum(self.flags.values()))

    @property
    def n_series(self) -> int:
        return len(self.scored)

    @property
    def flag_rate(self) -> float:
        """Flagged share of the scored observations (NaN-free: 0 with none scored)."""
        return self.n_flagged / self.n_scored if self.n_scored else 0.0

    def standard_error(self) -> float:
        """Standard error of [`flag_rate`][levy_core.decisions.watch.WatchTally.flag_rate]. Two independent parts: the watched series' —
        flags within a series are correlated (neighbouring steps share their context),
        series independent, so the ratio estimator's between-series s.e.
        (`between_series_se`) — and the calibration's
        (`calibration_se`: the threshold is set on a finite sample of series);
        ``sqrt(test² + calibration²)``. ``inf`` with fewer than two watched series."""
        n = np.array([self.scored[s] for s in self.scored], np.float64)
        f = np.array([self.flags[s] for s in self.scored], np.float64)
        return math.hypot(between_series_se(n, f), self.calibration_se)

    def summary(self) -> str:
        """One line: the flag rate against the nominal α, with its ±2 s.e. window."""
        if not self.n_scored:
            return f"no observation could be scored ({self.skipped:,} had nothing before them)"
        se = self.standard_error()
        part = ", calibration included" if self.calibration_se > 0 else ""
        window = f" ± {2 * se:.4f} (2 s.e. between {self.n_series:,} series{part})" if math.isfinite(se) else ""
        return (f"flagged {self.n_flagged:,} of {self.n_scored:,} observations: rate {self.flag_rate:.4f}{window} "
                f"against the nominal α = {self.alpha:g}")


@dataclass(frozen=True)
class WatchResult:
    """A replay's scored observations (`WATCH_COLUMNS`; user ids, hours and units)
    and its tally."""

    frame: pd.DataFrame
    tally: WatchTally
    calibration: str = ""  # where the p-values' calibration scores come from

    @property
    def alpha(self) -> float:
        return self.tally.alpha

    @property
    def flag_rate(self) -> float:
        return self.tally.flag_rate

    def to_frame(self) -> pd.DataFrame:
        """A copy of the scored rows, one per observation with something before it."""
        return self.frame.copy()

    def summary(self) -> str:
        return self.tally.summary()


def _span(start: float | None, end: float | None) -> tuple[float, float]:
    lo = -math.inf if start is None else float(start)
    hi = math.inf if end is None else float(end)
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        raise ValueError(f"start and end must be times in hours with start <= end (None: open); got {start}, {end}")
    return lo, hi


def _check_max_context(max_context: int) -> int:
    if isinstance(max_context, bool) or not isinstance(max_context, int) or max_context < 1:
        raise ValueError(f"max_context must be a positive integer, got {max_context!r}")
    return max_context


def _said(fitted: FittedModel | None, hours: float) -> str:
    """A time as the user of ``fitted`` reads it ("30 days"); in hours without a model."""
    return time_of(fitted, hours) if fitted is not None else f"{hours:g} h"


def _check_span_in_data(frame: pd.DataFrame, span: tuple[float, float], fitted: FittedModel | None = None) -> None:
    """DataError when ``[start, end]`` misses the data: nothing could be scored (times said on
    ``fitted``'s clock)."""
    if frame.empty:
        raise DataError("watch: the data holds no observation")
    first, last = float(frame["time"].min()), float(frame["time"].max())
    if span[0] > last:
        raise DataError(f"start {_said(fitted, span[0])} lies after every observation (the data ends at "
                        f"{_said(fitted, last)}): nothing to "
                        "watch; give an earlier start, or none to score from each series' second time")
    if span[1] < first:
        raise DataError(f"end {_said(fitted, span[1])} lies before every observation (the data starts at "
                        f"{_said(fitted, first)}): nothing "
                        "to watch; give a later end, or none")


def iter_watch(fitted: FittedModel, chunks: Iterable[Observations | pd.DataFrame], *, alpha: float = DEFAULT_ALPHA,
               calibration: WatchCalibration | None = None, start: float | None = None, end: float | None = None,
               max_context: int = DEFAULT_MAX_CONTEXT, tally: WatchTally | None = None,
               mc_passes: int = 0, progress: Callable[[int], object] | None = None) -> Iterator[pd.DataFrame]:
    """The streaming form of [`watch`][levy_core.decisions.watch.watch]: one frame of scored rows per chunk of whole
    series (e.g. ``levy_core.data.series_chunks.iter_series_chunks``), memory that of one
    chunk and one batch; ``tally`` (optional) is given every chunk; ``progress`` (optional)
    the number of series done, as they are done. Arguments as [`watch`][levy_core.decisions.watch.watch]."""
    a = check_alpha(alpha)
    span = _span(start, end)
    _check_max_context(max_context)
    _calibrator(fitted, mc_passes)
    cal = calibration if calibration is not None else WatchCalibration.of_fit(fitted, mc=bool(mc_passes))
    for chunk in chunks:
        rows, skipped = _score_chunk(fitted, _check_frame(chunk, fitted), a, span, max_context, cal, mc_passes, progress)
        if tally is not None:
            tally.add(rows, skipped)
        yield rows


def watch(fitted: FittedModel, data: Observations | pd.DataFrame, *, alpha: float = DEFAULT_ALPHA,
          calibration: WatchCalibration | None = None, start: float | None = None, end: float | None = None,
          max_context: int = DEFAULT_MAX_CONTEXT, mc_passes: int = 0) -> WatchResult:
    """Replay ``data`` in time order per series, scoring each observation against the band
    the model issued from the observations strictly before it.

    Parameters
    ----------
    fitted : FittedModel
    data : Observations or DataFrame
        Observations (columns ``series_id, channel, time, value``; a frame sorted by series
        and time), channels the model knows.
    alpha : float, default 0.01
        The false-alarm rate: an observation is flagged when its p-value is ≤ ``alpha``
        (it lies outside the split-conformal band at level ``1 − alpha``). In (0, 1).
    calibration : WatchCalibration, optional
        The scores p-values are taken against: [`calibrate_watch`][levy_core.decisions.watch.calibrate_watch] on held-out series
        (valid p-values). Default: the fit's own calibration scores, which come from
        forecasts over the fitted horizon, not one step ahead (the flag rate then need not
        be α).
    start, end : float, optional
        Score only observations at times in ``[start, end]`` (hours, the data's clock);
        the others are context only. Default: every observation with one before it.
    max_context : int, default 2000
        The most recent observations one step's context holds (a fit on many series).
    mc_passes : int, default 0
        0: the Lévy band. ``T >= 2``: MC-Dropout's band instead (the fit's twin, ``T``
        passes, its mean and standard deviation in place of ``ŷ`` and the spread), scored
        and calibrated the same way (what ``benchmarks/watch.py`` compares).

    Returns
    -------
    WatchResult
        ``frame``: one row per scored observation, `WATCH_COLUMNS` (series order,
        then time) — the band ``lower, upper`` at ``1 − alpha`` and ``mean`` (data units)
        issued before it, its ``score`` (normalised), ``p_value``, ``flagged``, ``lead``
        (hours since the last context time) and ``n_context``; ``tally``: the flag rate
        and its between-series s.e.

    Raises
    ------
    ValueError
        ``alpha`` outside (0, 1), a bad ``start``/``end`` or ``max_context``.
    DataError
        A channel the model was never trained on; observations not sorted by series and
        time; values the model cannot hold; no observations, or a ``start`` after every
        observation (an ``end`` before every one).
    """
    tally = WatchTally(check_alpha(alpha), calibration_se=calibration.standard_error(alpha) if calibration else 0.0)
    _check_span_in_data(_check_frame(data, fitted), _span(start, end), fitted)
    frames = list(iter_watch(fitted, [data], alpha=alpha, calibration=calibration, start=start, end=end,
                             max_context=max_context, tally=tally, mc_passes=mc_passes))
    return WatchResult(frames[0], tally, calibration.source if calibration is not None
                       else WatchCalibration.of_fit(fitted, mc=bool(mc_passes)).source)


def calibrate_watch(fitted: FittedModel, data: Observations, *,
                    max_context: int = DEFAULT_MAX_CONTEXT, mc_passes: int = 0) -> WatchCalibration:
    """One-step-ahead scores of held-out series, replayed exactly as [`watch`][levy_core.decisions.watch.watch] does:
    what valid p-values are taken against.

    Parameters
    ----------
    fitted : FittedModel
    data : Observations
        The data the model was fitted on (its calibration split is replayed: the
        calibration series, or the span of the calibration origins), or series the model
        never trained on (replayed whole). Never the training series of another file.
    max_context, mc_passes : int
        As for [`watch`][levy_core.decisions.watch.watch] (the same ``mc_passes`` as the watch it calibrates).

    Returns
    -------
    WatchCalibration
        Sorted scores per channel and pooled, with where they come from.
    """
    if not isinstance(data, Observations):
        raise DataError(f"calibrate_watch needs Observations, got {type(data).__name__}")
    part, start, end, source = calibration_part(fitted, data)
    _calibrator(fitted, mc_passes)
    rows, _ = _score_chunk(fitted, _check_frame(part, fitted), 0.5, _span(start, end), _check_max_context(max_context),
                           WatchCalibration.of_fit(fitted, mc=bool(mc_passes)), mc_passes)
    return WatchCalibration.of_scores(rows["score"].to_numpy(), rows["channel"].to_numpy(),
                                      f"one-step-ahead scores of {source} ({len(rows):,} scores)",
                                      rows["series_id"].to_numpy())
