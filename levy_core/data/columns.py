"""Which column is which: the name aliases, :class:`ColumnMapping` and its detection."""

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
)
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
    columns = list(df.columns)
    shown = ", ".join(repr(str(c)) for c in columns) or "(none)"
    taken: set[str] = set()
    time_col = _claim_alias(columns, TIME_ALIASES, taken)
    if time_col is None:
        raise DataError(
            f"No time column found. Columns seen: {shown}. Name the time column one of "
            f"{', '.join(TIME_ALIASES)} (any capitalisation), or choose it in the column "
            "mapping."
        )
    series_col = _claim_alias(columns, SERIES_ALIASES, taken)
    value_col = _claim_alias(columns, VALUE_ALIASES, taken)
    channel_col = find_alias(columns, CHANNEL_ALIASES, taken)
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
        c for c in columns if c not in taken and not _is_ignorable(c) and _looks_numeric(df[c])
    )
    if not wide:
        raise DataError(
            f"No value column and no numeric channel column found. Columns seen: {shown}. "
            f"Either use the long layout with a value column named one of "
            f"{', '.join(VALUE_ALIASES)}, or the wide layout with one numeric column per "
            "channel next to the time column."
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
        :data:`TIME_ALIASES`).
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
    """:func:`find_alias`, adding the column found to ``taken`` (one role per column)."""
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
