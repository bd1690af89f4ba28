"""``levy predict --level 80 90 [--format nixtla]``: one band per level, NeuralForecast's
columns on request, the default output unchanged for one level."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.cli.main import main
from levy_core.pipeline.bands import band_levels, level_bands, level_label
from levy_core.pipeline.predict import predict_future, predict_grid

DEFAULT_COLUMNS = ["series_id", "channel", "time", "mean", "sigma", "lower", "upper", "log_evidence",
                   "disagreement", "n_eff"]


def predict(capsys, fitted_dir: Path, data: Path, out: Path, *options: object) -> tuple[int, str]:
    code = main([str(a) for a in ("predict", fitted_dir, data, "--out", out, "--points", 3, *options)])
    return code, capsys.readouterr().err


def test_one_level_keeps_the_default_columns(capsys, fitted_dir, fit_csv, tmp_path) -> None:
    fraction, percent = tmp_path / "a.csv", tmp_path / "b.csv"
    assert predict(capsys, fitted_dir, fit_csv, fraction, "--level", 0.8)[0] == 0
    assert predict(capsys, fitted_dir, fit_csv, percent, "--level", 80)[0] == 0
    a, b = pd.read_csv(fraction), pd.read_csv(percent)
    assert list(a.columns) == DEFAULT_COLUMNS
    pd.testing.assert_frame_equal(a, b)  # 80 means 80 %, as NeuralForecast writes it


def test_several_levels_give_a_band_each(capsys, fitted, fitted_dir, fit_obs, fit_csv, tmp_path) -> None:
    out = tmp_path / "p.csv"
    code, err = predict(capsys, fitted_dir, fit_csv, out, "--level", 90, 80, "--band", "gaussian")
    assert code == 0, err
    pred = pd.read_csv(out)
    assert list(pred.columns) == ["series_id", "channel", "time", "mean", "sigma", "lower_80", "upper_80",
                                  "lower_90", "upper_90", "log_evidence", "disagreement", "n_eff"]
    assert (pred["lower_90"] <= pred["lower_80"]).all() and (pred["upper_80"] <= pred["upper_90"]).all()
    grid = predict_grid(fitted, fit_obs, n_points=3, level=0.8)  # the Gaussian band the library draws
    np.testing.assert_allclose(pred["lower_80"], grid["lower_gauss"], rtol=1e-9)
    np.testing.assert_allclose(pred["upper_80"], grid["upper_gauss"], rtol=1e-9)
    assert "80 % gaussian, 90 % gaussian bands" in err


def test_nixtla_format(capsys, fitted, fitted_dir, fit_obs, fit_csv, tmp_path) -> None:
    out = tmp_path / "p.csv"
    code, err = predict(capsys, fitted_dir, fit_csv, out, "--level", 80, 95, "--format", "nixtla", "--horizon", 6)
    assert code == 0, err
    pred = pd.read_csv(out, dtype={"unique_id": str})
    assert list(pred.columns) == ["unique_id", "ds", "channel", "Lévy", "Lévy-lo-95", "Lévy-lo-80", "Lévy-hi-80",
                                  "Lévy-hi-95"]
    future = predict_future(fitted, fit_obs, 6.0, n_points=3)
    bands, kinds = level_bands(future, fitted, [0.8, 0.95])
    assert kinds == ["conformal", "conformal"]  # many series: split conformal
    np.testing.assert_allclose(pred["Lévy"], future["mean"], rtol=1e-9)
    np.testing.assert_allclose(pred["Lévy-lo-95"], bands["lower_95"], rtol=1e-9)
    np.testing.assert_allclose(pred["Lévy-hi-80"], bands["upper_80"], rtol=1e-9)
    assert pred["unique_id"].tolist() == future["series_id"].tolist()
    np.testing.assert_allclose(pred["ds"], future["time"])  # numbers in the data's unit (hours here)


@pytest.mark.parametrize("level", ["5", "100", "1"])
def test_levels_that_are_neither_fraction_nor_percent_are_refused(capsys, fitted_dir, fit_csv, tmp_path,
                                                                  level: str) -> None:
    code, err = predict(capsys, fitted_dir, fit_csv, tmp_path / "p.csv", "--level", level)
    assert code == 2 and err.strip().splitlines()[-1].startswith("error: level") and "0.9 or 90" in err


def test_band_levels_and_labels() -> None:
    assert band_levels([90, 0.8, 90.0]) == [0.8, 0.9]
    assert band_levels(97.5) == [0.975] and level_label(0.975) == "97.5" and level_label(0.9) == "90"
    assert str(band_levels([95])[0]) == "0.95", "the key the adaptive bands are stored under"
    for bad in ([], [float("nan")], ["90"], [True]):
        with pytest.raises(ValueError):
            band_levels(bad)
