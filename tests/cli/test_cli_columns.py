"""Issue 53, "name the columns once": ``--id/--time/--value/--channel/--channels`` on every
command that reads data, ``LevyForecaster(id_col=…, time_col=…)``, no abbreviated option, and
the columns, time unit and dates recorded in ``model.json`` and reused by every later command
(a conflicting ``--time-unit`` refused by name; models saved before it load as before)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_clean_error, run

from levy_core.cli.main import build_parser, main
from levy_core.data import ColumnNames, DataError, detect_mapping, from_frame
from levy_core.data.recorded import RecordedReading, TimeUnitConflict
from levy_core.forecast.forecaster import LevyForecaster
from levy_core.pipeline.modelfile import ModelLoadError, load_model
from levy_core.pipeline.recipe import fit

FIT = ("--epochs", "2", "--no-twin", "--quiet", "--nice", "0")


def pbc_like(n_patients: int = 24, seed: int = 0) -> pd.DataFrame:
    """The Mayo PBC follow-up's shape: ``id,day,bili,albumin,platelet``, wide, times in days
    (visits about a year apart over up to ~12 years, follow-ups of different lengths)."""
    rng = np.random.default_rng(seed)
    rows = []
    for pid in range(1, n_patients + 1):
        level = rng.normal(0.0, 0.6)
        days = np.cumsum(rng.uniform(150, 420, int(rng.integers(6, 14))))
        days = np.concatenate([[0.0], days]).round()
        for d in days:
            rows.append((pid, int(d), round(float(np.exp(level + d / 4000 + rng.normal(0, 0.3))), 2),
                         round(float(rng.normal(3.5 - d / 8000, 0.3)), 2), round(float(rng.normal(250, 60)), 0)))
    return pd.DataFrame(rows, columns=["id", "day", "bili", "albumin", "platelet"])


@pytest.fixture(scope="module")
def pbc_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pbc") / "pbc.csv"
    pbc_like().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def pbc_model(pbc_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("models") / "pbc"
    assert main(["fit", str(pbc_csv), "--time", "day", "--time-unit", "days", "--out", str(out), *FIT]) == 0
    return out


def parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every subparser below it."""
    found = [parser]
    for action in parser._actions:  # argparse keeps subparsers there only
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += parsers(sub)
    return found


def test_no_parser_reads_an_abbreviated_option(capsys) -> None:
    every = parsers(build_parser())
    assert len(every) == 8 and all(p.allow_abbrev is False for p in every), [p.prog for p in every]
    args = build_parser().parse_args(["fit", "pbc.csv", "--time", "day", "--out", "m"])
    assert (args.time, args.time_unit) == ("day", None), "--time day was read as --time-unit day (invalid choice)"
    with pytest.raises(SystemExit) as stop:  # --time-u was read as --time-unit: now it is no option
        main(["predict", "m", "d.csv", "--out", "p.csv", "--time-u", "days"])
    assert stop.value.code == 2 and "unrecognized arguments: --time-u" in capsys.readouterr().err


def test_fit_reads_time_day_as_the_time_column_and_records_the_reading(pbc_model: Path) -> None:
    meta = json.loads((pbc_model / "model.json").read_text())
    reading = meta["reading"]
    assert reading["time_unit"] == "days" and reading["clock"] == "days"
    assert reading["columns"]["time"] == "day" and reading["columns"]["series"] is None  # id: found by name
    assert reading["mapping"] == {"time": "day", "value": None, "series": "id", "channel": None,
                                  "wide_channels": ["bili", "albumin", "platelet"], "layout": "wide"}
    fitted = load_model(pbc_model)
    assert fitted.reading == RecordedReading.from_dict(reading) and fitted.reading.columns == ColumnNames(time="day")


def test_fit_prints_the_reading_it_records(pbc_csv: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "fit", pbc_csv, "--id", "id", "--time", "day", "--channels", "bili,albumin",
                       "--time-unit", "days", "--out", tmp_path / "m", *FIT)
    assert code == 0, err
    assert "reading: wide: series='id', time='day', channels=['bili', 'albumin']; numeric times in days" in err
    assert "ignored column(s) 'platelet'" in err
    assert load_model(tmp_path / "m").channels == ["albumin", "bili"]


def test_predict_without_time_unit_writes_the_same_file_as_with_it(pbc_model: Path, pbc_csv: Path, tmp_path: Path,
                                                                   capsys) -> None:
    without, with_unit = tmp_path / "without.csv", tmp_path / "with.csv"
    code, _, err = run(capsys, "predict", pbc_model, pbc_csv, "--horizon", "365", "--points", "5", "--out", without,
                       "--quiet")
    assert code == 0, err
    assert "denser" not in err, "the model's unit is used: no drift warning for a forgotten --time-unit"
    code, _, err = run(capsys, "predict", pbc_model, pbc_csv, "--horizon", "365", "--points", "5", "--time-unit",
                       "days", "--out", with_unit, "--quiet")
    assert code == 0, err
    assert without.read_bytes() == with_unit.read_bytes()
    pred = pd.read_csv(without)
    ends = pbc_like().groupby("id")["day"].max().rename(index=str)
    last = pred.groupby("series_id")["time"].max()
    assert np.allclose(last.to_numpy() - ends.reindex(last.index.astype(str)).to_numpy(), 365.0), \
        "--horizon 365 is a year in days, the model's unit"


def test_a_conflicting_time_unit_is_refused_by_name(pbc_model: Path, pbc_csv: Path, tmp_path: Path, capsys) -> None:
    for command in (["predict", pbc_model, pbc_csv, "--out", tmp_path / "p.csv"],
                    ["evaluate", pbc_model, pbc_csv, "--json", tmp_path / "e.json"],
                    ["rank", pbc_model, pbc_csv, "--out", tmp_path / "r.csv"],
                    ["watch", pbc_model, pbc_csv, "--out", tmp_path / "w.csv"],
                    ["advise", pbc_model, pbc_csv, "--series", "1", "--out", tmp_path / "a.csv"]):
        code, out, err = run(capsys, *command, "--time-unit", "hours")
        assert_clean_error(code, out, err)
        assert "--time-unit hours" in err and "fitted on times in days" in err and "Leave --time-unit out" in err
    assert list(tmp_path.iterdir()) == []


def test_every_later_command_reads_the_data_as_the_fit_did(pbc_model: Path, pbc_csv: Path, tmp_path: Path,
                                                           capsys) -> None:
    code, _, err = run(capsys, "evaluate", pbc_model, pbc_csv, "--json", tmp_path / "e.json", "--mc-passes", "0")
    assert code == 0 and "denser" not in err, err
    code, _, err = run(capsys, "rank", pbc_model, pbc_csv, "--out", tmp_path / "r.csv", "--quiet")
    assert code == 0 and "denser" not in err, err
    code, _, err = run(capsys, "watch", pbc_model, pbc_csv, "--out", tmp_path / "w.csv", "--quiet")
    assert code == 0 and "denser" not in err, err
    code, _, err = run(capsys, "advise", pbc_model, pbc_csv, "--series", "1", "--out", tmp_path / "a.csv",
                       "--points", "4", "--draws", "2")
    assert code == 0 and "denser" not in err, err
    assert len(pd.read_csv(tmp_path / "r.csv")) == pbc_like()["id"].nunique()


def test_named_columns_are_recorded_and_reused_and_a_missing_one_is_named(tmp_path: Path, capsys) -> None:
    frame = pbc_like(12).rename(columns={"id": "patient", "day": "t_follow"})
    frame.to_csv(tmp_path / "renamed.csv", index=False)
    code, _, err = run(capsys, "fit", tmp_path / "renamed.csv", "--id", "patient", "--time", "t_follow",
                       "--time-unit", "days", "--out", tmp_path / "m", *FIT)
    assert code == 0, err
    code, _, err = run(capsys, "predict", tmp_path / "m", tmp_path / "renamed.csv", "--horizon", "30",
                       "--points", "2", "--out", tmp_path / "p.csv", "--quiet")
    assert code == 0, err  # no --id/--time: the recorded ones
    assert set(pd.read_csv(tmp_path / "p.csv")["series_id"].astype(str)) == set(frame["patient"].astype(str))
    pbc_like(12).to_csv(tmp_path / "plain.csv", index=False)
    code, out, err = run(capsys, "predict", tmp_path / "m", tmp_path / "plain.csv", "--out", tmp_path / "q.csv")
    assert_clean_error(code, out, err)
    assert "'patient', 't_follow'" in err and "--time COL" in err
    code, _, err = run(capsys, "predict", tmp_path / "m", tmp_path / "plain.csv", "--id", "id", "--time", "day",
                       "--horizon", "30", "--points", "2", "--out", tmp_path / "q.csv", "--quiet")
    assert code == 0, err  # the options name this file's columns over the recorded ones


def test_the_long_form_is_named_with_value_and_channel(tmp_path: Path, capsys) -> None:
    long = pbc_like(12).melt(id_vars=["id", "day"], var_name="lab", value_name="result")
    long = long.rename(columns={"id": "subject", "day": "when"}).sort_values(["subject", "when"])
    long.to_csv(tmp_path / "long.csv", index=False)
    code, _, err = run(capsys, "fit", tmp_path / "long.csv", "--out", tmp_path / "m", *FIT)
    assert code == 2 and "No time column found" in err and "--time COL" in err
    code, _, err = run(capsys, "fit", tmp_path / "long.csv", "--id", "subject", "--time", "when", "--value",
                       "result", "--channel", "lab", "--time-unit", "days", "--out", tmp_path / "m", *FIT)
    assert code == 0, err
    assert load_model(tmp_path / "m").channels == ["albumin", "bili", "platelet"]
    code, out, err = run(capsys, "fit", tmp_path / "long.csv", "--time", "when", "--value", "result",
                         "--channels", "lab", "--out", tmp_path / "n", *FIT)
    assert_clean_error(code, out, err)
    assert "not both" in err


def test_a_model_saved_before_the_reading_was_recorded_behaves_as_before(pbc_model: Path, pbc_csv: Path,
                                                                         tmp_path: Path, capsys) -> None:
    old = tmp_path / "old"
    old.mkdir()
    for f in pbc_model.iterdir():
        (old / f.name).write_bytes(f.read_bytes())
    meta = json.loads((old / "model.json").read_text())
    del meta["reading"]
    (old / "model.json").write_text(json.dumps(meta))
    assert load_model(old).reading is None
    runs = {}
    for name, unit in (("default", []), ("hours", ["--time-unit", "hours"]), ("days", ["--time-unit", "days"])):
        code, _, err = run(capsys, "predict", old, pbc_csv, "--horizon", "2", "--points", "2", *unit,
                           "--out", tmp_path / f"{name}.csv", "--quiet")
        assert code == 0, err
        runs[name] = (tmp_path / f"{name}.csv").read_bytes()
    assert runs["default"] == runs["hours"] != runs["days"], "no record: hours unless told, as before"


@pytest.mark.parametrize("reading, message", [
    ("days", "reading must be an object"),
    ({"time_unit": "weeks"}, "time_unit must be one of"),
    ({"columns": {"time": "x" * 10_000}}, "more than 256"),
    ({"columns": {"time": 5}}, "must be a column name"),
    ({"columns": {"channels": ["a"] * 20_000}}, "more than 10,000"),
    ({"date_format": "%d" * 200}, "date_format must be"),
    ({"dayfirst": "yes"}, "dayfirst must be"),
    ({"dayfirst": 1}, "dayfirst must be"),
    ({"surprise": 1}, "unknown keys"),
    ({"mapping": {"time": "t", "layout": "tall"}}, "layout, long or wide"),
])
def test_a_hostile_reading_in_model_json_is_refused_by_name(pbc_model: Path, tmp_path: Path, reading,
                                                            message: str) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in pbc_model.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    meta = json.loads((bad / "model.json").read_text())
    meta["reading"] = reading
    (bad / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="reading") as caught:
        load_model(bad)
    assert message in str(caught.value)


def test_the_recorded_reading_resolves_a_later_commands_options() -> None:
    rec = RecordedReading(columns=ColumnNames(time="day", channels=("a", "b")), time_unit="days", clock="days",
                          date_format="%d/%m/%Y")
    opts = rec.resolve(ColumnNames(series="pid"), None, None, None)
    assert (opts.columns, opts.time_unit, opts.date_format) == (
        ColumnNames(series="pid", time="day", channels=("a", "b")), "days", "%d/%m/%Y")
    assert rec.resolve(ColumnNames(value="v"), "days", True, None).columns == ColumnNames(time="day", value="v")
    assert rec.resolve(ColumnNames(), None, True, None).dayfirst is True
    with pytest.raises(TimeUnitConflict, match="--time-unit minutes"):
        rec.resolve(ColumnNames(), "minutes", None, None)
    stamps = RecordedReading(clock="datetime")  # date-times: the unit reads no time, nothing conflicts
    assert stamps.resolve(ColumnNames(), "days", None, None).time_unit == "hours"


def test_day_visit_and_age_among_the_time_names() -> None:
    for name in ("day", "Days", "visit", "study_day"):
        assert detect_mapping(pd.DataFrame({"id": [1], name: [0], "x": [1.0]})).time == name
    both = detect_mapping(pd.DataFrame({"id": [1], "age": [50], "day": [0], "x": [1.0]}))
    assert both.time == "day" and both.wide_channels == ("age", "x"), "age is a measurement beside day"
    frame = pd.DataFrame({"id": [1, 1, 1], "age": [50.0, 51.0, 52.0], "x": [1.0, 2.0, 3.0]})
    obs = from_frame(frame, time_unit="days")
    assert obs.report.mapping.time == "age"
    assert any("'age' read as the time" in m and "--time COL" in m for m in obs.report.messages)
    with pytest.raises(DataError, match=r"'when' named .* not in the table"):
        detect_mapping(frame, ColumnNames(time="when"))
    with pytest.raises(ValueError, match="named for two roles"):
        ColumnNames(series="id", time="id")


def test_the_forecaster_names_the_columns_and_its_saved_model_reads_alike(tmp_path: Path) -> None:
    frame = pbc_like(16).rename(columns={"day": "t_follow", "id": "patient"})
    with pytest.raises(DataError, match="No time column"):
        LevyForecaster(epochs=1, seed=0).fit(frame)
    f = LevyForecaster(epochs=2, seed=0, id_col="patient", time_col="t_follow", time_unit="days").fit(frame)
    assert f.fitted.reading.columns == ColumnNames(series="patient", time="t_follow")
    assert f.fitted.reading.time_unit == "days"
    f.save(tmp_path / "m")
    loaded = LevyForecaster.load(tmp_path / "m")
    assert (loaded.time_unit, loaded.columns) == ("days", ColumnNames(series="patient", time="t_follow"))
    ahead = loaded.predict(h=30, df=frame, points=3)
    pd.testing.assert_frame_equal(ahead, f.predict(h=30, df=frame, points=3))
    ends = frame.groupby("patient")["t_follow"].max().rename(index=str)
    last = ahead.groupby("unique_id")["ds"].max()
    assert np.allclose(last.to_numpy(), ends.reindex(last.index.astype(str)).to_numpy() + 30), "30 days"
    with pytest.raises(ValueError, match="not both"):
        LevyForecaster(value_col="v", channels=["a"])
    with pytest.raises(ValueError, match="time_unit must be one of"):
        LevyForecaster(time_unit="weeks")


def test_the_forecaster_fits_pbc_with_time_col_day(pbc_csv: Path, pbc_model: Path, tmp_path: Path) -> None:
    frame = pd.read_csv(pbc_csv)
    f = LevyForecaster(time_col="day", time_unit="days", epochs=2, seed=0).fit(frame)
    assert f.fitted.reading.to_dict() == load_model(pbc_model).reading.to_dict(), "as levy fit records it"
    f.save(tmp_path / "f")
    code = main(["predict", str(tmp_path / "f"), str(pbc_csv), "--horizon", "90", "--points", "2", "--out",
                 str(tmp_path / "p.csv"), "--quiet"])
    assert code == 0, "a model saved from Python is read by the CLI in its recorded unit and columns"


def test_a_fit_on_a_chosen_mapping_records_it_as_the_dashboard_chooses_it(tmp_path: Path, capsys) -> None:
    """The dashboard reads an upload with the Data tab's mapping (``read_csv(mapping=…)``) and
    fits through ``fit``: the mapping and the unit are recorded, and the CLI reuses them."""
    from levy_core.data import ColumnMapping, read_csv
    from levy_core.episodes.tasks import TaskConfig
    from levy_core.training.train import TrainConfig

    frame = pbc_like(16).rename(columns={"id": "who", "day": "when"})
    frame.to_csv(tmp_path / "upload.csv", index=False)
    chosen = ColumnMapping(time="when", series="who", wide_channels=("bili", "albumin"), layout="wide")
    obs = read_csv(tmp_path / "upload.csv", mapping=chosen, time_unit="days")
    fitted = fit(obs, task=TaskConfig("forecast"), train=TrainConfig(epochs=1, seed=0), train_twin=False)
    assert fitted.reading.columns == ColumnNames(series="who", time="when", channels=("bili", "albumin"))
    assert (fitted.reading.time_unit, fitted.reading.mapping) == ("days", chosen)
    found = fit(from_frame(pbc_like(16), time_unit="days"), task=TaskConfig("forecast"),
                         train=TrainConfig(epochs=1, seed=0), train_twin=False)
    assert found.reading.columns.empty and found.reading.mapping.time == "day", "detected: nothing named"
    fitted.save(tmp_path / "m")
    code, _, err = run(capsys, "predict", tmp_path / "m", tmp_path / "upload.csv", "--horizon", "30", "--points", "2",
                       "--out", tmp_path / "p.csv", "--quiet")
    assert code == 0 and "denser" not in err, err
    assert set(pd.read_csv(tmp_path / "p.csv")["channel"]) == {"bili", "albumin"}
