"""Durations in the user's words, both ways.

The pipeline's clock is hours; people give and read durations in their own clock:

* `parse_duration` -- a horizon or a gap such as ``"36h"``, ``"2 weeks"`` or a bare
  number in the data's own unit, to hours; `duration_text` writes hours back in a
  form it reads ("36h", "2.5d", for a horizon to refit with);
* `say_duration` and `say_time` -- a duration or a time of the pipeline's clock
  as the user reads it: in the data's unit for numeric times ("730.5 days"), as a calendar
  duration for date-times ("1 year", "6.9 months", "3 weeks"), never raw hours unless the
  data are in hours;
* `display_unit` -- the unit a column of durations is written in (``horizon_days``).
"""

from __future__ import annotations

import math
import numbers
import re

import numpy as np

from levy_core.data.errors import DataError
from levy_core.data.times import DATETIME, TIME_UNITS

__all__ = ["CALENDAR_UNITS", "DAYS_PER_YEAR", "DURATION_UNITS", "calendar_duration", "display_unit",
           "duration_text", "parse_duration", "say_duration", "say_time", "unit_duration"]

DAYS_PER_YEAR = 365.2425
"""Length of a (Gregorian mean) year in days; a month is a twelfth of it."""

DURATION_UNITS: dict[str, float] = {
    "s": TIME_UNITS["seconds"],
    "min": TIME_UNITS["minutes"],
    "h": TIME_UNITS["hours"],
    "d": TIME_UNITS["days"],
    "w": 7 * TIME_UNITS["days"],
    "mo": DAYS_PER_YEAR / 12 * TIME_UNITS["days"],
    "y": DAYS_PER_YEAR * TIME_UNITS["days"],
}
"""Unit suffix accepted by `parse_duration` -> its length in hours."""

_UNIT_NAMES: dict[str, str] = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), "s"),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), "min"),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), "h"),
    **dict.fromkeys(("d", "day", "days"), "d"),
    **dict.fromkeys(("w", "wk", "wks", "week", "weeks"), "w"),
    **dict.fromkeys(("mo", "mos", "month", "months"), "mo"),
    **dict.fromkeys(("y", "yr", "yrs", "year", "years"), "y"),
}
_UNITS_HELP = "s, min, h, d, w, mo, y, or seconds, minutes, hours, days, weeks, months, years"
_DURATION_RE = re.compile(
    r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*([a-zµ]+)\.?$", re.IGNORECASE
)


# --------------------------------------------------------------------------------------
# Durations
# --------------------------------------------------------------------------------------
def duration_text(hours: float, sep: str = "", *, at_least: bool = False) -> str:
    """A duration in the largest unit that keeps it readable ("36h", "2.5d"; ``sep=" "`` for
    prose), to three significant digits; `parse_duration` reads it back (``at_least``:
    rounded up, so that it reads back as no shorter: a horizon to refit with)."""
    h = float(hours)
    if not np.isfinite(h) or h <= 0:
        return ""

    def digits(v: float) -> str:
        step = 10.0 ** (math.floor(math.log10(v)) - 2)  # the third significant digit
        return f"{math.ceil(v / step * (1 - 1e-9)) * step if at_least else v:.3g}"

    if h < 1e-2:
        return f"{digits(h * 3600)}{sep}s"
    for unit, size in (("y", 24 * 365.2425), ("w", 24 * 7.0), ("d", 24.0)):
        if h >= 2 * size:
            return f"{digits(h / size)}{sep}{unit}"
    return f"{digits(h)}{sep}h"


def parse_duration(text: str | float, input_time_unit: str) -> float:
    """A duration (a horizon, a gap) in hours.

    Parameters
    ----------
    text : str or float
        A number with a unit: ``"36h"``, ``"36 hours"``, ``"2.5 d"``, ``"2 weeks"``,
        ``"5 years"`` (units, case-insensitive: s, min, h, d, w, mo, y, or their long
        forms; a month is a twelfth of `DAYS_PER_YEAR` days, a year
        `DAYS_PER_YEAR` days); or a bare number (or ``"36"``) in the data's own
        unit.
    input_time_unit : str
        The data's unit (`LoadReport.input_time_unit`, or `user_time_unit`):
        a key of `TIME_UNITS`, or "datetime", for which a bare
        number is refused (its unit would be a guess).

    Returns
    -------
    float
        Hours, finite and > 0.

    Raises
    ------
    DataError
        Unreadable text, an unknown or ambiguous unit (naming the accepted ones), a bare
        number for date-time data, or a duration that is not a finite number > 0.
    """
    if input_time_unit != DATETIME and input_time_unit not in TIME_UNITS:
        raise DataError(
            f"Unknown time unit {input_time_unit!r}: use one of "
            f"{', '.join([*TIME_UNITS, DATETIME])}."
        )
    if isinstance(text, bool) or not isinstance(text, (str, numbers.Real)):
        raise DataError(
            f"A duration must be text such as '36h' or a number, got {type(text).__name__}."
        )
    bare = _bare_number(text)
    if bare is None:
        value, suffix = _number_and_unit(str(text))
        return _positive_hours(value, DURATION_UNITS[suffix], text)
    if input_time_unit == DATETIME:
        raise DataError(
            f"Duration {str(text)!r} has no unit, and the data's times are date-times, so "
            f"there is no unit to assume. Add one: {bare:g}h, {bare:g}d, {bare:g}w, ... "
            f"(accepted units: {_UNITS_HELP})."
        )
    return _positive_hours(bare, TIME_UNITS[input_time_unit], text)


def _bare_number(text: str | float) -> float | None:
    """The number when ``text`` is one (NaN and inf included); None when it is not."""
    if not isinstance(text, str):
        return float(text)
    try:
        return float(text.strip())
    except ValueError:
        return None


def _number_and_unit(text: str) -> tuple[float, str]:
    """Split ``"2.5 days"`` into (2.5, "d"); DataError for anything else."""
    stripped = text.strip()
    if not stripped:
        raise DataError(f"The duration is empty. Write a number and a unit, e.g. 36h or 2 weeks "
                        f"(accepted units: {_UNITS_HELP}).")
    match = _DURATION_RE.match(stripped)
    if match is None:
        raise DataError(
            f"Could not read {text!r} as a duration. Write one number and a unit, e.g. 36h, "
            f"2.5 d or 2 weeks, with a decimal point (1.5, not 1,5); accepted units: "
            f"{_UNITS_HELP}."
        )
    unit = match.group(2).lower()
    if unit == "m":
        raise DataError(
            f"Duration {text!r}: 'm' could mean minutes or months; write 'min' or 'mo'."
        )
    if unit not in _UNIT_NAMES:
        raise DataError(
            f"Duration {text!r} has the unknown unit {match.group(2)!r}; accepted units: "
            f"{_UNITS_HELP}."
        )
    return float(match.group(1)), _UNIT_NAMES[unit]


def _positive_hours(value: float, hours_per_unit: float, text: str | float) -> float:
    """``value`` units in hours; DataError unless finite and > 0."""
    hours = value * hours_per_unit
    if not math.isfinite(hours):
        raise DataError(
            f"Duration {str(text)!r} is not a finite number. Give a positive length such "
            "as 36h or 2 weeks."
        )
    if hours <= 0:
        raise DataError(
            f"Duration {str(text)!r} must be more than 0. Give a positive length such as "
            "36h or 2 weeks."
        )
    return hours


# --------------------------------------------------------------------------------------
# Durations as the user reads them
# --------------------------------------------------------------------------------------
CALENDAR_UNITS: tuple[tuple[str, float], ...] = (
    ("year", DAYS_PER_YEAR * 24.0),
    ("month", DAYS_PER_YEAR / 12 * 24.0),
    ("week", 7 * 24.0),
    ("day", 24.0),
    ("hour", 1.0),
    ("minute", 1 / 60),
    ("second", 1 / 3600),
)
"""The units of a calendar duration (`calendar_duration`), largest first, in hours."""

_WHOLE = 1e-3
"""How close to a whole number of a unit a duration must be to be said in it below 2 of
it ("1 year", not "12 months"; "1 week", not "7 days")."""


def _number(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, written without an exponent ("1460", "6.9")."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    rounded = float(f"{value:.{digits}g}")
    return str(np.format_float_positional(rounded, trim="-"))


def _counted(value: float, name: str, digits: int = 3) -> str:
    """"1 day", "2.5 days": ``value`` of the unit ``name``, plural unless it reads 1."""
    text = _number(value, digits)
    return f"{text} {name}" if text in ("1", "-1") else f"{text} {name}s"


def calendar_duration(hours: float) -> str:
    """A duration as a calendar length: "1 year", "6.9 months", "3 weeks", "2.5 days".

    Parameters
    ----------
    hours : float
        The duration in hours (the pipeline's clock).

    Returns
    -------
    str
        In the largest unit of `CALENDAR_UNITS` holding at least 2 of it, or exactly
        a whole number of it (within 0.1 %), to three significant digits; a month is a
        twelfth of `DAYS_PER_YEAR` days. "" for a value that is not finite.
    """
    h = float(hours)
    if not math.isfinite(h):
        return ""
    size = abs(h)
    for name, length in CALENDAR_UNITS:
        v = size / length
        if v >= 2 or (v >= 1 - _WHOLE and abs(v - round(v)) <= _WHOLE * v):
            return _counted(h / length, name)
    return _counted(h * 3600, "second")


def unit_duration(hours: float, unit: str, digits: int = 4) -> str:
    """A duration in the numeric unit ``unit`` (a key of `TIME_UNITS`): "730.5 days"
    (``digits`` significant digits; "1 day" for one)."""
    if unit not in TIME_UNITS:
        raise ValueError(f"unit must be one of {', '.join(TIME_UNITS)}, got {unit!r}")
    return _counted(float(hours) / TIME_UNITS[unit], unit.removesuffix("s"), digits)


def say_duration(hours: float, clock: str | None) -> str:
    """A duration (a horizon, a half-life, a season) as the user reads it.

    Parameters
    ----------
    hours : float
        The duration in hours.
    clock : str or None
        The data's clock (``RecordedReading.clock``, `user_time_unit`):
        a key of `TIME_UNITS` (the duration in that unit: "1460 days"), ``"datetime"``
        (a calendar duration: "4 years"), or None (unknown: a calendar duration).

    Returns
    -------
    str
    """
    if clock in TIME_UNITS:
        return unit_duration(hours, clock)
    return calendar_duration(hours)


def say_time(hours: float, clock: str | None) -> str:
    """A time of the pipeline's clock (a cut-off) as the user reads it: "1458.33 days" for
    numeric times (six significant digits, in the data's unit), "4 years after each series'
    first observation" for date-times (whose clock starts there), "1458.33 hours" when the
    clock is unknown."""
    h = float(hours)
    if clock in TIME_UNITS:
        return unit_duration(h, clock, digits=6)
    if clock == DATETIME:
        return f"{calendar_duration(h)} after each series' first observation"
    return unit_duration(h, "hours", digits=6)


def display_unit(clock: str | None, step_hours: float | None = None) -> str:
    """The unit a column of durations (``horizon_<unit>``) is written in: the data's own for
    numeric times; for date-times, days when the data's step (``step_hours``: the ``freq``'s,
    or the typical gap) is a day or more, or unknown, hours for an hourly step, minutes below
    (a key of `TIME_UNITS`)."""
    if clock in TIME_UNITS:
        return str(clock)
    if step_hours is None or not math.isfinite(step_hours) or step_hours >= 24.0 * (1 - _WHOLE):
        return "days"
    return "hours" if step_hours >= 1.0 - _WHOLE else "minutes"
