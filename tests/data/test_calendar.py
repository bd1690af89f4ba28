"""Tests of levy_core.data.calendar: the ``freq`` of date-time data found from the data
(weekly on its weekday, month starts or ends, business days, … with 30 % of the rows
dropped), none for irregular or numeric times, and the forecast times laid on it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from levy_core.data import DataError, calendar_steps, freq_step_hours, from_frame, infer_freq
from levy_core.data.calendar import check_freq


def sampled(freq: str, n: int = 160, drop: float = 0.3, seed: int = 0, fmt: str = "%Y-%m-%d",
            start: str = "1990-01-06") -> pd.DataFrame:
    """``n`` steps of ``freq`` with ``drop`` of the rows removed at random (first two kept)."""
    rng = np.random.default_rng(seed)
    stamps = pd.date_range(start, periods=n, freq=freq)
    keep = rng.random(n) > drop
    keep[:2] = True
    return pd.DataFrame({"date": stamps[keep].strftime(fmt), "co2": 350 + 0.1 * np.arange(int(keep.sum()))})


@pytest.mark.parametrize(("freq", "fmt"), [("W-SAT", "%Y-%m-%d"), ("W-WED", "%Y-%m-%d"), ("MS", "%Y-%m-%d"),
                                           ("ME", "%Y-%m-%d"), ("QS", "%Y-%m-%d"), ("YS", "%Y-%m-%d"),
                                           ("B", "%Y-%m-%d"), ("D", "%Y-%m-%d"), ("h", "%Y-%m-%d %H:%M"),
                                           ("D", "%Y-%m-%d 09:30"), ("15min", "%Y-%m-%d %H:%M"),
                                           ("2h", "%Y-%m-%d %H:%M")])
def test_infer_freq_finds_the_calendar_with_a_third_of_the_rows_dropped(freq: str, fmt: str) -> None:
    assert infer_freq(from_frame(sampled(freq, fmt=fmt))) == freq


def test_infer_freq_on_a_panel_with_different_starts() -> None:
    a = sampled("W-SAT", seed=1).assign(id="a")
    b = sampled("W-SAT", seed=2, start="1995-03-04").assign(id="b")
    assert infer_freq(from_frame(pd.concat([a, b]))) == "W-SAT"
    c = sampled("W-MON", seed=3).assign(id="c")  # another weekday: no one calendar holds them all
    assert infer_freq(from_frame(pd.concat([a, c]))) != "W-SAT"


def test_irregular_and_numeric_times_have_no_calendar() -> None:
    rng = np.random.default_rng(0)
    days = np.sort(rng.uniform(0, 1000, 120))
    irregular = pd.DataFrame({"date": pd.Timestamp("2000-01-01") + pd.to_timedelta(days, unit="D"),
                              "v": rng.normal(size=120)})
    assert infer_freq(from_frame(irregular)) is None
    numeric = pd.DataFrame({"time": np.arange(50.0), "v": rng.normal(size=50)})
    assert infer_freq(from_frame(numeric)) is None
    # every observation on a Saturday, but most steps are several weeks: no dominant step
    sparse = sampled("W-SAT", n=200, drop=0.8, seed=4)
    assert infer_freq(from_frame(sparse)) is None


def test_calendar_steps_fall_on_the_calendar_within_the_horizon() -> None:
    last = pd.Timestamp("2001-12-29", tz="UTC")  # a Saturday
    weeks = calendar_steps(last, 8 * 7 * 24.0, "W-SAT", 100)
    np.testing.assert_allclose(weeks, np.arange(1, 9) * 168.0)
    months = calendar_steps(pd.Timestamp("2001-12-01", tz="UTC"), 3.5 * 730.5, "MS", 100)
    stamps = pd.Timestamp("2001-12-01", tz="UTC") + pd.to_timedelta(months, unit="h")
    assert [str(s.date()) for s in stamps] == ["2002-01-01", "2002-02-01", "2002-03-01"]
    thinned = calendar_steps(last, 52 * 168.0, "W-SAT", 10)  # more steps than points: every k-th, on the calendar
    assert 0 < len(thinned) <= 10 and np.allclose(thinned % 168.0, 0.0)
    business = calendar_steps(pd.Timestamp("2024-01-05", tz="UTC"), 7 * 24.0, "B", 100)  # a Friday
    days = (pd.Timestamp("2024-01-05", tz="UTC") + pd.to_timedelta(business, unit="h")).day_of_week
    assert list(days) == [0, 1, 2, 3, 4]
    assert len(calendar_steps(last, 24.0, "W-SAT", 100)) == 0  # shorter than one step


def test_check_freq_reads_pandas_aliases_and_refuses_others() -> None:
    assert check_freq("W") == "W-SUN" and check_freq("MS") == "MS" and check_freq(" B ") == "B"
    assert freq_step_hours("W-SAT") == 168.0 and freq_step_hours("h") == 1.0
    for bad in ("weekly-ish", "", "M"):
        with pytest.raises(DataError, match="freq"):
            check_freq(bad)


def test_the_calendar_is_recorded_with_the_reading_and_refused_for_numbers() -> None:
    from levy_core.data import RecordedReading
    from levy_core.data.recorded import calendar_of

    weekly = from_frame(sampled("W-SAT"))
    found = RecordedReading.found(weekly)
    assert found.freq == "W-SAT" and "on the calendar W-SAT" in found.describe()
    told = RecordedReading.found(weekly, freq="MS")  # --freq / freq= over the one found
    assert told.freq == "MS" and RecordedReading.from_dict(told.to_dict()) == told
    assert RecordedReading.from_dict({k: v for k, v in told.to_dict().items() if k != "freq"}).freq is None  # older
    with pytest.raises(ValueError, match="freq"):
        RecordedReading.from_dict({**told.to_dict(), "freq": "every other blue moon"})
    numeric = from_frame(pd.DataFrame({"time": np.arange(20.0), "v": np.arange(20.0)}))
    assert calendar_of(numeric) is None
    with pytest.raises(DataError, match="no calendar"):
        calendar_of(numeric, "D")
