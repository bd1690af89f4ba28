"""A fitted model's clock, as the user reads it.

The pipeline's clock is hours; what a user reads of a fitted model (the notes of ``levy
fit``, ``predict`` and ``evaluate``, the columns of their files, the dashboard's captions)
is in the unit the data came in (`RecordedReading.clock`: "days" for ``--time-unit
days``) or, for date-times, calendar durations ("1 year", "6.9 months"). These helpers read
that clock off a `FittedModel` and word hours in it
(`say_duration`, `say_time`).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from levy_core.data.calendar import freq_step_hours
from levy_core.data.durations import display_unit, duration_text, say_duration, say_time
from levy_core.data.recorded import RecordedReading
from levy_core.data.times import DATETIME, TIME_UNITS

__all__ = ["clock_of", "cutoff_of", "duration_of", "horizon_column", "in_unit_of", "readable_summary", "refit_horizon",
           "time_of", "unit_of"]


class FittedModel(Protocol):
    """What these helpers read of a `FittedModel` (which
    imports this module: named here by its shape, not imported)."""

    reading: RecordedReading | None
    drift: Any  # DriftReference or None
    task: Any
    split: Any
    model_config: Any

    def offset_description(self) -> str: ...

    def left_out_note(self) -> str | None: ...


def clock_of(fitted: FittedModel) -> str | None:
    """The clock of the data ``fitted`` was fitted on: a key of `TIME_UNITS`, or
    "datetime"; None for a model saved before it was recorded."""
    reading = getattr(fitted, "reading", None)
    return None if reading is None else reading.clock


def unit_of(fitted: FittedModel) -> str:
    """The unit a column of durations is written in for this model (``horizon_<unit>``):
    the data's own unit for numeric times; for date-times, days when the data's step (the
    recorded ``freq``, else the median gap between observations of the fit's data) is a day
    or more, hours or minutes for finer data; hours for a model saved before the clock was
    recorded (as it always wrote)."""
    clock = clock_of(fitted)
    if clock is None:
        return "hours"
    if clock in TIME_UNITS:
        return clock
    freq = getattr(fitted.reading, "freq", None)
    return display_unit(DATETIME, freq_step_hours(freq) if freq else _median_gap(fitted))


def _median_gap(fitted: FittedModel) -> float | None:
    """The median over channels of each channel's median gap in the fit's data (hours), from
    the drift reference; None when it was not recorded."""
    channels = getattr(getattr(fitted, "drift", None), "channels", None) or {}
    gaps = [float(getattr(c, "median_gap", math.nan)) for c in channels.values()]
    gaps = [g for g in gaps if math.isfinite(g) and g > 0]
    return float(np.median(gaps)) if gaps else None


def horizon_column(fitted: FittedModel) -> str:
    """The name of the column of hours after each series' last observation in the user's
    unit: ``horizon_days`` for days, ``horizon_hours`` for hours (and models saved before
    the clock was recorded)."""
    return f"horizon_{unit_of(fitted)}"


def in_unit_of(fitted: FittedModel, hours: np.ndarray) -> np.ndarray:
    """Durations (hours) in `unit_of`'s unit, for a ``horizon_<unit>`` column."""
    return np.asarray(hours, np.float64) / TIME_UNITS[unit_of(fitted)]


def duration_of(fitted: FittedModel, hours: float) -> str:
    """A duration as the user of ``fitted`` reads it ("365 days", "1 year")."""
    return say_duration(hours, clock_of(fitted))


def time_of(fitted: FittedModel, hours: float) -> str:
    """A time of the pipeline's clock (a cut-off) as the user of ``fitted`` reads it
    ("1458.33 days", "4 years after each series' first observation")."""
    return say_time(hours, clock_of(fitted))


def refit_horizon(fitted: FittedModel, hours: float) -> str:
    """A ``--horizon`` to refit with, at least ``hours`` long, as the user writes it: a bare
    number in the data's unit for numeric times in days, minutes or seconds ("366"), a
    duration otherwise ("52.2w", "3d")."""
    clock = clock_of(fitted)
    if clock in TIME_UNITS and clock != "hours":  # hours: "3d" reads better than 72 and means the same
        value = hours / TIME_UNITS[clock]
        step = 10.0 ** (math.floor(math.log10(value)) - 2) if value > 0 else 1.0
        up = float(f"{math.ceil(value / step * (1 - 1e-9)) * step:.3g}")  # three digits, rounded up
        return str(np.format_float_positional(up, trim="-"))
    return duration_text(hours, at_least=True)


def cutoff_of(fitted: FittedModel) -> str:
    """A forecast's cut-off in words and the data's clock, to follow "cut-off": one time
    ("1458.33 days") or each series' own ("at 50 % of each series' own span")."""
    return fitted.task.cutoff_text(lambda hours: time_of(fitted, hours))


def readable_summary(fitted: FittedModel) -> dict[str, str | None]:
    """``model.json``'s ``summary``: the fit in words and in the data's clock, for a person
    reading the file (never read back: the numbers beside it, in hours, are the model's).

    Returns
    -------
    dict
        ``clock`` (the data's: "days", "datetime", …), ``calendar`` (date-times: the
        ``freq`` forecasts fall on, else None), ``task`` ("forecast, cut-off 1458.33 days";
        "forecast from rolling origins, horizon 1 year"; "interpolation"), ``season`` (the
        seasonal offset's period, or None), ``offset`` (`FittedModel.offset_description`)
        and ``left_out`` (`FittedModel.left_out_note`, or None).
    """
    task = fitted.task
    plan = fitted.split.origin_plan if fitted.split.mode == "origin" else None
    if task.kind != "forecast":
        what = f"interpolation of {100 * task.holdout_fraction:.0f} % held-out observations"
    elif plan:
        what = (f"forecast from rolling origins, horizon {duration_of(fitted, float(plan['horizon']))}, "
                f"history {duration_of(fitted, float(plan['history']))}")
    else:
        resolved = task.cutoff is not None or getattr(task, "cutoff_fraction", None) is not None
        what = f"forecast, cut-off {cutoff_of(fitted)}" if resolved else "forecast"
    season = fitted.model_config.season
    return {"clock": clock_of(fitted), "calendar": getattr(fitted.reading, "freq", None), "task": what,
            "season": duration_of(fitted, season) if season > 0 else None,
            "offset": fitted.offset_description(), "left_out": fitted.left_out_note()}
