"""``levy fit --transform`` and ``levy predict`` on a positive, skewed panel: the transform is
chosen, saved in model.json, told on stderr, and the band never goes below zero."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_clean_error, run

from levy_core.cli.main import main
from levy_core.forecast.forecaster import LevyForecaster
from levy_core.pipeline.diagnostics import operator_draws, query_crps
from levy_core.pipeline.modelfile import load_model


def positive_panel(n_series: int = 40, seed: int = 0) -> pd.DataFrame:
    """Two channels: ``bili`` log-normal around a level per series (strictly positive, skewed),
    ``temp`` Gaussian (symmetric)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_series):
        level = rng.normal(0.0, 1.0)
        for t in np.sort(rng.uniform(0, 48, 14)):
            rows.append((f"p{s}", round(float(t), 3), "bili", float(np.exp(level + 0.1 * t / 48 + rng.normal(0, 0.5)))))
            rows.append((f"p{s}", round(float(t), 3), "temp", float(rng.normal(37.0, 0.4))))
    return pd.DataFrame(rows, columns=["patient_id", "time_hours", "parameter", "value"])


@pytest.fixture(scope="module")
def panel_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("positive") / "panel.csv"
    positive_panel().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def fitted_auto(panel_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("models") / "auto"
    assert main(["fit", str(panel_csv), "--out", str(out), "--epochs", "3", "--no-twin", "--quiet",
                 "--cutoff", "24"]) == 0
    return out


def test_fit_chooses_saves_and_prints_the_transform(fitted_auto: Path, capsys) -> None:
    meta = json.loads((fitted_auto / "model.json").read_text())
    assert meta["scaler"]["transform"] == {"bili": "log", "temp": "none"}
    assert load_model(fitted_auto).scaler.transform_of("bili") == "log"


def test_evaluate_says_its_headline_is_on_the_log_of_a_log_channel(fitted_auto: Path, panel_csv: Path,
                                                                      tmp_path: Path, capsys) -> None:
    """A fit with --transform none and one with auto report MSEs in different spaces: evaluate
    says so and where to compare them."""
    code, _, err = run(capsys, "evaluate", fitted_auto, panel_csv, "--json", tmp_path / "scores.json")
    assert code == 0, err
    assert "in the model's normalised space, where bili is on a log scale" in err
    assert "per_channel_data_units" in err and "temp" not in err.split("note: MSE")[1].split("\n")[0]


def test_predict_says_the_transform_and_keeps_the_band_above_zero(fitted_auto: Path, panel_csv: Path,
                                                                    tmp_path: Path, capsys) -> None:
    out = tmp_path / "pred.csv"
    code, _, err = run(capsys, "predict", fitted_auto, panel_csv, "--horizon", "24h", "--out", out,
                       "--band", "conformal")
    assert code == 0, err
    assert "transform per channel" in err and "bili: log" in err and "temp: none" in err
    pred = pd.read_csv(out)
    bili = pred[pred["channel"] == "bili"]
    assert len(bili) > 0 and (bili["lower"] > 0).all()
    assert ((bili["mean"] > bili["lower"]) & (bili["mean"] < bili["upper"])).all()


def test_a_model_saved_before_transforms_loads_with_none(fitted_auto: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(fitted_auto, old)
    meta = json.loads((old / "model.json").read_text())
    del meta["scaler"]["transform"]
    (old / "model.json").write_text(json.dumps(meta))
    assert load_model(old).scaler.transforms == {}


def test_fit_refuses_a_bad_transform_by_name(panel_csv: Path, tmp_path: Path, capsys) -> None:
    code, out, err = run(capsys, "fit", panel_csv, "--out", tmp_path / "m", "--transform", "sqrt", "--quiet")
    assert_clean_error(code, out, err)
    assert "'sqrt'" in err and "log1p" in err
    frame = positive_panel()
    frame.loc[frame.index[frame["parameter"] == "bili"][0], "value"] = -2.0  # one impossible value
    bad = tmp_path / "neg.csv"
    frame.to_csv(bad, index=False)
    code, out, err = run(capsys, "fit", bad, "--out", tmp_path / "m2", "--transform", "bili=log", "--quiet",
                         "--epochs", "1")
    assert_clean_error(code, out, err)
    assert "'bili'" in err and "minimum is -2" in err


def test_the_forecaster_takes_the_transform_and_refuses_a_bad_one() -> None:
    with pytest.raises(ValueError, match="auto, none, log, log1p"):
        LevyForecaster(transform="bili=cube")
    with pytest.raises(ValueError, match="cube"):
        LevyForecaster(transform={"bili": "cube"})
    f = LevyForecaster(epochs=2, transform="bili=none", cutoff=24.0)
    f.fit(positive_panel(n_series=24))
    assert f.fitted is not None and f.fitted.scaler.transforms == {}
    assert LevyForecaster(transform="none").transform == "none"


def test_the_identity_view_works_in_the_transformed_units(fitted_auto: Path, panel_csv: Path) -> None:
    from levy_core.data import read_csv

    fitted = load_model(fitted_auto)
    obs = read_csv(panel_csv)
    sid = obs.series_ids[0]
    t = float(obs.frame[(obs.frame["series_id"] == sid)]["time"].max()) + 2.0
    out = operator_draws(fitted, obs, sid, "bili", t, n_draws=4000)
    assert out["transform"] == "log"
    lo, hi = fitted.scaler.minimum["bili"], fitted.scaler.maximum["bili"]
    assert lo - 1 <= out["mean"] <= hi + 1  # log units, not mg/dL
    assert out["rmsd_z"] < 5  # the identity, where it holds
    y = float(np.exp(out["mean"]))
    crps = query_crps(out, y)
    # scored in log units: the Gaussian's CRPS at its own median, c·σ̂ (2φ(0) − 1/√π)
    c_sigma = out["scale_c"] * out["sigma"]
    assert crps["closed_form"] == pytest.approx(c_sigma * (2 / np.sqrt(2 * np.pi) - 1 / np.sqrt(np.pi)), rel=1e-9)
