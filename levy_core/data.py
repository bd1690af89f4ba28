"""Reading irregularly sampled, multichannel time series from CSV.

The data layer turns a user's CSV (or a :class:`pandas.DataFrame`) into
:class:`Observations`: one long table with exactly the columns ``series_id`` (str),
``channel`` (str), ``time`` (float64, hours) and ``value`` (float64), sorted by
``(series_id, time, channel)``.

Two layouts are understood:

* **long** -- one observation per row: ``series_id`` (optional), ``time``, ``channel``
  (optional), ``value``;
* **wide** -- one row per time stamp: a time column, an optional series column, and one
  numeric column per channel; blank cells are unobserved.

Column names are matched case-insensitively against common aliases (see
:data:`TIME_ALIASES` and friends); :func:`detect_mapping` shows what was found and a
:class:`ColumnMapping` passed explicitly overrides it.

Time
----
* Numbers are taken as **hours** unless ``time_unit`` says otherwise ("minutes",
  "seconds", "days" are converted to hours); nothing is rescaled or shifted.
* Elapsed clock times ``HH:MM`` or ``HH:MM:SS`` (e.g. PhysioNet's raw "47:30") are read
  as hours since zero.
* Date-times (ISO 8601 with or without a time-zone offset, mixed precision, mixed
  offsets; anything else :func:`pandas.to_datetime` understands) are converted to UTC
  (times without an offset are taken as UTC) and then to hours since each series' first
  observation; the first observation of each series is kept in
  :attr:`LoadReport.time_origin`.

Every user mistake raises :class:`DataError` (a :class:`ValueError`) whose message names
the column, the first offending CSV lines (header = line 1, as a spreadsheet shows them)
and what to do. Blank values are not mistakes: they are dropped and counted in the
:class:`LoadReport`, as are exact duplicates of ``(series, channel, time)``, which are
averaged.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

__all__ = [
    "CHANNEL_ALIASES",
    "MAX_ROWS",
    "SAMPLES",
    "SAMPLE_DIR",
    "SERIES_ALIASES",
    "TIME_ALIASES",
    "TIME_UNITS",
    "VALUE_ALIASES",
    "ChannelScaler",
    "ColumnMapping",
    "DataError",
    "LoadReport",
    "Observations",
    "detect_mapping",
    "from_frame",
    "load_sample",
    "read_csv",
]

MAX_ROWS: int = 2_000_000
"""Largest number of data rows :func:`read_csv` / :func:`from_frame` accept."""

TIME_ALIASES: tuple[str, ...] = (
    "time",
    "timestamp",
    "date",
    "datetime",
    "t",
    "time_hours",
    "hours",
    "charttime",
)
SERIES_ALIASES: tuple[str, ...] = (
    "series_id",
    "series",
    "id",
    "patient_id",
    "patientid",
    "subject_id",
    "unit_id",
)
CHANNEL_ALIASES: tuple[str, ...] = (
    "channel",
    "variable",
    "parameter",
    "feature",
    "signal",
    "name",
)
VALUE_ALIASES: tuple[str, ...] = ("value", "y", "measurement", "valuenum")

TIME_UNITS: dict[str, float] = {
    "hours": 1.0,
    "minutes": 1.0 / 60.0,
    "seconds": 1.0 / 3600.0,
    "days": 24.0,
}
"""Accepted ``time_unit`` values and their length in hours."""

SINGLE_CHANNEL = "value"
"""Channel name used when a long table has no channel column."""
SINGLE_SERIES = "series_0"
"""Series id used when a table has no series column."""

COLUMNS: tuple[str, ...] = ("series_id", "channel", "time", "value")
"""The columns of :attr:`Observations.frame`, in order."""

# Cell texts read as "no value" (compared after stripping and lower-casing).
_MISSING_TOKENS = frozenset(
    {"", "nan", "na", "n/a", "#n/a", "null", "none", "-", "--", "?", "<na>", "nat", "missing"}
)
_CLOCK_RE = re.compile(r"^\d+:\d{1,2}(:\d{1,2}(\.\d+)?)?$")
_N_SHOWN = 5  # bad lines quoted in an error message
_HEADER_LINES = 1  # a CSV's header is line 1, the first data row line 2

SAMPLE_DIR: Path = Path(__file__).resolve().parent.parent / "sample_data"
"""Folder of the bundled sample data sets."""

SAMPLES: dict[str, Path] = {
    "PhysioNet 2012 ICU (300 patients)": SAMPLE_DIR / "physionet2012_sample.csv.gz",
    "Synthetic multichannel": SAMPLE_DIR / "synthetic_multichannel.csv",
    "Single sensor series": SAMPLE_DIR / "single_series.csv",
}
"""Friendly name -> bundled CSV file (see ``sample_data/README.md``)."""


class DataError(ValueError):
    """A problem with the user's data: the message says where and what to do."""


# --------------------------------------------------------------------------------------
# Column mapping
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ColumnMapping:
    """Which input columns play which role.

    Attributes
    ----------
    time : str
        Column holding the observation time (numbers, ``HH:MM`` or date-times).
    value : str or None
        Column holding the measured value (long layout); None for the wide layout.
    series : str or None
        Column identifying the series (patient, sensor, ...); None means one series.
    channel : str or None
        Column naming the channel (long layout); None means one channel ("value") in the
        long layout and is ignored in the wide layout.
    wide_channels : tuple of str
        Wide layout only: the columns that are channels, one numeric column each.
    layout : {"long", "wide"}
        Table layout.
    """

    time: str
    value: str | None = None
    series: str | None = None
    channel: str | None = None
    wide_channels: tuple[str, ...] = ()
    layout: Literal["long", "wide"] = "long"

    def used_columns(self) -> list[str]:
        """Input columns the mapping reads, in a stable order.

        Returns
        -------
        list of str
            Series, time, channel, value columns (those that are set), then the wide
            channel columns.
        """
        cols = [c for c in (self.series, self.time) if c is not None]
        if self.layout == "long":
            cols += [c for c in (self.channel, self.value) if c is not None]
        else:
            cols += list(self.wide_channels)
        return cols

    def describe(self) -> str:
        """One human-readable line, e.g. ``long: series='id', time='t', ...``."""
        if self.layout == "long":
            return (
                f"long: series={self.series!r}, time={self.time!r}, "
                f"channel={self.channel!r}, value={self.value!r}"
            )
        return (
            f"wide: series={self.series!r}, time={self.time!r}, "
            f"channels={list(self.wide_channels)!r}"
        )


def _find_alias(columns: Sequence[str], aliases: Sequence[str], taken: set[str]) -> str | None:
    """First column (in alias order) whose stripped, lower-cased name is an alias."""
    by_name: dict[str, str] = {}
    for col in columns:
        key = str(col).strip().lower()
        if col not in taken and key not in by_name:
            by_name[key] = col
    for alias in aliases:
        if alias in by_name:
            return by_name[alias]
    return None


def _is_ignorable_column(name: str) -> bool:
    """Index columns written by ``DataFrame.to_csv`` and unnamed columns."""
    s = str(name).strip()
    return s == "" or s.lower().startswith("unnamed:") or s.lower() == "index"


def _looks_numeric(col: pd.Series, sample: int = 2000) -> bool | None:
    """Whether a column holds numbers: True, False, or None when it is entirely empty.

    A column counts as numeric when at least half of its first ``sample`` non-empty
    cells parse as finite numbers (so that a few typos are reported as errors instead
    of the column silently disappearing).
    """
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        return None if col.isna().all() else True
    if pd.api.types.is_datetime64_any_dtype(col):
        return False
    present = col[~_missing_mask(col)]
    if present.empty:
        return None
    head = present.iloc[:sample]
    parsed = pd.to_numeric(head.astype(str).str.strip(), errors="coerce")
    ok = np.isfinite(parsed.to_numpy(dtype="float64", na_value=np.nan))
    return bool(ok.mean() >= 0.5)


def detect_mapping(df: pd.DataFrame) -> ColumnMapping:
    """Guess which columns hold time, series, channel and value.

    Names are matched case-insensitively (surrounding blanks ignored) against
    :data:`TIME_ALIASES`, :data:`SERIES_ALIASES`, :data:`CHANNEL_ALIASES` and
    :data:`VALUE_ALIASES`; the earliest alias in each list wins.

    The table is **long** when a value column is found (the channel column is optional:
    without it everything is one channel, "value"). Otherwise it is **wide**: a time
    column, an optional series column, and every other column holding numbers is a
    channel (empty columns, text columns and unnamed index columns are skipped).

    Parameters
    ----------
    df : pandas.DataFrame
        The table as read (any dtypes; text cells are fine).

    Returns
    -------
    ColumnMapping
        The detected mapping.

    Raises
    ------
    DataError
        No time column; a channel column without a value column; or no value column and
        no numeric channel column.
    """
    columns = [c for c in df.columns]
    shown = ", ".join(repr(str(c)) for c in columns) or "(none)"
    taken: set[str] = set()
    time_col = _find_alias(columns, TIME_ALIASES, taken)
    if time_col is None:
        raise DataError(
            f"No time column found. Columns seen: {shown}. Name the time column one of "
            f"{', '.join(TIME_ALIASES)} (any capitalisation), or choose it in the column "
            "mapping."
        )
    taken.add(time_col)
    series_col = _find_alias(columns, SERIES_ALIASES, taken)
    if series_col is not None:
        taken.add(series_col)
    value_col = _find_alias(columns, VALUE_ALIASES, taken)
    if value_col is not None:
        taken.add(value_col)
    channel_col = _find_alias(columns, CHANNEL_ALIASES, taken)

    if value_col is not None:
        return ColumnMapping(
            time=time_col, value=value_col, series=series_col, channel=channel_col, layout="long"
        )

    if channel_col is not None and _looks_numeric(df[channel_col]) is False:
        raise DataError(
            f"Column {str(channel_col)!r} looks like a channel column (long layout), but "
            f"there is no value column. Columns seen: {shown}. Rename the column holding "
            f"the measurements to one of {', '.join(VALUE_ALIASES)}, or choose it in the "
            "column mapping."
        )
    wide = tuple(
        c
        for c in columns
        if c not in taken and not _is_ignorable_column(c) and _looks_numeric(df[c])
    )
    if not wide:
        raise DataError(
            f"No value column and no numeric channel column found. Columns seen: {shown}. "
            f"Either use the long layout with a value column named one of "
            f"{', '.join(VALUE_ALIASES)}, or the wide layout with one numeric column per "
            "channel next to the time column."
        )
    return ColumnMapping(
        time=time_col,
        value=None,
        series=series_col,
        channel=None,
        wide_channels=wide,
        layout="wide",
    )


# --------------------------------------------------------------------------------------
# Report and observations
# --------------------------------------------------------------------------------------
@dataclass
class LoadReport:
    """What happened while reading a table.

    Attributes
    ----------
    layout : {"long", "wide"}
        Layout of the input table.
    mapping : ColumnMapping
        The column mapping used.
    n_rows_read : int
        Data rows in the input (header not counted).
    n_nan_dropped : int
        Observations dropped for an empty value or an empty time: rows in the long
        layout, (row, channel) cells in the wide layout.
    n_duplicates_merged : int
        Observations merged away: rows repeating a ``(series, channel, time)`` were
        averaged into one.
    time_unit : str
        Unit of :attr:`Observations.frame` ``time`` (always "hours").
    time_origin : dict or None
        For date-time input, series id -> UTC :class:`pandas.Timestamp` of that series'
        first observation (time 0); None for numeric time.
    messages : list of str
        Human-readable notes (dropped rows, ignored columns, conversions).
    """

    layout: Literal["long", "wide"]
    mapping: ColumnMapping
    n_rows_read: int
    n_nan_dropped: int = 0
    n_duplicates_merged: int = 0
    time_unit: str = "hours"
    time_origin: dict[str, pd.Timestamp] | None = None
    messages: list[str] = field(default_factory=list)


@dataclass
class Observations:
    """Observations of several series, long form.

    Attributes
    ----------
    frame : pandas.DataFrame
        Exactly the columns ``series_id`` (str), ``channel`` (str), ``time`` (float64,
        hours) and ``value`` (float64); sorted by ``(series_id, time, channel)``, index
        ``0..n-1``; at most one row per ``(series_id, channel, time)``.
    report : LoadReport
        How the frame was read.
    """

    frame: pd.DataFrame
    report: LoadReport

    def __post_init__(self) -> None:
        if list(self.frame.columns) != list(COLUMNS):
            raise DataError(
                f"Observations need exactly the columns {list(COLUMNS)}, got "
                f"{list(map(str, self.frame.columns))}. Build them with from_frame()."
            )

    @property
    def series_ids(self) -> list[str]:
        """Series ids in frame order (sorted)."""
        return [str(s) for s in pd.unique(self.frame["series_id"])]

    @property
    def channels(self) -> list[str]:
        """Channel names, sorted."""
        return sorted(str(c) for c in pd.unique(self.frame["channel"]))

    @property
    def n_series(self) -> int:
        """Number of series."""
        return int(self.frame["series_id"].nunique())

    @property
    def n_channels(self) -> int:
        """Number of channels."""
        return int(self.frame["channel"].nunique())

    @property
    def n_obs(self) -> int:
        """Number of observations (rows)."""
        return len(self.frame)

    @property
    def time_span(self) -> tuple[float, float]:
        """Earliest and latest time over all series, in hours."""
        t = self.frame["time"].to_numpy()
        return float(t.min()), float(t.max())

    def subset(self, series_ids: Iterable[str]) -> Observations:
        """The observations of some series only.

        Parameters
        ----------
        series_ids : iterable of str
            Series to keep (order irrelevant; the result stays sorted).

        Returns
        -------
        Observations
            A new object sharing this one's report.

        Raises
        ------
        DataError
            If an id is not in the data, or none is given.
        """
        wanted = [str(s) for s in series_ids]
        if not wanted:
            raise DataError("No series selected: pick at least one series id.")
        known = set(self.series_ids)
        unknown = [s for s in wanted if s not in known]
        if unknown:
            raise DataError(
                f"Unknown series id(s) {_quote_list(unknown)} in column 'series_id'; "
                f"known ids include {_quote_list(self.series_ids)}."
            )
        keep = self.frame["series_id"].isin(set(wanted)).to_numpy()
        frame = self.frame.loc[keep].reset_index(drop=True)
        return Observations(frame=frame, report=self.report)

    def gaps(self) -> np.ndarray:
        """Gaps between consecutive distinct observation times within each series.

        Any channel counts as an observation at that time.

        Returns
        -------
        numpy.ndarray
            float64, shape ``(n_gaps,)``, hours, all > 0.
        """
        distinct = self.frame[["series_id", "time"]].drop_duplicates()  # frame is sorted
        t = distinct["time"].to_numpy()
        s = distinct["series_id"].to_numpy()
        same = s[1:] == s[:-1]
        return np.diff(t)[same].astype(np.float64)

    def content_hash(self) -> str:
        """SHA-256 of the frame's content (column names, dtypes and values).

        Returns
        -------
        str
            64 hex digits; equal frames give equal hashes (for caching).
        """
        h = hashlib.sha256()
        h.update(",".join(f"{c}:{self.frame[c].dtype.kind}" for c in COLUMNS).encode())
        h.update(str(len(self.frame)).encode())
        hashed = pd.util.hash_pandas_object(self.frame, index=False).to_numpy()
        h.update(np.ascontiguousarray(hashed).tobytes())
        return h.hexdigest()

    def __repr__(self) -> str:
        t0, t1 = self.time_span if self.n_obs else (float("nan"), float("nan"))
        return (
            f"Observations(n_series={self.n_series}, n_channels={self.n_channels}, "
            f"n_obs={self.n_obs}, time_span=({t0:.3g}, {t1:.3g}) h)"
        )


# --------------------------------------------------------------------------------------
# Helpers for messages and parsing
# --------------------------------------------------------------------------------------
def _count(n: int, noun: str) -> str:
    """'1 row', '2 rows', '1,234 rows'."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _quote_list(items: Sequence[Any], limit: int = _N_SHOWN) -> str:
    shown = ", ".join(repr(str(x)) for x in items[:limit])
    more = len(items) - limit
    return shown + (f" (and {more} more)" if more > 0 else "")


def _describe_lines(lines: np.ndarray, texts: Sequence[Any] | None = None) -> str:
    """'line 5 ('abc'), line 9 ('x') (and 3 more)' for the first few bad lines."""
    lines = np.asarray(lines)
    order = np.argsort(lines, kind="stable")
    parts = []
    for i in order[:_N_SHOWN]:
        part = f"line {int(lines[i])}"
        if texts is not None:
            part += f" ({str(texts[i])!r})"
        parts.append(part)
    more = len(lines) - _N_SHOWN
    return ", ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _missing_mask(col: pd.Series) -> np.ndarray:
    """True where a cell is empty: NaN/None or a missing-value token such as '' or 'NA'."""
    isna = col.isna().to_numpy()
    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        return isna
    if pd.api.types.is_datetime64_any_dtype(col):
        return isna
    out = isna.copy()
    idx = np.flatnonzero(~isna)
    if idx.size:
        text = col.iloc[idx].astype(str).str.strip().str.lower()
        out[idx] = text.isin(_MISSING_TOKENS).to_numpy()
    return out


def _blank_mask(col: pd.Series) -> np.ndarray:
    """True where an id cell is empty: NaN/None or blank text (``"NA"`` is a name here,
    e.g. sodium)."""
    isna = col.isna().to_numpy()
    if pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col):
        isna = isna | (col.astype(str).str.strip() == "").to_numpy()
    return isna


def _to_float(col: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse a column as numbers.

    Returns
    -------
    values : ndarray of float64
        NaN where missing or bad.
    missing : ndarray of bool
        Empty cells (not an error).
    bad : ndarray of bool
        Cells with text that is not a finite number (an error).
    """
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        values = col.to_numpy(dtype="float64", na_value=np.nan)
        missing = np.isnan(values)
        bad = np.isinf(values)
        return values, missing, bad
    if pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col):
        parsed = pd.to_numeric(col, errors="coerce")
        values = np.array(parsed.to_numpy(dtype="float64", na_value=np.nan))  # writable copy
        nan = np.isnan(values)
        if nan.any():
            # to_numeric may reject padded text such as ' 5 ': retry those stripped.
            idx = np.flatnonzero(nan & ~col.isna().to_numpy())
            if idx.size:
                retry = pd.to_numeric(col.iloc[idx].astype(str).str.strip(), errors="coerce")
                values[idx] = retry.to_numpy(dtype="float64", na_value=np.nan)
                nan = np.isnan(values)
        missing = np.zeros(len(values), dtype=bool)
        idx = np.flatnonzero(nan)
        if idx.size:
            missing[idx] = _missing_mask(col.iloc[idx])
        bad = (nan & ~missing) | np.isinf(values)
        return values, missing, bad
    # dates, categories of non-numbers, ...: everything non-empty is bad
    missing = _missing_mask(col)
    return np.full(len(col), np.nan), missing, ~missing


def _id_strings(col: pd.Series) -> np.ndarray:
    """Series ids / channel names as str (integral floats written without '.0')."""
    if pd.api.types.is_float_dtype(col):
        v = col.to_numpy(dtype="float64", na_value=np.nan)
        finite = v[np.isfinite(v)]
        if finite.size and np.all(finite == np.round(finite)):
            return np.array([("" if np.isnan(x) else str(int(x))) for x in v], dtype=object)
    return col.astype(str).str.strip().to_numpy(dtype=object)


# --------------------------------------------------------------------------------------
# Time parsing
# --------------------------------------------------------------------------------------
def _parse_time(
    col: pd.Series, name: str, lines: np.ndarray, time_unit: str
) -> tuple[np.ndarray, pd.Series | None, np.ndarray, list[str]]:
    """Parse a time column.

    Returns
    -------
    hours : ndarray of float64
        Numeric time in hours (NaN where missing); unused (NaN) for date-times.
    stamps : Series of datetime64[UTC] or None
        The parsed date-times (NaT where missing); None for numeric time.
    missing : ndarray of bool
        Empty time cells.
    notes : list of str
        Messages for the report.
    """
    notes: list[str] = []
    factor = TIME_UNITS[time_unit]
    if pd.api.types.is_datetime64_any_dtype(col):
        stamps = pd.to_datetime(col, utc=True)
        missing = stamps.isna().to_numpy()
        return np.full(len(col), np.nan), stamps.reset_index(drop=True), missing, notes

    values, missing, bad = _to_float(col)
    present = ~missing
    n_present = int(present.sum())
    if n_present == 0:
        raise DataError(
            f"Column {name!r} (time) is empty on every row. Fill in the observation "
            "times (numbers in hours, or date-times such as 2024-01-31 14:05)."
        )
    n_numeric = int((present & ~bad).sum())
    if n_numeric * 2 >= n_present:  # mostly numbers: the others are typos
        if bad.any():
            idx = np.flatnonzero(bad)
            raise DataError(
                f"Column {name!r} (time) holds numbers, but some cells are not finite "
                f"numbers: {_describe_lines(lines[idx], col.iloc[idx].tolist())}. "
                "Correct or delete those rows; all times must be numbers in the same unit."
            )
        if time_unit != "hours":
            notes.append(f"time column {name!r} converted from {time_unit} to hours")
        return values * factor, None, missing, notes

    text = col.astype(str).str.strip()
    present_text = text[present]
    if present_text.str.match(_CLOCK_RE).all():
        parts = present_text.str.split(":", expand=True).astype("float64")
        hours = np.full(len(col), np.nan)
        secs = parts[2] if parts.shape[1] > 2 else 0.0
        hours[present] = (parts[0] + parts[1] / 60.0 + secs / 3600.0).to_numpy(
            dtype="float64", na_value=np.nan
        )
        notes.append(f"time column {name!r} read as elapsed hours:minutes since 0")
        return hours, None, missing, notes

    if time_unit != "hours":
        notes.append(f"time_unit={time_unit!r} ignored: column {name!r} holds date-times")
    raw = col.where(present, None)
    stamps = pd.to_datetime(raw, utc=True, format="ISO8601", errors="coerce")
    failed = np.flatnonzero(stamps.isna().to_numpy() & present)
    if failed.size:
        retry = pd.to_datetime(raw.iloc[failed], utc=True, format="mixed", errors="coerce")
        stamps.iloc[failed] = retry
        failed = np.flatnonzero(stamps.isna().to_numpy() & present)
    if failed.size:
        raise DataError(
            f"Column {name!r} (time): could not read {_count(failed.size, 'value')} as numbers or "
            f"date-times: {_describe_lines(lines[failed], col.iloc[failed].tolist())}. "
            "Use numbers (hours) or ISO date-times such as 2024-01-31 14:05 or "
            "2024-01-31T14:05:00+01:00, and correct or delete those rows."
        )
    return np.full(len(col), np.nan), stamps.reset_index(drop=True), missing, notes


# --------------------------------------------------------------------------------------
# The main entry points
# --------------------------------------------------------------------------------------
def _check_mapping(df: pd.DataFrame, mapping: ColumnMapping) -> None:
    cols = set(df.columns)
    shown = ", ".join(repr(str(c)) for c in df.columns)
    missing = [c for c in mapping.used_columns() if c not in cols]
    if missing:
        raise DataError(
            f"Column(s) {_quote_list(missing)} named in the column mapping are not in the "
            f"file. Columns seen: {shown}. Choose existing columns in the mapping."
        )
    if mapping.layout == "long" and mapping.value is None:
        raise DataError("The long layout needs a value column: choose one in the mapping.")
    if mapping.layout == "wide" and not mapping.wide_channels:
        raise DataError(
            "The wide layout needs at least one channel column: choose the numeric "
            "columns that hold measurements in the mapping."
        )
    used = mapping.used_columns()
    if len(set(used)) != len(used):
        raise DataError(
            f"The column mapping uses a column twice ({mapping.describe()}); give each "
            "role its own column."
        )


def _require_ids(
    ids: np.ndarray, missing: np.ndarray, name: str, role: str, lines: np.ndarray
) -> None:
    if missing.any():
        idx = np.flatnonzero(missing)
        raise DataError(
            f"Column {name!r} ({role}) is empty on {_count(idx.size, 'row')}: "
            f"{_describe_lines(lines[idx])}. Fill in the {role} or delete those rows."
        )


def from_frame(
    df: pd.DataFrame,
    *,
    mapping: ColumnMapping | None = None,
    time_unit: str = "hours",
    max_rows: int = MAX_ROWS,
) -> Observations:
    """Turn a table into :class:`Observations` (the work behind :func:`read_csv`).

    Parameters
    ----------
    df : pandas.DataFrame
        The table, one row per CSV data line (row ``i`` is reported as line ``i + 2``).
        Cells may be text (as read with ``dtype=str``) or already typed.
    mapping : ColumnMapping, optional
        Which column is which; detected with :func:`detect_mapping` when omitted.
    time_unit : {"hours", "minutes", "seconds", "days"}
        Unit of a numeric time column; converted to hours. Ignored for date-times.
    max_rows : int
        Largest number of rows accepted.

    Returns
    -------
    Observations
        Sorted, de-duplicated observations and a :class:`LoadReport`.

    Raises
    ------
    DataError
        For an empty table, too many rows, missing or unusable columns, non-numeric
        values, unreadable times, empty series/channel cells, or fewer than two
        observations left.
    """
    if time_unit not in TIME_UNITS:
        raise DataError(f"time_unit must be one of {', '.join(TIME_UNITS)}, got {time_unit!r}.")
    if df.shape[1] == 0:
        raise DataError(
            "The file is empty: no header and no rows. Upload a CSV with a "
            "header line and at least two data rows."
        )
    if len(df) == 0:
        raise DataError(
            f"The file has a header ({_quote_list(list(df.columns), 8)}) but no data rows. "
            "Add at least two observations."
        )
    if len(df) > max_rows:
        raise DataError(
            f"The file has more than {max_rows:,} data rows, the most accepted. Subsample "
            "series or split the file into several smaller files."
        )
    df = df.reset_index(drop=True)
    if mapping is None:
        mapping = detect_mapping(df)
    _check_mapping(df, mapping)

    n_rows = len(df)
    lines = np.arange(n_rows, dtype=np.int64) + 1 + _HEADER_LINES
    messages: list[str] = [f"read {_count(n_rows, 'row')} ({mapping.describe()})"]
    ignored = [str(c) for c in df.columns if c not in set(mapping.used_columns())]
    if ignored:
        messages.append(f"ignored column(s) {_quote_list(ignored)}")

    # series ids, one per row
    if mapping.series is not None:
        s_col = df[mapping.series]
        series = _id_strings(s_col)
        _require_ids(series, _blank_mask(s_col), mapping.series, "series id", lines)
    else:
        series = np.full(n_rows, SINGLE_SERIES, dtype=object)

    # time, one per row
    hours, stamps, t_missing, notes = _parse_time(df[mapping.time], mapping.time, lines, time_unit)
    messages += notes

    # values (and channels), flattened to one entry per observation
    if mapping.layout == "long":
        value_name = str(mapping.value)  # not None: checked by _check_mapping
        v_col = df[value_name]
        values, v_missing, v_bad = _to_float(v_col)
        if v_bad.any():
            idx = np.flatnonzero(v_bad)
            raise DataError(
                f"Column {value_name!r} (value) has {_count(idx.size, 'cell')} that are not "
                f"finite numbers: {_describe_lines(lines[idx], v_col.iloc[idx].tolist())}. "
                "Use a decimal point (3.5, not 3,5), no units or text; leave a cell blank "
                "if nothing was measured."
            )
        if mapping.channel is not None:
            c_col = df[mapping.channel]
            channel = _id_strings(c_col)
            _require_ids(
                channel, _blank_mask(c_col) & ~v_missing, mapping.channel, "channel", lines
            )
        else:
            channel = np.full(n_rows, SINGLE_CHANNEL, dtype=object)
        row_of = np.arange(n_rows)
        empty_kind = "row"
    else:
        blocks, missing_blocks = [], []
        for c in mapping.wide_channels:
            v, m, b = _to_float(df[c])
            if b.any():
                idx = np.flatnonzero(b)
                raise DataError(
                    f"Column {str(c)!r} (channel) has {_count(idx.size, 'cell')} that are not "
                    f"finite numbers: {_describe_lines(lines[idx], df[c].iloc[idx].tolist())}."
                    " Use a decimal point (3.5, not 3,5), no units or text; leave a cell "
                    "blank if nothing was measured."
                )
            blocks.append(v)
            missing_blocks.append(m)
        k = len(mapping.wide_channels)
        values = np.concatenate(blocks)  # (k * n_rows,) channel-major
        v_missing = np.concatenate(missing_blocks)
        channel = np.repeat(np.array([str(c) for c in mapping.wide_channels], dtype=object), n_rows)
        row_of = np.tile(np.arange(n_rows), k)
        empty_kind = "cell"

    # drop empty values and empty times
    t_missing_obs = t_missing[row_of]
    keep = ~v_missing & ~t_missing_obs
    n_empty_value = int(v_missing.sum())
    n_empty_time = int((t_missing_obs & ~v_missing).sum())
    if n_empty_value:
        if mapping.layout == "long":
            messages.append(f"dropped {_count(n_empty_value, 'row')} with empty values")
        else:
            messages.append(f"{_count(n_empty_value, 'empty cell')} treated as unobserved")
    if n_empty_time:
        idx = np.flatnonzero(t_missing)
        messages.append(
            f"dropped {_count(n_empty_time, empty_kind)} with an empty time in column "
            f"{mapping.time!r} ({_describe_lines(lines[idx])})"
        )
    n_dropped = n_empty_value + n_empty_time
    if mapping.layout == "wide":
        all_empty = int((~t_missing & np.all(np.reshape(v_missing, (k, n_rows)), axis=0)).sum())
        if all_empty:
            messages.append(f"{_count(all_empty, 'row')} had no value in any channel")

    rows = row_of[keep]
    series_kept = series[rows]
    time_origin: dict[str, pd.Timestamp] | None = None
    if stamps is None:
        time_kept = hours[rows]
    else:
        st = stamps.iloc[rows].reset_index(drop=True)
        sid = pd.Series(series_kept, dtype=object)
        first = st.groupby(sid.to_numpy()).min()
        origin = sid.map(first)
        time_kept = ((st - pd.to_datetime(origin, utc=True)) / pd.Timedelta(hours=1)).to_numpy(
            dtype="float64"
        )
        time_origin = {str(k_): pd.Timestamp(v_) for k_, v_ in first.items()}
        messages.append(
            "date-times converted to UTC and to hours since each series' first observation"
        )

    frame = pd.DataFrame(
        {
            "series_id": pd.Series(series_kept, dtype=str),
            "channel": pd.Series(channel[keep], dtype=str),
            "time": np.asarray(time_kept, dtype=np.float64),
            "value": np.asarray(values[keep], dtype=np.float64),
        }
    )

    n_before = len(frame)
    n_merged = 0
    key = ["series_id", "channel", "time"]
    repeated = frame.duplicated(key, keep=False).to_numpy() if n_before else np.zeros(0, bool)
    if repeated.any():
        merged = frame.loc[repeated].groupby(key, sort=False, as_index=False)["value"].mean()
        frame = pd.concat([frame.loc[~repeated], merged[list(COLUMNS)]], ignore_index=True)
        n_merged = n_before - len(frame)
        messages.append(
            f"averaged {_count(n_merged, 'row')} that repeated a (series, channel, time) into one"
        )

    if len(frame) < 2:
        raise DataError(
            f"Only {_count(len(frame), 'observation')} left after dropping empty cells "
            f"({n_dropped:,} dropped, {n_merged:,} merged). Check that column "
            f"{mapping.value or ', '.join(mapping.wide_channels)!r} holds the measurements; "
            "at least two observations are needed."
        )

    frame = frame.sort_values(["series_id", "time", "channel"], kind="stable", ignore_index=True)
    frame["series_id"] = frame["series_id"].astype(str)
    frame["channel"] = frame["channel"].astype(str)

    report = LoadReport(
        layout=mapping.layout,
        mapping=mapping,
        n_rows_read=n_rows,
        n_nan_dropped=n_dropped,
        n_duplicates_merged=n_merged,
        time_unit="hours",
        time_origin=time_origin,
        messages=messages,
    )
    obs = Observations(frame=frame, report=report)
    messages.append(
        f"kept {_count(obs.n_obs, 'observation')} of "
        f"{obs.n_series:,} series and {_count(obs.n_channels, 'channel')}"
    )
    logger.debug("loaded %r", obs)
    return obs


def _read_bytes(source: str | os.PathLike[str] | IO[Any]) -> tuple[bytes | str, str]:
    """The raw content of a path or file-like object, and a name for messages."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise DataError(f"File not found: {str(path)!r}. Check the path.")
        if path.is_dir():
            raise DataError(f"{str(path)!r} is a folder, not a CSV file.")
        return path.read_bytes(), path.name
    if hasattr(source, "read"):
        if hasattr(source, "seek"):
            try:
                source.seek(0)
            except (OSError, ValueError):
                pass
        data = source.read()
        name = str(getattr(source, "name", "uploaded file"))
        if not isinstance(data, (bytes, bytearray, str)):
            raise DataError(f"Could not read {name!r}: expected text or bytes.")
        return (bytes(data) if isinstance(data, bytearray) else data), name
    raise DataError(f"Cannot read data from a {type(source).__name__}; pass a path or a file.")


def _decode(data: bytes | str, name: str) -> str:
    """Bytes -> text: gunzip if gzipped, refuse spreadsheets, UTF-8 (with BOM) or Latin-1."""
    if isinstance(data, str):
        return data
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(
                f"{name!r} looks gzipped but could not be unpacked ({exc}). "
                "Re-create the .csv.gz file or upload the plain CSV."
            ) from exc
    if data[:4] == b"PK\x03\x04" or data[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":
        raise DataError(
            f"{name!r} is a spreadsheet (Excel) file, not CSV text. In your "
            "spreadsheet program use 'Save as' → 'CSV UTF-8' and upload that."
        )
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 with BOM ("Unicode text")
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{name!r} could not be decoded as UTF-16 text. Save it as "
                "'CSV UTF-8' and upload again."
            ) from exc
    if b"\x00" in data[:4096]:
        raise DataError(f"{name!r} is not a text file. Upload a CSV (comma-separated text).")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _sniff_separator(text: str) -> str:
    """Comma unless the header line has more semicolons or tabs."""
    header = text.lstrip().split("\n", 1)[0]
    counts = {",": header.count(","), ";": header.count(";"), "\t": header.count("\t")}
    sep = max(counts, key=lambda s: counts[s])
    return sep if counts[sep] > 0 else ","


def read_csv(
    source: str | os.PathLike[str] | IO[Any],
    *,
    mapping: ColumnMapping | None = None,
    time_unit: str = "hours",
    max_rows: int = MAX_ROWS,
) -> Observations:
    """Read a CSV file into :class:`Observations`.

    Parameters
    ----------
    source : str, path-like or file-like
        A ``.csv`` or ``.csv.gz`` path, or an open file (text or bytes, e.g. Streamlit's
        ``UploadedFile``; gzipped bytes are recognised). Comma, semicolon or tab separated.
    mapping : ColumnMapping, optional
        Which column is which; detected with :func:`detect_mapping` when omitted.
    time_unit : {"hours", "minutes", "seconds", "days"}
        Unit of a numeric time column; converted to hours. Ignored for date-times.
    max_rows : int
        Largest number of data rows accepted (default :data:`MAX_ROWS`).

    Returns
    -------
    Observations

    Raises
    ------
    DataError
        For any problem with the file or its content (see :func:`from_frame`).
    """
    data, name = _read_bytes(source)
    text = _decode(data, name)
    if not text.strip():
        raise DataError(f"{name!r} is empty. Upload a CSV with a header line and data rows.")
    try:
        df = pd.read_csv(
            io.StringIO(text),
            sep=_sniff_separator(text),
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            nrows=max_rows + 1,
            skip_blank_lines=True,
        )
    except pd.errors.EmptyDataError as exc:
        raise DataError(
            f"{name!r} is empty. Upload a CSV with a header line and data rows."
        ) from exc
    except pd.errors.ParserError as exc:
        raise DataError(
            f"{name!r} is not a well-formed CSV: {str(exc).strip()}. Every row needs the "
            "same number of comma-separated fields as the header; quote text that "
            "contains commas."
        ) from exc
    df.columns = [str(c).strip() for c in df.columns]
    return from_frame(df, mapping=mapping, time_unit=time_unit, max_rows=max_rows)


def load_sample(name: str) -> Observations:
    """Load one of the bundled sample data sets.

    Parameters
    ----------
    name : str
        A key of :data:`SAMPLES`.

    Returns
    -------
    Observations

    Raises
    ------
    DataError
        Unknown name, or the file is missing (regenerate with
        ``python sample_data/make_samples.py``).
    """
    if name not in SAMPLES:
        raise DataError(f"Unknown sample {name!r}; choose one of {_quote_list(list(SAMPLES))}.")
    path = SAMPLES[name]
    if not path.exists():
        raise DataError(
            f"Sample file {str(path)!r} is missing; regenerate it with "
            "'python sample_data/make_samples.py'."
        )
    return read_csv(path)


# --------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------
@dataclass
class ChannelScaler:
    """Per-channel min-max scaling, ``(v - min) / (max - min)``.

    Attributes
    ----------
    minimum : dict of str to float
        Channel -> minimum seen at fit time.
    maximum : dict of str to float
        Channel -> maximum seen at fit time; for a constant channel ``minimum + 1`` (so
        its range is 1).
    """

    minimum: dict[str, float]
    maximum: dict[str, float]

    @classmethod
    def fit(cls, frame: pd.DataFrame, series_ids: Iterable[str] | None = None) -> ChannelScaler:
        """Min and max of each channel over some series.

        Parameters
        ----------
        frame : pandas.DataFrame
            Long frame with ``series_id``, ``channel`` and ``value`` (e.g.
            :attr:`Observations.frame`).
        series_ids : iterable of str, optional
            Series to fit on (e.g. the training split); all when omitted.

        Returns
        -------
        ChannelScaler

        Raises
        ------
        DataError
            When the selection holds no observations.
        """
        if series_ids is not None:
            frame = frame[frame["series_id"].isin({str(s) for s in series_ids})]
        if frame.empty:
            raise DataError(
                "Cannot fit the channel scaling: the selected series hold no "
                "observations. Select series with data."
            )
        stats = frame.groupby("channel", sort=True)["value"].agg(["min", "max"])
        lo = stats["min"].astype(float)
        hi = stats["max"].astype(float)
        hi = hi.where(hi > lo, lo + 1.0)
        return cls(
            minimum={str(k): float(v) for k, v in lo.items()},
            maximum={str(k): float(v) for k, v in hi.items()},
        )

    @property
    def channels(self) -> list[str]:
        """Channels known to the scaler, sorted."""
        return sorted(self.minimum)

    def _lookup(
        self, channels: np.ndarray | Sequence[str] | pd.Series
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-row minimum and range; DataError for unseen channels."""
        names = pd.Index(self.channels)
        # factorize first: the lookup then runs once per distinct channel, not per row
        codes, uniques = pd.factorize(np.asarray(channels, dtype=object))
        unique_pos = names.get_indexer(pd.Index(np.asarray(uniques, dtype=object).astype(str)))
        pos = unique_pos[codes]
        if (pos < 0).any():
            unseen = sorted(set(np.asarray(uniques, dtype=object).astype(str)[unique_pos < 0]))
            raise DataError(
                f"Column 'channel' has channel(s) {_quote_list(unseen)} that the scaling was "
                f"not fitted on (known: {_quote_list(self.channels, 10)}). Fit on data that "
                "includes them, or drop those channels."
            )
        lo = np.array([self.minimum[c] for c in names], dtype=np.float64)
        hi = np.array([self.maximum[c] for c in names], dtype=np.float64)
        return lo[pos], (hi - lo)[pos]

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Rescale ``value`` to ``(v - min) / (max - min)`` of its channel.

        Parameters
        ----------
        frame : pandas.DataFrame
            Long frame with ``channel`` and ``value``.

        Returns
        -------
        pandas.DataFrame
            A copy with the same columns, ``value`` rescaled.
        """
        lo, rng = self._lookup(frame["channel"].to_numpy())
        out = frame.copy(deep=False)  # copy-on-write: only the value column is new
        out["value"] = (frame["value"].to_numpy(dtype=np.float64) - lo) / rng
        return out

    def inverse_value(self, values: np.ndarray, channels: np.ndarray) -> np.ndarray:
        """Scaled values back to original units, ``v * (max - min) + min``.

        Parameters
        ----------
        values : ndarray of float, shape (n,)
        channels : ndarray of str, shape (n,)

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        lo, rng = self._lookup(channels)
        return np.asarray(values, dtype=np.float64) * rng + lo

    def scale_of(self, channels: np.ndarray) -> np.ndarray:
        """``max - min`` per row: multiply a scaled spread by it to get original units.

        Parameters
        ----------
        channels : ndarray of str, shape (n,)

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        return self._lookup(channels)[1]

    def to_dict(self) -> dict[str, dict[str, float]]:
        """JSON-safe ``{"minimum": {...}, "maximum": {...}}``."""
        return {
            "minimum": {k: float(v) for k, v in sorted(self.minimum.items())},
            "maximum": {k: float(v) for k, v in sorted(self.maximum.items())},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, float]]) -> ChannelScaler:
        """Inverse of :meth:`to_dict`."""
        try:
            lo = {str(k): float(v) for k, v in d["minimum"].items()}
            hi = {str(k): float(v) for k, v in d["maximum"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(
                f"Not a saved channel scaling ({exc!r}); expected "
                "{'minimum': {...}, 'maximum': {...}}."
            ) from exc
        if set(lo) != set(hi):
            raise DataError(
                "Saved channel scaling lists different channels for minimum and "
                "maximum; re-fit the model."
            )
        return cls(minimum=lo, maximum=hi)
