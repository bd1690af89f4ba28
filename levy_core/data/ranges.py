"""Numbers too large for what is done with them: values and times.

**Values.** The model computes in 32-bit floating point: each channel min-max scaled to
``[0, 1]`` (float64, then float32), so training copes with any range float32 holds, and
predictions put back in the data's own units (float64), where some of what is reported
is quadratic in the range: the disagreement ``(max - min)² · d``, squared errors and
their sums over all observations. Values are bounded by ``±MAX_ABS_VALUE``, float32's
largest number (``3.4e38``): a value beyond it cannot be held by the model at all (a
decimal of 9.99e69 in Parquet, 1e50 in a CSV), and is refused as it is read, naming the
column, the value and the range. Within it, a squared difference of two values is at
most ``(6.8e38)² = 4.6e77`` and a sum of `MAX_ROWS` of them
``9.3e83``: far below float64's largest number (``1.8e308``). No measurement in any unit
comes near 1e38, so a bigger value is a mistake or a placeholder. (Data that a model
meets are also checked against the range it was trained on, once scaled:
`levy_core.episodes.scaling.ChannelScaler.transform`.)

**Times.** The model works in 32-bit floating point on times in hours as the
[`Observations`][levy_core.data.Observations] hold them (numbers as given, date-times as hours
since each series' first observation). A float32 has 24 significant bits: next to a
time ``t`` the nearest other float32 is about ``t / 8,400,000`` away. A series whose
times are so large (far from 0) that this step exceeds half the typical gap between
its observations (the median gap between consecutive distinct times) loses the order
and spacing of its observations: gaps become 0 or a multiple of the step. Such series
are refused (`refuse_unresolvable_times`), with what to do: subtract an offset so
that times start near 0 (numbers), or split a series that spans too many orders of
magnitude (date-times). Smaller rounding is harmless next to the model's own length
scales and is not mentioned.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from levy_core.data.errors import DataError
from levy_core.data.messages import count, describe_lines, quote_list

MAX_ABS_VALUE: float = float(np.finfo(np.float32).max)
"""Largest magnitude of a value accepted: float32's largest number, about 3.4e38, the
range the model computes in (see the module's notes)."""

FLOAT32_GAP_FRACTION: float = 0.5
"""A series is refused when float32's step at its largest ``|time|`` exceeds this
fraction of its median gap between consecutive distinct times."""


def refuse_huge_values(
    values: np.ndarray, col: pd.Series, name: str, role: str, lines: np.ndarray
) -> None:
    """Refuse finite values beyond ``±MAX_ABS_VALUE``.

    Parameters
    ----------
    values : numpy.ndarray
        float64 values of the column's cells (NaN where blank).
    col : pandas.Series
        The cells as given, quoted in the message.
    name : str
        Column name.
    role : str
        "value" or "channel", for the message.
    lines : numpy.ndarray
        CSV line number of each cell.

    Raises
    ------
    DataError
        Naming the first lines and saying what to do.
    """
    with np.errstate(invalid="ignore"):
        huge = np.abs(values) > MAX_ABS_VALUE
    if huge.any():
        idx = np.flatnonzero(huge)
        raise DataError(
            f"Column {name!r} ({role}) has {count(idx.size, 'value')} beyond ±{MAX_ABS_VALUE:.2g}, "
            "the range of the 32-bit floating point numbers the model computes in: "
            f"{describe_lines(lines[idx], col.iloc[idx].tolist())}. Correct those cells (a "
            "placeholder for a missing value should be left blank), or give the column in a "
            "larger unit."
        )


def refuse_unresolvable_times(frame: pd.DataFrame, time_name: str, from_datetimes: bool) -> None:
    """Refuse series whose times float32 cannot tell apart (see the module's notes).

    Parameters
    ----------
    frame : pandas.DataFrame
        Observations sorted by ``(series_id, time, channel)``, time in hours.
    time_name : str
        The time column's name, for the message.
    from_datetimes : bool
        Whether times came from date-times (hours since each series' first observation),
        which changes what to do.

    Raises
    ------
    DataError
        Naming the first series, their largest time, float32's step there and their
        median gap.
    """
    if frame.empty:
        return
    t = frame["time"].to_numpy(dtype=np.float64)
    codes = pd.factorize(frame["series_id"])[0]  # the frame is sorted: one run per series
    distinct = np.r_[True, (codes[1:] != codes[:-1]) | (t[1:] != t[:-1])]
    t, codes = t[distinct], codes[distinct]
    same = codes[1:] == codes[:-1]
    if not same.any():
        return  # no series has two distinct times
    median_gap = pd.Series(np.diff(t)[same]).groupby(codes[1:][same]).median()
    largest = pd.Series(np.abs(t)).groupby(codes).max().loc[median_gap.index]
    with np.errstate(over="ignore", invalid="ignore"):
        step = np.spacing(largest.to_numpy().astype(np.float32)).astype(np.float64)
    bad = ~np.isfinite(step) | (step > FLOAT32_GAP_FRACTION * median_gap.to_numpy())
    if bad.any():
        ids = pd.unique(frame["series_id"])
        first = int(np.flatnonzero(bad)[0])
        sid, big = ids[median_gap.index[first]], float(largest.iloc[first])
        gap, stp = float(median_gap.iloc[first]), float(step[first])
        what = (
            "Split such series into shorter ones, or average observations closer together "
            f"than {stp:.3g} hours." if from_datetimes else
            "Subtract an offset so that each series' times start near 0 (e.g. subtract the "
            "first time of each series), or give date-times, which are counted from each "
            "series' first observation."
        )
        others = [str(ids[i]) for i in median_gap.index[bad][1:]]
        more = f" (also series {quote_list(others)})" if others else ""
        raise DataError(
            f"Column {time_name!r} (time): series {str(sid)!r}{more} has times up to "
            f"{big:.3g} hours, where 32-bit floating point, in which the model computes, "
            f"cannot tell apart times less than {stp:.3g} hours apart, but its observations "
            f"are typically {gap:.3g} hours apart (median gap): their order and spacing "
            f"would be lost. {what}"
        )
