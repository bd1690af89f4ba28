"""Tests of the data layer (levy_core.data), the synthetic generator and the samples."""

from __future__ import annotations

import gzip
import io
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.data import (
    MAX_ROWS,
    SAMPLES,
    ChannelScaler,
    ColumnMapping,
    DataError,
    Observations,
    detect_mapping,
    from_frame,
    load_sample,
    read_csv,
)
from levy_core.synthetic import CHANNELS, make_synthetic, synthetic_truth_at

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_data"

LONG_CSV = """\
patient_id,time_hours,parameter,value
p2,1.5,HR,80
p1,2.0,HR,72
p1,0.5,Temp,37.2
p1,0.5,HR,70
p2,0.25,Temp,36.9
"""


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------
# DataError cases, one realistic malformed file each
# --------------------------------------------------------------------------------------
def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty"):
        read_csv(write(tmp_path, ""))


def test_whitespace_only_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty"):
        read_csv(write(tmp_path, "\n\n  \n"))


def test_header_only(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="header .* but no data rows"):
        read_csv(write(tmp_path, "series_id,time,channel,value\n"))


def test_no_time_column(tmp_path: Path) -> None:
    path = write(tmp_path, "patient,when,reading\nA,1,3.5\nA,2,3.7\n")
    with pytest.raises(DataError) as err:
        read_csv(path)
    msg = str(err.value)
    assert "No time column" in msg
    assert "'when'" in msg and "'reading'" in msg  # the columns seen
    assert "timestamp" in msg  # the accepted names


def test_no_value_column(tmp_path: Path) -> None:
    path = write(tmp_path, "id,time,comment\nA,1,ok\nA,2,late\n")
    with pytest.raises(DataError, match="No value column and no numeric channel column"):
        read_csv(path)


def test_channel_column_without_value_column(tmp_path: Path) -> None:
    path = write(tmp_path, "id,time,variable,reading\nA,1,HR,80\nA,2,HR,82\n")
    with pytest.raises(DataError, match="'variable' looks like a channel column"):
        read_csv(path)


def test_non_numeric_values_name_the_lines(tmp_path: Path) -> None:
    text = (
        "series_id,time,channel,value\n"  # line 1
        "a,0.0,HR,80\n"  # line 2
        "a,0.5,HR,81\n"  # line 3
        "a,1.0,HR,high\n"  # line 4
        "a,1.5,HR,\n"  # line 5: blank, not an error
        "a,2.0,HR,37,5\n"  # line 6: too many fields would be a parser error; quoted below
    )
    text = text.replace("a,2.0,HR,37,5\n", 'a,2.0,HR,"37,5"\n')
    text += "a,2.5,HR,82 bpm\n"  # line 7
    with pytest.raises(DataError) as err:
        read_csv(write(tmp_path, text))
    msg = str(err.value)
    assert "'value'" in msg
    assert "line 4 ('high')" in msg
    assert "line 6 ('37,5')" in msg
    assert "line 7 ('82 bpm')" in msg
    assert "line 5" not in msg and "line 2" not in msg
    assert "decimal point" in msg  # says what to do


def test_non_numeric_lists_at_most_five_lines(tmp_path: Path) -> None:
    rows = "".join(f"s,{i},HR,x{i}\n" for i in range(9))
    with pytest.raises(DataError) as err:
        read_csv(write(tmp_path, "series_id,time,channel,value\n" + rows))
    msg = str(err.value)
    assert "line 6 ('x4')" in msg and "line 7" not in msg
    assert "(and 4 more)" in msg


def test_non_numeric_wide_cell(tmp_path: Path) -> None:
    text = "time,temp,hum\n0,20.5,40\n1,21.0,n/a\n2,warm,41\n3,21.2,42\n"
    with pytest.raises(DataError) as err:
        read_csv(write(tmp_path, text))
    msg = str(err.value)
    assert "'temp'" in msg and "line 4 ('warm')" in msg


def test_single_observation(tmp_path: Path) -> None:
    path = write(tmp_path, "time,value\n0.5,1.0\n1.0,\n")
    with pytest.raises(DataError, match="Only 1 observation left"):
        read_csv(path)


def test_all_values_blank(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="Only 0 observations left"):
        read_csv(write(tmp_path, "time,value\n1,\n2,NA\n3,\n"))


def test_unparseable_times(tmp_path: Path) -> None:
    text = (
        "id,timestamp,value\n"
        "a,2024-01-01 10:00,1\n"
        "a,2024-01-01 11:00,2\n"
        "a,yesterday noon,3\n"  # line 4
        "a,2024-13-45 10:00,4\n"  # line 5
    )
    with pytest.raises(DataError) as err:
        read_csv(write(tmp_path, text))
    msg = str(err.value)
    assert "'timestamp'" in msg
    assert "line 4 ('yesterday noon')" in msg and "line 5 ('2024-13-45 10:00')" in msg


def test_numeric_time_with_a_typo(tmp_path: Path) -> None:
    text = "time,value\n0.5,1\n1.O,2\n1.5,3\n2.0,4\n"
    with pytest.raises(DataError, match=r"line 3 \('1.O'\)"):
        read_csv(write(tmp_path, text))


def test_too_many_rows(tmp_path: Path) -> None:
    rows = "".join(f"{i},{i * 0.1}\n" for i in range(20))
    with pytest.raises(DataError) as err:
        read_csv(write(tmp_path, "time,value\n" + rows), max_rows=10)
    assert "10 data rows" in str(err.value) and "split" in str(err.value)
    assert MAX_ROWS == 2_000_000


def test_blank_series_id(tmp_path: Path) -> None:
    text = "series_id,time,value\na,1,1\n,2,2\na,3,3\n"
    with pytest.raises(DataError, match=r"'series_id' \(series id\) is empty on 1 row: line 3"):
        read_csv(write(tmp_path, text))


def test_ragged_row(tmp_path: Path) -> None:
    text = "time,value\n1,2\n2,3,4\n"
    with pytest.raises(DataError, match="line 3"):
        read_csv(write(tmp_path, text))


def test_spreadsheet_upload_is_refused() -> None:
    fake_xlsx = io.BytesIO(b"PK\x03\x04" + b"\x00" * 100)
    with pytest.raises(DataError, match="CSV UTF-8"):
        read_csv(fake_xlsx)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        read_csv(tmp_path / "nope.csv")


def test_bad_time_unit(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="time_unit"):
        read_csv(write(tmp_path, LONG_CSV), time_unit="fortnights")


def test_mapping_with_unknown_column(tmp_path: Path) -> None:
    mapping = ColumnMapping(time="time_hours", value="val", layout="long")
    with pytest.raises(DataError, match="'val'"):
        read_csv(write(tmp_path, LONG_CSV), mapping=mapping)


def test_data_error_is_value_error() -> None:
    assert issubclass(DataError, ValueError)


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
        "a,2024-01-01 10:00,1\n"  # naive: taken as UTC
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


# --------------------------------------------------------------------------------------
# Scaling
# --------------------------------------------------------------------------------------
def test_scaler_round_trip() -> None:
    obs = read_csv(io.StringIO(LONG_CSV + "p3,1.0,Const,5\np3,2.0,Const,5\n"))
    scaler = ChannelScaler.fit(obs.frame, series_ids=["p1", "p2", "p3"])
    assert scaler.minimum["HR"] == 70.0 and scaler.maximum["HR"] == 80.0
    assert scaler.maximum["Const"] - scaler.minimum["Const"] == 1.0  # constant: range 1
    scaled = scaler.transform(obs.frame)
    assert list(scaled.columns) == list(obs.frame.columns)
    assert scaled["value"].between(0.0, 1.0).all()
    back = scaler.inverse_value(scaled["value"].to_numpy(), scaled["channel"].to_numpy())
    np.testing.assert_allclose(back, obs.frame["value"].to_numpy())
    np.testing.assert_allclose(
        scaler.scale_of(np.array(["HR", "Temp", "Const"])), [10.0, 37.2 - 36.9, 1.0]
    )
    restored = ChannelScaler.from_dict(json.loads(json.dumps(scaler.to_dict())))
    assert restored == scaler


def test_scaler_fit_on_subset_and_unseen_channel() -> None:
    obs = read_csv(io.StringIO(LONG_CSV + "p3,1.0,SpO2,97\n"))
    scaler = ChannelScaler.fit(obs.frame, series_ids=["p1"])
    assert scaler.minimum == {"HR": 70.0, "Temp": 37.2}
    with pytest.raises(DataError, match="'SpO2'"):
        scaler.transform(obs.frame)
    with pytest.raises(DataError):
        ChannelScaler.fit(obs.frame, series_ids=["nobody"])


# --------------------------------------------------------------------------------------
# Bundled samples and the synthetic generator
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SAMPLES))
def test_samples_load(name: str) -> None:
    start = time.perf_counter()
    obs = load_sample(name)
    seconds = time.perf_counter() - start
    assert obs.n_obs > 500
    assert np.isfinite(obs.frame[["time", "value"]].to_numpy()).all()
    assert (obs.gaps() > 0).all()
    if name.startswith("PhysioNet"):
        assert obs.n_series == 300 and obs.n_channels >= 30
        lo, hi = obs.time_span
        assert 0.0 <= lo and hi <= 48.0
        assert seconds < 2.0
        assert SAMPLES[name].stat().st_size < 2_000_000
    elif name.startswith("Synthetic"):
        assert obs.n_series == 40 and obs.channels == sorted(CHANNELS)
    else:
        assert obs.n_series == 1 and obs.report.layout == "wide"
        assert obs.report.time_origin is not None
        assert 300.0 < obs.time_span[1] < 340.0  # two weeks of hours
        assert obs.report.n_nan_dropped > 0


def test_unknown_sample() -> None:
    with pytest.raises(DataError, match="Unknown sample"):
        load_sample("nope")


def test_synthetic_truth_consistent() -> None:
    obs, truth, gaps = make_synthetic(n_series=12, seed=3)
    assert list(obs.columns) == ["series_id", "channel", "time", "value"]
    assert list(truth.columns) == ["series_id", "channel", "time", "mean", "noise_std"]
    assert list(gaps.columns) == ["series_id", "start", "end"]
    assert (
        (obs[["series_id", "channel", "time"]] == truth[["series_id", "channel", "time"]])
        .all()
        .all()
    )
    counts = obs.groupby("series_id").size()
    assert len(counts) == 12 and counts.between(120, 350).all()
    assert obs["time"].between(0.0, 48.0).all()
    assert not obs.duplicated(["series_id", "channel", "time"]).any()
    # gaps: several hours with no observation of any channel strictly inside
    assert ((gaps["end"] - gaps["start"]) >= 3.0 - 0.02).all()
    merged = obs.merge(gaps, on="series_id")
    assert not ((merged["time"] > merged["start"]) & (merged["time"] < merged["end"])).any()
    # noise is what the truth says it is
    z = (obs["value"] - truth["mean"]) / truth["noise_std"]
    assert abs(z.mean()) < 0.1 and 0.9 < z.std() < 1.1
    coupled = truth[truth.channel == "coupled"]
    assert np.corrcoef(coupled["time"], coupled["noise_std"])[0, 1] > 0.99  # heteroscedastic
    # any time can be recomputed; a series does not depend on n_series
    rows = truth[(truth.series_id == "s05") & (truth.channel == "noisy")]
    mean, std = synthetic_truth_at("s05", "noisy", rows["time"].to_numpy(), seed=3)
    np.testing.assert_allclose(mean, rows["mean"]) and np.testing.assert_allclose(std, 6.0)
    obs_small = make_synthetic(n_series=6, seed=3).observations
    pd.testing.assert_frame_equal(obs_small, obs[obs.series_id < "s06"].reset_index(drop=True))


def test_synthetic_sample_files_match_generator() -> None:
    obs, truth, gaps = make_synthetic(n_series=40, seed=0)
    on_disk = pd.read_csv(SAMPLE_DIR / "synthetic_multichannel.csv", dtype={"series_id": str})
    np.testing.assert_allclose(on_disk["value"], obs["value"], rtol=1e-7)
    assert (on_disk["series_id"] == obs["series_id"]).all()
    truth_disk = pd.read_csv(SAMPLE_DIR / "synthetic_truth.csv")
    np.testing.assert_allclose(truth_disk["mean"], truth["mean"], rtol=1e-7)
    gaps_disk = pd.read_csv(SAMPLE_DIR / "synthetic_gaps.csv")
    np.testing.assert_allclose(gaps_disk[["start", "end"]], gaps[["start", "end"]])
