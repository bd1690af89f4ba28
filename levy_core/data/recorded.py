"""How a model's data were read, recorded in ``model.json`` at fit time and reused by every
later command: [`RecordedReading`][levy_core.data.RecordedReading] (the named columns, the mapping found, the clock's
unit, the date options).

``levy predict``, ``evaluate``, ``rank``, ``advise``, ``watch`` and
``LevyForecaster.load(...).predict`` read their data as the fit did unless told otherwise
([`RecordedReading.resolve`][levy_core.data.RecordedReading.resolve]): a column option names that column in the new file, a date
option describes the new file's dates; a time unit other than the fit's is refused by name,
since the model's clock is that unit. Models saved before it was recorded hold none, and read
their data as before (everything found by name, hours unless told).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from levy_core.data.calendar import check_freq, infer_freq
from levy_core.data.columns import ColumnMapping, ColumnNames
from levy_core.data.errors import DataError
from levy_core.data.observations import Observations
from levy_core.data.times import DATETIME, TIME_UNITS

__all__ = ["MAX_DATE_FORMAT_CHARS", "ReadOptions", "RecordedReading", "TimeUnitConflict", "calendar_of"]

MAX_DATE_FORMAT_CHARS = 200
"""Longest date format a model records."""
_KEYS = ("columns", "mapping", "time_unit", "clock", "dayfirst", "date_format", "freq")


class TimeUnitConflict(ValueError):
    """A time unit given to a later command that is not the one the model was fitted with."""


@dataclass(frozen=True)
class ReadOptions:
    """How one command reads its data: the columns named, the time unit, the date options."""

    columns: ColumnNames = field(default_factory=ColumnNames)
    time_unit: str = "hours"
    dayfirst: bool | None = None
    date_format: str | None = None


@dataclass(frozen=True)
class RecordedReading:
    """How the data a model was fitted on were read.

    Attributes
    ----------
    columns : ColumnNames
        The columns the user named (``--id/--time/...``, ``time_col=...``); roles left None
        were found by name, and are found by name again in later files.
    mapping : ColumnMapping or None
        The mapping the fit read its data with (named and found columns), for the record.
    time_unit : {"hours", "minutes", "seconds", "days"}
        The unit of numeric times the fit read.
    clock : str
        What the fit's times were: ``"datetime"``, or ``time_unit``.
    dayfirst : bool or None
        ``--dayfirst`` / ``dayfirst=`` at fit time.
    date_format : str or None
        ``--date-format`` / ``date_format=`` at fit time.
    freq : str or None
        Date-time data: the calendar they are sampled on (a pandas alias such as ``W-SAT``,
        ``MS``, ``B``: `infer_freq`, or ``--freq`` /
        ``freq=``), on which forecasts past each series' end fall; None: irregular, or
        numeric times.
    """

    columns: ColumnNames = field(default_factory=ColumnNames)
    mapping: ColumnMapping | None = None
    time_unit: str = "hours"
    clock: str = "hours"
    dayfirst: bool | None = None
    date_format: str | None = None
    freq: str | None = None

    def __post_init__(self) -> None:
        if self.time_unit not in TIME_UNITS:
            raise ValueError(f"time_unit must be one of {', '.join(TIME_UNITS)}, got {self.time_unit!r}")
        if self.clock != DATETIME and self.clock not in TIME_UNITS:
            raise ValueError(f"clock must be {DATETIME!r} or a time unit, got {self.clock!r}")
        if not (self.dayfirst is None or isinstance(self.dayfirst, bool)):
            raise ValueError(f"dayfirst must be true, false or null, got {self.dayfirst!r}")
        if self.date_format is not None and (not isinstance(self.date_format, str)
                                             or not 0 < len(self.date_format) <= MAX_DATE_FORMAT_CHARS):
            raise ValueError(f"date_format must be a strptime format of 1 to {MAX_DATE_FORMAT_CHARS} characters, "
                             f"got {str(self.date_format)[:40]!r}")
        if self.freq is not None:
            try:
                object.__setattr__(self, "freq", check_freq(self.freq))
            except DataError as exc:
                raise ValueError(str(exc)) from exc

    @classmethod
    def found(cls, obs: Observations, freq: str | None = None) -> RecordedReading:
        """How ``obs`` was read (``pipeline.fit``'s record): its mapping, every role of it named
        when it was given to the reader (the dashboard's column mapping), its clock's unit
        (date-times: the hours default) and, for date-times, its calendar (``freq``, else
        inferred: `infer_freq`)."""
        unit, report = obs.report.input_time_unit, obs.report
        columns = ColumnNames.from_mapping(report.mapping) if report.mapping_given else ColumnNames()
        return cls(columns=columns, mapping=report.mapping, time_unit=unit if unit in TIME_UNITS else "hours",
                   clock=unit, freq=calendar_of(obs, freq))

    def resolve(self, columns: ColumnNames, time_unit: str | None, dayfirst: bool | None,
                date_format: str | None) -> ReadOptions:
        """How a later command reads its data: what it was given over what the fit recorded.

        Parameters
        ----------
        columns : ColumnNames
            The columns the command named (each role named replaces the fit's).
        time_unit : str or None
            The command's time unit; None: the fit's.
        dayfirst, date_format : bool or None, str or None
            The command's date options; both None: the fit's.

        Raises
        ------
        TimeUnitConflict
            ``time_unit`` is not the unit the model was fitted with (numeric times).
        """
        if time_unit is not None and time_unit != self.time_unit and self.clock != DATETIME:
            raise TimeUnitConflict(
                f"--time-unit {time_unit} (time_unit={time_unit!r}) conflicts with the model, fitted on times in "
                f"{self.time_unit}: its clock is {self.time_unit}. Leave --time-unit out (the model's unit is used), "
                f"give times in {self.time_unit}, or fit a new model with --time-unit {time_unit}")
        dates = (dayfirst, date_format) if (dayfirst, date_format) != (None, None) else (self.dayfirst,
                                                                                        self.date_format)
        return ReadOptions(self.columns.merged(columns), self.time_unit, *dates)

    def describe(self) -> str:
        """One line: the columns and the clock, as ``levy`` notes it."""
        where = self.mapping.describe() if self.mapping is not None else "columns found by name"
        clock = "date-times" if self.clock == DATETIME else f"numeric times in {self.time_unit}"
        if self.clock == DATETIME:
            clock += f" on the calendar {self.freq}" if self.freq else " (irregular: no calendar)"
        return f"{where}; {clock}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``model.json``'s ``reading``)."""
        return {"columns": self.columns.to_dict(), "mapping": self.mapping.to_dict() if self.mapping else None,
                "time_unit": self.time_unit, "clock": self.clock, "dayfirst": self.dayfirst,
                "date_format": self.date_format, "freq": self.freq}

    @classmethod
    def from_dict(cls, data: Any) -> RecordedReading:
        """The inverse of [`to_dict`][levy_core.data.RecordedReading.to_dict], validated (``model.json`` is input): ValueError naming
        the field for a wrong type, an unknown key, a name too long or a unit unknown."""
        if not isinstance(data, Mapping):
            raise ValueError(f"reading must be an object, got {type(data).__name__}")
        unknown = sorted(str(k)[:40] for k in set(data) - set(_KEYS))
        if unknown:
            raise ValueError(f"reading has unknown keys {unknown[:5]}")
        return cls(columns=ColumnNames.from_dict(data.get("columns") or {}),
                   mapping=_mapping(data.get("mapping")), time_unit=_text(data.get("time_unit", "hours"), "time_unit"),
                   clock=_text(data.get("clock", "hours"), "clock"), dayfirst=data.get("dayfirst"),
                   date_format=data.get("date_format"),
                   freq=None if data.get("freq") is None else _text(data.get("freq"), "freq"))


def calendar_of(obs: Observations, freq: str | None = None) -> str | None:
    """The calendar of ``obs``: ``freq`` when given (checked; refused for numeric times,
    which have no calendar), else inferred from date-times (None for numeric times or
    irregular data).

    Raises
    ------
    DataError
        ``freq`` is not a pandas frequency, or the data's times are numbers.
    """
    if freq is None:
        return infer_freq(obs)
    checked = check_freq(freq)
    if obs.report.time_origin is None:
        raise DataError(f"freq {freq!r}: the data's times are numbers in {obs.report.input_time_unit}, which have "
                        "no calendar; freq is for date-time data (leave it out)")
    return checked


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or len(value) > 20:
        raise ValueError(f"reading.{key} must be a short text, got {str(value)[:40]!r}")
    return value


def _mapping(data: Any) -> ColumnMapping | None:
    """``reading.mapping``: None, or a column mapping whose names are bounded texts."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise ValueError(f"reading.mapping must be an object, got {type(data).__name__}")
    if not isinstance(data.get("time"), str) or data.get("layout") not in ("long", "wide"):
        raise ValueError("reading.mapping needs a time column and a layout, long or wide")
    wide = data.get("wide_channels", [])
    if not isinstance(wide, list):
        raise ValueError("reading.mapping.wide_channels must be a list of column names")
    long = data["layout"] == "long"
    # each name a bounded text, none twice (ColumnNames checks them)
    ColumnNames.from_dict({"series": data.get("series"), "time": data["time"],
                           "value": data.get("value") if long else None, "channel": data.get("channel") if long
                           else None, "channels": [] if long else wide})
    return ColumnMapping.from_dict(data)
