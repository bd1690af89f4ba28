"""From a table to [`Observations`][levy_core.data.Observations]: [`from_frame`][levy_core.data.from_frame] and its steps.

Each step either raises a [`DataError`][levy_core.data.DataError] that names the column and the CSV lines,
or hands the next step what it needs and adds its notes to the [`LoadReport`][levy_core.data.LoadReport].
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from levy_core.data.cells import blank_mask, id_strings, parse_numbers
from levy_core.data.columns import FALLBACK_TIME_ALIASES, ColumnMapping, detect_mapping
from levy_core.data.dates import DayOrder
from levy_core.data.decimals import decimal_comma_mask
from levy_core.data.errors import DataError
from levy_core.data.messages import count, csv_lines, describe_lines, quote_list
from levy_core.data.observations import COLUMNS, LoadReport, Observations
from levy_core.data.ranges import refuse_huge_values, refuse_unresolvable_times
from levy_core.data.times import TIME_UNITS, ParsedTime, hours_since_first, parse_time

logger = logging.getLogger(__name__)

MAX_ROWS: int = 2_000_000
"""Largest number of data rows [`read_csv`][levy_core.data.read_csv] / [`from_frame`][levy_core.data.from_frame] accept."""

SINGLE_CHANNEL = "value"
"""Channel name used when a long table has no channel column."""
SINGLE_SERIES = "series_0"
"""Series id used when a table has no series column."""

_KEY = ["series_id", "channel", "time"]  # at most one observation per key


@dataclass(frozen=True)
class _Cells:
    """The value cells before blanks are dropped: one per row (long layout) or one per
    (channel, row), channel-major (wide layout)."""

    values: np.ndarray  # float64, NaN where blank
    missing: np.ndarray  # bool, blank value
    channel: np.ndarray  # str objects
    row: np.ndarray  # the table row each cell comes from
    noun: Literal["row", "cell"]  # what one cell is called in the report


def from_frame(
    df: pd.DataFrame,
    *,
    mapping: ColumnMapping | None = None,
    time_unit: str = "hours",
    max_rows: int = MAX_ROWS,
    first_line: int = 2,
    dayfirst: bool | None = None,
    date_format: str | None = None,
    known_day_order: DayOrder | None = None,
) -> Observations:
    """Turn a table into [`Observations`][levy_core.data.Observations] (the work behind [`read_csv`][levy_core.data.read_csv]).

    Parameters
    ----------
    df : pandas.DataFrame
        The table, one row per CSV data line (row ``i`` is reported as line ``i + 2``).
        Cells may be text (as read with ``dtype=str``) or already typed.
    mapping : ColumnMapping, optional
        Which column is which; detected with [`detect_mapping`][levy_core.data.detect_mapping] when omitted.
    time_unit : {"hours", "minutes", "seconds", "days"}
        Unit of a numeric time column; converted to hours. Ignored for date-times.
    max_rows : int
        Largest number of rows accepted.
    first_line : int
        The line number that messages give row 0 (2: the line after the header); a
        piece of a larger file read in chunks names the lines of the whole file.
    dayfirst : bool, optional
        Dates written as numbers (``02/01/2024``) are day first (True) or month first
        (False); None (default): inferred from all the column's rows, refused when no day
        or month exceeds 12 (see `levy_core.data.dates`).
    date_format : str, optional
        A strptime format every date-time must match (``%d/%m/%Y %H:%M``), instead.
    known_day_order : DayOrder, optional
        The order earlier rows of the same file showed (chunked reading).

    Returns
    -------
    Observations
        Sorted, de-duplicated observations and a [`LoadReport`][levy_core.data.LoadReport].

    Raises
    ------
    DataError
        For an empty table, too many rows, missing or unusable columns, non-numeric
        values, unreadable times, empty series/channel cells, or fewer than two
        observations left.
    """
    _check_table(df, time_unit, max_rows)
    df = df.reset_index(drop=True)
    mapping_given = mapping is not None
    if mapping is None:  # a repeated name is refused below when the mapping uses it
        mapping = detect_mapping(df.loc[:, ~df.columns.duplicated()])
    _check_mapping(df, mapping)
    _check_size(df, mapping, max_rows)
    lines = csv_lines(len(df)) + (first_line - 2)
    notes = _reading_notes(df, mapping)
    series = _series_ids(df, mapping, lines)
    time = parse_time(df[mapping.time], mapping.time, lines, time_unit, dayfirst=dayfirst,
                      date_format=date_format, known=known_day_order)
    notes += time.notes
    extract_cells = _long_cells if mapping.layout == "long" else _wide_cells
    cells = extract_cells(df, mapping, lines)
    keep, n_dropped = _drop_blanks(cells, time.missing, mapping, lines, notes)
    frame, time_origin = _observation_frame(cells, keep, series, time, notes)
    frame, n_merged = _average_duplicates(frame, notes)
    _require_two_observations(frame, n_dropped, n_merged, mapping)
    report = LoadReport(
        layout=mapping.layout,
        mapping=mapping,
        n_rows_read=len(df),
        n_nan_dropped=n_dropped,
        n_duplicates_merged=n_merged,
        time_unit="hours",
        time_origin=time_origin,
        messages=notes,
        input_time_unit=time.input_unit,
        input_has_offsets=time.has_offsets,
        day_order=time.day_order,
        mapping_given=mapping_given,
    )
    obs = Observations(frame=_sort_observations(frame), report=report)
    refuse_unresolvable_times(obs.frame, mapping.time, from_datetimes=time.stamps is not None)
    notes.append(
        f"kept {count(obs.n_obs, 'observation')} of "
        f"{obs.n_series:,} series and {count(obs.n_channels, 'channel')}"
    )
    logger.debug("loaded %r", obs)
    return obs


def _check_table(df: pd.DataFrame, time_unit: str, max_rows: int) -> None:
    """Refuse an unknown time unit, and a table that is empty or too long."""
    if time_unit not in TIME_UNITS:
        raise DataError(f"time_unit must be one of {', '.join(TIME_UNITS)}, got {time_unit!r}.")
    if df.shape[1] == 0:
        raise DataError(
            "The file is empty: no header and no rows. Upload a CSV with a "
            "header line and at least two data rows."
        )
    if len(df) == 0:
        raise DataError(
            f"The file has a header ({quote_list(list(df.columns), 8)}) but no data rows. "
            "Add at least two observations."
        )
    if len(df) > max_rows:
        raise DataError(
            f"The file has more than {max_rows:,} data rows, the most accepted. Subsample "
            "series or split the file into several smaller files."
        )


def _check_mapping(df: pd.DataFrame, mapping: ColumnMapping) -> None:
    """Refuse a mapping (perhaps chosen by hand) that this table cannot satisfy."""
    used = mapping.used_columns()
    present = set(df.columns)
    absent = [c for c in used if c not in present]
    if absent:
        shown = ", ".join(repr(str(c)) for c in df.columns)
        raise DataError(
            f"Column(s) {quote_list(absent)} named in the column mapping are not in the "
            f"file. Columns seen: {shown}. Choose existing columns in the mapping."
        )
    if mapping.layout == "long" and mapping.value is None:
        raise DataError("The long layout needs a value column: choose one in the mapping.")
    if mapping.layout == "wide" and not mapping.wide_channels:
        raise DataError(
            "The wide layout needs at least one channel column: choose the numeric "
            "columns that hold measurements in the mapping."
        )
    if len(set(used)) != len(used):
        raise DataError(
            f"The column mapping uses a column twice ({mapping.describe()}); give each "
            "role its own column."
        )
    names = [str(c) for c in df.columns]
    for name in dict.fromkeys(used):
        where = [i + 1 for i, c in enumerate(names) if c == name]
        if len(where) > 1:
            raise DataError(
                f"Column {name!r} appears {len(where)} times in the header (columns "
                f"{', '.join(map(str, where))}, counting from 1), so which one holds the "
                f"{_role(mapping, name)} cannot be told. Rename or delete the extra column(s)."
            )


def _role(mapping: ColumnMapping, name: str) -> str:
    """What a used column holds, for messages: 'time', 'values', 'series ids', ..."""
    roles = {mapping.time: "time", mapping.series: "series ids"}
    if mapping.layout == "long":
        roles |= {mapping.channel: "channel names", mapping.value: "values"}
    return roles.get(name, "channel's values")


def _check_size(df: pd.DataFrame, mapping: ColumnMapping, max_rows: int) -> None:
    """Refuse a wide table with more cells (rows × channel columns) than ``max_rows``:
    each cell is an observation, as a row is in the long layout."""
    n_channels = len(mapping.wide_channels) if mapping.layout == "wide" else 1
    if len(df) * n_channels > max_rows:
        raise DataError(
            f"The file has {count(len(df), 'row')} × {count(n_channels, 'channel column')} "
            f"= {len(df) * n_channels:,} cells, more than the {max_rows:,} accepted (in the "
            "wide layout every cell is an observation). Subsample series or time stamps, or "
            "split the file into several smaller files."
        )


def _reading_notes(df: pd.DataFrame, mapping: ColumnMapping) -> list[str]:
    """The report's first notes: rows read with which mapping, and columns ignored."""
    notes = [f"read {count(len(df), 'row')} ({mapping.describe()})"]
    if str(mapping.time).strip().lower() in FALLBACK_TIME_ALIASES:
        notes.append(f"column {str(mapping.time)!r} read as the time, for want of a column named time, date, day "
                     "or the like; if it holds a measurement, name the time column (--time COL, time_col=)")
    used = set(mapping.used_columns())
    ignored = [str(c) for c in df.columns if c not in used]
    if ignored:
        notes.append(f"ignored column(s) {quote_list(ignored)}")
    return notes


def _series_ids(df: pd.DataFrame, mapping: ColumnMapping, lines: np.ndarray) -> np.ndarray:
    """The series id of each row (str objects); one series when there is no column."""
    if mapping.series is None:
        return np.full(len(df), SINGLE_SERIES, dtype=object)
    col = df[mapping.series]
    require_filled(blank_mask(col), mapping.series, "series id", lines)
    return id_strings(col)


def _long_cells(df: pd.DataFrame, mapping: ColumnMapping, lines: np.ndarray) -> _Cells:
    """One value, and its channel, per row."""
    name = str(mapping.value)  # not None: checked by _check_mapping
    values, missing, bad = parse_numbers(df[name])
    _refuse_non_numbers(df[name], bad, name, "value", lines)
    refuse_huge_values(values, df[name], name, "value", lines)
    if mapping.channel is None:
        channel = np.full(len(df), SINGLE_CHANNEL, dtype=object)
    else:
        col = df[mapping.channel]
        # a row without a value needs no channel: it is dropped as blank anyway
        require_filled(blank_mask(col) & ~missing, mapping.channel, "channel", lines)
        channel = id_strings(col)
    return _Cells(values, missing, channel, np.arange(len(df)), "row")


def _wide_cells(df: pd.DataFrame, mapping: ColumnMapping, lines: np.ndarray) -> _Cells:
    """One value per (channel column, row), channel-major."""
    values, missing = [], []
    for name in mapping.wide_channels:
        parsed = parse_numbers(df[name])
        _refuse_non_numbers(df[name], parsed.bad, str(name), "channel", lines)
        refuse_huge_values(parsed.values, df[name], str(name), "channel", lines)
        values.append(parsed.values)
        missing.append(parsed.missing)
    names = np.array([str(c) for c in mapping.wide_channels], dtype=object)
    return _Cells(
        values=np.concatenate(values),
        missing=np.concatenate(missing),
        channel=np.repeat(names, len(df)),
        row=np.tile(np.arange(len(df)), len(names)),
        noun="cell",
    )


def require_filled(blank: np.ndarray, name: str, role: str, lines: np.ndarray) -> None:
    """Refuse blank id cells: an observation must say which series or channel it is.

    Parameters
    ----------
    blank : numpy.ndarray
        bool, one per row: the cells to refuse.
    name : str
        Column name, for the message.
    role : str
        What the column holds ("series id", "channel", ...), for the message.
    lines : numpy.ndarray
        CSV line number of each row.

    Raises
    ------
    DataError
        If any cell is blank, naming the first lines.
    """
    if blank.any():
        idx = np.flatnonzero(blank)
        raise DataError(
            f"Column {name!r} ({role}) is empty on {count(idx.size, 'row')}: "
            f"{describe_lines(lines[idx])}. Fill in the {role} or delete those rows."
        )


def _refuse_non_numbers(
    col: pd.Series, bad: np.ndarray, name: str, role: str, lines: np.ndarray
) -> None:
    """Refuse value cells that hold text other than a finite number."""
    if bad.any():
        idx = np.flatnonzero(bad)
        n_commas = int(decimal_comma_mask(col.iloc[idx]).sum())
        hint = (
            f" {n_commas:,} of them {'has' if n_commas == 1 else 'have'} a decimal comma: "
            "numbers such as 3,5 are read only from a file separated by semicolons, with "
            "decimal commas throughout." if n_commas else ""
        )
        raise DataError(
            f"Column {name!r} ({role}) has {count(idx.size, 'cell')} that are not "
            f"finite numbers: {describe_lines(lines[idx], col.iloc[idx].tolist())}. "
            "Use a decimal point (3.5, not 3,5), no units or text; leave a cell blank "
            f"if nothing was measured.{hint}"
        )


def _drop_blanks(
    cells: _Cells,
    time_missing: np.ndarray,
    mapping: ColumnMapping,
    lines: np.ndarray,
    notes: list[str],
) -> tuple[np.ndarray, int]:
    """Which cells to keep (value and time present), and how many were dropped.

    Blanks are not mistakes, so they are only counted, in ``notes``.
    """
    time_missing_cell = time_missing[cells.row]
    n_empty_value = int(cells.missing.sum())
    n_empty_time = int((time_missing_cell & ~cells.missing).sum())
    if n_empty_value and mapping.layout == "long":
        notes.append(f"dropped {count(n_empty_value, 'row')} with empty values")
    elif n_empty_value:
        notes.append(f"{count(n_empty_value, 'empty cell')} treated as unobserved")
    if n_empty_time:
        where = describe_lines(lines[np.flatnonzero(time_missing)])
        notes.append(
            f"dropped {count(n_empty_time, cells.noun)} with an empty time in column "
            f"{mapping.time!r} ({where})"
        )
    if mapping.layout == "wide":
        by_row = np.reshape(cells.missing, (len(mapping.wide_channels), len(time_missing)))
        n_no_value = int((~time_missing & by_row.all(axis=0)).sum())
        if n_no_value:
            notes.append(f"{count(n_no_value, 'row')} had no value in any channel")
    return ~cells.missing & ~time_missing_cell, n_empty_value + n_empty_time


def _observation_frame(
    cells: _Cells, keep: np.ndarray, series: np.ndarray, time: ParsedTime, notes: list[str]
) -> tuple[pd.DataFrame, dict[str, pd.Timestamp] | None]:
    """The kept cells as a frame of [`COLUMNS`][levy_core.data.COLUMNS], time in hours, and the time origin
    of each series (date-times only)."""
    rows = cells.row[keep]
    series_kept = series[rows]
    time_origin: dict[str, pd.Timestamp] | None = None
    if time.stamps is None:
        hours = time.hours[rows]
    else:
        hours, time_origin = hours_since_first(time.stamps.iloc[rows], series_kept)
        notes.append(
            "date-times read as UTC (those without an offset taken as UTC)"
        )
    frame = pd.DataFrame(
        {
            "series_id": pd.Series(series_kept, dtype=str),
            "channel": pd.Series(cells.channel[keep], dtype=str),
            "time": np.asarray(hours, dtype=np.float64),
            "value": np.asarray(cells.values[keep], dtype=np.float64),
        }
    )
    return frame, time_origin


def _average_duplicates(frame: pd.DataFrame, notes: list[str]) -> tuple[pd.DataFrame, int]:
    """Average the rows that repeat a (series, channel, time); return how many went."""
    if frame.empty:
        return frame, 0
    repeated = frame.duplicated(_KEY, keep=False).to_numpy()
    if not repeated.any():
        return frame, 0
    merged = frame.loc[repeated].groupby(_KEY, sort=False, as_index=False)["value"].mean()
    averaged = pd.concat([frame.loc[~repeated], merged[list(COLUMNS)]], ignore_index=True)
    n_merged = len(frame) - len(averaged)
    notes.append(
        f"averaged {count(n_merged, 'row')} that repeated a (series, channel, time) into one"
    )
    return averaged, n_merged


def _require_two_observations(
    frame: pd.DataFrame, n_dropped: int, n_merged: int, mapping: ColumnMapping
) -> None:
    """Refuse a table with fewer than two observations left: nothing to learn from."""
    if len(frame) < 2:
        raise DataError(
            f"Only {count(len(frame), 'observation')} left after dropping empty cells "
            f"({n_dropped:,} dropped, {n_merged:,} merged). Check that column "
            f"{mapping.value or ', '.join(mapping.wide_channels)!r} holds the measurements; "
            "at least two observations are needed."
        )


def _sort_observations(frame: pd.DataFrame) -> pd.DataFrame:
    """Sorted by (series_id, time, channel), index 0..n-1, ids as str."""
    frame = frame.sort_values(["series_id", "time", "channel"], kind="stable", ignore_index=True)
    frame["series_id"] = frame["series_id"].astype(str)
    frame["channel"] = frame["channel"].astype(str)
    return frame
