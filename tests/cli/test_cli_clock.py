"""Issue 53, "the user's clock and units everywhere": a PBC-like panel read with ``--time day
--time-unit days`` is fitted, predicted and evaluated with every number said in days (no hour
unit in what ``levy`` prints or in the columns it writes), the later commands reuse the
recorded unit (the same file with or without ``--time-unit``), and date-time data forecast on
their own calendar (weekly on its weekday at midnight, monthly on month starts)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_clean_error, run
from test_cli_columns import FIT, pbc_like

from levy_core.forecast.forecaster import LevyForecaster

HOUR_UNITS = re.compile(r"(?<![A-Za-z-])h(?![A-Za-z-])|hours?\b|\(h\)")
"""An hour unit as a word: "36 h", "(h)", "hours", "hour" (not "horizon_days" or "half")."""


def hour_units(text: str) -> list[str]:
    """Each line of ``text`` that names an hour unit."""
    return [line for line in text.splitlines() if HOUR_UNITS.search(line)]


def test_the_hour_pattern_finds_what_it_looks_for() -> None:
    found = hour_units("cut-off 35000 h\nharmonic (8765.82 h)\ntime (h)\nhorizon_hours\n12 hours\nhalf-life 3 days")
    assert len(found) == 5 and "half-life" not in " ".join(found)


def weekly_co2(n: int = 260, drop: float = 0.3, seed: int = 0, freq: str = "W-SAT") -> pd.DataFrame:
    """A weekly CO₂-like series (trend + yearly cycle + noise), ``drop`` of the rows removed."""
    rng = np.random.default_rng(seed)
    stamps = pd.date_range("1996-01-06", periods=n, freq=freq)
    t = np.arange(n, dtype=float)
    co2 = 360 + 0.03 * t + 3 * np.sin(2 * np.pi * t / 52.18) + rng.normal(0, 0.3, n)
    keep = rng.random(n) > drop
    keep[:2] = True
    return pd.DataFrame({"date": stamps[keep].strftime("%Y-%m-%d"), "co2": co2[keep].round(2)})


@pytest.fixture(scope="module")
def pbc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The PBC-like panel fitted with ``--time day --time-unit days``: the paths and what
    ``levy fit`` printed."""
    root = tmp_path_factory.mktemp("pbc_clock")
    csv, model = root / "pbc.csv", root / "model"
    pbc_like(40).to_csv(csv, index=False)
    return {"root": root, "csv": csv, "model": model}


def fit_pbc(capsys: pytest.CaptureFixture[str], pbc: dict[str, object]) -> str:
    """Fit the panel once (the first test to ask), returning what ``levy fit`` printed."""
    model = Path(str(pbc["model"]))
    if "fit_out" not in pbc:
        code, out, err = run(capsys, "fit", pbc["csv"], "--time", "day", "--time-unit", "days", "--out", model, *FIT)
        assert code == 0, err
        pbc["fit_out"] = out + err
    return str(pbc["fit_out"])


def test_fit_predict_evaluate_speak_days_never_hours(capsys: pytest.CaptureFixture[str], pbc: dict) -> None:
    printed = fit_pbc(capsys, pbc)
    assert "days" in printed and "cut-off" in printed
    root, csv, model = pbc["root"], pbc["csv"], pbc["model"]
    code, out, err = run(capsys, "predict", model, csv, "--out", root / "future.csv", "--horizon", "365",
                         "--points", "4")
    assert code == 0, err
    printed += out + err
    code, out, err = run(capsys, "evaluate", model, csv, "--json", root / "eval.json", "--predictions",
                         root / "eval_pred.csv")
    assert code == 0, err
    printed += out + err
    assert hour_units(printed) == [], hour_units(printed)
    future = pd.read_csv(root / "future.csv")
    assert "horizon_days" in future.columns and not [c for c in future.columns if HOUR_UNITS.search(c)]
    np.testing.assert_allclose(future.groupby(["series_id", "channel"])["horizon_days"].max(), 365.0)
    last = pd.read_csv(csv).groupby("id")["day"].max()  # times in days, as the data's
    ends = future.groupby("series_id")["time"].max()
    np.testing.assert_allclose(ends.to_numpy(), last.loc[ends.index.astype(int)].to_numpy() + 365.0)
    header = pd.read_csv(root / "eval_pred.csv", nrows=0).columns
    assert not [c for c in header if HOUR_UNITS.search(c)]


def test_model_json_records_the_clock_in_days(capsys: pytest.CaptureFixture[str], pbc: dict) -> None:
    fit_pbc(capsys, pbc)
    meta = json.loads((Path(str(pbc["model"])) / "model.json").read_text())
    assert meta["reading"]["clock"] == "days" and meta["reading"]["freq"] is None  # numbers have no calendar
    summary = meta["summary"]  # the human-readable fields: in days
    share, cutoff = meta["task"].get("cutoff_fraction"), meta["task"]["cutoff"]
    said = f"at {100 * share:g} % of each series' own span" if share else f"{cutoff / 24.0:g} days"
    assert summary["clock"] == "days" and summary["task"] == f"forecast, cut-off {said}"
    assert "half-life" in summary["offset"] and "days" in summary["offset"]
    assert hour_units("\n".join(str(v) for v in summary.values())) == []


def test_predict_with_and_without_time_unit_writes_the_same_file(capsys: pytest.CaptureFixture[str],
                                                                 pbc: dict) -> None:
    fit_pbc(capsys, pbc)
    root, csv, model = pbc["root"], pbc["csv"], pbc["model"]
    files = []
    for extra in ((), ("--time-unit", "days")):
        out = root / f"p{len(files)}.csv"
        code, _, err = run(capsys, "predict", model, csv, "--out", out, "--horizon", "180", "--points", "3", *extra)
        assert code == 0, err
        files.append(out.read_bytes())
    assert files[0] == files[1]
    code, out, err = run(capsys, "predict", model, csv, "--out", root / "bad.csv", "--horizon", "180",
                         "--freq", "W-SAT")
    assert_clean_error(code, out, err)
    assert "--freq" in err and "numbers in days" in err


@pytest.fixture(scope="module")
def weekly(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("weekly")
    csv = root / "co2.csv"
    weekly_co2().to_csv(csv, index=False)
    return {"root": root, "csv": csv, "model": root / "model"}


def test_a_weekly_series_forecasts_on_its_weekday_at_midnight(capsys: pytest.CaptureFixture[str],
                                                              weekly: dict[str, Path]) -> None:
    code, out, err = run(capsys, "fit", weekly["csv"], "--out", weekly["model"], *FIT)
    assert code == 0, err
    assert "on the calendar W-SAT" in err
    meta = json.loads((weekly["model"] / "model.json").read_text())
    assert meta["reading"]["freq"] == "W-SAT" and meta["summary"]["calendar"] == "W-SAT"
    assert hour_units("\n".join(str(v) for v in meta["summary"].values())) == []
    pred = weekly["root"] / "pred.csv"
    code, out, err = run(capsys, "predict", weekly["model"], weekly["csv"], "--out", pred, "--horizon", "8w")
    assert code == 0, err
    assert hour_units(out + err) == []
    table = pd.read_csv(pred)
    times = pd.to_datetime(table["time"], utc=True)
    last = pd.Timestamp(pd.read_csv(weekly["csv"])["date"].max(), tz="UTC")
    assert len(times) == 8 and (times.dt.day_name() == "Saturday").all()
    assert (times == times.dt.normalize()).all()  # at midnight
    assert list(times) == [last + pd.Timedelta(weeks=k) for k in range(1, 9)]
    np.testing.assert_allclose(table["horizon_days"], 7.0 * np.arange(1, 9))
    # --freq overrides the recorded calendar for one call
    code, _, err = run(capsys, "predict", weekly["model"], weekly["csv"], "--out", pred, "--horizon", "8w",
                       "--freq", "MS")
    assert code == 0, err
    assert (pd.to_datetime(pd.read_csv(pred)["time"], utc=True).dt.day == 1).all()


def test_levy_forecaster_weekly_and_monthly_on_the_calendar() -> None:
    frame = weekly_co2(n=200, seed=1)
    f = LevyForecaster(epochs=1, seed=0).fit(frame)
    assert f.fitted.reading.freq == "W-SAT"
    ds = f.predict(h="6w")["ds"]
    assert len(ds) == 6 and (ds.dt.day_name() == "Saturday").all() and (ds == ds.dt.normalize()).all()
    monthly = weekly_co2(n=120, seed=2, freq="MS")
    m = LevyForecaster(epochs=1, seed=0).fit(monthly)
    assert m.fitted.reading.freq == "MS"
    ds = m.predict(h="6mo")["ds"]
    assert len(ds) >= 5 and (ds.dt.day == 1).all() and (ds == ds.dt.normalize()).all()
    ends = LevyForecaster(epochs=1, seed=0, freq="ME").fit(monthly).predict(h="6mo")["ds"]
    assert ends.dt.is_month_end.all()
    with pytest.raises(ValueError, match="freq"):
        LevyForecaster(freq="fortnightly-ish")


def test_one_cut_off_for_all_is_said_in_days(capsys: pytest.CaptureFixture[str], pbc: dict) -> None:
    model = Path(str(pbc["root"])) / "one_cutoff"
    code, out, err = run(capsys, "fit", pbc["csv"], "--time", "day", "--time-unit", "days", "--cutoff", "1000",
                         "--out", model, *FIT)
    assert code == 0, err
    assert "cut-off 1000 days" in err and hour_units(out + err) == []
    meta = json.loads((model / "model.json").read_text())
    assert meta["task"]["cutoff"] == 24000.0 and meta["summary"]["task"] == "forecast, cut-off 1000 days"
