"""Hostile and mistaken files, one row each: read right, or refused with a message that
names the problem and what to do -- never misread (levy_core.data, levy_core.cli.main).

Each row is a file's text, the read_csv options, and either the observations expected
(:class:`Read`) or a regex the DataError's message must match (plus regexes it must not).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.cli import main as cli
from levy_core.data import MAX_ABS_VALUE, DataError, from_frame, read_csv


@dataclass(frozen=True)
class Read:
    """The file is read: these times (hours), values and, optionally, series and notes."""

    time: list[float]
    value: list[float]
    series: list[str] | None = None
    note: str | None = None  # a regex one of the report's notes matches


@dataclass(frozen=True)
class Refused:
    """The file is refused: the message matches ``match`` and none of ``not_match``."""

    match: str
    not_match: tuple[str, ...] = field(default=("Traceback",))


EURO = "time;value\n0,5;1,25\n1,25;3,5\n"  # a European spreadsheet's CSV export
DATES = "time,value\n2024-01-01 00:00,1\n2024-01-01 06:00,2\n"

CASES = [
    # --- decimal commas: read right in semicolon (or tab) files ... -----------------
    pytest.param(EURO, {}, Read([0.5, 1.25], [1.25, 3.5], note=r"'time': 2 numbers with a decimal comma"),
                 id="semicolon-decimal-commas"),
    pytest.param(EURO.replace(";", "\t"), {}, Read([0.5, 1.25], [1.25, 3.5]), id="tab-decimal-commas"),
    pytest.param("time;value\n0;1,25\n1;3\n2;-0,5\n", {}, Read([0, 1, 2], [1.25, 3, -0.5]),
                 id="decimal-commas-beside-integers"),
    pytest.param("time;value\n0;1.234,5\n1;2,5\n", {}, Read([0, 1], [1234.5, 2.5]),
                 id="thousands-points-with-decimal-commas"),
    pytest.param("time;value\n0;1,5E+03\n1;2,5e-1\n", {}, Read([0, 1], [1500, 0.25]), id="exponents"),
    pytest.param("time;HR;Temp\n0;80;37,2\n0,5;82;\n", {}, Read([0, 0, 0.5], [80, 37.2, 82]),
                 id="wide-decimal-commas"),
    pytest.param("series_id;time;value\n1,5;0;1,5\n1,5;1;2,5\n", {},
                 Read([0, 1], [1.5, 2.5], series=["1,5", "1,5"]), id="ids-keep-their-commas"),
    pytest.param("time;value\n2024-01-01 00:00;1,5\n2024-01-01 06:00;2,5\n", {},
                 Read([0, 6], [1.5, 2.5]), id="date-times-and-decimal-commas"),
    pytest.param("time;value\n0;1.5\n1;2.5\n", {}, Read([0, 1], [1.5, 2.5]), id="semicolons-decimal-points"),
    pytest.param("time;value\n0,5;1\n1,5;2\n", {"time_unit": "minutes"}, Read([0.5 / 60, 1.5 / 60], [1, 2]),
                 id="decimal-comma-minutes"),
    # --- ... refused by name when ambiguous -----------------------------------------
    pytest.param("time;value\n0,5;1.5\n1;2\n", {},
                 Refused(r"Decimal commas and decimal points mixed.*'time'.*line 2 \('0,5'\).*'value'.*"
                         r"line 2 \('1.5'\).*thousands separator.*one decimal mark"),
                 id="semicolon-mixed-columns"),
    pytest.param("time;value\n0;1,5\n1;2.500\n", {},
                 Refused(r"Decimal commas and decimal points mixed.*'value'.*line 2 \('1,5'\).*it also has "
                         r".*line 3 \('2.500'\)"), id="semicolon-mixed-in-one-column"),
    # --- comma-separated files with decimal commas: the separator is named ----------
    pytest.param("time,value\n0,5,1,25\n1,25,3,5\n", {},
                 Refused(r"line 2 .* 4 fields but the header has 2.*decimal commas \(3,5\).*semicolons",
                         ("date-time", "Traceback")), id="comma-file-unquoted-decimal-commas"),
    pytest.param("time,value\n0,1\n1,25,3,5\n", {},
                 Refused(r"Expected 2 fields in line 3, saw 4.*decimal commas.*semicolons"),
                 id="comma-file-ragged-decimal-comma"),
    pytest.param('time,value\n"1,25",1\n"12,5",2\n"3,75",3\n', {},
                 Refused(r"'time' \(time\) has 3 numbers with a decimal comma: line 2 \('1,25'\).*"
                         r"semicolons", ("date-time", "year")), id="quoted-decimal-comma-times-not-dates"),
    pytest.param('time,value\n0,"1,25"\n1,"3,5"\n', {},
                 Refused(r"'value' \(value\) has 2 cells that are not finite numbers.*2 of them have a "
                         r"decimal comma.*separated by semicolons"), id="quoted-decimal-comma-values"),
    pytest.param('time,a,b\n0,"1,5",2\n1,"2,5",3\n', {},
                 Refused(r"'a' \(channel\).*decimal comma"), id="wide-column-of-decimal-commas-not-ignored"),
    # --- duplicated columns ----------------------------------------------------------
    pytest.param("time,value,value\n0,1,2\n1,3,4\n", {},
                 Refused(r"Column 'value' appears 2 times in the header \(columns 2, 3.*which one holds the "
                         r"values.*Rename or delete"), id="duplicated-value"),
    pytest.param("time,time,value\n0,1,2\n1,3,4\n", {},
                 Refused(r"Column 'time' appears 2 times.*holds the time"), id="duplicated-time"),
    pytest.param("id,id,time,value\na,b,0,1\na,b,1,2\n", {},
                 Refused(r"Column 'id' appears 2 times.*series ids"), id="duplicated-series"),
    pytest.param("time,HR,HR\n0,1,2\n1,3,4\n", {}, Refused(r"Column 'HR' appears 2 times"),
                 id="duplicated-wide-channel"),
    pytest.param("time,value, value\n0,1,2\n1,3,4\n", {}, Refused(r"Column 'value' appears 2 times"),
                 id="duplicated-after-stripping"),
    pytest.param("time,value,note,note\n0,1,a,b\n1,2,c,d\n", {}, Read([0, 1], [1, 2], note=r"ignored.*'note'"),
                 id="duplicated-unused-column-ignored"),
    pytest.param("time,value,value.1\n0,1,2\n1,3,4\n", {}, Read([0, 1], [1, 3]),
                 id="a-column-really-named-value.1"),
    # --- values too large ----------------------------------------------------------------
    pytest.param("time,value\n0,1e308\n1,-1e308\n2,3\n", {},
                 Refused(r"'value' \(value\) has 2 values beyond ±3.4e\+38, the range of the 32-bit floating "
                         r"point numbers the model computes in: line 2 \('1e308'\), line 3 \('-1e308'\).*larger unit"),
                 id="values-1e308"),
    pytest.param("time,value\n0,1e39\n1,3\n", {}, Refused(r"beyond ±3.4e\+38"), id="value-just-beyond"),
    pytest.param("time,value\n0,3e38\n1,-3e38\n", {}, Read([0, 1], [3e38, -3e38]), id="value-at-the-bound"),
    pytest.param("time,a,b\n0,1,2e200\n1,3,4\n", {}, Refused(r"'b' \(channel\) has 1 value beyond"),
                 id="wide-value-1e200"),
    # --- times float32 cannot resolve --------------------------------------------------
    # (1e15 would be refused first as epoch microseconds: test_hostile_files)
    pytest.param("time,value\n1e16,1\n1.0000000000001e16,2\n1.0000000000002e16,3\n", {},
                 Refused(r"'time' \(time\): series 'series_0' has times up to 1e\+16 hours.*32-bit.*"
                         r"1.07e\+09 hours.*typically 1e\+03 hours apart.*Subtract an offset"),
                 id="times-around-1e16"),
    pytest.param("time,value\n1700000000,1\n1700000060,2\n1700000120,3\n", {"time_unit": "seconds"},
                 Refused(r"up to 4.72e\+05 hours.*0.0312 hours.*0.0167 hours apart.*Subtract an offset"),
                 id="unix-seconds-a-minute-apart"),
    pytest.param("time,value\n0,1\n60,2\n120,3\n", {"time_unit": "seconds"},
                 Read([0, 1 / 60, 2 / 60], [1, 2, 3]), id="the-same-from-zero"),
    pytest.param("time,value\n1e15,1\n1.000001e15,2\n", {}, Read([1e15, 1.000001e15], [1, 2]),
                 id="1e15-with-resolvable-gaps"),
    pytest.param("time,value\n1e307,1\n2e307,2\n", {"time_unit": "days"},
                 Refused(r"'time' \(time\) has 2 times too large to be counted in hours: line 2 "
                         r"\('1e307'\).*offset"), id="days-overflowing-hours"),
    pytest.param("series_id,time,value\na,2000-01-01T00:00:00,1\na,2100-01-01T00:00:00,2\n"
                 "a,2100-01-01T00:00:01,3\na,2100-01-01T00:00:02,4\nb,2000-01-01T00:00:00,1\n", {},
                 Refused(r"series 'a' has times up to 8.77e\+05 hours.*Split such series"),
                 id="date-times-a-century-then-seconds"),
    pytest.param(DATES, {}, Read([0, 6], [1, 2]), id="ordinary-date-times"),
    pytest.param("time,value\n-48,1\n-24,2\n0,3\n", {}, Read([-48, -24, 0], [1, 2, 3]), id="negative-hours"),
]


@pytest.mark.parametrize(("text", "options", "expected"), CASES)
def test_hostile_file(tmp_path: Path, text: str, options: dict, expected: Read | Refused) -> None:
    path = tmp_path / "upload.csv"
    path.write_text(text, encoding="utf-8")
    if isinstance(expected, Refused):
        with pytest.raises(DataError) as err:
            read_csv(path, **options)
        message = str(err.value)
        assert re.search(expected.match, message, flags=re.DOTALL), message
        for bad in expected.not_match:
            assert not re.search(bad, message), message
        return
    obs = read_csv(path, **options)
    frame = obs.frame
    np.testing.assert_allclose(frame["time"], expected.time, rtol=1e-12)
    np.testing.assert_allclose(frame["value"], expected.value, rtol=1e-12)
    if expected.series is not None:
        assert frame["series_id"].tolist() == expected.series
    if expected.note is not None:
        assert any(re.search(expected.note, n) for n in obs.report.messages), obs.report.messages


def test_european_export_span_is_hours_not_years() -> None:
    """The issue's case: '1,25' was a date in year 1 and the span 6,288 h instead of 12 h."""
    obs = read_csv(io.StringIO("time;value\n0;1\n1,25;2\n12;3\n"))
    assert obs.time_span == (0.0, 12.0)
    assert obs.report.input_time_unit == "hours"


def test_duplicated_names_in_a_frame_are_refused() -> None:
    frame = pd.DataFrame([[0, 1, 2], [1, 3, 4]], columns=["time", "value", "value"])
    with pytest.raises(DataError, match="Column 'value' appears 2 times"):
        from_frame(frame)


def test_value_bound_leaves_sums_of_squares_finite() -> None:
    """The bound's reason: a squared difference of two values, summed over MAX_ROWS."""
    from levy_core.data import MAX_ROWS

    with np.errstate(over="raise"):
        assert np.isfinite((2 * MAX_ABS_VALUE) ** 2 * MAX_ROWS * 1e100)


# --------------------------------------------------------------------------------------
# the CLI's view: exit 2, "error: ..." on stderr, no traceback, nothing written
# --------------------------------------------------------------------------------------
CLI_CASES = [
    pytest.param("time,value\n0,5,1,25\n1,25,3,5\n", [], r"decimal commas", id="comma-decimal-commas"),
    pytest.param("time;value\n0,5;1.5\n1;2\n", [], r"Decimal commas and decimal points mixed", id="mixed-marks"),
    pytest.param("time,value,value\n0,1,2\n1,3,4\n", [], r"'value' appears 2 times", id="duplicated-value"),
    pytest.param("time,value\n0,1e308\n1,-1e308\n2,3\n", [], r"beyond ±3.4e\+38", id="values-1e308"),
    pytest.param("time,value\n1e15,1\n1.00000000000001e15,2\n1.00000000000002e15,3\n", [],
                 r"32-bit", id="times-1e15"),
    pytest.param("time,value\n0,1\n1,2\n2,3\n3,4\n", ["--epochs", "0"], r"epochs", id="epochs-0"),
    pytest.param("time,value\n0,1\n1,2\n2,3\n3,4\n", ["--epochs", "-5"], r"epochs", id="epochs-negative"),
    pytest.param("time,value\n0,1\n1,2\n2,3\n3,4\n", ["--max-seconds", "nan"], r"max.seconds", id="budget-nan"),
    pytest.param("time,value\n0,1\n1,2\n2,3\n3,4\n", ["--max-seconds", "-1"], r"max.seconds",
                 id="budget-negative"),
]


def run_cli(argv: list[str]) -> int:
    """``levy …``'s exit code: main's return value, or argparse's exit for a bad option."""
    try:
        return cli.main(argv)
    except SystemExit as exc:  # argparse refuses some option values itself (usage + error)
        return int(exc.code or 0)


@pytest.mark.parametrize(("text", "extra", "match"), CLI_CASES)
def test_cli_refuses_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, extra: list[str], match: str
) -> None:
    data, out = tmp_path / "data.csv", tmp_path / "model"
    data.write_text(text, encoding="utf-8")
    code = run_cli(["fit", str(data), "--out", str(out), "--quiet", *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    assert re.search(r"(^|\n|: )error: ", err), err  # "error: …" (argparse: "levy fit: error: …")
    assert re.search(match, err), err
    assert "Traceback" not in err
    assert not out.exists()  # no untrained or half-read model saved


def test_cli_refuses_a_gzip_bomb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small bomb against a lowered cap: the same code path as the 400 MB one."""
    import gzip

    from levy_core.data import decode

    monkeypatch.setattr(decode, "MAX_DECOMPRESSED_BYTES", 1_000_000)
    data = tmp_path / "bomb.csv.gz"
    data.write_bytes(gzip.compress(b"time,value\n" + b"0,0\n" * 1_000_000))
    assert run_cli(["fit", str(data), "--out", str(tmp_path / "m"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "error: 'bomb.csv.gz' unpacks to more than 1 MB" in err and "Traceback" not in err


def test_cli_refuses_a_corrupt_gzip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    data = tmp_path / "broken.csv.gz"
    data.write_bytes(gzip.compress(b"time,value\n0,1\n1,2\n" * 100)[:-20])
    assert run_cli(["fit", str(data), "--out", str(tmp_path / "m"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "error: 'broken.csv.gz' looks gzipped but could not be unpacked" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------------------
# query files: the same decimal marks
# --------------------------------------------------------------------------------------
QUERY_CASES = [
    pytest.param(EURO, "time;note\n1,5;a\n2;b\n", [1.5, 2.0], id="semicolon-queries-decimal-commas"),
    pytest.param(EURO, 'time\n"1,25"\n', r"could not read 1 time as finite numbers.*decimal point",
                 id="quoted-decimal-comma-query-not-a-date"),
    pytest.param("time;value\n2024-01-01 00:00;1,25\n2024-01-02 00:00;3,5\n", 'time\n"1,25"\n',
                 r"'time' \(the queries\) has 1 number with a decimal comma: line 2 \('1,25'\)",
                 id="decimal-comma-query-for-date-time-data"),
    pytest.param(EURO, "time;note\n1,5;a\n2.5;b\n", r"Decimal commas and decimal points mixed",
                 id="mixed-marks-in-queries"),
]


@pytest.mark.parametrize(("data", "query", "expected"), QUERY_CASES)
def test_hostile_queries(data: str, query: str, expected: list[float] | str) -> None:
    from levy_core.data import read_queries

    obs = read_csv(io.StringIO(data))
    if isinstance(expected, str):
        with pytest.raises(DataError) as err:
            read_queries(io.StringIO(query), obs)
        assert re.search(expected, str(err.value)), str(err.value)
        assert "date-time" not in str(err.value)
        return
    assert read_queries(io.StringIO(query), obs)["time"].tolist() == expected


def test_values_at_the_bound_fit_and_predict_finite() -> None:
    """What the bound protects: data up to ±MAX_ABS_VALUE go through the fit and the
    evaluation in their own units without an overflow (1e160 would overflow there)."""
    import warnings

    from levy_core.data import load_sample
    from levy_core.pipeline.evaluation import evaluate
    from levy_core.pipeline.prepared import prepare
    from levy_core.pipeline.recipe import fit
    from levy_core.training.train import TrainConfig

    frame = load_sample("Synthetic multichannel").frame
    frame = frame[frame["series_id"].isin(sorted(frame["series_id"].unique())[:40])].copy()
    frame["value"] = (frame["value"] * (MAX_ABS_VALUE / frame["value"].abs().max())).clip(-MAX_ABS_VALUE, MAX_ABS_VALUE)
    frame.loc[frame.index[0], "value"] = -MAX_ABS_VALUE  # the widest range allowed
    obs = from_frame(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fitted = fit(obs, train=TrainConfig(epochs=1), train_twin=False)
        result, pred = evaluate(fitted, prepare(fitted, obs), mc_passes=2)
    numeric = pred.select_dtypes("number")
    assert np.isfinite(numeric.to_numpy()).all()
    assert np.isfinite(result["levy"]["mse"])
