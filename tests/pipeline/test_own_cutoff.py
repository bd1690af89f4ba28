"""Each series its own forecast cut-off (issue 53): a panel whose series are followed for
different lengths keeps every series observed at two times in the fit.

A PBC-like panel is generated: 60 patients followed from 200 to 4,000 days (visits at 0,
~180, ~365 days, then about yearly), wide form ``id,day,bili,albumin,platelet``, plus one
patient seen once ("single"). One common cut-off (the median midpoint) leaves out every
patient whose follow-up ends before it; each patient's own cut-off (the midpoint of its span)
leaves out only "single"."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import run
from follow_up import SINGLE, own_split, pbc_like

from levy_core import LevyForecaster
from levy_core.data import DataError, from_frame
from levy_core.episodes.tasks import (
    PER_SERIES_DEFAULT,
    TaskConfig,
    cutoff_fraction_of,
    resolve_task,
    taking_part,
)
from levy_core.pipeline import modelfile, prepared
from levy_core.pipeline.left_out import left_out_note
from levy_core.pipeline.recipe import own_cutoffs_by_default, prepare_fit

DAY = 24.0


def model_frame(wide: pd.DataFrame) -> pd.DataFrame:
    return from_frame(wide, time_unit="days").frame


def test_own_cutoff_is_the_default_where_one_cutoff_leaves_patients_out() -> None:
    wide = pbc_like()
    frame = model_frame(wide)
    common = resolve_task(TaskConfig("forecast"), frame)  # the rule before: one cut-off for all
    own = resolve_task(TaskConfig("forecast"), frame, by_series=True)
    assert common.cutoff is not None and common.cutoff_fraction is None
    assert own.cutoff is None and own.cutoff_fraction == PER_SERIES_DEFAULT and own.per_series
    n_common = taking_part(frame, cutoff=common.cutoff)
    n_own = taking_part(frame, cutoff_fraction=own.cutoff_fraction)
    assert n_own == wide["id"].nunique() - 1 and n_common < n_own - 10, (n_common, n_own)
    assert own_cutoffs_by_default(from_frame(wide, time_unit="days"))


def test_every_patient_with_enough_history_takes_part() -> None:
    wide = pbc_like()
    data = prepare_fit(model_frame(wide), TaskConfig("forecast"))
    assert data.task.per_series and data.split.mode == "series"
    taking = set(data.train_ids) | set(data.stop_ids) | set(data.calibration_ids) | set(data.test_ids)
    enough, out = own_split(wide)
    assert len(enough) >= 55 and enough <= taking
    assert out == {SINGLE} and taking == set(wide["id"]) - out
    info = data.left_out
    assert info is not None and info["count"] == 1 and info["series"] == [SINGLE]
    assert info["cutoff"] is None and info["cutoff_fraction"] == PER_SERIES_DEFAULT
    assert info["by_reason"] == {"no_history": 0, "no_future": 1} and info["own_cutoff_keeps"] == 0
    # the calibration series are split by the same rule: each at its own midpoint
    for sid in data.calibration_ids:
        t = data.builder.series[sid].time
        ctx, qry = data.builder.split_indices(sid)
        cut = t.min() + 0.5 * (t.max() - t.min())
        assert (t[ctx] <= cut).all() and (t[qry] > cut).all() and len(ctx) + len(qry) == len(t)


def test_a_global_cutoff_that_keeps_everyone_stays() -> None:
    """Series observed over the same days: one common cut-off, as before."""
    rows = [(f"s{i}", float(d), float(np.sin(d / 7 + i))) for i in range(12) for d in range(0, 101, 5)]
    frame = model_frame(pd.DataFrame(rows, columns=["id", "day", "value"]))
    task = prepare_fit(frame, TaskConfig("forecast")).task
    assert task.cutoff == 50 * DAY and task.cutoff_fraction is None
    assert "cutoff_fraction" not in task.to_dict()  # the layout of models saved before


def test_cli_fit_per_series_records_the_rule(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    wide = pbc_like()
    csv = tmp_path / "pbc.csv"
    wide.to_csv(csv, index=False)
    code, _, err = run(capsys, "fit", csv, "--out", tmp_path / "m", "--time-unit", "days", "--epochs", 1,
                       "--no-twin", "--quiet")
    assert code == 0, err
    saved = json.loads((tmp_path / "m" / "model.json").read_text())
    assert saved["task"]["cutoff"] is None and saved["task"]["cutoff_fraction"] == PER_SERIES_DEFAULT
    enough, out = own_split(wide)
    n = saved["training"]["n_series"]
    assert n["train"] + n["stopping"] + n["calibration"] + n["test"] == wide["id"].nunique() - len(out)
    assert saved["training"]["left_out"]["count"] == 1 and saved["training"]["left_out"]["series"] == [SINGLE]
    assert "task forecast (cut-off at 50 % of each series' own span)" in err
    note = [line for line in err.splitlines() if "sits out of this fit" in line]
    assert len(note) == 1 and SINGLE in note[0], err
    # why: one cut-off for all (the median midpoint, in days) would leave out those counted by hand
    common = resolve_task(TaskConfig("forecast"), model_frame(wide)).cutoff / DAY
    span = wide.groupby("id")["day"].agg(["min", "max"])
    missed = int(((span["min"] > common) | (span["max"] <= common)).sum())
    assert missed > 10 and saved["training"]["left_out"]["common_left_out"] == missed
    assert note[0].startswith(f"note: Each series has its own cut-off, at 50 % of its span: one cut-off for all (the "
                              f"median series midpoint, {common:g} days) would leave out {missed} of 61 series, "
                              f"{missed - 1} more than this fit. 1 of 61 series sits out of this fit: {SINGLE}; "), note
    # later commands split each series the same way: evaluate scores every patient's own future
    fitted = modelfile.load_model(tmp_path / "m")
    data = prepared.prepare(fitted, from_frame(wide, time_unit="days"))
    assert data.builder.task.per_series and set(data.builder.usable(sorted(data.builder.series))) >= enough
    code, _, err = run(capsys, "evaluate", tmp_path / "m", csv, "--time-unit", "days", "--json", tmp_path / "e.json",
                       "--predictions", tmp_path / "p.csv", "--mc-passes", 0)
    assert code == 0, err
    pred = pd.read_csv(tmp_path / "p.csv")
    assert set(pred.columns) >= {"series_id", "time"} and len(pred), pred.columns
    span = wide.groupby("id")["day"].agg(["min", "max"])
    own_cut = span["min"] + 0.5 * (span["max"] - span["min"])
    assert (pred["time"].to_numpy() > pred["series_id"].astype(str).map(own_cut).to_numpy()).all()
    assert set(pred["series_id"].astype(str)) == {s for s in saved["split"]["test"] if s != SINGLE}
    # a model.json whose rule is out of range, or names both rules, is refused by name
    for task, match in (({"cutoff_fraction": 1.5}, "cutoff_fraction must lie strictly between"),
                        ({"cutoff": 24.0}, "give one forecast cut-off")):
        (tmp_path / "m" / "model.json").write_text(json.dumps({**saved, "task": {**saved["task"], **task}}))
        with pytest.raises(modelfile.ModelLoadError, match=match):
            modelfile.load_model(tmp_path / "m")


def test_cli_absolute_cutoff_keeps_the_global_rule(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    wide = pbc_like()
    csv = tmp_path / "pbc.csv"
    wide.to_csv(csv, index=False)
    code, _, err = run(capsys, "fit", csv, "--out", tmp_path / "m", "--time-unit", "days", "--cutoff", 1000,
                       "--epochs", 1, "--no-twin", "--quiet")
    assert code == 0, err
    saved = json.loads((tmp_path / "m" / "model.json").read_text())
    assert saved["task"]["cutoff"] == 1000 * DAY and "cutoff_fraction" not in saved["task"]
    info = saved["training"]["left_out"]
    ends_before = {str(s) for s, g in wide.groupby("id") if g["day"].max() <= 1000}
    assert info["count"] == len(ends_before) and info["own_cutoff_keeps"] == len(ends_before) - 1
    note = left_out_note(saved["training"], "days")
    assert note is not None and "(1000 days)" in note and f"would take in {len(ends_before) - 1} of them" in note


def test_forecaster_takes_a_share(tmp_path: Path) -> None:
    wide = pbc_like(n=24)
    f = LevyForecaster(cutoff="60%", epochs=1, time_unit="days", size="small").fit(wide)
    assert f.fitted is not None and f.fitted.task.cutoff_fraction == pytest.approx(0.6)
    f.save(tmp_path / "m")
    loaded = LevyForecaster.load(tmp_path / "m")
    assert loaded.fitted is not None and loaded.fitted.task == f.fitted.task
    with pytest.raises(DataError, match="between 0% and 100%"):
        LevyForecaster(cutoff="100%")


def test_cutoff_texts_and_settings() -> None:
    assert cutoff_fraction_of("auto") == PER_SERIES_DEFAULT and cutoff_fraction_of(" 60% ") == pytest.approx(0.6)
    assert cutoff_fraction_of("730d") is None and cutoff_fraction_of(24.0) is None and cutoff_fraction_of(None) is None
    for bad in ("0%", "100%", "x%"):
        with pytest.raises(DataError, match="share of each series' span"):
            cutoff_fraction_of(bad)
    with pytest.raises(ValueError, match="not both"):
        TaskConfig.from_dict({"kind": "forecast", "cutoff": 24.0, "cutoff_fraction": 0.5})
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        TaskConfig.from_dict({"kind": "forecast", "cutoff": None, "cutoff_fraction": 1.5})
    task = TaskConfig("forecast", cutoff_fraction=0.25)
    assert TaskConfig.from_dict(task.to_dict()) == task
    assert task.series_cutoff(np.array([100.0, 140.0, 500.0])) == pytest.approx(200.0)
    assert TaskConfig("forecast", cutoff=48.0).cutoff_text() == "48 h"
    assert task.cutoff_text() == "at 25 % of each series' own span"


def test_own_cutoffs_that_keep_everyone_still_say_why() -> None:
    """16 series over days 0–100, 3 from day 60, 2 to day 40: the common midpoint (day 50)
    misses the 5, their own midpoints keep all 21, and the note says so."""
    spans = {**{f"s{i:02d}": (0, 100) for i in range(16)}, **dict.fromkeys(("late-a", "late-b", "late-c"), (60, 100)),
             **dict.fromkeys(("early-a", "early-b"), (0, 40))}
    rows = [(sid, float(d), float(np.sin(d / 9))) for sid, (a, b) in spans.items() for d in range(a, b + 1, 5)]
    data = prepare_fit(model_frame(pd.DataFrame(rows, columns=["id", "day", "value"])), TaskConfig("forecast"))
    info = data.left_out
    assert data.task.per_series and info is not None and info["count"] == 0
    assert info["common_cutoff"] == 50 * DAY and info["common_left_out"] == 5
    assert left_out_note({"left_out": info}, "days") == (
        "Each series has its own cut-off, at 50 % of its span: one cut-off for all (the median series midpoint, "
        "50 days) would leave out 5 of 21 series, 5 more than this fit.")


def test_cli_refuses_a_share_out_of_range_before_reading(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "fit", tmp_path / "absent.csv", "--out", tmp_path / "m", "--cutoff", "120%")
    assert code == 2 and "cut-off '120%': a share of each series' span lies strictly between 0% and 100%" in err, err
    assert not (tmp_path / "m").exists()
