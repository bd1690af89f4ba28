"""Which column is which: the name aliases, [`ColumnMapping`][levy_core.data.ColumnMapping] and its detection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np
import pandas as pd

from levy_core.data.cells import missing_mask
from levy_core.data.decimals import decimal_comma_mask
from levy_core.data.errors import DataError

TIME_ALIASES: tuple[str, ...] = (
    "time",
    "timestamp",
    "date",
    "datetime",
    "t",
    "time_hours",
    "hours",
    "charttime",
    "ds",  # NeuralForecast / StatsForecast long format: unique_id, ds, y
    "day",  # follow-up studies: days since entry (PBC: id, day, bili, ...)
    "days",
    "time_days",  # as time_hours; the unit is still --time-unit's (time_weeks: no weeks unit to read it in)
    "study_day",
    "visit_day",
    "visit",
)
FALLBACK_TIME_ALIASES: tuple[str, ...] = ("age", "age_days", "age_years")
"""Names taken as the time only when no column is named one of `TIME_ALIASES`: an
``age`` column may as well be a measurement (a covariate), so a table with ``age`` and
``day`` reads ``day`` as the time and ``age`` as a channel; the report notes the choice."""
SERIES_ALIASES: tuple[str, ...] = (
    "series_id",
    "series",
    "id",
    "patient_id",
    "patientid",
    "subject_id",
    "unit_id",
    "unique_id",  # NeuralForecast / StatsForecast
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


MAX_COLUMN_NAME_CHARS = 256
"""Longest column name a [`ColumnNames`][levy_core.data.ColumnNames] (and a model's recorded mapping) holds."""
MAX_NAMED_CHANNELS = 10_000
"""Most wide channel columns a [`ColumnNames`][levy_core.data.ColumnNames] names."""


@dataclass(frozen=True)
class ColumnNames:
    """The columns a user named (``levy --id/--time/--value/--channel/--channels``,
    ``LevyForecaster(id_col=..., time_col=..., value_col=..., channel_col=..., channels=...)``);
    each role left None is found by its name ([`detect_mapping`][levy_core.data.detect_mapping]).

    Attributes
    ----------
    series, time, value, channel : str or None
        The series id, time, value (long form) and channel (long form) columns.
    channels : tuple of str
        Wide form: the columns that hold measurements (one channel each).
    """

    series: str | None = None
    time: str | None = None
    value: str | None = None
    channel: str | None = None
    channels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for role in ("series", "time", "value", "channel"):
            _check_name(getattr(self, role), role)
        if isinstance(self.channels, str) or not isinstance(self.channels, (tuple, list)):
            raise ValueError(f"channels must be a list of column names, got {type(self.channels).__name__}")
        if len(self.channels) > MAX_NAMED_CHANNELS:
            raise ValueError(f"channels names {len(self.channels):,} columns, more than {MAX_NAMED_CHANNELS:,}")
        for name in self.channels:
            _check_name(name, "channels")
        object.__setattr__(self, "channels", tuple(self.channels))
        if self.channels and (self.value is not None or self.channel is not None):
            raise ValueError("name either the wide form's channel columns (--channels, channels=) or the long "
                             "form's value and channel columns (--value/--channel, value_col=/channel_col=), "
                             "not both")
        named = [n for n in (self.series, self.time, self.value, self.channel, *self.channels) if n is not None]
        twice = sorted({n for n in named if named.count(n) > 1})
        if twice:
            raise ValueError(f"column(s) {twice} named for two roles: give each role its own column")

    @property
    def empty(self) -> bool:
        """Whether nothing is named (every role found by its name)."""
        return self == ColumnNames()

    def merged(self, override: ColumnNames) -> ColumnNames:
        """These names with ``override``'s set roles instead (a later command's options over
        the fit's): the series and time one by one; the form (value/channel or channels) as
        a whole when ``override`` names any of it."""
        form = override if (override.value, override.channel, override.channels) != (None, None, ()) else self
        return ColumnNames(series=override.series or self.series, time=override.time or self.time,
                           value=form.value, channel=form.channel, channels=form.channels)

    @classmethod
    def from_mapping(cls, mapping: ColumnMapping) -> ColumnNames:
        """Every role of a whole mapping named (the dashboard's mapping, ``fit(mapping=...)``)."""
        if mapping.layout == "wide":
            return cls(series=mapping.series, time=mapping.time, channels=mapping.wide_channels)
        return cls(series=mapping.series, time=mapping.time, value=mapping.value, channel=mapping.channel)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``channels`` as a list)."""
        return {"series": self.series, "time": self.time, "value": self.value, "channel": self.channel,
                "channels": list(self.channels)}

    @classmethod
    def from_dict(cls, data: Any) -> ColumnNames:
        """The inverse of [`to_dict`][levy_core.data.ColumnNames.to_dict]; ValueError for unknown keys or bad names."""
        if not isinstance(data, Mapping):
            raise ValueError(f"column names must be an object, got {type(data).__name__}")
        unknown = sorted(str(k) for k in set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown column-name keys {unknown[:5]}")
        channels = data.get("channels", ())
        if not isinstance(channels, (list, tuple)):
            raise ValueError(f"channels must be a list of column names, got {type(channels).__name__}")
        return cls(**{**data, "channels": tuple(channels)})


def _check_name(name: Any, role: str) -> None:
    """A named column: None or a non-empty string of at most `MAX_COLUMN_NAME_CHARS`."""
    if name is None:
        return
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"the {role} column must be a column name (non-empty text), got {name!r}")
    if len(name) > MAX_COLUMN_NAME_CHARS:
        raise ValueError(f"the {role} column's name has {len(name):,} characters, more than "
                         f"{MAX_COLUMN_NAME_CHARS}: give the column's name")


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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``wide_channels`` as a list)."""
        return {"time": self.time, "value": self.value, "series": self.series, "channel": self.channel,
                "wide_channels": list(self.wide_channels), "layout": self.layout}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ColumnMapping:
        """The inverse of ``to_dict``; unknown keys are refused."""
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown column-mapping keys {unknown}")
        return cls(**{**data, "wide_channels": tuple(data.get("wide_channels", ()))})

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


def detect_mapping(df: pd.DataFrame, named: ColumnNames | None = None) -> ColumnMapping:
    """Guess which columns hold time, series, channel and value.

    Names are matched case-insensitively (surrounding blanks ignored) against
    `TIME_ALIASES`, `SERIES_ALIASES`, `CHANNEL_ALIASES` and
    `VALUE_ALIASES`; the earliest alias in each list wins.

    The table is **long** when a value column is found (the channel column is optional:
    without it everything is one channel, "value"). Otherwise it is **wide**: a time
    column, an optional series column, and every other column holding numbers is a
    channel (empty columns, text columns and unnamed index columns are skipped).

    Parameters
    ----------
    df : pandas.DataFrame
        The table as read (any dtypes; text cells are fine).
    named : ColumnNames, optional
        Columns the user named: those roles are taken as named, the others found by name
        among the remaining columns (``channels`` named: the wide form with exactly those;
        ``value`` or ``channel`` named: the long form).

    Returns
    -------
    ColumnMapping
        The detected mapping.

    Raises
    ------
    DataError
        A named column not in the table; no time column; a channel column without a value
        column; or no value column and no numeric channel column.
    """
    columns = list(df.columns)
    shown = ", ".join(repr(str(c)) for c in columns) or "(none)"
    named = named or ColumnNames()
    absent = [n for n in (named.series, named.time, named.value, named.channel, *named.channels)
              if n is not None and n not in columns]
    if absent:
        raise DataError(f"Column(s) {', '.join(map(repr, absent))} named (--id/--time/--value/--channel/--channels, "
                        f"or the model's recorded columns) are not in the table. Columns seen: {shown}. Name "
                        "columns of this table, e.g. --time COL (time_col= in Python).")
    taken = {n for n in (named.series, named.time, named.value, named.channel, *named.channels) if n is not None}
    time_col = named.time or _claim_alias(columns, TIME_ALIASES, taken) or _claim_alias(
        columns, FALLBACK_TIME_ALIASES, taken)
    if time_col is None:
        raise DataError(
            f"No time column found. Columns seen: {shown}. Name it with --time COL (time_col= in "
            f"Python), name the time column one of {', '.join(TIME_ALIASES)} (any capitalisation), "
            "or choose it in the column mapping."
        )
    series_col = named.series or _claim_alias(columns, SERIES_ALIASES, taken)
    if named.channels:
        return ColumnMapping(time=time_col, series=series_col, wide_channels=named.channels, layout="wide")
    value_col = named.value or _claim_alias(columns, VALUE_ALIASES, taken)
    channel_col = named.channel or find_alias(columns, CHANNEL_ALIASES, taken)
    if named.channel is not None and value_col is None:
        raise DataError(f"Column {named.channel!r} is named as the channel column (long form), but there is no "
                        f"value column. Columns seen: {shown}. Name it with --value COL (value_col= in Python).")
    if value_col is not None:
        return ColumnMapping(
            time=time_col, value=value_col, series=series_col, channel=channel_col, layout="long"
        )
    if channel_col is not None and _looks_numeric(df[channel_col]) is False:
        raise DataError(
            f"Column {str(channel_col)!r} looks like a channel column (long layout), but "
            f"there is no value column. Columns seen: {shown}. Rename the column holding "
            f"the measurements to one of {', '.join(VALUE_ALIASES)}, name it with --value COL "
            "(value_col= in Python), or choose it in the column mapping."
        )
    wide = tuple(
        c for c in columns if c not in taken and not _is_ignorable(c) and _looks_numeric(df[c])
    )
    if not wide:
        raise DataError(
            f"No value column and no numeric channel column found. Columns seen: {shown}. "
            f"Either use the long layout with a value column named one of "
            f"{', '.join(VALUE_ALIASES)} (or named with --value COL), or the wide layout with one "
            "numeric column per channel next to the time column (or named with --channels A,B)."
        )
    return ColumnMapping(time=time_col, series=series_col, wide_channels=wide, layout="wide")


def find_alias(
    columns: Sequence[str], aliases: Sequence[str], taken: set[str] | None = None
) -> str | None:
    """First column (in alias order) whose stripped, lower-cased name is an alias.

    Parameters
    ----------
    columns : sequence of str
        Column names, in table order (the first of equal names wins).
    aliases : sequence of str
        Lower-case names accepted for the role, most specific first (e.g.
        `TIME_ALIASES`).
    taken : set of str, optional
        Columns already given another role, skipped.

    Returns
    -------
    str or None
        The column's name as it is in ``columns``; None when no column matches.
    """
    taken = set() if taken is None else taken
    by_name: dict[str, str] = {}
    for col in columns:
        key = str(col).strip().lower()
        if col not in taken and key not in by_name:
            by_name[key] = col
    for alias in aliases:
        if alias in by_name:
            return by_name[alias]
    return None


def _claim_alias(columns: Sequence[str], aliases: Sequence[str], taken: set[str]) -> str | None:
    """`find_alias`, adding the column found to ``taken`` (one role per column)."""
    found = find_alias(columns, aliases, taken)
    if found is not None:
        taken.add(found)
    return found


def _is_ignorable(name: str) -> bool:
    """Index columns written by ``DataFrame.to_csv`` and unnamed columns."""
    s = str(name).strip()
    return s == "" or s.lower().startswith("unnamed:") or s.lower() == "index"


def _looks_numeric(col: pd.Series, sample: int = 2000) -> bool | None:
    """Whether a column holds numbers: True, False, or None when it is entirely empty.

    A column counts as numeric when at least half of its first ``sample`` non-empty
    cells parse as finite numbers, with a decimal point or a decimal comma (so that a
    few typos, or decimal commas where they cannot be read, are reported as errors
    instead of the column silently disappearing).
    """
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        return None if col.isna().all() else True
    if pd.api.types.is_datetime64_any_dtype(col):
        return False
    present = col[~missing_mask(col)]
    if present.empty:
        return None
    head = present.iloc[:sample]
    parsed = pd.to_numeric(head.astype(str).str.strip(), errors="coerce")
    ok = np.isfinite(parsed.to_numpy(dtype="float64", na_value=np.nan)) | decimal_comma_mask(head)
    return bool(ok.mean() >= 0.5)
