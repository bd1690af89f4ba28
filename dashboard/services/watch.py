"""Cached wrappers for the Watch panel: a replay of the data through ``levy_core.decisions.watch``.

The watch is honest on data the model neither trained nor calibrated on: on the data it was
fitted on, the test split is replayed (the test series, or the span of the test origins)
and the p-values are taken against the calibration split replayed the same way
(``levy_core.decisions.watch.calibrate_watch``); on other data (a saved model applied to new data),
every series, against the fit's own calibration scores (the panel says so). Typed cache
wrappers keyed by the fit key; the view gets the series, channels, steps and counts ready to
lay out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from levy_dashboard.data import user_clock
from levy_dashboard.fitting.fits import FitResult

from levy_core.data import DataError
from levy_core.decisions.watch import WatchCalibration, calibrate_watch, watch
from levy_core.decisions.watch_calibration import watched_part

__all__ = ["ALPHAS", "Replay", "replay", "series_frames", "watch_calibration"]

ALPHAS = (0.001, 0.005, 0.01, 0.05, 0.1)


@dataclass(frozen=True)
class Replay:
    """One replay of the watched part of the data at one α.

    Attributes
    ----------
    rows : DataFrame
        ``levy_core.decisions.watch.WATCH_COLUMNS`` plus ``when`` (the user's clock), series then time.
    alpha : float
    watched : str
        What was replayed, in words.
    calibration : str
        Where the p-values' calibration scores come from, in words.
    calibrated : bool
        The scores are one-step-ahead scores of held-out data (valid p-values).
    summary : str
        The flag rate against α with its between-series window.
    """

    rows: pd.DataFrame
    alpha: float
    watched: str
    calibration: str
    calibrated: bool
    summary: str

    def series(self) -> list[str]:
        """Watched series, most flags first (ties: natural order of appearance)."""
        counts = self.rows.groupby("series_id", sort=False)["flagged"].sum()
        return [str(s) for s in counts.sort_values(ascending=False, kind="stable").index]

    def channels(self, series_id: str) -> list[str]:
        """The channels of one watched series, most flags first (ties: by name)."""
        rows = self.rows
        names = sorted(rows.loc[rows["series_id"] == series_id, "channel"].unique())
        flagged = rows[(rows["series_id"] == series_id) & rows["flagged"]]["channel"].value_counts()
        return sorted(names, key=lambda c: -int(flagged.get(c, 0)))

    def steps(self, series_id: str) -> list[float]:
        """The replay's time steps of one series (hours), oldest first."""
        return sorted(self.rows.loc[self.rows["series_id"] == series_id, "time"].unique())

    def so_far(self, series_id: str, upto: float) -> tuple[int, int, float | None]:
        """(observations flagged, observations scored, their flag rate or None) of one series
        up to replay time ``upto`` (hours)."""
        mine = self.rows[(self.rows["series_id"] == series_id) & (self.rows["time"] <= upto)]
        return int(mine["flagged"].sum()), len(mine), (float(mine["flagged"].mean()) if len(mine) else None)


@st.cache_resource(show_spinner=False, max_entries=8)
def watch_calibration(key: str, _res: FitResult) -> WatchCalibration | None:
    """``calibrate_watch`` on the fit's calibration split; None on other data or a fit whose
    calibration part cannot be told apart (then the fit's own scores are used)."""
    if not _res.data.same_data:
        return None
    try:
        return calibrate_watch(_res.fitted, _res.obs)
    except DataError:
        return None


@st.cache_data(show_spinner=False, max_entries=16)
def replay(key: str, _res: FitResult, alpha: float) -> Replay:
    """``levy_core.decisions.watch.watch`` over the watched part of the data at ``alpha``."""
    cal = watch_calibration(key, _res)
    part, start, watched = watched_part(_res.fitted, _res.obs)
    result = watch(_res.fitted, part, alpha=alpha, calibration=cal, start=start)
    rows = result.frame.copy()
    rows["when"] = user_clock.display_times(_res.obs, rows["series_id"].to_numpy(), rows["time"].to_numpy()).to_numpy()
    return Replay(rows, alpha, watched, result.calibration, cal is not None, result.summary())


def series_frames(rep: Replay, series_id: str, channel: str, upto: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the chart shows at replay time ``upto`` (hours): the channel's scored rows of one
    series up to then, and the running flag rate over the replay's time steps (this series,
    every channel; and every watched series) with columns ``time, when, series_rate,
    all_rate``."""
    rows = rep.rows
    mine = rows[rows["series_id"] == series_id]
    shown = mine[(mine["channel"] == channel) & (mine["time"] <= upto)]
    steps = np.unique(mine["time"].to_numpy())
    steps = steps[steps <= upto]
    def running(frame: pd.DataFrame) -> np.ndarray:
        t = np.sort(frame["time"].to_numpy())
        f = frame.sort_values("time", kind="stable")["flagged"].to_numpy()
        n = np.searchsorted(t, steps, side="right")
        flags = np.concatenate([[0], np.cumsum(f)])[n]
        return np.where(n > 0, flags / np.maximum(n, 1), 0.0)
    when = mine.drop_duplicates("time").set_index("time")["when"].reindex(steps).to_numpy()
    rate = pd.DataFrame({"time": steps, "when": when, "series_rate": running(mine), "all_rate": running(rows)})
    return shown, rate
