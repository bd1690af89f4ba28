"""The season of a few series: the lag at which their changes repeat.

A fit on rolling origins (one series or a few) may carry a season in its deterministic
offset (``ModelConfig.season``: the value one season before the query, the seasonal naive
forecast, in place of the last value). :func:`detect_season` finds it from the training
part: each channel is put on a regular grid at the median sampling interval, differenced
(a trend would otherwise dominate the autocorrelation; cells are at least a hundredth of the
longest period looked for, so that each averages several noisy observations) and its autocorrelation averaged
over the channels; the season is the shortest lag whose local maximum rises from the trough before it by
``FIRST_PEAK_SHARE`` of the largest such rise (a season's multiples repeat it too), between ``MIN_PERIOD_GAPS`` sampling
intervals and ``max_period``, and only when that autocorrelation clears both
``MIN_AUTOCORRELATION`` and ``NOISE_SE`` standard errors of an autocorrelation of white
noise (``1/√n``: with many lags tested, chance peaks of 2 s.e. are common). A period within
8 % of a calendar one (a day, a week, a month, a year) is taken to be that one: the grid
only resolves it to a sampling interval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["FIRST_PEAK_SHARE", "MIN_AUTOCORRELATION", "MIN_PERIOD_GAPS", "NOISE_SE", "autocorrelation",
           "detect_season", "snap_to_calendar"]

MIN_AUTOCORRELATION = 0.2  # below this the repetition is too weak to forecast from
MIN_PERIOD_GAPS = 3  # a season spans at least this many sampling intervals
FIRST_PEAK_SHARE = 0.8  # the first peak this close to the highest is the season
NOISE_SE = 4.0  # standard errors of a white-noise autocorrelation a season must clear
MAX_GRID = 20_000  # grid points per channel (coarser grids beyond)
GRID_PER_PERIOD = 100  # grid cells over the longest period looked for
CALENDAR_PERIODS = (1.0, 12.0, 24.0, 168.0, 365.2425 * 24 / 12, 365.2425 * 24)  # hour … month, year
CALENDAR_TOLERANCE = 0.08  # a detected period this close to one of them is that one


def autocorrelation(x: np.ndarray, max_lag: int) -> np.ndarray:
    """Sample autocorrelation of ``x`` (n,) at lags 0..max_lag, ignoring NaN pairs."""
    x = np.asarray(x, dtype=np.float64)
    x = x - np.nanmean(x)
    var = np.nanmean(x * x)
    out = np.full(max_lag + 1, np.nan)
    if not var > 0:
        return out
    for lag in range(max_lag + 1):
        a, b = x[: len(x) - lag], x[lag:]
        ok = np.isfinite(a) & np.isfinite(b)
        if ok.sum() >= 10:
            out[lag] = float(np.mean(a[ok] * b[ok]) / var)
    return out


def _gridded_changes(times: np.ndarray, values: np.ndarray, step: float) -> np.ndarray:
    """First differences of ``values`` on a regular grid of ``step`` (NaN where no
    observation falls in a cell: gaps are not interpolated)."""
    cells = np.floor((times - times.min()) / step).astype(np.int64)
    grid = np.full(int(cells.max()) + 1, np.nan)
    sums = np.bincount(cells, weights=values, minlength=grid.size)
    counts = np.bincount(cells, minlength=grid.size)
    grid[counts > 0] = sums[counts > 0] / counts[counts > 0]
    return np.diff(grid)


def detect_season(frame: pd.DataFrame, max_period: float) -> float | None:
    """The season (hours) of the series in ``frame`` (columns series_id, channel, time,
    value), or None when their changes do not repeat clearly within ``max_period``."""
    times = frame[["series_id", "time"]].drop_duplicates().sort_values(["series_id", "time"])
    gaps = times.groupby("series_id")["time"].diff().to_numpy()
    gaps = gaps[np.isfinite(gaps) & (gaps > 0)]
    if not gaps.size or not max_period > 0:
        return None
    span = float(frame["time"].max() - frame["time"].min())
    # cells averaging several observations: differences of single noisy observations a few
    # minutes apart would drown any season (GRID_PER_PERIOD cells still resolve it)
    step = max(float(np.median(gaps)), max_period / GRID_PER_PERIOD, span / MAX_GRID)
    max_lag = int(max_period / step)
    if max_lag < MIN_PERIOD_GAPS + 1:
        return None
    curves, n_changes = [], 0
    for _, g in frame.groupby(["series_id", "channel"]):
        if len(g) >= 4 * MIN_PERIOD_GAPS:
            changes = _gridded_changes(g["time"].to_numpy(), g["value"].to_numpy(), step)
            curves.append(autocorrelation(changes, max_lag))
            n_changes += int(np.isfinite(changes).sum())
    if not curves:
        return None
    stacked = np.vstack(curves)
    counts = np.isfinite(stacked).sum(axis=0)  # lags with too few pairs in every channel stay NaN
    acf = np.where(counts > 0, np.nansum(stacked, axis=0) / np.maximum(counts, 1), np.nan)
    threshold = max(MIN_AUTOCORRELATION, NOISE_SE / np.sqrt(max(n_changes, 1)))
    peaks = [lag for lag in range(MIN_PERIOD_GAPS, max_lag)
             if acf[lag] >= acf[lag - 1] and acf[lag] >= acf[lag + 1] and acf[lag] >= threshold]
    if not peaks:
        return None
    # a season's peak rises from a trough half a season before (a smooth signal's changes
    # also correlate over a few lags, without any trough): rank peaks by that rise
    rise = {lag: float(acf[lag] - np.nanmin(acf[1:lag])) for lag in peaks}
    highest = max(rise.values())
    first = next(lag for lag in peaks if rise[lag] >= FIRST_PEAK_SHARE * highest)
    return snap_to_calendar(first * step)


def snap_to_calendar(period: float) -> float:
    """A detected period (hours) on a grid of sampling intervals, snapped to the calendar
    period it approximates (a day, a week, a year, …) when within ``CALENDAR_TOLERANCE``."""
    nearest = min(CALENDAR_PERIODS, key=lambda p: abs(np.log(period / p)))
    return float(nearest) if abs(period / nearest - 1) <= CALENDAR_TOLERANCE else float(period)
