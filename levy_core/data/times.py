"""Reading a time column: numbers in a unit, elapsed ``HH:MM[:SS]`` clocks, or date-times.

Numbers are converted to hours and never shifted. Date-times are kept as UTC stamps
until the series are known, because they become hours since each series' first
observation (`hours_since_first`). `to_utc_stamps` also serves `levy_core.data.clock`, which reads query times
the way data times are read (which cells carry a time zone: `levy_core.data.dates.time_zone_mask`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
import pandas as pd

from levy_core.data.cells import parse_numbers
from levy_core.data.dates import (
    GIVEN_ORDER,
    DayOrder,
    read_datetimes,
    refuse_out_of_range_stamps,
    time_zone_mask,
)
from levy_core.data.decimals import refuse_decimal_commas
from levy_core.data.errors import DataError
from levy_core.data.messages import count, describe_lines

TIME_UNITS: dict[str, float] = {
    "hours": 1.0,
    "minutes": 1.0 / 60.0,
    "seconds": 1.0 / 3600.0,
    "days": 24.0,
}
"""Accepted ``time_unit`` values and their length in hours."""

DATETIME = "datetime"
"""The input unit (`LoadReport.input_time_unit`) of a date-time column."""

CLOCK_RE: re.Pattern[str] = re.compile(r"^\d+:\d{1,2}(:\d{1,2}(\.\d+)?)?$")
"""An elapsed clock time ``HH:MM`` or ``HH:MM:SS`` (hours may exceed 23), stripped text."""


class ParsedTime(NamedTuple):
    """A time column as read by `parse_time`."""

    hours: np.ndarray
    """float64 hours (NaN where missing); all NaN for date-times."""
    stamps: pd.Series | None
    """UTC date-times (NaT where missing), index ``0..n-1``; None for numeric time."""
    missing: np.ndarray
    """bool; empty time cells."""
    notes: list[str]
    """Messages for the [`LoadReport`][levy_core.data.LoadReport]."""
    input_unit: str = "hours"
    """The column's own unit: a key of [`TIME_UNITS`][levy_core.data.TIME_UNITS], or "datetime" for date-times
    (elapsed ``HH:MM`` clocks are "hours")."""
    has_offsets: bool | None = None
    """Date-times only: whether any cell carried a time-zone designation (an offset, Z or
    UTC); None for numeric time."""
    day_order: DayOrder | None = None
    """Date-times written as numbers (02/01/2024): the order of day and month they were
    read in; None otherwise."""


EPOCH_SECONDS: tuple[float, float] = (3e8, 4.2e9)
"""Numbers in this range, in seconds, are Unix epoch times from 1979 to 2103; the same
range times 1e3 and 1e9 are epoch milliseconds and nanoseconds (``int64`` pandas
date-times). As hours, minutes or days they would be tens of thousands of years.
(Microseconds, 3e14 to 4.2e15, are not recognised: such large numbers of hours are
refused anyway unless their gaps are as large, see `levy_core.data.ranges`.)"""
_EPOCH_UNITS = (("seconds", 1.0, "s"), ("milliseconds", 1e3, "ms"), ("nanoseconds", 1e9, "ns"))


def parse_time(col: pd.Series, name: str, lines: np.ndarray, time_unit: str, *, dayfirst: bool | None = None,
               date_format: str | None = None, known: DayOrder | None = None) -> ParsedTime:
    """Read a time column as numbers, clock times or date-times, whichever it holds.

    Parameters
    ----------
    col : pandas.Series
        The time cells (text or typed).
    name : str
        Column name, for messages.
    lines : numpy.ndarray
        CSV line number of each cell, for messages.
    time_unit : str
        A key of [`TIME_UNITS`][levy_core.data.TIME_UNITS]: the unit of numeric time.
    dayfirst, date_format, known
        How dates written as numbers are read (see
        `read_datetimes`): inferred from the column when
        neither is given.

    Returns
    -------
    ParsedTime

    Raises
    ------
    DataError
        Every cell empty; a mostly numeric column with a non-number; numbers that are
        Unix epoch times (unless read as seconds); cells that are neither numbers nor
        date-times; or date-times refused by
        `read_datetimes`.
    """
    if pd.api.types.is_datetime64_any_dtype(col):
        refuse_out_of_range_stamps(col, name, lines)
        stamps = pd.to_datetime(col, utc=True)
        missing = stamps.isna().to_numpy()
        return ParsedTime(
            np.full(len(col), np.nan), stamps.reset_index(drop=True), missing, [],
            DATETIME, has_time_zone(col),
        )

    values, missing, bad = parse_numbers(col)
    present = ~missing
    n_present = int(present.sum())
    if n_present == 0:
        raise DataError(
            f"Column {name!r} (time) is empty on every row. Fill in the observation "
            "times (numbers in hours, or date-times such as 2024-01-31 14:05)."
        )
    if int((present & ~bad).sum()) * 2 >= n_present:  # mostly numbers: the others are typos
        if bad.any():
            idx = np.flatnonzero(bad)
            raise DataError(
                f"Column {name!r} (time) holds numbers, but some cells are not finite "
                f"numbers: {describe_lines(lines[idx], col.iloc[idx].tolist())}. "
                "Correct or delete those rows; all times must be numbers in the same unit."
            )
        _refuse_epochs(values, present, col, name, lines, time_unit)
        notes = []
        if time_unit != "hours":
            notes.append(f"time column {name!r} read as numbers in {time_unit}")
        with np.errstate(over="ignore"):
            hours = values * TIME_UNITS[time_unit]
        _refuse_overflow(hours, present, col, name, lines)
        return ParsedTime(hours, None, missing, notes, time_unit)

    text = col.astype(str).str.strip()[present]
    if text.str.match(CLOCK_RE).all():
        return _parse_clock(text, present, name)
    refuse_decimal_commas(col, present, name, "time", lines)
    return _parse_datetimes(col, present, name, lines, time_unit, dayfirst, date_format, known)


def _refuse_epochs(values: np.ndarray, present: np.ndarray, col: pd.Series, name: str, lines: np.ndarray,
                   time_unit: str) -> None:
    """Refuse numbers that are Unix epoch times (seconds since 1970 and finer) unless they
    are read as seconds: 1.7e9 taken as hours is 190,000 years."""
    median = float(np.median(values[present]))
    for unit, per_second, code in _EPOCH_UNITS:
        lo, hi = EPOCH_SECONDS[0] * per_second, EPOCH_SECONDS[1] * per_second
        if not lo <= median <= hi or (unit == "seconds" and time_unit == "seconds"):
            continue
        first = int(np.flatnonzero(present)[0])
        when = pd.Timestamp(int(median / per_second), unit="s", tz="UTC")
        keep = ("pass --time-unit seconds (time_unit='seconds') to read them as seconds" if unit == "seconds"
                else f"divide them by {per_second:,.0f} and pass --time-unit seconds (time_unit='seconds')")
        years = median * TIME_UNITS[time_unit] / (24 * 365.2425)
        raise DataError(
            f"Column {name!r} (time) holds numbers such as {describe_lines(lines[first:first + 1], [col.iloc[first]])} "
            f"that look like Unix epoch {unit} (around {when:%Y-%m-%d}), not {time_unit}: as {time_unit} they "
            f"would be {years:,.0f} years. Convert them to date-times "
            f"(pandas.to_datetime(df[{name!r}], unit={code!r})), or {keep}."
        )


def _refuse_overflow(
    hours: np.ndarray, present: np.ndarray, col: pd.Series, name: str, lines: np.ndarray
) -> None:
    """Refuse finite times that overflow once converted to hours (1e307 days)."""
    with np.errstate(invalid="ignore"):
        over = np.flatnonzero(present & ~np.isfinite(hours))
    if over.size:
        raise DataError(
            f"Column {name!r} (time) has {count(over.size, 'time')} too large to be counted "
            f"in hours: {describe_lines(lines[over], col.iloc[over].tolist())}. Subtract an "
            "offset so that times start near 0, or correct those times."
        )


def _parse_clock(text: pd.Series, present: np.ndarray, name: str) -> ParsedTime:
    """Elapsed ``HH:MM[:SS]`` (e.g. PhysioNet's "47:30") as hours since zero."""
    parts = text.str.split(":", expand=True).astype("float64")
    seconds = parts[2] if parts.shape[1] > 2 else 0.0
    hours = np.full(len(present), np.nan)
    hours[present] = (parts[0] + parts[1] / 60.0 + seconds / 3600.0).to_numpy(
        dtype="float64", na_value=np.nan
    )
    note = f"time column {name!r} read as elapsed hours:minutes since 0"
    return ParsedTime(hours, None, ~present, [note])


def _parse_datetimes(
    col: pd.Series, present: np.ndarray, name: str, lines: np.ndarray, time_unit: str,
    dayfirst: bool | None, date_format: str | None, known: DayOrder | None,
) -> ParsedTime:
    """Date-times in one format per column, converted to UTC (no offset: taken as UTC;
    offsets on some cells only: refused)."""
    notes = []
    if time_unit != "hours":
        notes.append(f"time_unit={time_unit!r} ignored: column {name!r} holds date-times")
    raw = col.where(present, None).reset_index(drop=True)
    read = read_datetimes(raw, name, lines, dayfirst=dayfirst, date_format=date_format, known=known)
    stamps = read.stamps
    if read.order is not None and read.order.evidence != GIVEN_ORDER:
        notes.append(f"dates in column {name!r} read {'day' if read.order.dayfirst else 'month'} first, as "
                     f"{read.order.evidence} shows")
    failed = np.flatnonzero(stamps.isna().to_numpy() & present)
    if failed.size:
        raise DataError(
            f"Column {name!r} (time): could not read {count(failed.size, 'value')} as numbers or "
            f"date-times: {describe_lines(lines[failed], col.iloc[failed].tolist())}. "
            "Use numbers (hours) or ISO date-times such as 2024-01-31 14:05 or "
            "2024-01-31T14:05:00+01:00, and correct or delete those rows."
        )
    return ParsedTime(
        np.full(len(col), np.nan), stamps.reset_index(drop=True), ~present, notes,
        DATETIME, has_time_zone(raw[present]), read.order,
    )


def to_utc_stamps(raw: pd.Series) -> pd.Series:
    """Cells read as UTC date-times, NaT where empty or unreadable (never raises).

    ISO 8601 first (fast, and mixed offsets and precisions), then anything else
    `pandas.to_datetime` understands, cell by cell; times without an offset are
    taken as UTC.

    Parameters
    ----------
    raw : pandas.Series
        Text, date-time objects or a date-time column; None / NaN for empty cells.

    Returns
    -------
    pandas.Series
        ``datetime64[ns, UTC]`` (or finer), same index as ``raw``.
    """
    if pd.api.types.is_datetime64_any_dtype(raw):
        return pd.to_datetime(raw, utc=True)
    stamps = pd.to_datetime(raw, utc=True, format="ISO8601", errors="coerce")
    failed = np.flatnonzero(stamps.isna().to_numpy() & raw.notna().to_numpy())
    if failed.size:
        stamps.iloc[failed] = pd.to_datetime(
            raw.iloc[failed], utc=True, format="mixed", errors="coerce"
        )
    return stamps


def has_time_zone(col: pd.Series) -> bool:
    """Whether any date-time cell carries a time zone (see `time_zone_mask`).

    Parameters
    ----------
    col : pandas.Series
        The date-time cells (empty cells are ignored).

    Returns
    -------
    bool
    """
    return bool(time_zone_mask(col).any())


def hours_since_first(
    stamps: pd.Series, series: np.ndarray
) -> tuple[np.ndarray, dict[str, pd.Timestamp]]:
    """Date-times as hours since the first observation of their series.

    Parameters
    ----------
    stamps : pandas.Series
        UTC date-times of the kept observations (no NaT).
    series : numpy.ndarray
        Series id of each observation, same length.

    Returns
    -------
    hours : numpy.ndarray
        float64 hours since each series' first observation.
    origin : dict of str to pandas.Timestamp
        Series id -> UTC time of its first observation (time 0).
    """
    stamps = stamps.reset_index(drop=True)
    series_ids = pd.Series(series, dtype=object)
    first = stamps.groupby(series_ids.to_numpy()).min()
    # in microseconds: nanosecond differences overflow past 292 years (sunspots since 1700); the
    # hour too, or pandas 2.x divides in the divisor's nanoseconds and overflows all the same
    start = pd.to_datetime(series_ids.map(first), utc=True).dt.as_unit("us")
    hour = pd.Timedelta(hours=1).as_unit("us")
    hours = ((stamps.dt.as_unit("us") - start) / hour).to_numpy(dtype="float64")
    return hours, {str(k): pd.Timestamp(v) for k, v in first.items()}
