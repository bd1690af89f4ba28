"""Tests of levy_core.pipeline.user_units: a fitted model's clock in words and column names
(days for a fit on days, calendar lengths for date-times, hours for models saved before the
clock was recorded)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from levy_core.data import RecordedReading
from levy_core.data.drift import ChannelReference, DriftReference
from levy_core.pipeline.user_units import (
    clock_of,
    duration_of,
    horizon_column,
    in_unit_of,
    refit_horizon,
    time_of,
    unit_of,
)


def model(clock: str | None, freq: str | None = None, gaps: tuple[float, ...] = ()) -> SimpleNamespace:
    """What these helpers read of a FittedModel: its reading and its drift reference."""
    reading = None if clock is None else RecordedReading(clock=clock, freq=freq,
                                                         time_unit=clock if clock != "datetime" else "hours")
    drift = DriftReference({f"c{i}": ChannelReference(n_values=50, minimum=0.0, maximum=1.0, rate=1.0, median_gap=g)
                            for i, g in enumerate(gaps)}) if gaps else None
    return SimpleNamespace(reading=reading, drift=drift)


def test_a_fit_in_days_speaks_days() -> None:
    days = model("days")
    assert clock_of(days) == "days" and unit_of(days) == "days" and horizon_column(days) == "horizon_days"
    np.testing.assert_allclose(in_unit_of(days, np.array([24.0, 36.0])), [1.0, 1.5])
    assert duration_of(days, 365 * 24.0) == "365 days" and time_of(days, 730.5 * 24) == "730.5 days"
    assert refit_horizon(days, 2000 * 24.0) == "2000" and refit_horizon(days, 730.5 * 24) == "731"


def test_date_times_speak_calendar_lengths_and_columns_follow_the_step() -> None:
    weekly = model("datetime", freq="W-SAT")
    assert unit_of(weekly) == "days" and horizon_column(weekly) == "horizon_days"
    assert duration_of(weekly, 8765.82) == "1 year" and refit_horizon(weekly, 400 * 24.0) == "57.2w"
    assert unit_of(model("datetime", freq="h")) == "hours"
    assert unit_of(model("datetime", gaps=(0.2, 0.25, 0.3))) == "minutes"  # irregular, a few minutes apart
    assert unit_of(model("datetime")) == "days"  # nothing known of the step


def test_a_model_saved_before_the_clock_keeps_hours() -> None:
    old = model(None)
    assert clock_of(old) is None and horizon_column(old) == "horizon_hours"
    assert time_of(old, 24.0) == "24 hours"
