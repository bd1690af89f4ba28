"""Hostile and careless files (issue 27, part A): outputs that never destroy an input, dates never guessed per row,
epoch numbers and mixed offsets named, and messages that say what is wrong.

Each row of the tables is a hostile or careless file: read right (:class:`Read`), or
refused (:class:`Refused`, a regex the message must match). The CLI rows also check exit
2, ``error: …`` and no traceback (``test_cli.run``), and that the input is intact.
"""

from __future__ import annotations

import decimal
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_clean_error, run

from levy_core.data import DataError, Observations, from_frame, read_csv, read_queries
from levy_core.data.parquet import read_parquet
from levy_core.data.series_chunks import iter_series_chunks
from levy_core.serving.table_writer import TableWriter, atomic_output, refuse_same_file

# ----------------------------------------------------------------------------- files


def ddmm_january(days: range = range(1, 29), series: int = 2, channel: str = "smooth",
                 order: str = "%d/%m/%Y %H:%M") -> str:
    """A long CSV of January 2024 written ``order``: two observations a day per series."""
    rows = ["series_id,channel,time,value"]
    rng = np.random.default_rng(0)
    for s in range(series):
        for d in days:
            for h in (0, 12):
                when = pd.Timestamp(2024, 1, d, h)
                rows.append(f"s{s},{channel},{when.strftime(order)},{10 + s + rng.random():.3f}")
    return "\n".join(rows) + "\n"


def text_file(text: str, name: str = "data.csv") -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        path.write_text(text, encoding="utf-8")
        return path
    return make


def parquet_file(table: Callable[[], object], name: str = "data.parquet") -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        import pyarrow.parquet as pq

        path = tmp / name
        pq.write_table(table(), path)
        return path
    return make


def _stamps_table(year: int, unit: str = "us"):
    import datetime as dt

    import pyarrow as pa

    times = [dt.datetime(year, 1, 1) + dt.timedelta(hours=6 * i) for i in range(4)]
    return pa.table({"time": pa.array(times, type=pa.timestamp(unit)), "value": [1.0, 2.0, 3.0, 4.0]})


def _epoch_table(scale: int):
    import pyarrow as pa

    ds = [(1_700_000_000 + 3600 * i) * scale for i in range(4)]
    return pa.table({"unique_id": ["A"] * 4, "ds": pa.array(ds, type=pa.int64()), "y": [1.0, 2.0, 3.0, 4.0]})


def _decimal_table():
    import pyarrow as pa

    values = [decimal.Decimal("1.5"), decimal.Decimal("9.99E69"), decimal.Decimal("2.5")]
    return pa.table({"time": [0.0, 1.0, 2.0], "value": pa.array(values, type=pa.decimal256(76, 3))})


# ----------------------------------------------------------------------------- library table


@dataclass(frozen=True)
class Read:
    """Read: the first series' times in hours and date-time origin (None: numeric)."""

    hours: list[float] | None = None
    origin: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Refused:
    match: str


AMBIGUOUS = ddmm_january(range(1, 13))  # no day over 12: 02/01 could be either
MIXED_ORDER = "time,value\n13/01/2024,1\n01/14/2024,2\n"
LIB_CASES = [
    # --- DD/MM/YYYY: one order per column, from all rows --------------------------------
    pytest.param(text_file(ddmm_january()), {}, Read(origin="2024-01-01", note=r"read day first, as line \d+ "
                                                     r"\('13/01/2024 00:00'\) shows"), id="ddmm-28-days"),
    pytest.param(text_file(ddmm_january(order="%m/%d/%Y %H:%M")), {}, Read(origin="2024-01-01",
                 note="read month first"), id="mmdd-28-days"),
    pytest.param(text_file(AMBIGUOUS), {},
                 Refused(r"Column 'time' \(time\) has dates such as line 4 \('02/01/2024 00:00'\), line 5 "
                         r"\('02/01/2024 12:00'\).*cannot be told apart.*--dayfirst.*--date-format"),
                 id="ambiguous-refused"),
    pytest.param(text_file(AMBIGUOUS), {"dayfirst": True}, Read(hours=[0, 12, 24], origin="2024-01-01"),
                 id="ambiguous-dayfirst"),
    pytest.param(text_file(AMBIGUOUS), {"date_format": "%m/%d/%Y %H:%M"}, Read(hours=[0, 12, 24 * 31],
                 origin="2024-01-01"), id="ambiguous-date-format-month-first"),
    pytest.param(text_file(MIXED_ORDER), {}, Refused(r"mixes dates written day first \(line 2 \('13/01/2024'\).*"
                                                     r"month first \(line 3 \('01/14/2024'\)\)"), id="mixed-order"),
    pytest.param(text_file("time,value\n01/13/2024,1\n01/14/2024,2\n"), {"dayfirst": True},
                 Refused(r"not day first \(DD/MM/YYYY\) although that order was given.*line 2 \('01/13/2024'\)"),
                 id="dayfirst-contradicted"),
    pytest.param(text_file("time,value\n2024-01-02 00:00,1\n2024/01/03,2\n"), {"dayfirst": True},
                 Read(hours=[0, 24], origin="2024-01-02"), id="iso-and-year-first-untouched-by-dayfirst"),
    pytest.param(text_file("time,value\n02/01/2024,1\n2024-01-05,2\n"), {"date_format": "%d/%m/%Y"},
                 Refused(r"1 date-time that do not match the date format '%d/%m/%Y': line 3 \('2024-01-05'\)"),
                 id="date-format-mismatch"),
    pytest.param(text_file("time,value\n05/05/2024,1\n06/06/2024,2\n"), {}, Read(hours=[0, 24 * 32],
                 origin="2024-05-05"), id="day-equals-month-either-way"),
    # --- years pandas cannot hold ----------------------------------------------------------
    pytest.param(text_file("time,value\n0001-01-01,1\n0001-01-02,2\n"), {},
                 Refused(r"outside the range that can be held, 1677-09-21 00:12:44 to 2262-04-11 23:47:16 \(UTC\): "
                         r"line 2 \('0001-01-01'\)"), id="year-1-csv"),
    pytest.param(text_file("time,value\n0050-06-01 12:00,1\n0050-06-02 12:00,2\n"), {},
                 Refused(r"outside the range.*line 2 \('0050-06-01 12:00'\)"), id="year-50-csv"),
    pytest.param(text_file("time,value\n2300-01-01T00:00Z,1\n2300-01-02T00:00Z,2\n"), {},
                 Refused(r"outside the range.*2300-01-01T00:00Z"), id="year-2300-csv"),
    pytest.param(text_file("time,value\n13/01/0001,1\n14/01/0001,2\n"), {}, Refused(r"outside the range"),
                 id="year-1-ddmm"),
    pytest.param(parquet_file(lambda: _stamps_table(1)), {}, Refused(r"outside the range.*line 2 \('0001-01-01"),
                 id="year-1-parquet-us"),
    pytest.param(parquet_file(lambda: _stamps_table(50, "ms")), {}, Refused(r"outside the range.*0050-01-01"),
                 id="year-50-parquet-ms"),
    pytest.param(parquet_file(lambda: _stamps_table(2024)), {}, Read(hours=[0, 6, 12, 18], origin="2024-01-01"),
                 id="year-2024-parquet-us"),
    # --- epoch numbers ---------------------------------------------------------------------
    pytest.param(parquet_file(lambda: _epoch_table(1)), {},
                 Refused(r"Column 'ds' \(time\) holds numbers such as line 2 \('1700000000'\) that look like Unix "
                         r"epoch seconds \(around 2023-11-14\), not hours.*unit='s'.*--time-unit seconds"),
                 id="nixtla-epoch-seconds"),
    pytest.param(parquet_file(lambda: _epoch_table(1000)), {}, Refused(r"Unix epoch milliseconds.*unit='ms'.*"
                                                                        r"divide them by 1,000"), id="epoch-ms"),
    pytest.param(parquet_file(lambda: _epoch_table(10**9)), {}, Refused(r"Unix epoch nanoseconds"), id="epoch-ns"),
    pytest.param(parquet_file(lambda: _epoch_table(1)), {"time_unit": "seconds"}, Read(hours=[
        1_700_000_000 / 3600 + i for i in range(4)]), id="epoch-seconds-read-as-seconds"),
    # --- naive and offset times mixed ------------------------------------------------------
    pytest.param(text_file("time,value\n2024-01-01 10:00,1\n2024-01-01T11:00+01:00,2\n2024-01-01 12:00,3\n"), {},
                 Refused(r"Column 'time' \(time\) mixes date-times with a time-zone offset \(line 3 "
                         r"\('2024-01-01T11:00\+01:00'\)\) and 2 date-times without one \(line 2 .*line 4"),
                 id="naive-and-offset-mixed"),
    pytest.param(text_file("time,value\n2024-01-01T10:00Z,1\n2024-01-01T12:00+01:00,2\n"), {},
                 Read(hours=[0, 1], origin="2024-01-01 10:00"), id="offsets-all-given"),
    # --- values beyond float32 -------------------------------------------------------------
    pytest.param(text_file("time,value\n0,1.5\n1,1e50\n2,2\n"), {},
                 Refused(r"Column 'value' \(value\) has 1 value beyond ±3.4e\+38, the range of the 32-bit floating "
                         r"point numbers the model computes in: line 3 \('1e50'\)"), id="value-1e50"),
    pytest.param(parquet_file(_decimal_table), {}, Refused(r"'value' \(value\) has 1 value beyond ±3.4e\+38.*"
                                                           r"line 3 \('9.99e\+69'\)"), id="decimal256-9.99e69"),
]


def _read(path: Path, options: dict) -> Observations:
    if path.suffix == ".parquet":
        return read_parquet(path, **options)
    return read_csv(path, **options)


@pytest.mark.parametrize(("make", "options", "expected"), LIB_CASES)
def test_hostile_file_read_right_or_refused(tmp_path: Path, make, options: dict, expected) -> None:
    path = make(tmp_path)
    if isinstance(expected, Refused):
        with pytest.raises(DataError) as err:
            _read(path, options)
        assert re.search(expected.match, str(err.value), flags=re.DOTALL), str(err.value)
        return
    obs = _read(path, options)
    first = obs.frame[obs.frame["series_id"] == obs.series_ids[0]]
    if expected.hours is not None:
        np.testing.assert_allclose(first["time"].to_numpy()[: len(expected.hours)], expected.hours)
    if expected.origin is not None:
        assert obs.report.time_origin[obs.series_ids[0]] == pd.Timestamp(expected.origin, tz="UTC")
    if expected.note is not None:
        assert any(re.search(expected.note, m) for m in obs.report.messages), obs.report.messages


def test_the_28_day_ddmm_file_is_28_january_days_in_order(tmp_path: Path) -> None:
    obs = read_csv(text_file(ddmm_january())(tmp_path))
    for sid in obs.series_ids:
        hours = obs.frame.loc[obs.frame["series_id"] == sid, "time"].to_numpy()
        assert np.all(np.diff(hours) > 0)
        stamps = obs.report.time_origin[sid] + pd.to_timedelta(hours, unit="h")
        assert (stamps.month == 1).all() and sorted(set(stamps.day)) == list(range(1, 29))
    assert obs.report.day_order is not None and obs.report.day_order.dayfirst


def test_chunks_keep_the_order_an_earlier_chunk_showed(tmp_path: Path) -> None:
    """s0 shows day-first (days over 12); s1 has days up to 12 only: read day-first too."""
    text = ddmm_january(range(1, 29), series=1) + "".join(
        f"s1,smooth,{d:02d}/01/2024 06:00,1.0\n" for d in range(1, 6))
    path = text_file(text)(tmp_path)
    chunks = list(iter_series_chunks(path, chunk_series=1))
    s1 = chunks[1]
    assert s1.report.time_origin["s1"] == pd.Timestamp("2024-01-01 06:00", tz="UTC")
    np.testing.assert_allclose(s1.frame["time"], [0, 24, 48, 72, 96])
    # a later chunk showing the other order is refused, naming both
    other = text + "s2,smooth,01/13/2024 00:00,1\ns2,smooth,01/14/2024 00:00,2\n"
    with pytest.raises(DataError, match=r"written month first \(MM/DD/YYYY\).*earlier dates.*day first"):
        list(iter_series_chunks(text_file(other, "other.csv")(tmp_path), chunk_series=1))


def test_a_missing_series_id_in_parquet_is_named_not_called_unsorted(tmp_path: Path) -> None:
    frame = pd.DataFrame({"series_id": ["s00"] * 150 + ["s01"] * 50, "time": np.arange(200.0) % 150,
                          "value": np.ones(200)})
    frame["series_id"] = frame["series_id"].astype(object)
    frame.loc[100, "series_id"] = None
    path = tmp_path / "nullid.parquet"
    frame.to_parquet(path, index=False)
    with pytest.raises(DataError) as err:
        list(iter_series_chunks(path))
    message = str(err.value)
    assert "series id (column 'series_id') is missing on 1 row: row 101 (line 102)" in message
    assert "reappears" not in message and "sort" not in message


# ----------------------------------------------------------------------------- queries


@pytest.fixture
def iso_obs() -> Observations:
    times = pd.date_range("2024-01-01", periods=6, freq="6h").strftime("%Y-%m-%d %H:%M")
    return from_frame(pd.DataFrame({"series_id": "s0", "channel": "smooth", "time": times,
                                    "value": np.arange(6.0)}))


QUERY_CASES = [
    pytest.param("series_id,channel,time\ns0,smooth,02/01/2024 06:00 +0000\n", {},
                 Refused(r"Column 'time' \(the queries\) has dates such as line 2 \('02/01/2024 06:00 \+0000'\).*"
                         r"--dayfirst"), id="query-ambiguous"),
    pytest.param("series_id,channel,time\ns0,smooth,02/01/2024 06:00 +0000\n", {"dayfirst": True},
                 Read(hours=[30.0]), id="query-dayfirst-2-january"),
    pytest.param("series_id,channel,time\ns0,smooth,02/01/2024 06:00 +0000\n",
                 {"date_format": "%m/%d/%Y %H:%M %z"}, Read(hours=[31 * 24 + 6.0]), id="query-format-1-february"),
    pytest.param("series_id,channel,time\nnope,smooth,2024-01-02 00:00\ns0,smooth,2024-01-02 00:00\n", {},
                 Refused(r"The queries name 1 series not in the data \('nope': line 2 \('nope'\)\).*Known series "
                         r"ids include 's0'"), id="query-unknown-series"),
]


@pytest.mark.parametrize(("text", "options", "expected"), QUERY_CASES)
def test_query_dates(tmp_path: Path, iso_obs: Observations, text: str, options: dict, expected) -> None:
    path = text_file(text, "queries.csv")(tmp_path)
    if isinstance(expected, Refused):
        with pytest.raises(DataError) as err:
            read_queries(path, iso_obs, **options)
        assert re.search(expected.match, str(err.value), flags=re.DOTALL), str(err.value)
        assert "must hold numbers" not in str(err.value)
        return
    np.testing.assert_allclose(read_queries(path, iso_obs, **options)["time"], expected.hours)


def test_queries_take_the_order_the_data_showed(tmp_path: Path) -> None:
    obs = read_csv(text_file(ddmm_january(series=1))(tmp_path))
    q = read_queries(text_file("series_id,channel,time\ns0,smooth,02/01/2024 06:00\n", "q.csv")(tmp_path), obs)
    np.testing.assert_allclose(q["time"], [30.0])  # 2 January 06:00, as the data's dates are day first


# ----------------------------------------------------------------------------- outputs


def test_table_writer_leaves_the_target_untouched_on_error(tmp_path: Path) -> None:
    for name in ("out.csv", "out.parquet"):
        target = tmp_path / name
        target.write_bytes(b"precious")
        with pytest.raises(RuntimeError), TableWriter(target) as w:
            w.write(pd.DataFrame({"a": [1, 2]}))
            raise RuntimeError("partway")
        assert target.read_bytes() == b"precious"
        with TableWriter(target) as w:
            w.write(pd.DataFrame({"a": [1, 2]}))
        assert target.read_bytes() != b"precious"
    with pytest.raises(KeyboardInterrupt), atomic_output(tmp_path / "j.json") as tmp:
        tmp.write_text("{")
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "out.parquet"]  # no temporary file left


def test_refuse_same_file_sees_links(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("x")
    (tmp_path / "soft.csv").symlink_to(data)
    os.link(data, tmp_path / "hard.csv")
    for out in ("data.csv", "soft.csv", "hard.csv", "./data.csv"):
        with pytest.raises(DataError, match=r"--out '.*' is the data file"):
            refuse_same_file({"the data file": data}, {"--out": tmp_path / out})
    refuse_same_file({"the data file": data}, {"--out": tmp_path / "new.csv"})


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def data_files(fit_obs: Observations, tmp_path: Path) -> dict[str, Path]:
    """The fitted data as CSV and Parquet, and a CSV whose last series has a bad value."""
    frame = fit_obs.frame
    csv, parquet = tmp_path / "same.csv", tmp_path / "same.parquet"
    frame.to_csv(csv, index=False)
    frame.to_parquet(parquet, index=False)
    lines = csv.read_text().splitlines()
    lines[-1] = lines[-1].rsplit(",", 1)[0] + ",abc"
    bad = tmp_path / "badtail.csv"
    bad.write_text("\n".join(lines) + "\n")
    return {"csv": csv, "parquet": parquet, "bad": bad}


SAME_FILE_CASES = [
    pytest.param(["predict", "{model}", "{csv}", "--out", "{csv}"], "csv", r"--out '.*same.csv' is the data file",
                 id="predict-csv"),
    pytest.param(["predict", "{model}", "{csv}", "--out", "{csv}", "--chunk-series", "3"], "csv",
                 r"--out '.*same.csv' is the data file", id="predict-csv-chunks"),
    pytest.param(["predict", "{model}", "{parquet}", "--out", "{parquet}"], "parquet",
                 r"--out '.*same.parquet' is the data file", id="predict-parquet"),
    pytest.param(["predict", "{model}", "{parquet}", "--out", "{parquet}", "--chunk-series", "3"], "parquet",
                 r"--out '.*same.parquet' is the data file", id="predict-parquet-chunks"),
    pytest.param(["rank", "{model}", "{csv}", "--out", "{csv}"], "csv", r"--out .* is the data file", id="rank"),
    pytest.param(["evaluate", "{model}", "{csv}", "--json", "{dir}/e.json", "--predictions", "{csv}"], "csv",
                 r"--predictions .* is the data file", id="evaluate-predictions"),
    pytest.param(["evaluate", "{model}", "{csv}", "--json", "{dir}/e.json", "--predictions", "{dir}/e.json"], "csv",
                 r"--predictions and --json are the same file", id="evaluate-two-outputs"),
    pytest.param(["predict", "{model}", "{csv}", "--out", "{model}/model.json"], "csv",
                 r"--out .*model.json' is inside the model", id="predict-into-the-model"),
]


@pytest.mark.parametrize(("argv", "kind", "match"), SAME_FILE_CASES)
def test_an_output_that_is_an_input_is_refused_and_the_input_intact(
    capsys, fitted_dir: Path, data_files: dict[str, Path], argv: list[str], kind: str, match: str
) -> None:
    before = {k: _digest(p) for k, p in data_files.items()}
    model_before = {p.name: _digest(p) for p in fitted_dir.iterdir() if p.is_file()}
    names = {"model": fitted_dir, "csv": data_files["csv"], "parquet": data_files["parquet"],
             "dir": data_files["csv"].parent}
    code, out, err = run(capsys, *[a.format(**names) for a in argv])
    assert_clean_error(code, out, err)
    assert re.search(match, err), err
    assert {k: _digest(p) for k, p in data_files.items()} == before
    assert {p.name: _digest(p) for p in fitted_dir.iterdir() if p.is_file()} == model_before


@pytest.mark.parametrize("name", ["out.csv", "out.parquet"])
def test_an_error_partway_leaves_no_partial_output(capsys, fitted_dir: Path, data_files: dict[str, Path],
                                                   name: str) -> None:
    folder = data_files["bad"].parent
    out = folder / name
    code, stdout, err = run(capsys, "predict", fitted_dir, data_files["bad"], "--out", out, "--chunk-series", "3",
                            "--quiet")
    assert_clean_error(code, stdout, err)
    assert "not finite numbers" in err and not out.exists()
    out.write_bytes(b"an earlier result")  # an existing output is left as it was
    code, stdout, err = run(capsys, "predict", fitted_dir, data_files["bad"], "--out", out, "--chunk-series", "3",
                            "--quiet")
    assert code == 2 and out.read_bytes() == b"an earlier result"
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_predict_on_the_28_day_ddmm_file_forecasts_29_january(capsys, fitted_dir: Path, tmp_path: Path) -> None:
    data = text_file(ddmm_january())(tmp_path)
    out = tmp_path / "pred.csv"
    code, _, err = run(capsys, "predict", fitted_dir, data, "--out", out, "--horizon", "1d", "--points", "2",
                       "--quiet")
    assert code == 0, err
    times = pd.to_datetime(pd.read_csv(out)["time"])
    assert (times.dt.strftime("%Y-%m-%d") == "2024-01-29").all()  # one day past 28 January 12:00, at most


CLI_REFUSED = [
    pytest.param(lambda tmp: text_file(AMBIGUOUS)(tmp), [], r"cannot be told apart.*--dayfirst", id="ambiguous"),
    pytest.param(parquet_file(lambda: _epoch_table(1)), [], r"Unix epoch seconds", id="epoch-seconds"),
    pytest.param(text_file("series_id,channel,time,value\ns0,smooth,0,1\ns0,smooth,1,1e50\n"), [],
                 r"beyond ±3.4e\+38, the range of the 32-bit.*'1e50'", id="value-1e50"),
    pytest.param(text_file("series_id,channel,time,value\n" + "".join(f"s0,smooth,{t},{1e30 if t == 3 else t}\n"
                                                                   for t in range(8))), [],
                 r"channel 'smooth' has 1 value\(s\) such as 1e\+30.*range the model was trained on.*32-bit",
                 id="value-1e30-beyond-the-model"),
    pytest.param(text_file(AMBIGUOUS), ["--dayfirst", "--date-format", "%d/%m/%Y"], r"not both",
                 id="dayfirst-and-format"),
]


@pytest.mark.parametrize(("make", "extra", "match"), CLI_REFUSED)
def test_cli_refuses_by_name(capsys, fitted_dir: Path, tmp_path: Path, make, extra: list[str], match: str) -> None:
    data = make(tmp_path)
    out = tmp_path / "pred.csv"
    code, stdout, err = run(capsys, "predict", fitted_dir, data, "--out", out, "--quiet", *extra)
    assert_clean_error(code, stdout, err)
    assert re.search(match, err, flags=re.DOTALL), err
    assert "check_finite" not in err and not out.exists()


def test_cli_dayfirst_reads_the_ambiguous_file_and_queries(capsys, fitted_dir: Path, tmp_path: Path) -> None:
    data = text_file(AMBIGUOUS)(tmp_path)
    queries = text_file("series_id,channel,time\ns0,smooth,02/01/2024 06:00 +0000\n", "q.csv")(tmp_path)
    out = tmp_path / "pred.csv"
    code, _, err = run(capsys, "predict", fitted_dir, data, "--out", out, "--queries", queries, "--quiet")
    assert code == 2 and "cannot be told apart" in err
    code, _, err = run(capsys, "predict", fitted_dir, data, "--out", out, "--queries", queries, "--quiet",
                       "--dayfirst")
    assert code == 0, err
    assert pd.read_csv(out)["time"].tolist() == ["2024-01-02 06:00:00+00:00"]


def test_cli_names_an_unknown_series_in_date_time_queries(capsys, fitted_dir: Path, tmp_path: Path) -> None:
    data = text_file(ddmm_january(order="%Y-%m-%d %H:%M"))(tmp_path)
    queries = text_file("series_id,channel,time\nnope,smooth,2024-01-02 00:00\n", "q.csv")(tmp_path)
    code, out, err = run(capsys, "predict", fitted_dir, data, "--out", tmp_path / "p.csv", "--queries", queries)
    assert_clean_error(code, out, err)
    assert "series not in the data ('nope'" in err and "must hold numbers" not in err


# ----------------------------------------------------------------------------- dashboard


def test_upload_limit_in_mib_and_mb() -> None:
    from levy_dashboard.data import sources

    assert sources.MAX_UPLOAD_BYTES == 50 * 2**20 and sources.upload_limit_text() == "50 MiB (52.4 MB)"
    sources.check_upload_size("ok.csv", sources.MAX_UPLOAD_BYTES)
    with pytest.raises(DataError, match=r"'big.csv' is 53.9 MB \(51.4 MiB\), more than the 50 MiB \(52.4 MB\)"):
        sources.check_upload_size("big.csv", int(51.4 * 2**20))


def test_streamlit_lets_a_file_over_the_limit_reach_the_app() -> None:
    """The browser counts Streamlit's cap in 10^6 bytes: it must be above 50 MiB, so that a file
    over the dashboard's limit gets the page's message, not only the uploader's red icon."""
    import tomllib

    config = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 1e6 > 50 * 2**20 * 1.5


@pytest.mark.integration
def test_dashboard_says_an_upload_is_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("LEVY_DASHBOARD_FAST", "1")
    monkeypatch.delenv("LEVY_DASHBOARD_DATA", raising=False)
    st.cache_resource.clear()
    st.cache_data.clear()
    app = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
    at = AppTest.from_file(str(app), default_timeout=120).run()
    assert not at.exception, at.exception
    header = b"series_id,time,value\n"
    big = header + b"s0,1,1\n" * ((50 * 2**20 + 7_000 - len(header)) // 7)  # just over 50 MiB
    at.file_uploader(key="upload").set_value(("big.csv", big, "text/csv"))
    at.run()
    assert not at.exception, at.exception
    shown = " ".join(e.value for e in at.error).replace("\\", "")  # markdown escapes
    assert re.search(r"big.csv.* is 52.4 MB \(50.0 MiB\), more than the 50 MiB \(52.4 MB\) the dashboard reads",
                     shown), shown
    st.cache_resource.clear()
    st.cache_data.clear()
