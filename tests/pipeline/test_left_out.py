"""The series a forecast cut-off leaves out of a panel's fit (issue 53): counted per role and
reason by ``prepare_fit``, saved in ``fitted.training["left_out"]``, said by ``levy fit``.

A synthetic panel in days: 16 series observed from day 0 to day 100, 3 that start after the
cut-off (day 50) and 2 that end before it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import run

from levy_core.data.columns import TIME_ALIASES, find_alias
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline.left_out import LISTED, left_out_note
from levy_core.pipeline.recipe import prepare_fit

CUTOFF_DAYS = 50.0
LATE = ["late-a", "late-b", "late-c"]  # first observation after the cut-off
EARLY = ["early-a", "early-b"]  # last observation before it


def panel(*, late: bool = True, early: bool = True) -> pd.DataFrame:
    """Long form (id, day, value): 16 full series, plus the late and early ones."""
    rng = np.random.default_rng(0)
    spans = {f"s{i:02d}": (0, 100) for i in range(16)}
    if late:
        spans |= {sid: (60, 100) for sid in LATE}
    if early:
        spans |= {sid: (0, 40) for sid in EARLY}
    rows = [(sid, float(d), float(np.sin(d / 9) + 0.1 * rng.standard_normal()))
            for sid, (a, b) in spans.items() for d in range(a, b + 1, 5)]
    return pd.DataFrame(rows, columns=["id", "day", "value"])


def model_frame(data: pd.DataFrame) -> pd.DataFrame:
    """The pipeline's frame: hours, one channel."""
    return pd.DataFrame({"series_id": data["id"], "channel": "value", "time": data["day"] * 24.0,
                         "value": data["value"]})


def test_prepare_fit_counts_and_names_the_left_out_series() -> None:
    data = prepare_fit(model_frame(panel()), TaskConfig("forecast", cutoff=CUTOFF_DAYS * 24))
    info = data.left_out
    assert info is not None and data.split.mode == "series"
    assert info["count"] == 5 and info["of"] == 21
    assert info["by_reason"] == {"no_history": 3, "no_future": 2}
    assert sum(info["by_role"].values()) == 5
    assert sorted(info["series"]) == sorted(LATE + EARLY)
    assert dict(zip(info["series"], info["reasons"], strict=True)) == {**dict.fromkeys(LATE, "no_history"),
                                                                       **dict.fromkeys(EARLY, "no_future")}
    # every other series takes part in its role
    used = set(data.train_ids) | set(data.stop_ids) | set(data.calibration_ids) | set(data.test_ids)
    assert used.isdisjoint(LATE + EARLY) and len(used | set(LATE + EARLY)) == 21
    assert info["cutoff"] == CUTOFF_DAYS * 24


def test_none_left_out_records_zero() -> None:
    data = prepare_fit(model_frame(panel(late=False, early=False)), TaskConfig("forecast", cutoff=CUTOFF_DAYS * 24))
    assert data.left_out is not None and data.left_out["count"] == 0 and data.left_out["series"] == []
    assert left_out_note({"left_out": data.left_out}) is None


def test_interpolation_records_nothing() -> None:
    assert prepare_fit(model_frame(panel()), TaskConfig("interpolate")).left_out is None


def test_note_words_unit_and_list() -> None:
    info = {"count": 81, "of": 312, "cutoff": 730.5 * 24, "by_reason": {"no_history": 75, "no_future": 6},
            "series": [str(i) for i in range(LISTED)], "reasons": ["no_history"] * LISTED}
    note = left_out_note({"left_out": info}, "days")
    assert note is not None
    assert note.startswith("81 of 312 series sit out of this fit: 75 have no observation before the cut-off "
                           "(730.5 days), 6 none after it: 0, 1, 2")
    assert note.count(",") >= LISTED and ", …;" in note
    only_late = left_out_note({"left_out": {**info, "count": 1, "by_reason": {"no_future": 1}, "series": ["p 7"]}})
    assert only_late == ("1 of 312 series sits out of this fit: 1 has no observation after the cut-off (17532 hours): "
                         "p 7; fit with an earlier cut-off to include them.")
    assert left_out_note(None) is None and left_out_note({"levy": {}}) is None  # a model saved before this


def fit_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path, data: pd.DataFrame) -> tuple[str, dict]:
    csv = tmp_path / "panel.csv"
    data.to_csv(csv, index=False)
    code, _, err = run(capsys, "fit", csv, "--out", tmp_path / "m", "--time-unit", "days", "--cutoff", CUTOFF_DAYS,
                       "--epochs", 1, "--no-twin", "--quiet")
    assert code == 0, err
    return err, json.loads((tmp_path / "m" / "model.json").read_text())


def test_cli_says_who_sits_out(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err, saved = fit_cli(capsys, tmp_path, panel())
    notes = [line for line in err.splitlines() if "sit out of this fit" in line]
    assert len(notes) == 1, err
    note = notes[0]
    assert note.startswith("note: 5 of 21 series sit out of this fit: 3 have no observation before the cut-off "
                           "(50 days), 2 none after it: ")
    assert all(sid in note for sid in LATE + EARLY)
    assert saved["training"]["left_out"]["count"] == 5  # saved with the model


def test_cli_quiet_when_none_left_out(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err, saved = fit_cli(capsys, tmp_path, panel(late=False, early=False))
    assert "sit out" not in err and "sits out" not in err
    assert saved["training"]["left_out"]["count"] == 0


def test_time_days_is_a_time_column() -> None:
    assert find_alias(["id", "time_days", "value"], TIME_ALIASES, set()) == "time_days"
