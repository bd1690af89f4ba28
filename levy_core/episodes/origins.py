"""Few-series forecasting on rolling forecast origins.

A user with one series or a few has no population of series to split; each series' own
past supplies the episodes. An **origin** ``o`` is a time at which a forecast is made: its
episode holds the observations in ``[o − history, o]`` as context and those in
``(o, o + horizon]`` as the queries, with time relative to ``o`` (the model's time 0 is
always "now"). Origins run along each series every ``stride`` hours; ordered in time they
are split chronologically — the earliest train (the last sixth of those pick the epoch),
later ones calibrate, the latest test — so nothing is tested before what it was trained on,
and no training target lies at or after the first calibration origin.

Each series also has an **end** episode, at its last observation: the context a forecast
beyond the end of the data starts from.

In the model's series space an episode is the pseudo-series ``"<id>@<k>"`` (``k`` the
origin's index along the series) or ``"<id>@end"``; `OriginClock` maps them back to
the user's ids and clock and is the only code that knows the naming.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd

from levy_core.data import DataError
from levy_core.data.durations import say_duration

__all__ = ["END", "MAX_ORIGINS_PER_SERIES", "OriginClock", "OriginPlan", "plan_origins"]

END = "end"  # the end episode's origin label
MAX_ORIGINS_PER_SERIES = 300  # the stride grows past the sampling interval beyond this
MIN_ORIGINS = 10  # fewer cannot be split into train / calibration / test
DEFAULT_HORIZON_SHARE = 0.1  # of the median series span, when the user names no horizon
MIN_CONTEXT_GAPS = 20  # the history holds at least this many median sampling intervals


@dataclass(frozen=True)
class OriginPlan:
    """How episodes are cut from a series' past (hours)."""

    history: float  # context before each origin
    horizon: float  # queries after it
    stride: float  # between consecutive origins of a series

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> OriginPlan:
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown origin-plan keys {unknown}")
        plan = cls(**{k: float(v) for k, v in data.items()})
        if not all(math.isfinite(v) and v > 0 for v in (plan.history, plan.horizon, plan.stride)):
            raise ValueError(f"history, horizon and stride must be finite and > 0, got {plan}")
        return plan


def _median_gap(frame: pd.DataFrame) -> float:
    times = frame[["series_id", "time"]].drop_duplicates().sort_values(["series_id", "time"])
    gaps = times.groupby("series_id")["time"].diff().dropna().to_numpy()
    gaps = gaps[gaps > 0]
    return float(np.median(gaps)) if gaps.size else 0.0


def plan_origins(frame: pd.DataFrame, horizon: float | None = None,
                 history: float | None = None, *, clock: str = "hours") -> OriginPlan:
    """The default plan for ``frame`` (columns series_id, time): a horizon of a tenth of the
    median series span unless given, a history of at least twice the horizon and
    ``MIN_CONTEXT_GAPS`` sampling intervals (at most half the span), origins every sampling
    interval (further apart beyond ``MAX_ORIGINS_PER_SERIES``). ``DataError`` when the
    series are too short to give ``MIN_ORIGINS`` origins, its durations said on the data's
    ``clock`` (`say_duration`: ``"days"`` → "378 days", ``"datetime"`` → "1 year")."""
    spans = frame.groupby("series_id")["time"].agg(lambda t: t.max() - t.min())
    span = float(spans.max())
    gap = _median_gap(frame)
    if not span > 0 or not gap > 0:
        raise DataError("every series spans a single instant: there is no past to learn a forecast from; "
                        "provide observations at different times")
    horizon = float(horizon) if horizon is not None else max(DEFAULT_HORIZON_SHARE * float(spans.median()), gap)
    if not (math.isfinite(horizon) and horizon > 0):
        raise DataError(f"the forecast horizon must be a positive duration, got {horizon}")
    history = float(history) if history is not None else min(max(2 * horizon, MIN_CONTEXT_GAPS * gap), span / 2)
    room = span - history - horizon
    if room <= 0:
        raise DataError(f"the longest series spans {say_duration(span, clock)}: too short for "
                        f"{say_duration(history, clock)} of history and a {say_duration(horizon, clock)} horizon; "
                        "shorten the horizon or provide a longer series")
    stride = max(gap, room / MAX_ORIGINS_PER_SERIES)
    if room / stride + 1 < MIN_ORIGINS:
        raise DataError(f"with a {say_duration(horizon, clock)} horizon and {say_duration(history, clock)} of "
                        f"history the series give fewer than {MIN_ORIGINS} forecast origins; shorten the horizon "
                        "or provide a longer series")
    return OriginPlan(history, horizon, stride)


@dataclass(frozen=True)
class OriginClock:
    """Model-space episodes of the user's series under one `OriginPlan`.

    ``origins`` maps each model id to (user series id, origin time in the user's hours);
    it is rebuilt from the data and the plan, so the same data always gives the same ids.
    """

    plan: OriginPlan
    origins: dict[str, tuple[str, float]]

    @classmethod
    def of(cls, plan: OriginPlan, frame: pd.DataFrame) -> OriginClock:
        origins: dict[str, tuple[str, float]] = {}
        for sid, times in frame.groupby("series_id", sort=True)["time"]:
            sid = str(sid)
            start, end = float(times.min()) + plan.history, float(times.max()) - plan.horizon
            for k, o in enumerate(np.arange(start, end + 1e-9 * max(1.0, abs(end)), plan.stride)):
                origins[f"{sid}@{k}"] = (sid, float(o))
            origins[f"{sid}@{END}"] = (sid, float(times.max()))
        return cls(plan, origins)

    def rolling(self) -> list[str]:
        """The rolling-origin episodes (not the end ones), in time order (ties by id)."""
        ids = [m for m in self.origins if not m.endswith(f"@{END}")]
        return sorted(ids, key=lambda m: (self.origins[m][1], m))

    @property
    def windowed(self) -> bool:
        return True  # model ids are pseudo-series, never the user's

    def frame_to_model(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Every episode's observations with time relative to its origin: the context
        ``[o − history, o]`` and, for rolling origins, the queries ``(o, o + horizon]``."""
        # each episode's rows found by bisection in its series' sorted times and taken in one
        # ``iloc`` (a mask and an ``assign`` per origin took 12 s of a few test files)
        by_series = {str(s): rows for s, rows in frame.groupby("series_id", sort=True).indices.items()}
        times = frame["time"].to_numpy()
        sorted_times: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        takes, model_ids, origins, counts = [], [], [], []
        for model_id, (sid, o) in self.origins.items():
            rows = by_series.get(sid)
            if rows is None:
                continue
            if sid not in sorted_times:
                order = np.argsort(times[rows], kind="stable")
                sorted_times[sid] = (times[rows][order], rows[order])
            t, at = sorted_times[sid]
            end = o if model_id.endswith(f"@{END}") else o + self.plan.horizon
            lo, hi = np.searchsorted(t, o - self.plan.history, "left"), np.searchsorted(t, end, "right")
            takes.append(np.sort(at[lo:hi]))  # in the frame's order, as a mask would keep them
            model_ids.append(model_id)
            origins.append(o)
            counts.append(hi - lo)
        if not takes:
            return frame.iloc[:0].reset_index(drop=True)
        take = np.concatenate(takes)
        out = frame.iloc[take].assign(series_id=np.repeat(np.array(model_ids, dtype=object), counts),
                                      time=times[take] - np.repeat(np.array(origins, dtype=np.float64), counts))
        return out.sort_values(["series_id", "time", "channel"], kind="stable").reset_index(drop=True)

    def queries_to_model(self, queries: pd.DataFrame) -> pd.DataFrame:
        """Each query (user ids and clock) answered from the latest origin at or before its
        time (the end episode past the data's end), time relative to that origin."""
        out = queries.copy()
        ids = out["series_id"].astype(str).to_numpy()
        times = out["time"].to_numpy(np.float64)
        table = pd.DataFrame([(m, s, o) for m, (s, o) in self.origins.items()], columns=["model", "sid", "origin"])
        unknown = sorted(set(ids) - set(table["sid"]))
        if unknown:
            raise DataError(f"queries name series with no observations in the data: {unknown[:5]}")
        model_ids, rel = np.empty(len(ids), dtype=object), np.empty(len(ids))
        for sid, g in table.groupby("sid"):
            g = g.sort_values(["origin", "model"], kind="stable")
            rows = np.flatnonzero(ids == sid)
            pick = np.clip(np.searchsorted(g["origin"].to_numpy(), times[rows], side="right") - 1, 0, None)
            model_ids[rows] = g["model"].to_numpy()[pick]
            rel[rows] = times[rows] - g["origin"].to_numpy()[pick]
        out["series_id"], out["time"] = model_ids, rel
        return out

    def to_user(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A model-space frame (columns series_id, time) in the user's ids and clock."""
        out = frame.copy()
        pairs = [self.origins[str(m)] for m in out["series_id"]]
        out["series_id"] = [s for s, _ in pairs]
        out["time"] = np.array([o for _, o in pairs], dtype=np.float64) + out["time"].to_numpy(np.float64)
        return out

    def end_episode(self, series_id: str, model_ids: set[str] | None = None) -> tuple[str, float]:
        """The end episode of a user series and the user time of its model time 0 (the
        series' last observation): where a forecast beyond the end of the data starts."""
        model_id = f"{series_id}@{END}"
        if model_id not in self.origins:
            raise DataError(f"series {series_id!r} has no observations in the data")
        return model_id, self.origins[model_id][1]

    def user_series(self, model_ids: list[str]) -> list[str]:
        """The user series each model id belongs to."""
        return [self.origins[m][0] for m in model_ids]
