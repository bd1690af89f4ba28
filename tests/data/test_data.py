"""Tests of the data layer (levy_core.data): parsing long and wide tables, times,
blanks and duplicates, and the Observations helpers."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from data_files import LONG_CSV, write

from levy_core.data import (
    ColumnMapping,
    DataError,
    Observations,
    detect_mapping,
    from_frame,
    read_csv,
)


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------
def test_long_parsing_and_sorting(tmp_path: Path) -> None:
    obs = read_csv(write(tmp_path, LONG_CSV))
    f = obs.frame
    assert list(f.columns) == ["series_id", "channel", "time", "value"]
    assert f["time"].dtype == np.float64 and f["value"].dtype == np.float64
    assert pd.api.types.is_string_dtype(f["series_id"])
    assert pd.api.types.is_string_dtype(f["channel"])
    assert list(f.index) == list(range(5))
    assert list(zip(f.series_id, f.time, f.channel, strict=True)) == [
        ("p1", 0.5, "HR"),
        ("p1", 0.5, "Temp"),
        ("p1", 2.0, "HR"),
        ("p2", 0.25, "Temp"),
        ("p2", 1.5, "HR"),
    ]
    assert obs.series_ids == ["p1", "p2"]
    assert obs.channels == ["HR", "Temp"]
    assert (obs.n_series, obs.n_channels, obs.n_obs) == (2, 2, 5)
    assert obs.time_span == (0.25, 2.0)
    r = obs.report
    assert r.layout == "long" and r.n_rows_read == 5 and r.time_unit == "hours"
    assert r.time_origin is None
    assert r.mapping == ColumnMapping(
        time="time_hours", value="value", series="patient_id", channel="parameter", layout="long"
    )


def test_long_without_series_or_channel(tmp_path: Path) -> None:
    obs = read_csv(write(tmp_path, "t,y\n0,1\n1,2\n2,3\n"))
    assert obs.series_ids == ["series_0"]
    assert obs.channels == ["value"]


def test_numeric_ids_stay_text(tmp_path: Path) -> None:
    obs = read_csv(write(tmp_path, "id,time,value\n007,1,1\n007,2,2\n10,1,3\n"))
    assert obs.series_ids == ["007", "10"]
    df = pd.DataFrame({"id": [3.0, 3.0, 12.0], "time": [0.0, 1.0, 0.0], "value": [1, 2, 3]})
    assert from_frame(df).series_ids == ["12", "3"]


def test_wide_parsing(tmp_path: Path) -> None:
    text = (
        "Unnamed: 0,unit_id,Time,temp,humidity,location\n"
        "0,u1,0.0,20.5,40,roof\n"
        "1,u1,1.0,,41,roof\n"
        "2,u1,2.0,21.0,,roof\n"
        "3,u2,0.5,19.0,50,cellar\n"
        "4,u2,1.5,,,cellar\n"
    )
    obs = read_csv(write(tmp_path, text))
    m = obs.report.mapping
    assert m.layout == "wide" and m.series == "unit_id" and m.time == "Time"
    assert m.wide_channels == ("temp", "humidity")
    assert obs.n_obs == 6
    assert obs.report.n_nan_dropped == 4  # empty cells
    assert obs.channels == ["humidity", "temp"]
    assert any("location" in s for s in obs.report.messages)
    u1 = obs.frame[obs.frame.series_id == "u1"]
    assert u1[u1.channel == "temp"]["time"].tolist() == [0.0, 2.0]


def test_explicit_mapping_overrides_detection(tmp_path: Path) -> None:
    text = "when,who,what,amount\n1,a,x,5\n2,a,x,6\n"
    mapping = ColumnMapping(
        time="when", value="amount", series="who", channel="what", layout="long"
    )
    obs = read_csv(write(tmp_path, text), mapping=mapping)
    assert obs.frame["value"].tolist() == [5.0, 6.0] and obs.channels == ["x"]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Timestamp,Patient_ID,Variable,Value", ("Timestamp", "Patient_ID", "Variable", "Value")),
        ("t,series,feature,y", ("t", "series", "feature", "y")),
        ("charttime,subject_id,signal,valuenum", ("charttime", "subject_id", "signal", "valuenum")),
        (" HOURS ,PatientId,name,measurement", ("HOURS", "PatientId", "name", "measurement")),
        ("date,id,channel,value", ("date", "id", "channel", "value")),
    ],
)
def test_aliases(tmp_path: Path, header: str, expected: tuple[str, ...]) -> None:
    time_is_date = expected[0].lower() in {"timestamp", "charttime", "date"}
    t1, t2 = ("2024-01-01", "2024-01-02") if time_is_date else ("1", "2")
    text = f"{header}\n{t1},A,hr,1\n{t2},A,hr,2\n"
    obs = read_csv(write(tmp_path, text))
    m = obs.report.mapping
    assert (m.time, m.series, m.channel, m.value) == expected
    assert obs.frame["time"].tolist() == ([0.0, 24.0] if time_is_date else [1.0, 2.0])


def test_detect_mapping_prefers_earlier_alias() -> None:
    df = pd.DataFrame(columns=["id", "series_id", "time", "value"])
    df.loc[0] = ["1", "a", "0", "1"]
    assert detect_mapping(df).series == "series_id"


def test_datetimes_mixed_zones_and_precision(tmp_path: Path) -> None:
    text = (
        "series_id,timestamp,value\n"
        "a,2024-01-01T10:00Z,1\n"  # (naive and offset times mixed are refused: test_hostile_files)
        "a,2024-01-01T10:00:00.123+01:00,2\n"  # 09:00:00.123 UTC, the first
        "a,2024-01-01T12:30:00Z,3\n"
        "a,2024-01-01T07:00:00-05:00,4\n"  # 12:00 UTC
        "b,2024-06-01T00:00:00+02:00,5\n"  # b's origin: 2024-05-31 22:00 UTC
        "b,2024-06-01T01:00:00+02:00,6\n"
    )
    obs = read_csv(write(tmp_path, text))
    f = obs.frame
    a = f[f.series_id == "a"]
    assert a["value"].tolist() == [2.0, 1.0, 4.0, 3.0]
    expected = np.array([0.0, 1.0 - 0.123 / 3600, 3.0 - 0.123 / 3600, 3.5 - 0.123 / 3600])
    np.testing.assert_allclose(a["time"].to_numpy(), expected, atol=1e-9)
    np.testing.assert_allclose(f[f.series_id == "b"]["time"].to_numpy(), [0.0, 1.0])
    origin = obs.report.time_origin
    assert origin is not None
    assert origin["a"] == pd.Timestamp("2024-01-01 09:00:00.123", tz="UTC")
    assert origin["b"] == pd.Timestamp("2024-05-31 22:00", tz="UTC")


def test_clock_times_read_as_elapsed_hours(tmp_path: Path) -> None:
    obs = read_csv(write(tmp_path, "Time,Parameter,Value\n00:07,HR,80\n47:30,HR,90\n"))
    np.testing.assert_allclose(obs.frame["time"], [7 / 60, 47.5])


@pytest.mark.parametrize(
    ("unit", "factor"), [("hours", 1.0), ("minutes", 1 / 60), ("seconds", 1 / 3600), ("days", 24.0)]
)
def test_numeric_time_unit(tmp_path: Path, unit: str, factor: float) -> None:
    obs = read_csv(write(tmp_path, "time,value\n0,1\n90,2\n"), time_unit=unit)
    np.testing.assert_allclose(obs.frame["time"], [0.0, 90 * factor])


def test_numeric_time_is_not_shifted(tmp_path: Path) -> None:
    obs = read_csv(write(tmp_path, "time,value\n-2.5,1\n100,2\n"))
    assert obs.time_span == (-2.5, 100.0)


def test_duplicates_merged_and_counted(tmp_path: Path) -> None:
    text = (
        "series_id,time,channel,value\n"
        "a,1,HR,80\n"
        "a,1,HR,90\n"
        "a,1,HR,100\n"  # three rows -> one, 2 merged away
        "a,1,SpO2,97\n"  # same time, other channel: kept
        "b,1,HR,70\n"  # same time, other series: kept
        "a,2,HR,85\n"
    )
    obs = read_csv(write(tmp_path, text))
    assert obs.report.n_duplicates_merged == 2
    assert obs.n_obs == 4
    hr1 = obs.frame.query("series_id == 'a' and channel == 'HR' and time == 1.0")
    assert hr1["value"].tolist() == [90.0]
    assert any("averaged 2 rows" in s for s in obs.report.messages)


def test_nan_dropped_and_counted(tmp_path: Path) -> None:
    text = (
        "series_id,time,channel,value\n"
        "a,1,HR,\n"
        "a,2,HR,NaN\n"
        "a,3,NA,140\n"  # channel "NA" (sodium) is a name, not a blank
        "a,4,HR, 81 \n"
        "a,5,HR,-\n"
        "a,6,HR,80\n"
    )
    obs = read_csv(write(tmp_path, text))
    assert obs.report.n_nan_dropped == 3
    assert obs.n_obs == 3
    assert "NA" in obs.channels
    assert any("dropped 3 rows with empty values" in s for s in obs.report.messages)


def test_rows_with_empty_time_dropped_and_reported(tmp_path: Path) -> None:
    obs = read_csv(write(tmp_path, "time,value\n1,1\n,2\n3,3\n"))
    assert obs.n_obs == 2 and obs.report.n_nan_dropped == 1
    assert any("empty time" in s and "line 3" in s for s in obs.report.messages)


def test_gz_path(tmp_path: Path) -> None:
    path = tmp_path / "data.csv.gz"
    path.write_bytes(gzip.compress(LONG_CSV.encode()))
    assert read_csv(path).frame.equals(read_csv(write(tmp_path, LONG_CSV)).frame)


def test_bytesio_and_text_io() -> None:
    expected = read_csv(io.StringIO(LONG_CSV)).frame
    assert read_csv(io.BytesIO(LONG_CSV.encode("utf-8-sig"))).frame.equals(expected)  # BOM
    assert read_csv(io.BytesIO(gzip.compress(LONG_CSV.encode()))).frame.equals(expected)
    assert read_csv(io.BytesIO(LONG_CSV.encode("utf-16"))).frame.equals(expected)
    upload = io.BytesIO(LONG_CSV.encode())
    upload.read()  # already consumed once, as Streamlit reruns do
    assert read_csv(upload).frame.equals(expected)


def test_semicolon_separated() -> None:
    obs = read_csv(io.StringIO(LONG_CSV.replace(",", ";")))
    assert obs.n_obs == 5


def test_from_frame_with_typed_columns() -> None:
    df = pd.DataFrame(
        {
            "series_id": ["x", "x", "y"],
            "time": pd.to_datetime(["2024-01-01 00:00", "2024-01-01 06:00", "2024-01-02 00:00"]),
            "value": [1.0, np.nan, 3.0],
        }
    )
    obs = from_frame(df)
    assert obs.n_obs == 2 and obs.report.n_nan_dropped == 1
    assert obs.frame["time"].tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------------------
# Observations helpers
# --------------------------------------------------------------------------------------
def test_subset_gaps_and_hash(tmp_path: Path) -> None:
    obs = read_csv(write(tmp_path, LONG_CSV))
    sub = obs.subset(["p2"])
    assert sub.series_ids == ["p2"] and sub.n_obs == 2 and list(sub.frame.index) == [0, 1]
    with pytest.raises(DataError, match="'p9'"):
        obs.subset(["p9"])
    np.testing.assert_allclose(np.sort(obs.gaps()), [1.25, 1.5])  # p1: 0.5->2.0, p2
    h = obs.content_hash()
    assert len(h) == 64 and h == read_csv(io.StringIO(LONG_CSV)).content_hash()
    assert h != sub.content_hash()
    other = read_csv(io.StringIO(LONG_CSV.replace("72", "73")))
    assert h != other.content_hash()


def test_observations_checks_columns() -> None:
    obs = read_csv(io.StringIO(LONG_CSV))
    with pytest.raises(DataError):
        Observations(frame=obs.frame.rename(columns={"value": "y"}), report=obs.report)

