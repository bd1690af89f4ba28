"""Splits and prediction tasks: which observations are context and which are queries.

* Many series (≥ ``MIN_SERIES_FOR_SERIES_SPLIT``): a seeded 60/20/20 train/calibration/test
  split *by series*, as t-PatchGNN does.
* Few series: each series is cut into consecutive time windows of equal length; each window
  becomes a pseudo-series ``"<id>@<k>"`` with its own relative time, and the windows are
  split *by time* (the first 60 % of each series' windows train, the next 20 % calibrate,
  the last 20 % test) so no test window precedes a training one.

In both modes a sixth of the training (pseudo-)series (the last ones: the latest windows in
window mode) is set aside as ``stopping``: their loss picks the epoch. Early stopping thus
never looks at the calibration split, whose scores the conformal guarantee needs untouched
by any choice made on them.

Tasks inside a (pseudo-)series:

* ``forecast``: observations at ``time ≤ cutoff`` are context; those in
  ``(cutoff, cutoff + horizon]`` are the queries. The cut-off is one time for every series
  (``TaskConfig.cutoff``) or each series' own, at a fraction of its observed span
  (``TaskConfig.cutoff_fraction``): a panel whose series are followed for different lengths
  (PBC: a single visit to 14 years) keeps every series with observations at two times in the fit,
  where one time would leave out those that end before it or start after it. Without either,
  `resolve_task` takes the median series midpoint, or on a panel split by series each
  series' own midpoint when that keeps more series in.
* ``interpolate``: a seeded ``holdout_fraction`` of the observations is held out as queries;
  the rest is context. Training draws a fresh hold-out every epoch.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Literal

import numpy as np
import pandas as pd
import torch

from levy_core.data import DataError
from levy_core.episodes.cutoffs import (
    PER_SERIES_DEFAULT,
    cutoff_fraction_of,
    median_midpoint,
    taking_part,
)
from levy_core.episodes.origins import OriginClock, OriginPlan, plan_origins
from levy_core.episodes.scaling import ChannelScaler
from levy_core.model.batch import Batch
from levy_core.offsets.base_forecast import BaseForecast

__all__ = [
    "MIN_SERIES_FOR_SERIES_SPLIT",
    "PER_SERIES_DEFAULT",
    "STOPPING_SHARE",
    "EpisodeBuilder",
    "SeriesClock",
    "Split",
    "TaskConfig",
    "cutoff_fraction_of",
    "make_origin_split",
    "training_frame",
    "make_split",
    "resolve_task",
    "taking_part",
    "to_windows",
]

MIN_SERIES_FOR_SERIES_SPLIT = 10
WINDOWS_PER_SERIES = 20  # few-series mode: windows each series is cut into
STOPPING_SHARE = 1 / 6  # of the training (pseudo-)series: early-stopping series


@dataclass
class TaskConfig:
    """What is predicted from what."""

    kind: Literal["forecast", "interpolate"] = "forecast"
    cutoff: float | None = None  # forecast: history ends here (hours); None → the median series midpoint
    horizon: float | None = None  # forecast: queries up to cutoff + horizon; None → to the end
    holdout_fraction: float = 0.2  # interpolate: share of observations held out as queries
    season: float | None = None  # rolling origins: hours of the seasonal offset; None → detected, 0 → none
    # forecast: each series' history ends at this fraction of its own observed span (its first
    # to its last observation), instead of one ``cutoff`` for all (which is then None)
    cutoff_fraction: float | None = None

    @property
    def per_series(self) -> bool:
        """A forecast whose cut-off is each series' own (``cutoff_fraction``)."""
        return self.kind == "forecast" and self.cutoff_fraction is not None

    def series_cutoff(self, times: np.ndarray) -> float:
        """The forecast cut-off (hours) of one series whose observation times are ``times``
        ((n,) hours, n ≥ 1 for a per-series cut-off): ``cutoff`` itself, or the point at
        ``cutoff_fraction`` of the series' span."""
        if self.cutoff_fraction is None:
            return float(self.cutoff)  # type: ignore[arg-type]  # resolved
        lo, hi = float(np.min(times)), float(np.max(times))
        return lo + float(self.cutoff_fraction) * (hi - lo)

    def cutoff_text(self, fmt: Callable[[float], str] | None = None) -> str:
        """The cut-off in words, to follow "cut-off": one time ("667 days"; ``fmt`` writes a
        time in hours, default ``"24 h"``) or each series' own ("at 50 % of each series' own span")."""
        if self.cutoff_fraction is not None:
            return f"at {100 * self.cutoff_fraction:g} % of each series' own span"
        return (fmt or _hours_text)(float(self.cutoff))  # type: ignore[arg-type]

    def to_dict(self) -> dict:
        out = asdict(self)
        if out["cutoff_fraction"] is None:  # a global cut-off: the layout of models saved before it
            del out["cutoff_fraction"]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> TaskConfig:
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown task settings {unknown}; expected some of "
                             f"{[f.name for f in fields(cls)]}")
        task = cls(**data)
        _check_fraction(task)
        return task


def _hours_text(hours: float) -> str:
    return f"{hours:g} h"


def _check_fraction(task: TaskConfig) -> None:
    """ValueError for a per-series cut-off outside (0, 1) or given beside a global one."""
    f = task.cutoff_fraction
    if f is None:
        return
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f < 1:
        raise ValueError(f"cutoff_fraction must lie strictly between 0 and 1 (a share of each series' span), "
                         f"got {f!r}")
    if task.cutoff is not None:
        raise ValueError(f"give one forecast cut-off: a time for all series (cutoff={task.cutoff!r}) or a share of "
                         f"each series' span (cutoff_fraction={f!r}), not both")


@dataclass
class Split:
    """Which (pseudo-)series train, calibrate and test; recorded with the model."""

    mode: Literal["series", "window", "origin"]
    seed: int
    train: list[str] = field(default_factory=list)
    calibration: list[str] = field(default_factory=list)
    test: list[str] = field(default_factory=list)
    window_hours: float | None = None  # window mode: length of each window
    stopping: list[str] = field(default_factory=list)  # subset of train whose loss picks the epoch
    origin_plan: dict[str, float] | None = None  # origin mode: OriginPlan.to_dict()

    def fitting(self) -> list[str]:
        """The training series the weights are fitted on (``train`` less ``stopping``)."""
        held = set(self.stopping)
        return [sid for sid in self.train if sid not in held]

    def role_of(self, series_id: str) -> str:
        for role in ("train", "calibration", "test"):
            if series_id in set(getattr(self, role)):
                return role
        return "unseen"

    def clock(self, frame: pd.DataFrame) -> SeriesClock | OriginClock:
        """The mapping between the user's series and clock in ``frame`` (the observations,
        columns series_id and time) and the model's series space under this split."""
        if self.mode == "origin":
            return OriginClock.of(OriginPlan.from_dict(self.origin_plan or {}), frame)
        windowed = self.mode == "window" and bool(self.window_hours)
        starts = frame.groupby("series_id")["time"].min() if windowed else pd.Series(dtype=float)
        return SeriesClock(float(self.window_hours) if windowed else None,
                           {str(k): float(v) for k, v in starts.items()})

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Split:
        return cls(**data)


@dataclass(frozen=True)
class SeriesClock:
    """The one place that maps the user's series ids and clock to the model's and back.

    Many-series mode (``window_hours`` None) it is the identity. Few-series mode cuts each
    user series into consecutive windows ``"<id>@<k>"`` of ``window_hours``, counted from the
    series' first observation (``starts``), with time relative to the window's start.
    """

    window_hours: float | None
    starts: dict[str, float]

    @property
    def windowed(self) -> bool:
        return self.window_hours is not None

    def frame_to_model(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Observations (series_id, channel, time, value) in the model's series space."""
        return to_windows(frame, self.window_hours) if self.windowed else frame

    def queries_to_model(self, queries: pd.DataFrame) -> pd.DataFrame:
        """A copy of ``queries`` (columns series_id, time, in the user's ids and clock) in the
        model's space: each query lands in the window holding its time (window 0 for times
        before a series' first observation). Unknown series raise ``DataError``."""
        if not self.windowed:
            return queries
        out = queries.copy()
        ids = out["series_id"].astype(str)
        unknown = sorted(set(ids) - set(self.starts))
        if unknown:
            raise DataError(f"queries name series with no observations in the data: {unknown[:5]}")
        offset = out["time"].to_numpy(np.float64) - ids.map(self.starts).to_numpy(np.float64)
        k = np.clip(np.floor(offset / self.window_hours), 0, None).astype(int)
        out["series_id"] = ids + "@" + pd.Series(k, index=out.index).astype(str)
        out["time"] = offset - k * self.window_hours
        return out

    def user_series(self, model_ids: list[str]) -> list[str]:
        """The user series each model id belongs to."""
        return [str(m).rpartition("@")[0] if self.windowed else str(m) for m in model_ids]

    def end_episode(self, series_id: str, model_ids: set[str]) -> tuple[str, float]:
        """The model-space series holding a user series' latest observations and the user
        time of its model time 0: where a forecast beyond the end of the data starts."""
        if not self.windowed:
            return series_id, 0.0
        windows = [int(m.rpartition("@")[2]) for m in model_ids if m.rpartition("@")[0] == series_id]
        if not windows:
            raise DataError(f"series {series_id!r} has no observations in the data")
        k = max(windows)
        return f"{series_id}@{k}", self.starts[series_id] + k * self.window_hours

    def to_user(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A copy of a model-space frame (columns series_id, time) in the user's ids and clock."""
        if not self.windowed:
            return frame
        out = frame.copy()
        parts = out["series_id"].astype(str).str.rpartition("@")
        base, k = parts[0], parts[2].astype(int).to_numpy()
        offset = k * self.window_hours + out["time"].to_numpy(np.float64)
        # keep each time in its own window despite rounding at a window's first instant
        low = np.floor(offset / self.window_hours) < k
        offset[low] = np.nextafter(offset[low], np.inf)
        out["series_id"] = base.to_numpy()
        out["time"] = base.map(self.starts).to_numpy(np.float64) + offset
        return out


def to_windows(frame: pd.DataFrame, window_hours: float) -> pd.DataFrame:
    """Cut each series into consecutive windows ``"<id>@<k>"`` with time relative to the
    window start. ``frame``: columns series_id, channel, time, value."""
    if window_hours <= 0:
        raise ValueError("window_hours must be positive")
    out = frame.copy()
    start = out.groupby("series_id")["time"].transform("min")
    k = np.floor((out["time"] - start) / window_hours).astype(int)
    out["series_id"] = out["series_id"].astype(str) + "@" + k.astype(str)
    out["time"] = (out["time"] - start) - k * window_hours
    return out.sort_values(["series_id", "time", "channel"], kind="stable").reset_index(drop=True)


def _window_order(series_id: str) -> tuple[str, int]:
    base, _, k = series_id.rpartition("@")
    return base, int(k)


def _stopping_part(train: list[str]) -> list[str]:
    """The last ``STOPPING_SHARE`` of ``train`` (at least one when two or more train)."""
    if len(train) < 2:
        return []
    return train[len(train) - max(1, int(round(STOPPING_SHARE * len(train)))):]


def make_split(frame: pd.DataFrame, *, seed: int = 0) -> tuple[pd.DataFrame, Split]:
    """Decide the split mode and split. Returns the frame the model works on (windowed in
    window mode) and the ``Split``."""
    series = sorted(frame["series_id"].unique())
    if len(series) >= MIN_SERIES_FOR_SERIES_SPLIT:
        rng = np.random.default_rng(seed)
        order = [series[i] for i in rng.permutation(len(series))]
        n_train = int(round(0.6 * len(order)))
        n_cal = int(round(0.2 * len(order)))
        train = order[:n_train]
        return frame, Split("series", seed, train, order[n_train:n_train + n_cal], order[n_train + n_cal:],
                            stopping=_stopping_part(train))
    spans = frame.groupby("series_id")["time"].agg(lambda t: t.max() - t.min())
    window = float(spans.median()) / WINDOWS_PER_SERIES
    if not window > 0:
        raise DataError("every series spans a single instant: there is nothing to split in time; "
                        "provide observations at different times")
    windowed = to_windows(frame, window)
    split = Split("window", seed, window_hours=window)
    by_series: dict[str, list[tuple[int, str]]] = {}
    for sid in windowed["series_id"].unique():
        base, k = _window_order(sid)
        by_series.setdefault(base, []).append((k, sid))
    for base in sorted(by_series):
        ordered = [sid for _, sid in sorted(by_series[base])]
        n_train, n_cal = int(round(0.6 * len(ordered))), int(round(0.2 * len(ordered)))
        split.train += ordered[:n_train]
        split.stopping += _stopping_part(ordered[:n_train])
        split.calibration += ordered[n_train:n_train + n_cal]
        split.test += ordered[n_train + n_cal:]
    return windowed, split


def training_frame(split: Split, frame: pd.DataFrame) -> pd.DataFrame:
    """The observations in the model's series space as training sees them under ``split``:
    in origin mode the training episodes keep no target at or after the first calibration
    origin (what the model is later calibrated and tested on was never a training target)."""
    clock = split.clock(frame)
    model_frame = clock.frame_to_model(frame)
    if split.mode != "origin" or not split.calibration:
        return model_frame
    origins = {m: o for m, (_, o) in clock.origins.items()}
    first_calibration = origins[split.calibration[0]]
    origin = model_frame["series_id"].map(origins)
    leak = model_frame["series_id"].isin(set(split.train)) & (model_frame["time"] > 0) & (
        model_frame["time"] + origin >= first_calibration)
    return model_frame[~leak].reset_index(drop=True)


def make_origin_split(frame: pd.DataFrame, task: TaskConfig, *, seed: int = 0,
                      clock: str = "hours") -> tuple[pd.DataFrame, Split, TaskConfig]:
    """Few-series forecasting on rolling origins (``levy_core.episodes.origins``): the model-space
    frame of every episode, the chronological split of the origins (60 / 20 / 20, the last
    sixth of the training ones for early stopping) and the task in model time (cut-off 0,
    the plan's horizon). Training episodes keep no target at or after the first
    calibration origin. ``clock``: the data's, for the messages (`plan_origins`)."""
    plan = plan_origins(frame, task.horizon, clock=clock)
    clock = OriginClock.of(plan, frame)
    rolling = clock.rolling()
    n_train, n_cal = int(round(0.6 * len(rolling))), int(round(0.2 * len(rolling)))
    train, calibration, test = rolling[:n_train], rolling[n_train:n_train + n_cal], rolling[n_train + n_cal:]
    split = Split("origin", seed, train, calibration, test, stopping=_stopping_part(train),
                  origin_plan=plan.to_dict())
    model_frame = training_frame(split, frame)
    model_task = TaskConfig("forecast", cutoff=0.0, horizon=plan.horizon, holdout_fraction=task.holdout_fraction,
                            season=task.season)
    return model_frame, split, model_task


def resolve_task(task: TaskConfig, frame: pd.DataFrame, *, by_series: bool = False) -> TaskConfig:
    """Fill the defaults that depend on the data (the forecast cut-off). ``frame``: the
    model-space observations (columns series_id, time). Without a cut-off, the median series
    midpoint (rounded) for every series; with ``by_series`` (a panel split by series) each
    series' own midpoint instead when that keeps more series in the fit (some end before the
    common one or start after it). ValueError for settings out of range."""
    if task.kind not in ("forecast", "interpolate"):
        raise ValueError(f"task must be 'forecast' or 'interpolate', got {task.kind!r}")
    if not 0 < task.holdout_fraction < 1:
        raise ValueError("holdout_fraction must lie in (0, 1)")
    _check_fraction(task)
    if task.kind == "forecast" and task.cutoff is None and task.cutoff_fraction is None:
        common = median_midpoint(frame)
        if by_series and taking_part(frame, cutoff_fraction=PER_SERIES_DEFAULT, horizon=task.horizon) > \
                taking_part(frame, cutoff=common, horizon=task.horizon):  # some series end before it, or start after
            return replace(task, cutoff_fraction=PER_SERIES_DEFAULT)
        return replace(task, cutoff=common)
    return task


@dataclass
class SeriesArrays:
    time: np.ndarray  # (n,) hours
    channel: np.ndarray  # (n,) int64 channel index
    value: np.ndarray  # (n,) normalised value
    row: np.ndarray  # (n,) row index in the frame the builder was made from


class EpisodeBuilder:
    """Turns a normalised long frame into padded context/query batches.

    Parameters
    ----------
    frame : DataFrame
        Columns series_id, channel, time, value (normalised already, or by ``scaler``).
    channels : list of str
        Channel vocabulary; position = embedding index.
    task : TaskConfig
        Resolved task (``cutoff`` set for forecasts).
    seed : int
        Seeds the fixed interpolation hold-out of evaluation episodes.
    scaler : ChannelScaler, optional
        Min-max normalisation to apply to ``value``.
    """

    def __init__(self, frame: pd.DataFrame, channels: list[str], task: TaskConfig, seed: int = 0,
                 scaler: ChannelScaler | None = None) -> None:
        self.task, self.seed = task, seed
        # origin mode: the classical forecaster whose value is each query's offset b(q)
        # (levy_core.offsets.base_forecast); None: the model's own (last value / season)
        self.base: BaseForecast | None = None
        self.channel_index = {c: i for i, c in enumerate(channels)}
        channel_codes, uniques = pd.factorize(frame["channel"])  # one pass over the strings
        unknown = set(uniques) - set(self.channel_index)
        if unknown:
            raise DataError(f"channels the model was not trained on: {sorted(unknown)[:5]}; "
                            "predict only channels present in the training data")
        codes = np.array([self.channel_index[c] for c in uniques], np.int64)[channel_codes]
        self.series: dict[str, SeriesArrays] = {}
        times, values = frame["time"].to_numpy(np.float64), frame["value"].to_numpy(np.float64)
        if scaler is not None:  # normalise here, by channel code (no second pass over strings)
            values = scaler.normalise_codes(values, codes, channels)  # its transform, then min-max
        for sid, idx in frame.groupby("series_id", sort=True).indices.items():
            self.series[str(sid)] = SeriesArrays(times[idx], codes[idx], values[idx], np.asarray(idx))

    def channel_sums(self, ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(sum, count) of each channel's normalised values over the series ``ids``, each (C,) float64."""
        n_channels = len(self.channel_index)
        total, count = np.zeros(n_channels), np.zeros(n_channels)
        for sid in ids:
            s = self.series[sid]
            np.add.at(total, s.channel, s.value)
            np.add.at(count, s.channel, 1.0)
        return total, count

    def channel_means(self, ids: list[str], fallback: float = 0.5) -> np.ndarray:
        """The mean normalised value of each channel over the series ``ids``, (C,) float32;
        ``fallback`` for a channel none of them observed."""
        total, count = self.channel_sums(ids)
        means = np.where(count > 0, total / np.maximum(count, 1.0), fallback)
        return means.astype(np.float32)

    def split_indices(self, series_id: str, rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(context, query) positions inside one series. ``rng=None``: the fixed hold-out."""
        s = self.series[series_id]
        n = len(s.time)
        if self.task.kind == "forecast":
            cutoff = self.task.series_cutoff(s.time) if n else 0.0  # resolved: one for all, or this series' own
            ctx = np.flatnonzero(s.time <= cutoff)
            end = np.inf if self.task.horizon is None else cutoff + self.task.horizon
            qry = np.flatnonzero((s.time > cutoff) & (s.time <= end))
            return ctx, qry
        if rng is None:
            rng = np.random.default_rng([self.seed, zlib.crc32(series_id.encode())])
        n_hold = int(round(self.task.holdout_fraction * n))
        if n < 2 or n_hold < 1:
            return np.arange(n), np.arange(0)
        n_hold = min(n_hold, n - 1)
        held = np.sort(rng.choice(n, size=n_hold, replace=False))
        return np.setdiff1d(np.arange(n), held), held

    def usable(self, series_ids: list[str]) -> list[str]:
        """Series with at least one context observation and one query."""
        out = []
        for sid in series_ids:
            if sid not in self.series:
                continue
            ctx, qry = self.split_indices(sid)
            if len(ctx) and len(qry):
                out.append(sid)
        return out

    def batch(self, series_ids: list[str], rng: np.random.Generator | None = None) -> tuple[Batch, list[np.ndarray]]:
        """Episodes of ``series_ids`` with their observed queries. Also returns, per series,
        the frame rows of the queries (to map predictions back)."""
        parts = []
        for sid in series_ids:
            s = self.series[sid]
            ctx, qry = self.split_indices(sid, rng)
            parts.append((sid, ctx, s.time[qry], s.channel[qry], s.value[qry], s.row[qry]))
        batch = self.collate([(sid, ctx, t, c) for sid, ctx, t, c, _, _ in parts],
                              targets=[p[4] for p in parts])
        return batch, [p[5] for p in parts]

    def query_batch(self, items: list[tuple[str, np.ndarray, np.ndarray]]) -> Batch:
        """Episodes with arbitrary queries: items of (series_id, query times, query channel codes);
        the context is the series' fixed-episode context (the held-out split's: evaluation,
        calibration, the band chart's grid). A user's queries, which see every observation
        before them, are built by ``levy_core.pipeline.query_context`` with `collate`."""
        return self.collate([(sid, self.split_indices(sid)[0], t, c) for sid, t, c in items])

    def collate(self, parts: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]],
                 targets: list[np.ndarray] | None = None) -> Batch:
        """Pad parts of (series_id, context positions, query times, query channel codes)."""
        B = len(parts)
        N = max(1, max(len(ctx) for _, ctx, _, _ in parts))
        M = max(1, max(len(t) for _, _, t, _ in parts))
        ctx_time = np.zeros((B, N), np.float32)
        ctx_channel = np.zeros((B, N), np.int64)
        ctx_value = np.zeros((B, N), np.float32)
        ctx_mask = np.zeros((B, N), np.float32)
        qry_time = np.zeros((B, M), np.float32)
        qry_channel = np.zeros((B, M), np.int64)
        qry_mask = np.zeros((B, M), np.float32)
        target = np.zeros((B, M), np.float32)
        offset = np.full((B, M), np.nan, np.float32) if self.base is not None else None
        for b, (sid, ctx, t, c) in enumerate(parts):
            s = self.series[sid]
            n, m = len(ctx), len(t)
            ctx_time[b, :n], ctx_channel[b, :n], ctx_value[b, :n] = s.time[ctx], s.channel[ctx], s.value[ctx]
            ctx_mask[b, :n] = 1.0
            qry_time[b, :m], qry_channel[b, :m] = t, c
            qry_mask[b, :m] = 1.0
            if targets is not None:
                target[b, :m] = targets[b]
            if offset is not None and m:
                offset[b, :m] = self.base.offsets(sid, t, c)
        t = torch.from_numpy
        return Batch(t(ctx_time), t(ctx_channel), t(ctx_value), t(ctx_mask), t(qry_time), t(qry_channel),
                     t(qry_mask), t(target) if targets is not None else None,
                     t(offset) if offset is not None else None)
