"""Tests of levy_core.data.parse_duration: durations with units, bare numbers in the
data's own unit, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from levy_core.data import (
    DATETIME,
    DAYS_PER_YEAR,
    DURATION_UNITS,
    TIME_UNITS,
    DataError,
    parse_duration,
)

YEAR_H = DAYS_PER_YEAR * 24.0
MONTH_H = YEAR_H / 12.0


@pytest.mark.parametrize(
    ("text", "hours"),
    [
        ("36h", 36.0),
        ("36 h", 36.0),
        ("36 hours", 36.0),
        ("36H", 36.0),
        ("1 hour", 1.0),
        ("1.5hrs", 1.5),
        ("90min", 1.5),
        ("90 Minutes", 1.5),
        ("3600 s", 1.0),
        ("7200 seconds", 2.0),
        ("2.5 d", 60.0),
        (".5d", 12.0),
        ("  7  Days ", 168.0),
        ("2 weeks", 336.0),
        ("1W", 168.0),
        ("1 mo", MONTH_H),
        ("6 months", 6 * MONTH_H),
        ("5 years", 5 * YEAR_H),
        ("1 Y", YEAR_H),
        ("2 yrs.", 2 * YEAR_H),
        ("1e3 s", 1000 / 3600),
    ],
)
def test_number_with_unit(text: str, hours: float) -> None:
    for unit in [*TIME_UNITS, DATETIME]:  # a unit wins over the data's unit
        assert parse_duration(text, unit) == pytest.approx(hours, rel=1e-12)


@pytest.mark.parametrize(
    ("value", "unit", "hours"),
    [
        (3, "days", 72.0),
        ("3", "days", 72.0),
        (" 90 ", "minutes", 1.5),
        (2.5, "hours", 2.5),
        (7200, "seconds", 2.0),
        (np.float64(0.5), "days", 12.0),
        (np.int64(2), "hours", 2.0),
    ],
)
def test_bare_number_is_in_the_data_unit(value: object, unit: str, hours: float) -> None:
    assert parse_duration(value, unit) == pytest.approx(hours)  # type: ignore[arg-type]


def test_units_reuse_the_reader_factors() -> None:
    assert DURATION_UNITS["s"] == TIME_UNITS["seconds"]
    assert DURATION_UNITS["min"] == TIME_UNITS["minutes"]
    assert DURATION_UNITS["h"] == TIME_UNITS["hours"]
    assert DURATION_UNITS["d"] == TIME_UNITS["days"]
    assert DURATION_UNITS["w"] == 7 * TIME_UNITS["days"]
    assert DURATION_UNITS["mo"] == pytest.approx(365.2425 / 12 * 24)
    assert DURATION_UNITS["y"] == pytest.approx(365.2425 * 24)


@pytest.mark.parametrize("value", [36, "36", 1.5])
def test_bare_number_refused_for_datetime_data(value: object) -> None:
    with pytest.raises(DataError) as err:
        parse_duration(value, DATETIME)  # type: ignore[arg-type]
    msg = str(err.value)
    assert "no unit" in msg and "date-times" in msg and "h, " in msg and "weeks" in msg


@pytest.mark.parametrize("value", [0, "0", "0h", -1, "-1 d", "-0.5 weeks"])
def test_zero_and_negative_refused(value: object) -> None:
    with pytest.raises(DataError, match="more than 0"):
        parse_duration(value, "hours")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "nan", "inf", "-inf", "1e309 h"])
def test_nan_and_inf_refused(value: object) -> None:
    with pytest.raises(DataError, match="not a finite number"):
        parse_duration(value, "hours")  # type: ignore[arg-type]


def test_unknown_unit_names_the_accepted_ones() -> None:
    with pytest.raises(DataError) as err:
        parse_duration("5 fortnights", "hours")
    msg = str(err.value)
    assert "'fortnights'" in msg
    for unit in ("s", "min", "h", "d", "w", "mo", "y", "weeks", "years"):
        assert unit in msg


def test_m_is_ambiguous() -> None:
    with pytest.raises(DataError, match="'min' or 'mo'"):
        parse_duration("5m", "hours")


@pytest.mark.parametrize("text", ["1,5 h", "abc", "h", "5 h 30 min", "five days"])
def test_unreadable_text(text: str) -> None:
    with pytest.raises(DataError, match="Could not read") as err:
        parse_duration(text, "hours")
    assert "decimal point" in str(err.value)


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_text(text: str) -> None:
    with pytest.raises(DataError, match="empty"):
        parse_duration(text, "hours")


@pytest.mark.parametrize("value", [True, None, [1, 2]])
def test_not_text_or_number(value: object) -> None:
    with pytest.raises(DataError, match="must be text"):
        parse_duration(value, "hours")  # type: ignore[arg-type]


def test_unknown_data_unit() -> None:
    with pytest.raises(DataError, match="Unknown time unit 'fortnights'") as err:
        parse_duration("3h", "fortnights")
    assert "datetime" in str(err.value) and "days" in str(err.value)


def test_a_duration_text_reads_back_and_at_least_never_reads_back_shorter() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from levy_core.data import duration_text

    assert duration_text(48.0) == "2d" and duration_text(48.0, at_least=True) == "2d"
    assert duration_text(YEAR_H * 10 + 13.8) == "10y"  # three significant digits: the excess is lost
    assert duration_text(YEAR_H * 10 + 13.8, at_least=True) == "10.1y"  # rounded up: a horizon that covers it

    @settings(max_examples=300, deadline=None)
    @given(st.floats(min_value=1e-4, max_value=1e6, allow_nan=False))
    def reads_back(hours: float) -> None:
        plain, up = duration_text(hours), duration_text(hours, at_least=True)
        assert parse_duration(plain, "hours") == pytest.approx(hours, rel=5e-3)  # 3 significant digits
        assert parse_duration(up, "hours") >= hours * (1 - 1e-9)
        assert parse_duration(up, "hours") <= hours * 1.011  # no more than a step of the third digit up

    reads_back()
