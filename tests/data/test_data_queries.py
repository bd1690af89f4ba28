"""Tests of the user's clock (levy_core.data.clock): the input unit in the LoadReport,
read_queries and to_user_time as each other's inverse, and the refusals."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from data_files import write

from levy_core.data import (
    SAMPLES,
    TIME_UNITS,
    ColumnMapping,
    DataError,
    LoadReport,
    Observations,
    from_frame,
    load_sample,
    read_csv,
    read_queries,
    to_user_time,
    user_time_label,
    user_time_unit,
)

# two series with different origins and offsets; "a" starts 2024-01-01 09:00 UTC,
# "b" starts 2024-05-31 22:00 UTC
DATETIME_CSV = (
    "series_id,timestamp,channel,value\n"
    "a,2024-01-01T10:00:00+01:00,HR,1\n"
    "a,2024-01-01T12:30:00Z,SpO2,3\n"
    "a,2024-01-01T07:00:00-05:00,HR,4\n"
    "b,2024-06-01T00:00:00+02:00,HR,5\n"
    "b,2024-06-01T01:00:00+02:00,SpO2,6\n"
)
NAIVE_CSV = (
    "series_id,timestamp,channel,value\n"
    "a,2024-01-01 09:00,HR,1\n"
    "a,2024-01-01 12:30,SpO2,3\n"
    "b,2024-05-31 22:00,HR,5\n"
    "b,2024-05-31 23:00,SpO2,6\n"
)
NUMERIC_CSV = "id,time,channel,value\na,0,HR,1\na,3,SpO2,2\nb,10,HR,3\nb,12,HR,4\n"
ONE_SERIES_CSV = "time,value\n0,1\n2,2\n5,3\n"


def queries(text: str) -> io.StringIO:
    return io.StringIO(text)


@pytest.fixture
def dt_obs(tmp_path: Path) -> Observations:
    return read_csv(write(tmp_path, DATETIME_CSV))


@pytest.fixture
def num_obs(tmp_path: Path) -> Observations:
    return read_csv(write(tmp_path, NUMERIC_CSV), time_unit="days")


# --------------------------------------------------------------------------------------
# The input unit in the report
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("unit", list(TIME_UNITS))
def test_report_keeps_the_numeric_unit(tmp_path: Path, unit: str) -> None:
    obs = read_csv(write(tmp_path, ONE_SERIES_CSV), time_unit=unit)
    assert obs.report.input_time_unit == unit and obs.report.time_unit == "hours"
    assert obs.report.input_has_offsets is None
    assert user_time_unit(obs) == unit and user_time_label(obs) == f"time ({unit})"


def test_report_keeps_datetime_input_and_offsets(tmp_path: Path, dt_obs: Observations) -> None:
    assert dt_obs.report.input_time_unit == "datetime"
    assert dt_obs.report.input_has_offsets is True
    assert user_time_label(dt_obs) == "time (UTC)"
    naive = read_csv(write(tmp_path, NAIVE_CSV, "naive.csv"))
    assert naive.report.input_time_unit == "datetime"
    assert naive.report.input_has_offsets is False
    date_only = read_csv(write(tmp_path, "date,value\n2024-01-30,1\n2024-01-31,2\n", "d.csv"))
    assert date_only.report.input_has_offsets is False


def test_report_for_clock_times_and_typed_frames(tmp_path: Path) -> None:
    clock = read_csv(write(tmp_path, "Time,value\n00:07,80\n47:30,90\n"), time_unit="minutes")
    assert clock.report.input_time_unit == "hours"  # HH:MM is hours:minutes, whatever the unit
    aware = pd.date_range("2024-01-01", periods=3, freq="h", tz="Europe/Paris")
    frame = pd.DataFrame({"time": aware, "value": [1.0, 2.0, 3.0]})
    report = from_frame(frame).report
    assert (report.input_time_unit, report.input_has_offsets) == ("datetime", True)
    frame["time"] = aware.tz_localize(None)
    assert from_frame(frame).report.input_has_offsets is False


def test_hand_built_reports() -> None:
    frame = pd.DataFrame(
        {"series_id": ["s"], "channel": ["c"], "time": [1.0], "value": [2.0]}
    ).astype({"series_id": str, "channel": str})
    plain = Observations(frame, LoadReport("long", ColumnMapping(time="t"), 1))
    assert user_time_unit(plain) == "hours"
    origin = {"s": pd.Timestamp("2024-01-01", tz="UTC")}
    older = Observations(frame, LoadReport("long", ColumnMapping(time="t"), 1, time_origin=origin))
    assert user_time_unit(older) == "datetime"  # a report from before input_time_unit
    broken = Observations(
        frame, LoadReport("long", ColumnMapping(time="t"), 1, input_time_unit="datetime")
    )
    with pytest.raises(DataError, match="no time origin"):
        user_time_unit(broken)


# --------------------------------------------------------------------------------------
# Round trips, date-time data
# --------------------------------------------------------------------------------------
def test_datetime_queries_use_each_series_origin(dt_obs: Observations) -> None:
    text = (
        "series_id,channel,time\n"
        "a,HR,2024-01-01T09:00:00Z\n"
        "b,HR,2024-06-01T02:30:00+02:00\n"
        "a,SpO2,2024-01-02T10:00:00+01:00\n"
    )
    q = read_queries(queries(text), dt_obs)
    assert list(q.columns) == ["series_id", "channel", "time"]
    assert q["series_id"].tolist() == ["a", "b", "a"]
    assert q["channel"].tolist() == ["HR", "HR", "SpO2"]
    assert q["time"].dtype == np.float64
    np.testing.assert_allclose(q["time"], [0.0, 2.5, 24.0])
    back = to_user_time(q["series_id"], q["time"], dt_obs)
    assert list(back) == [
        pd.Timestamp("2024-01-01 09:00", tz="UTC"),
        pd.Timestamp("2024-06-01 00:30", tz="UTC"),
        pd.Timestamp("2024-01-02 09:00", tz="UTC"),
    ]
    assert str(back.dtype).startswith("datetime64") and str(back.dt.tz) == "UTC"


def test_datetime_round_trip_through_text(dt_obs: Observations) -> None:
    f = dt_obs.frame
    stamps = to_user_time(f["series_id"], f["time"], dt_obs)
    text = pd.DataFrame({"id": f["series_id"], "Time": stamps, "channel": f["channel"]})
    q = read_queries(queries(text.to_csv(index=False)), dt_obs)  # written as +00:00
    np.testing.assert_allclose(q["time"], f["time"], atol=1e-9)
    iso = [t.isoformat() for t in stamps]
    q = read_queries(pd.DataFrame({"series": f["series_id"], "time": iso, "variable": f["channel"]}), dt_obs)
    np.testing.assert_allclose(q["time"], f["time"], atol=1e-9)


def test_datetime_round_trip_without_offsets(tmp_path: Path) -> None:
    obs = read_csv(write(tmp_path, NAIVE_CSV))
    text = "series_id,channel,time\nb,HR,2024-06-01 01:00\na,HR,2024-01-01 08:00\n"
    q = read_queries(queries(text), obs)
    np.testing.assert_allclose(q["time"], [3.0, -1.0])  # no offset: UTC, like the data
    back = to_user_time(q["series_id"], q["time"], obs)
    assert back.tolist() == [
        pd.Timestamp("2024-06-01 01:00", tz="UTC"),
        pd.Timestamp("2024-01-01 08:00", tz="UTC"),
    ]


def test_typed_datetime_queries(dt_obs: Observations) -> None:
    when = pd.to_datetime(["2024-01-01 10:00", "2024-06-01 00:00"]).tz_localize("UTC")
    frame = pd.DataFrame({"series_id": ["a", "b"], "channel": ["HR", "HR"], "time": when})
    np.testing.assert_allclose(read_queries(frame, dt_obs)["time"], [1.0, 2.0])


def test_microsecond_round_trip_over_decades(tmp_path: Path) -> None:
    weeks = pd.date_range("1990-01-01 00:00:00.000001", periods=1600, freq="W", tz="UTC")
    obs = from_frame(pd.DataFrame({"date": weeks, "value": np.arange(1600.0)}))
    back = to_user_time("series_0", obs.frame["time"], obs)
    assert (back.to_numpy() == weeks.to_numpy()).all()
    q = read_queries(pd.DataFrame({"date": back}), obs)
    np.testing.assert_array_equal(q["time"], obs.frame["time"])


def test_to_user_time_index_scalar_id_and_nan(dt_obs: Observations) -> None:
    hours = pd.Series([0.0, np.nan, 1.5], index=[10, 11, 12])
    out = to_user_time("a", hours, dt_obs)
    assert list(out.index) == [10, 11, 12] and out.name == "time"
    assert out.iloc[0] == pd.Timestamp("2024-01-01 09:00", tz="UTC") and pd.isna(out.iloc[1])
    assert out.iloc[2] == pd.Timestamp("2024-01-01 10:30", tz="UTC")


def test_to_user_time_refusals(dt_obs: Observations) -> None:
    with pytest.raises(DataError, match="Unknown series id.*'zz'.*Known ids include 'a', 'b'"):
        to_user_time(["a", "zz"], [0.0, 1.0], dt_obs)
    with pytest.raises(DataError, match="Got 1 series ids for 2 times"):
        to_user_time(["a"], [0.0, 1.0], dt_obs)
    with pytest.raises(DataError, match=r"more than 1e\+08 hours.*\(1 time given\)"):
        to_user_time("a", [1.0, -2e8], dt_obs)


def test_unknown_series_is_refused_by_name(dt_obs: Observations) -> None:
    """A date-time query's series must be in the data: its time is counted from there."""
    with pytest.raises(DataError, match=r"1 series not in the data \('zz': line 2"):
        read_queries(queries("series_id,channel,time\nzz,HR,2024-01-01T09:00Z\n"), dt_obs)


# --------------------------------------------------------------------------------------
# Round trips, numeric data
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("unit", list(TIME_UNITS))
def test_numeric_round_trip_in_each_unit(tmp_path: Path, unit: str) -> None:
    obs = read_csv(write(tmp_path, NUMERIC_CSV), time_unit=unit)
    q = read_queries(queries("series_id,channel,time\na,HR,1.5\nb,SpO2,-2\nb,HR,12\n"), obs)
    np.testing.assert_allclose(q["time"], np.array([1.5, -2.0, 12.0]) * TIME_UNITS[unit])
    back = to_user_time(q["series_id"], q["time"], obs)
    assert back.dtype == np.float64
    np.testing.assert_allclose(back, [1.5, -2.0, 12.0])
    f = obs.frame
    np.testing.assert_allclose(to_user_time(f["series_id"], f["time"], obs), [0, 3, 10, 12])


def test_numeric_queries_from_a_typed_frame(num_obs: Observations) -> None:
    frame = pd.DataFrame({"patient_id": [7, 8], "Parameter": ["HR", "HR"], "Hours": [0.5, 2]})
    q = read_queries(frame, num_obs)
    assert q["series_id"].tolist() == ["7", "8"]  # ids as text, like the data's
    np.testing.assert_allclose(q["time"], [12.0, 48.0])


def test_queries_file_forms(tmp_path: Path, num_obs: Observations) -> None:
    text = "ID;Channel;TIME;note\na;HR;1;x\nb;HR;2;y\n"
    path = write(tmp_path, text, "q.csv")
    for source in (path, str(path), io.BytesIO(gzip.compress(text.encode())), queries(text)):
        np.testing.assert_allclose(read_queries(source, num_obs)["time"], [24.0, 48.0])


# --------------------------------------------------------------------------------------
# Omitted series and channel columns
# --------------------------------------------------------------------------------------
def test_series_and_channel_omitted_for_one_of_each(tmp_path: Path) -> None:
    obs = read_csv(write(tmp_path, ONE_SERIES_CSV), time_unit="minutes")
    q = read_queries(queries("time\n30\n90\n"), obs)
    assert q["series_id"].tolist() == ["series_0"] * 2 and q["channel"].tolist() == ["value"] * 2
    np.testing.assert_allclose(q["time"], [0.5, 1.5])


def test_series_column_needed_for_several_series(num_obs: Observations) -> None:
    with pytest.raises(DataError) as err:
        read_queries(queries("channel,time\nHR,1\n"), num_obs)
    msg = str(err.value)
    assert "no series id column" in msg and "2 series ids ('a', 'b')" in msg
    assert "series_id" in msg and "patient_id" in msg


def test_channel_column_needed_for_several_channels(num_obs: Observations) -> None:
    with pytest.raises(DataError) as err:
        read_queries(queries("series_id,time\na,1\n"), num_obs)
    msg = str(err.value)
    assert "no channel column" in msg and "2 channels ('HR', 'SpO2')" in msg
    assert "variable" in msg


# --------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------
def test_empty_queries(tmp_path: Path, num_obs: Observations) -> None:
    with pytest.raises(DataError, match="is empty"):
        read_queries(write(tmp_path, "", "q.csv"), num_obs)
    with pytest.raises(DataError, match="has no queries"):
        read_queries(write(tmp_path, "series_id,channel,time\n", "q.csv"), num_obs)
    with pytest.raises(DataError, match="has no queries"):
        read_queries(pd.DataFrame({"time": []}), num_obs)


def test_no_time_column(num_obs: Observations) -> None:
    with pytest.raises(DataError, match="no time column. Columns seen: 'id', 'when'") as err:
        read_queries(queries("id,when\na,1\n"), num_obs)
    assert "timestamp" in str(err.value)


@pytest.mark.parametrize("header", ["id,channel,time,time", "id,channel,Time,time", "id,id,channel,time"])
def test_repeated_columns(num_obs: Observations, header: str) -> None:
    with pytest.raises(DataError, match="more than once"):
        read_queries(queries(f"{header}\na,HR,1,2\n"), num_obs)


def test_repeated_columns_in_a_frame(num_obs: Observations) -> None:
    frame = pd.DataFrame([["a", "HR", 1, 2]], columns=["id", "channel", "time", "TIME "])
    with pytest.raises(DataError, match="'time' more than once"):
        read_queries(frame, num_obs)


def test_blank_cells_name_the_lines(num_obs: Observations) -> None:
    with pytest.raises(DataError, match=r"'time' \(time\) is empty on 1 row: line 3"):
        read_queries(queries("id,channel,time\na,HR,1\na,HR,\n"), num_obs)
    with pytest.raises(DataError, match=r"'id' \(series id\) is empty on 1 row: line 2"):
        read_queries(queries("id,channel,time\n,HR,1\n"), num_obs)


def test_datetimes_refused_for_numeric_data(num_obs: Observations) -> None:
    text = "id,channel,time\na,HR,1\na,HR,2024-01-01 10:00\n"
    with pytest.raises(DataError) as err:
        read_queries(queries(text), num_obs)
    msg = str(err.value)
    assert "holds date-times (line 3 ('2024-01-01 10:00'))" in msg
    assert "numbers in days" in msg
    stamps = pd.DataFrame({"id": ["a"], "channel": ["HR"], "time": pd.to_datetime(["2024-01-01"])})
    with pytest.raises(DataError, match="holds date-times"):
        read_queries(stamps, num_obs)


def test_non_numbers_refused_for_numeric_data(num_obs: Observations) -> None:
    text = 'id,channel,time\na,HR,1\na,HR,1.O\na,HR,"3,5"\na,HR,12:30\n'
    with pytest.raises(DataError) as err:
        read_queries(queries(text), num_obs)
    msg = str(err.value)
    assert "could not read 3 times as finite numbers" in msg
    assert "line 3 ('1.O'), line 4 ('3,5'), line 5 ('12:30')" in msg and "numbers in days" in msg
    infinite = pd.DataFrame({"id": ["a", "a"], "channel": ["HR", "HR"], "time": [1.0, np.inf]})
    with pytest.raises(DataError, match=r"could not read 1 time as finite numbers: line 3"):
        read_queries(infinite, num_obs)


def test_numbers_refused_for_datetime_data(dt_obs: Observations) -> None:
    text = "id,channel,time\na,HR,2024-01-01T10:00Z\na,HR,36\nb,HR,2024\n"
    with pytest.raises(DataError) as err:
        read_queries(queries(text), dt_obs)
    msg = str(err.value)
    assert "holds numbers (line 3 ('36'), line 4 ('2024'))" in msg
    assert "date-times such as" in msg
    with pytest.raises(DataError, match="holds numbers"):
        read_queries(pd.DataFrame({"id": ["a"], "channel": ["HR"], "time": [1.5]}), dt_obs)
    with pytest.raises(DataError, match=r"could not read 1 time as date-times: line 2 \('inf'\)"):
        read_queries(pd.DataFrame({"id": ["a"], "channel": ["HR"], "time": [np.inf]}), dt_obs)


def test_unreadable_datetimes_name_the_lines(dt_obs: Observations) -> None:
    text = (
        "id,channel,time\na,HR,2024-01-01T10:00Z\na,HR,yesterday noon\na,HR,2024-13-45 10:00\n"
        "a,HR,12:30\n"  # a time of day without a date
    )
    with pytest.raises(DataError) as err:
        read_queries(queries(text), dt_obs)
    msg = str(err.value)
    assert "could not read 3 times as date-times" in msg
    assert "line 3 ('yesterday noon'), line 4 ('2024-13-45 10:00'), line 5 ('12:30')" in msg


def test_naive_queries_refused_when_the_data_had_offsets(dt_obs: Observations) -> None:
    text = "id,channel,time\na,HR,2024-01-01T10:00+01:00\nb,HR,2024-06-01 10:00\n"
    with pytest.raises(DataError) as err:
        read_queries(queries(text), dt_obs)
    msg = str(err.value)
    assert "1 date-time without a time-zone offset (line 3 ('2024-06-01 10:00'))" in msg
    assert "Z for UTC" in msg
    naive = pd.DataFrame({"id": ["a"], "channel": ["HR"], "time": pd.to_datetime(["2024-01-01"])})
    with pytest.raises(DataError, match="without a time-zone offset"):
        read_queries(naive, dt_obs)


# --------------------------------------------------------------------------------------
# The bundled single-series sample (wide, date-times with offsets)
# --------------------------------------------------------------------------------------
def test_single_series_sample_queried_at_datetimes() -> None:
    name = next(n for n, p in SAMPLES.items() if p.name == "single_series.csv")
    obs = load_sample(name)
    assert obs.report.layout == "wide" and obs.n_series == 1
    assert obs.report.input_time_unit == "datetime" and obs.report.input_has_offsets
    raw = pd.read_csv(SAMPLES[name], dtype=str)
    first, later = raw["timestamp"].iloc[0], raw["timestamp"].iloc[10]
    text = (
        "channel,time\n"
        f"temperature_c,{first}\n"
        f"humidity_pct,{later}\n"
        "temperature_c,2024-04-10T12:00:00+02:00\n"  # past the end: a forecast
    )
    q = read_queries(queries(text), obs)
    assert q["series_id"].tolist() == [obs.series_ids[0]] * 3  # omitted: the only series
    observed = obs.frame["time"].drop_duplicates().to_numpy()
    np.testing.assert_allclose(q["time"].iloc[:2], [0.0, observed[10]], atol=1e-9)
    assert q["time"].iloc[2] > obs.time_span[1]
    back = to_user_time(q["series_id"], q["time"], obs)
    assert back.iloc[0] == pd.Timestamp(first).tz_convert("UTC")
    assert back.iloc[2] == pd.Timestamp("2024-04-10 10:00", tz="UTC")
    with pytest.raises(DataError, match="no channel column"):
        read_queries(queries(f"time\n{later}\n"), obs)


def test_far_times_round_trip(dt_obs: Observations) -> None:
    hours = [-9.9e7, 0.25, 9.9e7]  # about 11,000 years either side
    back = to_user_time("a", hours, dt_obs)
    assert back.iloc[1] == pd.Timestamp("2024-01-01 09:15", tz="UTC")
    q = read_queries(pd.DataFrame({"channel": "HR", "id": "a", "time": back}), dt_obs)
    np.testing.assert_allclose(q["time"], hours)


def test_the_nixtla_long_format_is_read_as_is() -> None:
    """NeuralForecast / StatsForecast's ``unique_id, ds, y`` needs no mapping."""
    from levy_core.data import read_csv

    text = "unique_id,ds,y\nA,2024-01-01,1.5\nA,2024-01-02,2.5\nB,2024-01-01,3.0\nB,2024-01-03,4.0\n"
    obs = read_csv(io.StringIO(text))
    assert obs.report.mapping.series == "unique_id" and obs.report.mapping.time == "ds"
    assert obs.report.mapping.value == "y"
    assert obs.series_ids == ["A", "B"] and obs.frame["value"].tolist() == [1.5, 2.5, 3.0, 4.0]
    assert obs.frame.loc[obs.frame["series_id"] == "B", "time"].tolist() == [0.0, 48.0]
