"""Levels: fractions below the forecast layer, percents in it (docs/guides/python-pipeline.md,
"Levels: fractions and percents"). Every public function that takes a level refuses the
other kind with a ValueError that names it; the typed results load from ``levy_core``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core import LevyForecaster, metrics
from levy_core.calibration.adaptive import AdaptiveConformal
from levy_core.calibration.coverage import coverage_check, group_resplit_coverage
from levy_core.calibration.scores import weighted_quantile
from levy_core.calibration.split_conformal import SplitConformal
from levy_core.data import Observations
from levy_core.pipeline import evaluation, predict
from levy_core.serving.monitoring import monitor_coverage

PERCENT_REFUSED = r"90 looks like a percent; this function takes fractions \(write 0\.9 for a 90 % band\)"
FRACTION_REFUSED = r"levels are percents, e\.g\. level=\[80, 90\]: got 0\.9, a fraction; write 90 for a 90 % band"

Y = np.linspace(-1.0, 1.0, 40)
MEAN, SIGMA = np.zeros(40), np.ones(40)


@pytest.fixture(scope="module")
def test_pred(fitted, fit_obs: Observations) -> pd.DataFrame:
    return predict.split_predictions(fitted, fit_obs, "test")


def fraction_apis(fitted, fit_obs: Observations, pred: pd.DataFrame) -> dict[str, Callable[[float], object]]:
    """Each public function of the fraction layer, called with ``level`` (or ``levels=(0.5, level)``)."""
    p = fitted.predictives(pred)[0]
    return {
        "metrics.central_interval": lambda lv: metrics.central_interval(MEAN, SIGMA, lv),
        "metrics.interval_score": lambda lv: metrics.interval_score(Y, MEAN - 1, MEAN + 1, level=lv),
        "metrics.calibration_curve": lambda lv: metrics.calibration_curve(Y, MEAN, SIGMA, [0.5, lv]),
        "metrics.miscalibration_area": lambda lv: metrics.miscalibration_area(Y, MEAN, SIGMA, levels=[0.5, lv]),
        "coverage_check": lambda lv: coverage_check(Y, MEAN - 1, MEAN + 1, level=lv, n_calibration=10),
        "group_resplit_coverage": lambda lv: group_resplit_coverage(Y, MEAN, SIGMA, np.arange(40) % 4,
                                                                    levels=[0.5, lv], n_splits=2),
        "SplitConformal.predict_interval": lambda lv: SplitConformal().conformalize(Y, MEAN, SIGMA)
        .predict_interval(MEAN, SIGMA, lv),
        "AdaptiveConformal": lambda lv: AdaptiveConformal(lv),
        "weighted_quantile": lambda lv: weighted_quantile(Y, SIGMA, lv),
        "Predictive.interval": lambda lv: p.interval(lv, "conformal"),
        "evaluation.coverage_checks": lambda lv: evaluation.coverage_checks(fitted, pred, levels=(0.5, lv)),
        "evaluation.channel_coverage": lambda lv: evaluation.channel_coverage(fitted, pred, lv),
        "predict.split_predictions": lambda lv: predict.split_predictions(fitted, fit_obs, "test", level=lv),
        "predict.predict_future": lambda lv: predict.predict_future(fitted, fit_obs, 6.0, n_points=2, level=lv),
        "monitor_coverage": lambda lv: monitor_coverage(fitted, fit_obs, levels=(0.5, lv)),
    }


def test_the_fraction_layer_refuses_a_percent_saying_so(fitted, fit_obs: Observations,
                                                          test_pred: pd.DataFrame) -> None:
    refused = []
    for name, call in fraction_apis(fitted, fit_obs, test_pred).items():
        call(0.9)  # the fraction is taken
        with pytest.raises(ValueError, match=PERCENT_REFUSED):
            call(90)
        refused.append(name)
    assert len(refused) == 15


def test_a_level_that_is_neither_is_refused_without_the_percent_hint() -> None:
    for bad in (0.0, 1.0, 100.0, 150.0, -0.5):
        with pytest.raises(ValueError, match="must lie strictly between 0 and 1") as info:
            metrics.central_interval(MEAN, SIGMA, bad)
        assert "percent" not in str(info.value)


def test_the_forecast_layer_refuses_a_fraction_saying_so(fitted, fitted_dir: Path, fit_obs: Observations,
                                                          test_pred: pd.DataFrame) -> None:
    from levy_core.forecast.results import band_scores

    forecaster = LevyForecaster.load(fitted_dir)
    df = fit_obs.frame.rename(columns={"series_id": "unique_id", "time": "ds", "value": "y"})
    y, p = test_pred["y_norm"].to_numpy(), fitted.predictives(test_pred)[0]
    band = p.band([0.8, 0.9], "conformal")
    calls = {
        "predict": lambda: forecaster.predict(h="6h", df=df, level=0.9),
        "evaluate": lambda: forecaster.evaluate(df, level=[80, 0.9]),
        "backtest": lambda: LevyForecaster().backtest(df, n_windows=2, h="6h", level=0.9),
        "band_scores": lambda: band_scores(y, band, [80, 0.9]),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=FRACTION_REFUSED):
            call()
        assert name in calls
    coverage, _ = band_scores(y, band, [80, 90])  # percents are taken
    assert list(coverage) == [80, 90]
    with pytest.raises(ValueError, match="is not the 90 % of the band's row 1"):
        band_scores(y, band, [80, 95])  # a percent the band's row was not derived at


def test_percents_and_fractions_meet_in_one_conversion() -> None:
    from levy_core.forecast import results
    from levy_core.pipeline.bands import band_levels, fraction

    assert results.fraction is fraction
    assert [fraction(p) for p in (50, 80, 90, 95, 97.5)] == [0.5, 0.8, 0.9, 0.95, 0.975]
    assert band_levels([90, 0.8, 97.5]) == [0.8, 0.9, 0.975]  # the command line takes either


@pytest.mark.integration
def test_the_typed_results_load_lazily_from_levy_core() -> None:
    code = ("import sys, levy_core; heavy = [m for m in ('scipy', 'pyarrow', 'torch') if m in sys.modules]; "
            "assert heavy == [], heavy; from levy_core import Backtest, Evaluation, Scores, WindowScores; "
            "from levy_core.forecast import results; "
            "assert (Backtest, Evaluation, Scores, WindowScores) == (results.Backtest, results.Evaluation, "
            "results.Scores, results.WindowScores); "
            "assert {'Backtest', 'Evaluation'} <= set(levy_core.__all__) <= set(dir(levy_core))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
