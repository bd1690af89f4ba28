"""The user's own clock: durations, query times read in, result times written out.

`Observations.frame` keeps time in hours: numbers converted from the input's unit,
date-times as hours since each series' first observation
(`LoadReport.time_origin`). People think in their own clock, so this module
translates both ways:

* durations (a horizon, a gap: ``"36h"``, ``"2 weeks"``) both ways live in
  `levy_core.data.durations`, the data's calendar (its ``freq``) in
  `levy_core.data.calendar`;
* `read_queries` -- a table of (series, channel, time) to forecast at, the times in
  the data's own clock (date-times for date-time data, numbers in the input unit
  otherwise), to hours on the frame's clock;
* [`to_user_time`][levy_core.data.to_user_time] and [`user_time_label`][levy_core.data.user_time_label] -- hours back to the user's clock
  (UTC date-times, or numbers in the input unit) and an axis title for them.

The unit factors are `TIME_UNITS`, the ones
[`read_csv`][levy_core.data.read_csv] converts with; date-times are read as
[`read_csv`][levy_core.data.read_csv] reads them (ISO 8601 or anything pandas understands, no
offset meaning UTC).
"""

from __future__ import annotations

import os
from typing import IO, Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from levy_core.data.cells import blank_mask, id_strings, missing_mask, parse_numbers
from levy_core.data.columns import CHANNEL_ALIASES, SERIES_ALIASES, TIME_ALIASES, find_alias
from levy_core.data.dates import read_datetimes, time_zone_mask
from levy_core.data.decimals import decimal_comma_mask, read_decimal_commas, refuse_decimal_commas
from levy_core.data.decode import decode_text, read_source, sniff_separator
from levy_core.data.durations import DAYS_PER_YEAR as DAYS_PER_YEAR  # re-exported: older imports
from levy_core.data.durations import duration_text as duration_text
from levy_core.data.durations import parse_duration as parse_duration
from levy_core.data.errors import DataError
from levy_core.data.frame import MAX_ROWS, require_filled
from levy_core.data.messages import count, csv_lines, describe_lines, quote_list
from levy_core.data.observations import Observations
from levy_core.data.reading import MAX_CELLS, check_text_shape, parse_csv_text
from levy_core.data.times import (
    CLOCK_RE,
    DATETIME,
    TIME_UNITS,
    to_utc_stamps,
)

MAX_DATETIME_HOURS = 1e8
"""Largest distance (hours) from a series' start that [`to_user_time`][levy_core.data.to_user_time] writes as a
date-time; beyond it a time is surely a mistake (and pandas date-times would overflow)."""

_DATETIME_EXAMPLE = "2024-01-31 14:05 or 2024-01-31T14:05:00+01:00"
_QUERIES = "the queries"
_ID_ROLES = (("series id", SERIES_ALIASES), ("channel", CHANNEL_ALIASES))


# --------------------------------------------------------------------------------------
# The user's unit
# --------------------------------------------------------------------------------------
def user_time_unit(obs: Observations) -> str:
    """The unit of the user's clock for these observations.

    Parameters
    ----------
    obs : Observations

    Returns
    -------
    str
        "datetime" when the data had date-times (the report has a ``time_origin``),
        otherwise `LoadReport.input_time_unit`, a key of
        [`TIME_UNITS`][levy_core.data.TIME_UNITS].

    Raises
    ------
    DataError
        A report that says "datetime" without a time origin, or an unknown unit (an
        [`Observations`][levy_core.data.Observations] built by hand: read data with ``read_csv``/``from_frame``).
    """
    report = obs.report
    if report.time_origin is not None:
        return DATETIME
    unit = report.input_time_unit
    if unit not in TIME_UNITS:
        raise DataError(
            f"The data's time unit is {unit!r} but no time origin is recorded, so times "
            "cannot be given in the data's own clock. Read the data with read_csv() or "
            "from_frame()."
        )
    return unit


def user_time_label(obs: Observations) -> str:
    """An axis title for times in the user's clock: "time (UTC)" or "time (days)".

    Parameters
    ----------
    obs : Observations

    Returns
    -------
    str
    """
    unit = user_time_unit(obs)
    return "time (UTC)" if unit == DATETIME else f"time ({unit})"


# --------------------------------------------------------------------------------------
# Result times
# --------------------------------------------------------------------------------------
def to_user_time(series_id: ArrayLike, hours: ArrayLike, obs: Observations) -> pd.Series:
    """Hours on the frame's clock back to the user's clock (the inverse of
    [`read_queries`][levy_core.data.read_queries]).

    Parameters
    ----------
    series_id : array-like of str, or str
        The series of each time (one id is used for all); only needed for date-time data,
        whose clock starts at each series' first observation.
    hours : array-like of float
        Times in hours, as in `Observations.frame` ``time``; NaN gives NaT / NaN.
    obs : Observations
        The data the hours belong to.

    Returns
    -------
    pandas.Series
        Named "time": UTC date-times (``pandas.Timestamp``, rounded to the microsecond)
        for date-time data, float numbers in `LoadReport.input_time_unit`
        otherwise. Index: that of ``hours`` (or of ``series_id``) when it is a Series,
        else ``0..n-1``.

    Raises
    ------
    DataError
        ``series_id`` and ``hours`` of different lengths; for date-time data, a series id
        that is not in the data, or a time more than [`MAX_DATETIME_HOURS`][levy_core.data.MAX_DATETIME_HOURS] from its
        series' start.
    """
    unit = user_time_unit(obs)
    h = np.asarray(hours, dtype=np.float64).reshape(-1)
    ids = _broadcast_ids(series_id, len(h))
    index = next((a.index for a in (hours, series_id) if isinstance(a, pd.Series)), None)
    if unit != DATETIME:
        return pd.Series(h / TIME_UNITS[unit], index=index, name="time")
    origin = obs.report.time_origin or {}
    unknown = sorted({s for s in ids if s not in origin})
    if unknown:
        raise DataError(
            f"Unknown series id(s) {quote_list(unknown)}: their times cannot be written as "
            f"date-times. Known ids include {quote_list(list(origin))}."
        )
    far = np.abs(h[np.isfinite(h)]) > MAX_DATETIME_HOURS
    if far.any():
        raise DataError(
            f"Times more than {MAX_DATETIME_HOURS:.0e} hours (about 11,000 years) from their "
            f"series' start cannot be written as date-times ({count(int(far.sum()), 'time')} "
            "given). Check the hours."
        )
    starts = pd.to_datetime(pd.Series(ids, dtype=object).map(origin), utc=True).dt.as_unit("us")
    # hours -> µs, built in µs: pandas 2.x's to_timedelta goes through nanoseconds and overflows past 292 years
    micro = np.round(h * 3.6e9)
    finite = np.isfinite(micro)
    offsets = pd.Series(np.where(finite, micro, 0).astype(np.int64).astype("timedelta64[us]")).where(finite)
    stamps = starts + offsets
    return pd.Series(stamps.array, index=index, name="time")


def _broadcast_ids(series_id: ArrayLike, n: int) -> np.ndarray:
    """Series ids as str objects, one per time (a single id repeated)."""
    if np.ndim(series_id) == 0:
        return np.full(n, str(series_id), dtype=object)
    ids = np.array([str(s) for s in np.asarray(series_id, dtype=object).reshape(-1)], dtype=object)
    if len(ids) != n:
        raise DataError(
            f"Got {len(ids):,} series ids for {n:,} times; give one series id per time."
        )
    return ids


# --------------------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------------------
def read_queries(
    source: str | os.PathLike[str] | IO[Any] | pd.DataFrame,
    obs: Observations,
    *,
    dayfirst: bool | None = None,
    date_format: str | None = None,
) -> pd.DataFrame:
    """Read the (series, channel, time) points to forecast at, in the user's clock.

    One query per row. Columns are found by name, as [`detect_mapping`][levy_core.data.detect_mapping] finds them
    (case-insensitive, `TIME_ALIASES`, `SERIES_ALIASES`,
    `CHANNEL_ALIASES`); other columns (a value column, notes) are ignored. The
    series column may be left out when the data have one series, the channel column
    when they have one channel.

    Times are in the data's own clock ([`user_time_unit`][levy_core.data.user_time_unit]):

    * date-time data: date-times, read as [`read_csv`][levy_core.data.read_csv] reads them and converted to
      hours since the query's series' first observation (`LoadReport.time_origin`).
      When the data's date-times carried time-zone offsets, every query date-time must
      carry one too (``Z`` for UTC), so that a local time is not silently taken as UTC;
      otherwise times without an offset are UTC, as in the data;
    * numeric data: numbers in `LoadReport.input_time_unit`, converted to hours with
      [`TIME_UNITS`][levy_core.data.TIME_UNITS].

    Date-times written as numbers (``02/01/2024``) are read in one order for the whole
    column, inferred from its rows (see `levy_core.data.dates`); when they cannot
    tell, in the order the data's dates showed (`LoadReport.day_order`), else
    refused as ambiguous unless ``dayfirst`` or ``date_format`` says.

    Whether the channels exist is not checked here (the model checks them); for
    date-time data, a query whose series is not in the data is refused by name, as there
    is no origin to count its time from.

    Parameters
    ----------
    source : str, path-like, file-like or pandas.DataFrame
        A CSV file (as [`read_csv`][levy_core.data.read_csv] accepts: plain or gzipped, comma, semicolon or
        tab separated) or a table (row ``i`` is reported as line ``i + 2``).
    obs : Observations
        The data the queries are about.
    dayfirst : bool, optional
        Query dates written as numbers are day first (True) or month first (False).
    date_format : str, optional
        A strptime format every query date-time must match, instead.

    Returns
    -------
    pandas.DataFrame
        Columns ``series_id`` (str), ``channel`` (str), ``time`` (float64 hours on the
        clock of ``obs.frame``), in the order of the input rows, index ``0..n-1``.

    Raises
    ------
    DataError
        An empty file or table, no time column, a series or channel column missing where
        the data have several, a role's column given twice, blank cells, or times that
        cannot be read in the data's clock (numbers for date-time data, date-times for
        numeric data, unreadable cells), naming the CSV lines (header = line 1).
    """
    unit = user_time_unit(obs)
    table = _query_table(source)
    lines = csv_lines(len(table))
    time_col, id_cols = _query_columns(table)
    series = _query_ids(table, id_cols[0], obs.series_ids, _ID_ROLES[0], lines)
    channel = _query_ids(table, id_cols[1], obs.channels, _ID_ROLES[1], lines)
    cells = table[time_col].reset_index(drop=True)
    require_filled(missing_mask(cells), str(time_col), "time", lines)
    if unit == DATETIME:
        hours = _datetime_query_hours(cells, series, str(time_col), lines, obs, dayfirst, date_format)
    else:
        hours = _numeric_query_hours(cells, str(time_col), lines, unit)
    return pd.DataFrame(
        {
            "series_id": pd.Series(series, dtype=str),
            "channel": pd.Series(channel, dtype=str),
            "time": np.asarray(hours, dtype=np.float64),
        }
    )


def _query_table(source: str | os.PathLike[str] | IO[Any] | pd.DataFrame) -> pd.DataFrame:
    """The queries as a table, its cells text for a file; refuses empty and repeated
    role columns."""
    if isinstance(source, pd.DataFrame):
        table, name, header = source.reset_index(drop=True), "The queries table", source.columns
        max_rows = MAX_ROWS
    else:
        data, file_name = read_source(source)
        text = decode_text(data, file_name)
        sep = sniff_separator(text)
        # the header fields as written (pandas renames a repeated name to 'name.1')
        header = check_text_shape(text, file_name, sep)
        max_rows = min(MAX_ROWS, max(1, MAX_CELLS // max(1, len(header))))
        table = parse_csv_text(text, file_name, nrows=max_rows + 1, sep=sep)
        ids = {find_alias(list(map(str, table.columns)), a) for a in (SERIES_ALIASES, CHANNEL_ALIASES)}
        table = read_decimal_commas(table, sep, skip={c for c in ids if c is not None})[0]
        name = f"The queries file {file_name!r}"
    _refuse_repeated_columns([str(c) for c in header], name)
    if table.shape[1] == 0 or len(table) == 0:
        raise DataError(
            f"{name} has no queries: it needs a header and one row per query (a time and, "
            "where the data have several, a series id and a channel)."
        )
    if len(table) > max_rows:
        raise DataError(
            f"{name} has more than {max_rows:,} rows, the most accepted. Split the queries."
        )
    return table


def _refuse_repeated_columns(header: list[str], name: str) -> None:
    """Refuse a time, series or channel column name given twice (any capitalisation)."""
    roles = set(TIME_ALIASES) | set(SERIES_ALIASES) | set(CHANNEL_ALIASES)
    keys = [h.strip().lower() for h in header]
    repeated = sorted({k for k in keys if k in roles and keys.count(k) > 1})
    if repeated:
        shown = ", ".join(repr(h) for h in header if h.strip().lower() in repeated)
        raise DataError(
            f"{name} has the column(s) {quote_list(repeated)} more than once ({shown}). "
            "Keep one column each for the time, the series and the channel."
        )


def _query_columns(table: pd.DataFrame) -> tuple[Any, tuple[Any, Any]]:
    """The time column and the (series, channel) columns (None where absent), found as
    [`detect_mapping`][levy_core.data.detect_mapping] finds them."""
    columns = list(table.columns)
    taken: set[str] = set()
    time_col = find_alias(columns, TIME_ALIASES, taken)
    if time_col is None:
        shown = ", ".join(repr(str(c)) for c in columns)
        raise DataError(
            f"The queries have no time column. Columns seen: {shown}. Name the column of "
            f"times one of {', '.join(TIME_ALIASES)} (any capitalisation)."
        )
    taken.add(time_col)
    series_col = find_alias(columns, SERIES_ALIASES, taken)
    if series_col is not None:
        taken.add(series_col)
    return time_col, (series_col, find_alias(columns, CHANNEL_ALIASES, taken))


def _query_ids(
    table: pd.DataFrame,
    col: Any,
    known: list[str],
    role: tuple[str, tuple[str, ...]],
    lines: np.ndarray,
) -> np.ndarray:
    """The series id or channel of each query; the only one when the column is absent."""
    noun, aliases = role
    if col is None:
        if len(known) == 1:
            return np.full(len(table), known[0], dtype=object)
        raise DataError(
            f"The queries have no {noun} column, but the data have "
            f"{count(len(known), noun)} ({quote_list(known)}). Add a column named one of "
            f"{', '.join(aliases)} saying which {noun} each query is for."
        )
    cells = table[col].reset_index(drop=True)
    require_filled(blank_mask(cells), str(col), noun, lines)
    return id_strings(cells)


def _numeric_query_hours(
    cells: pd.Series, name: str, lines: np.ndarray, unit: str
) -> np.ndarray:
    """Numbers in the data's unit, in hours; date-times and other text refused."""
    values, _, bad = parse_numbers(cells)
    if bad.any():
        idx = np.flatnonzero(bad)
        quoted = describe_lines(lines[idx], cells.iloc[idx].tolist())
        text = cells.iloc[idx].astype(str).str.strip()
        dates = to_utc_stamps(text).notna().all() and not text.str.match(CLOCK_RE).any()
        if dates and not decimal_comma_mask(text).any():  # '1,25' reads as a date in year 1
            raise DataError(
                f"Column {name!r} ({_QUERIES}) holds date-times ({quoted}), but the data's "
                f"times are numbers in {unit}. Give query times as numbers in {unit} on the "
                "data's own clock (the numbers of its time column)."
            )
        raise DataError(
            f"Column {name!r} ({_QUERIES}): could not read {count(idx.size, 'time')} as finite "
            f"numbers: {quoted}. Give query times as numbers in {unit}, with a decimal "
            "point (3.5, not 3,5), and correct or delete those rows."
        )
    return values * TIME_UNITS[unit]


def _datetime_query_hours(
    cells: pd.Series,
    series: np.ndarray,
    name: str,
    lines: np.ndarray,
    obs: Observations,
    dayfirst: bool | None,
    date_format: str | None,
) -> np.ndarray:
    """Date-times as hours since the first observation of each query's series."""
    numeric = ~parse_numbers(cells).bad
    if numeric.any():
        idx = np.flatnonzero(numeric)
        raise DataError(
            f"Column {name!r} ({_QUERIES}) holds numbers "
            f"({describe_lines(lines[idx], cells.iloc[idx].tolist())}), but the data's "
            f"times are date-times. Give query times as date-times such as "
            f"{_DATETIME_EXAMPLE}."
        )
    refuse_decimal_commas(cells, np.ones(len(cells), dtype=bool), name, _QUERIES, lines)
    origin = obs.report.time_origin or {}
    unknown = np.flatnonzero(~pd.Series(series, dtype=object).isin(list(origin)).to_numpy())
    if unknown.size:
        shown = describe_lines(lines[unknown], series[unknown].tolist())
        raise DataError(
            f"The queries name {len(set(series[unknown])):,} series not in the data "
            f"({quote_list(sorted(set(series[unknown])))}: {shown}), so their times have no start to be "
            f"counted from. Known series ids include {quote_list(list(origin))}; correct the ids or "
            "delete those rows."
        )
    typed = pd.api.types.is_datetime64_any_dtype(cells)
    stamps = read_datetimes(
        cells if typed else cells.astype(str),  # no float 'epochs'
        name, lines, dayfirst=dayfirst, date_format=date_format, known=obs.report.day_order, what=_QUERIES,
        check_offsets=not obs.report.input_has_offsets,  # else every query needs one: _require_time_zones
        check_typed_range=False,
    ).stamps
    clock = cells.astype(str).str.strip().str.match(CLOCK_RE).to_numpy(dtype=bool)
    failed = np.flatnonzero(stamps.isna().to_numpy() | clock)  # 12:30 has no date
    if failed.size:
        raise DataError(
            f"Column {name!r} ({_QUERIES}): could not read {count(failed.size, 'time')} as "
            f"date-times: {describe_lines(lines[failed], cells.iloc[failed].tolist())}. "
            f"Use ISO date-times such as {_DATETIME_EXAMPLE}, and correct or delete those rows."
        )
    if obs.report.input_has_offsets:
        _require_time_zones(cells, name, lines)
    # in microseconds (or coarser): nanosecond differences overflow past 292 years; the hour
    # too, or pandas 2.x divides in the divisor's nanoseconds and overflows all the same (the
    # sunspots since 1700: queries in 1998 came out 2.5 million hours *before* the start)
    unit = np.datetime_data(stamps.dt.tz_convert(None).dtype)[0]
    unit = "us" if unit == "ns" else unit
    starts = pd.to_datetime(pd.Series(series, dtype=object).map(origin), utc=True).dt.as_unit(unit)
    return ((stamps.dt.as_unit(unit) - starts) / pd.Timedelta(hours=1).as_unit(unit)).to_numpy(
        dtype=np.float64, na_value=np.nan
    )


def _require_time_zones(cells: pd.Series, name: str, lines: np.ndarray) -> None:
    """Refuse query date-times without an offset when the data's had offsets."""
    naive = ~time_zone_mask(cells)
    if naive.any():
        idx = np.flatnonzero(naive)
        raise DataError(
            f"Column {name!r} ({_QUERIES}) has {count(idx.size, 'date-time')} without a "
            f"time-zone offset ({describe_lines(lines[idx], cells.iloc[idx].tolist())}), "
            "but the data's date-times carry offsets, so a local time would be taken as "
            "UTC. Add the offset (2024-01-31T14:05:00+01:00) or Z for UTC "
            "(2024-01-31T13:05:00Z)."
        )
