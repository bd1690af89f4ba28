"""Reading a column of date-times: one format per column, never a guess per row.

ISO 8601 (``2024-01-31 14:05``, with or without an offset) is read as it is, fast. Dates
written with the day and the month as numbers in another order (``02/01/2024``,
``13.01.2024``) are read in one order for the whole column, inferred from all its rows:

* day first when some first field exceeds 12 (``13/01/2024``), month first when some
  second field does (``01/13/2024``); both in one column is refused (two examples named);
* neither: the order cannot be told, and the column is refused as ambiguous (naming it
  and two example values) unless the caller says ``dayfirst=`` (the CLI's ``--dayfirst``)
  or gives the format (``date_format=``, ``--date-format``), or an earlier part of the
  same file (or the data, for a queries file) has already shown the order.

Other text dates (``Jan 31, 2024``) name their month and are read by pandas as before.
Date-times outside the range pandas holds them in (`MIN_STAMP` to
`MAX_STAMP`: years 1677 to 2262) are refused by name, and so is a column that
mixes times with a time-zone offset and times without one (the latter would silently be
taken as UTC).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd

from levy_core.data.errors import DataError
from levy_core.data.messages import count, describe_lines

__all__ = ["GIVEN_ORDER", "MAX_STAMP", "MIN_STAMP", "DayOrder", "read_datetimes", "refuse_out_of_range_stamps",
           "time_zone_mask"]

MIN_STAMP: pd.Timestamp = pd.Timestamp.min.ceil("s")
"""Earliest date-time read (pandas' nanosecond range: 1677-09-21 00:12:44)."""
MAX_STAMP: pd.Timestamp = pd.Timestamp.max.floor("s")
"""Latest date-time read (2262-04-11 23:47:16)."""
_RANGE = f"{MIN_STAMP:%Y-%m-%d %H:%M:%S} to {MAX_STAMP:%Y-%m-%d %H:%M:%S} (UTC)"

# a date of three numbers, day and month in either order, the year last: 02/01/2024,
# 2.1.2024, 02-01-24 (the same separator twice), then a time or nothing
_NUMERIC_DATE = r"^(\d{1,2})([/.\-])(\d{1,2})\2(\d{4}|\d{2})(?![\d/.\-])"
_ISO_EXAMPLE = "2024-01-31 14:05 or 2024-01-31T14:05:00+01:00"
GIVEN_ORDER = "the order given"
"""`DayOrder.evidence` of an order the caller gave (``dayfirst=``)."""
# a time zone at the end of a date-time: Z, UTC/GMT or an offset +01:00 / -0500 (plain
# strings, not compiled patterns, so that Arrow-backed text is searched natively)
_ZONE_END = r"(?:[+-]\d\d:?\d\d|[zZ]|[uU][tT][cC]|[gG][mM][tT])$"
# an hours-only offset (+01) looks like the day of a date ("2024-01-31"): it needs a time
_SHORT_OFFSET_END = r"[+-]\d\d$"
_TIME_THEN_SHORT_OFFSET = r"\d:\d\d(?::\d\d(?:[.,]\d+)?)?\s*[+-]\d\d$"
_CHECKED_CELLS = 50  # unreadable cells looked at for a year out of range


class DayOrder(NamedTuple):
    """The order of day and month that a column's dates showed."""

    dayfirst: bool
    """True: ``DD/MM/YYYY``; False: ``MM/DD/YYYY``."""
    evidence: str
    """Where it showed, for messages: ``line 5 ('13/01/2024')``."""


class DateTimes(NamedTuple):
    """What `read_datetimes` read."""

    stamps: pd.Series
    """UTC date-times (NaT where empty or unreadable), the index of the cells given."""
    order: DayOrder | None
    """The order of day and month used for numeric dates (None: the column had none)."""


def _order_name(dayfirst: bool) -> str:
    return "day first (DD/MM/YYYY)" if dayfirst else "month first (MM/DD/YYYY)"


def read_datetimes(
    raw: pd.Series,
    name: str,
    lines: np.ndarray,
    *,
    dayfirst: bool | None = None,
    date_format: str | None = None,
    known: DayOrder | None = None,
    what: str = "time",
    check_offsets: bool = True,
    check_typed_range: bool = True,
) -> DateTimes:
    """Read date-time cells as UTC date-times in one format for the whole column.

    Parameters
    ----------
    raw : pandas.Series
        Text cells (None / NaN where empty), date-time objects, or a date-time column;
        index ``0..n-1``, row ``i`` on CSV line ``lines[i]``.
    name : str
        The column's name, for messages.
    lines : numpy.ndarray
        CSV line of each cell.
    dayfirst : bool, optional
        Numeric dates are day first (True) or month first (False); None: inferred from
        the column (or ``known``), refused when it cannot be told.
    date_format : str, optional
        A `datetime.strptime` format every cell must match (e.g. ``%d/%m/%Y %H:%M``);
        overrides the inference.
    known : DayOrder, optional
        The order shown by other rows of the same file (earlier chunks) or by the data a
        queries file is about: used when this column cannot tell, and refused when this
        column shows the other order.
    what : str
        What the column is, for messages ("time", "the queries").
    check_offsets : bool
        Refuse a column where some date-times carry an offset and others do not.
    check_typed_range : bool
        Refuse a typed column's stamps outside pandas' nanosecond range (data, whose
        origins are kept in nanoseconds); query stamps are only subtracted from them.

    Returns
    -------
    DateTimes
        The stamps (NaT where a cell is empty or could not be read: the caller names
        those) and the order of day and month used.

    Raises
    ------
    DataError
        Numeric dates whose order cannot be told, or that show both orders; dates
        contradicting ``dayfirst``; cells that do not match ``date_format``; date-times
        outside `MIN_STAMP` .. `MAX_STAMP`; offsets on some cells only.
    """
    raw = raw.reset_index(drop=True)
    if pd.api.types.is_datetime64_any_dtype(raw):
        if check_typed_range:
            refuse_out_of_range_stamps(raw, name, lines, what)
        return DateTimes(pd.to_datetime(raw, utc=True), None)
    present = raw.notna().to_numpy()
    text = pd.Series(pd.NA, index=raw.index, dtype=object)
    text[present] = raw[present].astype(str).str.strip()
    if date_format is not None:
        stamps = _with_format(text, present, date_format, name, lines, what)
        if check_offsets:
            refuse_mixed_offsets(raw, present & stamps.notna().to_numpy(), name, lines, what)
        return DateTimes(stamps, None)
    stamps = _nanoseconds(_to_datetime(text, format="ISO8601"), text, name, lines, what)
    rest = np.flatnonzero(stamps.isna().to_numpy() & present)
    order = None
    if rest.size:
        fields = text.iloc[rest].str.extract(_NUMERIC_DATE)
        numeric = fields[0].notna().to_numpy()
        if numeric.any():
            idx = rest[numeric]
            first = fields[0].to_numpy()[numeric].astype(int)
            second = fields[2].to_numpy()[numeric].astype(int)
            order = _day_order(text, idx, first, second, name, lines, dayfirst, known, what)
            parsed = _parse_numeric(text.iloc[idx], order.dayfirst)
            stamps.iloc[idx] = _nanoseconds(parsed, text, name, lines, what).array
        other = rest[~numeric]
        if other.size:  # dates that name their month (Jan 31, 2024): one reading only
            parsed = _to_datetime(text.iloc[other], format="mixed")
            stamps.iloc[other] = _nanoseconds(parsed, text, name, lines, what).array
    _refuse_years_out_of_range(text, present & stamps.isna().to_numpy(), name, lines, what)
    if check_offsets:  # among the cells read: the others are named by the caller
        refuse_mixed_offsets(raw, present & stamps.notna().to_numpy(), name, lines, what)
    return DateTimes(stamps, order)


def _day_order(text: pd.Series, idx: np.ndarray, first: np.ndarray, second: np.ndarray, name: str,
               lines: np.ndarray, dayfirst: bool | None, known: DayOrder | None, what: str) -> DayOrder:
    """The order of the numeric dates at ``idx``, from the cells (and ``dayfirst``/``known``)."""

    def shown(i: int) -> str:
        return describe_lines(lines[idx[i:i + 1]], [text.iloc[idx[i]]])

    day_big, month_big = np.flatnonzero(first > 12), np.flatnonzero(second > 12)
    column = f"Column {name!r} ({what})"
    if dayfirst is not None:
        wrong = month_big if dayfirst else day_big
        if wrong.size:
            raise DataError(
                f"{column} has dates that are not {_order_name(dayfirst)} although that order was given "
                f"(--dayfirst / dayfirst=): {shown(int(wrong[0]))} cannot be read so. Correct those dates, "
                "or give the order the file is written in (--date-format, e.g. '%m/%d/%Y')."
            )
        return DayOrder(dayfirst, GIVEN_ORDER)
    if day_big.size and month_big.size:
        raise DataError(
            f"{column} mixes dates written day first ({shown(int(day_big[0]))}: no month 13 and above) and "
            f"dates written month first ({shown(int(month_big[0]))}), so no date in it can be trusted. "
            f"Write every date the same way, best as ISO dates such as {_ISO_EXAMPLE}."
        )
    if day_big.size or month_big.size:
        found = DayOrder(bool(day_big.size), shown(int((day_big if day_big.size else month_big)[0])))
        if known is not None and known.dayfirst != found.dayfirst:
            raise DataError(
                f"{column} has dates written {_order_name(found.dayfirst)} ({found.evidence}), but earlier "
                f"dates of the same data were written {_order_name(known.dayfirst)} ({known.evidence}). "
                f"Write every date the same way, best as ISO dates such as {_ISO_EXAMPLE}."
            )
        return found
    if known is not None:
        return known
    differ = np.flatnonzero(first != second)  # 05/05/2024 reads the same either way
    if not differ.size:
        return DayOrder(True, "dates whose day and month are equal")
    cells = text.iloc[idx[differ]]
    picked = differ[~cells.duplicated().to_numpy()][:2]
    examples = describe_lines(lines[idx[picked]], text.iloc[idx[picked]].tolist())
    raise DataError(
        f"{column} has dates such as {examples} whose day and month cannot be told apart: no first or "
        "second number exceeds 12, so 02/01/2024 could be 2 January or 1 February. Say which: --dayfirst "
        "(dayfirst=True) for DD/MM/YYYY, --date-format '%m/%d/%Y' (date_format=) for MM/DD/YYYY, or write "
        f"ISO dates such as {_ISO_EXAMPLE}."
    )


def _to_datetime(cells: pd.Series, **options: object) -> pd.Series:
    """``pandas.to_datetime(cells, utc=True, errors="coerce", **options)``; all NaT when
    pandas raises for a stamp out of its range (named afterwards, cell by cell)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return pd.to_datetime(cells, utc=True, errors="coerce", **options)
    except (pd.errors.OutOfBoundsDatetime, OverflowError):
        return pd.Series(pd.NaT, index=cells.index, dtype="datetime64[ns, UTC]")


def _nanoseconds(parsed: pd.Series, text: pd.Series, name: str, lines: np.ndarray, what: str) -> pd.Series:
    """Parsed stamps in nanoseconds, after refusing those outside the range (pandas may
    return microseconds for year 1)."""
    unit = np.datetime_data(parsed.dt.tz_convert(None).dtype)[0]
    if unit != "ns":
        values = parsed.dt.tz_convert(None).to_numpy()
        lo, hi = np.datetime64(MIN_STAMP.as_unit("s").asm8), np.datetime64(MAX_STAMP.as_unit("s").asm8)
        outside = ~np.isnat(values) & ((values < lo) | (values > hi))
        if outside.any():
            _raise_out_of_range(parsed.index.to_numpy()[outside], text, name, lines, what)
        parsed = parsed.dt.as_unit("ns")
    return parsed


def _parse_numeric(cells: pd.Series, dayfirst: bool) -> pd.Series:
    """Numeric dates in one order: the format of the first cell for all (fast), then the
    cells written otherwise (another time precision) one by one in the same order."""
    from pandas.tseries.api import guess_datetime_format

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fmt = guess_datetime_format(str(cells.iloc[0]), dayfirst=dayfirst)
    out = (_to_datetime(cells, format=fmt) if fmt is not None
           else pd.Series(pd.NaT, index=cells.index, dtype="datetime64[ns, UTC]"))
    rest = np.flatnonzero(out.isna().to_numpy())
    if rest.size:
        again = _to_datetime(cells.iloc[rest], format="mixed", dayfirst=dayfirst)
        if np.datetime_data(again.dt.tz_convert(None).dtype)[0] != np.datetime_data(out.dt.tz_convert(None).dtype)[0]:
            out = out.astype(again.dtype) if again.notna().any() else out
        out.iloc[rest] = again.astype(out.dtype).array if again.notna().any() else again.array
    return out


def _with_format(text: pd.Series, present: np.ndarray, date_format: str, name: str, lines: np.ndarray,
                 what: str) -> pd.Series:
    """Every cell read with ``date_format``; cells that do not match it refused."""
    try:
        stamps = _to_datetime(text, format=date_format)
    except ValueError as exc:  # a format pandas cannot use
        raise DataError(f"The date format {date_format!r} cannot be used ({exc}). Give a strptime format "
                        "such as '%d/%m/%Y %H:%M'.") from exc
    stamps = _nanoseconds(stamps, text, name, lines, what)
    failed = present & stamps.isna().to_numpy()
    _refuse_years_out_of_range(text, failed, name, lines, what)
    if failed.any():
        idx = np.flatnonzero(failed)
        raise DataError(
            f"Column {name!r} ({what}) has {count(idx.size, 'date-time')} that do not match the date format "
            f"{date_format!r}: {describe_lines(lines[idx], text.iloc[idx].tolist())}. Correct those cells, or "
            "give the format they are written in (--date-format)."
        )
    return stamps


def _refuse_years_out_of_range(text: pd.Series, failed: np.ndarray, name: str, lines: np.ndarray,
                               what: str) -> None:
    """Refuse unreadable cells that are date-times outside pandas' range (year 1, 2300)."""
    idx = np.flatnonzero(failed)[:_CHECKED_CELLS]
    outside = []
    for i in idx:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stamp = pd.Timestamp(str(text.iloc[i]))
        except (ValueError, OverflowError):
            continue
        if stamp is pd.NaT:
            continue
        stamp = stamp.tz_convert(None) if stamp.tzinfo is not None else stamp
        if not MIN_STAMP.as_unit("s") <= stamp.as_unit("s") <= MAX_STAMP.as_unit("s"):
            outside.append(int(i))
    if outside:
        _raise_out_of_range(np.asarray(outside), text, name, lines, what)


def refuse_out_of_range_stamps(col: pd.Series, name: str, lines: np.ndarray, what: str = "time") -> None:
    """Refuse a typed date-time column (e.g. Parquet microseconds) with stamps outside
    `MIN_STAMP` .. `MAX_STAMP`.

    Parameters
    ----------
    col : pandas.Series
        A ``datetime64`` column (any unit, naive or time-zone aware).
    name, lines, what
        As for `read_datetimes`.

    Raises
    ------
    DataError
        Naming the first such cells and the range.
    """
    values = col.dt.tz_convert(None) if isinstance(col.dtype, pd.DatetimeTZDtype) else col
    values = values.reset_index(drop=True)
    unit = np.datetime_data(values.dtype)[0] if not isinstance(values.dtype, pd.DatetimeTZDtype) else "ns"
    if unit == "ns":
        return  # nanosecond stamps are within the range by construction
    lo, hi = np.datetime64(MIN_STAMP.as_unit("s").asm8), np.datetime64(MAX_STAMP.as_unit("s").asm8)
    arr = values.to_numpy()
    outside = ~np.isnat(arr) & ((arr < lo) | (arr > hi))
    if outside.any():
        _raise_out_of_range(np.flatnonzero(outside), values.astype(str), name, lines, what)


def _raise_out_of_range(idx: np.ndarray, cells: pd.Series, name: str, lines: np.ndarray, what: str) -> None:
    raise DataError(
        f"Column {name!r} ({what}) has date-times outside the range that can be held, {_RANGE}: "
        f"{describe_lines(lines[idx], cells.iloc[idx].tolist())}. Correct the years (a typo such as 0024 for "
        "2024?), or give times as numbers (hours since a start of your choosing)."
    )


def refuse_mixed_offsets(raw: pd.Series, present: np.ndarray, name: str, lines: np.ndarray,
                         what: str = "time") -> None:
    """Refuse a column where some date-times carry a time-zone offset and others do not
    (those would be taken as UTC, hours away from what was meant).

    Parameters
    ----------
    raw : pandas.Series
        The cells (index ``0..n-1``).
    present : numpy.ndarray
        bool, the cells that are not empty.
    name, lines, what
        As for `read_datetimes`.

    Raises
    ------
    DataError
        Naming a cell of each kind.
    """
    if pd.api.types.is_datetime64_any_dtype(raw) or not present.any():
        return
    zone = time_zone_mask(raw)
    with_zone, without = np.flatnonzero(zone & present), np.flatnonzero(~zone & present)
    if with_zone.size and without.size:
        raise DataError(
            f"Column {name!r} ({what}) mixes date-times with a time-zone offset "
            f"({describe_lines(lines[with_zone[:1]], raw.iloc[with_zone[:1]].tolist())}) and "
            f"{count(without.size, 'date-time')} without one "
            f"({describe_lines(lines[without], raw.iloc[without].tolist())}), which would be taken as UTC. "
            "Give every time its offset (2024-01-31T14:05:00+01:00, or Z for UTC), or none."
        )


def time_zone_mask(col: pd.Series) -> np.ndarray:
    """Which date-time cells carry a time zone.

    A time-zone-aware column: every cell. Text (or objects): the cells that end in an
    offset (``+01:00``, ``-0500``), ``Z``, ``UTC``/``GMT``, or an hours-only offset
    (``+01``) right after a time of day. Empty cells: False. A vectorised look at the
    end of each cell (about 0.1 s per million cells), not a parse.

    Parameters
    ----------
    col : pandas.Series
        The date-time cells.

    Returns
    -------
    numpy.ndarray
        bool, one per cell.
    """
    if pd.api.types.is_datetime64_any_dtype(col):
        return np.full(len(col), isinstance(col.dtype, pd.DatetimeTZDtype))
    present = col.notna().to_numpy()
    out = np.zeros(len(col), dtype=bool)
    if present.any():
        text = col[present].astype(str).str.strip()
        zone = np.array(text.str.contains(_ZONE_END).to_numpy(dtype=bool))  # writable
        short = ~zone & text.str.contains(_SHORT_OFFSET_END).to_numpy(dtype=bool)
        if short.any():  # a date alone has no ':'
            short &= text.str.contains(":", regex=False).to_numpy(dtype=bool)
        if short.any():
            zone[short] = text[short].str.contains(_TIME_THEN_SHORT_OFFSET).to_numpy(dtype=bool)
        out[present] = zone
    return out
