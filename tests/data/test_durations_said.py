"""Tests of levy_core.data.durations' wording: a duration or a time of the pipeline's clock
(hours) said in the data's own unit, or as a calendar duration for date-times, never raw hours
unless the data are in hours."""

from __future__ import annotations

import pytest

from levy_core.data import DAYS_PER_YEAR, calendar_duration, display_unit, say_duration, say_time

YEAR_H = DAYS_PER_YEAR * 24.0


@pytest.mark.parametrize(("hours", "text"), [
    (YEAR_H, "1 year"), (6.9 * YEAR_H / 12, "6.9 months"), (3 * 168.0, "3 weeks"), (168.0, "1 week"),
    (10.5 * 24, "10.5 days"), (36.0, "36 hours"), (1.0, "1 hour"), (0.5, "30 minutes"), (1 / 3600, "1 second"),
    (5 * YEAR_H, "5 years"), (18 * YEAR_H / 12, "18 months"),
])
def test_calendar_duration_reads_like_a_calendar(hours: float, text: str) -> None:
    assert calendar_duration(hours) == text


def test_say_duration_in_the_data_unit() -> None:
    assert say_duration(365 * 24.0, "days") == "365 days" and say_duration(24.0, "days") == "1 day"
    assert say_duration(8765.82, "days") == "365.2 days"  # the harmonic of a year, in days
    assert say_duration(8765.82, "datetime") == "1 year" and say_duration(8765.82, None) == "1 year"
    assert say_duration(1.5, "minutes") == "90 minutes" and say_duration(36.0, "hours") == "36 hours"
    for text in (say_duration(3.84e4, "days"), say_duration(3.84e4, "datetime")):
        assert "h" not in text.split() and "e+" not in text


def test_say_time_and_the_column_unit() -> None:
    assert say_time(1458.33 * 24, "days") == "1458.33 days"
    assert say_time(4 * YEAR_H, "datetime") == "4 years after each series' first observation"
    assert say_time(35000.0, None) == "35000 hours"  # a model saved before its clock was recorded
    assert display_unit("days") == "days" and display_unit("seconds", 24.0) == "seconds"
    assert display_unit("datetime", 168.0) == "days" and display_unit("datetime", None) == "days"
    assert display_unit("datetime", 1.0) == "hours" and display_unit("datetime", 0.25) == "minutes"
