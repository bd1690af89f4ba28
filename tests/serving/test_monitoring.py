"""Monitoring a saved model on new data: the same coverage and verdicts ``levy evaluate``
gives, per level and per channel; a channel whose future stops looking like the calibration
data is named; data with no observed future says so."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from levy_core.data import from_frame
from levy_core.pipeline.evaluation import LEVELS, channel_coverage, coverage_checks, evaluate
from levy_core.pipeline.recipe import fit
from levy_core.serving.monitoring import CHANNEL_COLUMNS, monitor_coverage


@pytest.fixture(scope="module")
def monitored(fitted, new_obs):
    return monitor_coverage(fitted, new_obs)


def test_the_verdicts_are_those_of_levy_evaluate(fitted, new_obs, monitored) -> None:
    _, pred = evaluate(fitted, new_obs, mc_passes=0, sampler_draws=0)
    expected = coverage_checks(fitted, pred)
    expected = expected[expected["method"] == "Lévy"].reset_index(drop=True)
    assert monitored.observed and monitored.new_data
    assert monitored.n_queries == len(pred) and monitored.n_series == new_obs.n_series
    assert monitored.checks["level"].tolist() == list(LEVELS)
    for column in ("coverage", "se_series", "lower_series", "upper_series", "holds_series", "holds_binomial"):
        assert monitored.checks[column].tolist() == pytest.approx(expected[column].tolist(), rel=1e-12), column


def test_per_channel_coverage_is_the_calibration_panels(fitted, new_obs, monitored) -> None:
    _, pred = evaluate(fitted, new_obs, mc_passes=0, sampler_draws=0)
    assert list(monitored.by_channel.columns) == CHANNEL_COLUMNS
    assert len(monitored.by_channel) == len(LEVELS) * len(fitted.channels)
    for level in LEVELS:
        panel = channel_coverage(fitted, pred, level)
        panel = panel[panel["method"] == "Lévy"].set_index("channel")
        mine = monitored.by_channel[monitored.by_channel["level"] == level].set_index("channel")
        assert mine["coverage"].to_dict() == pytest.approx(panel["coverage"].to_dict())
        assert mine["n"].to_dict() == panel["n"].to_dict()
        assert (mine["lower"] <= level).all() and (mine["upper"] > level).all()
        assert mine["holds"].tolist() == [lo <= c <= hi for c, lo, hi in mine[["coverage", "lower", "upper"]].values]


def test_a_channel_whose_future_changed_is_named(fitted, new_obs, monitored) -> None:
    frame = new_obs.frame.copy()
    rng = np.random.default_rng(0)
    late = (frame["channel"] == "noisy") & (frame["time"] > fitted.task.cutoff)
    spread = frame.loc[frame["channel"] == "noisy", "value"].std()
    frame.loc[late, "value"] += rng.normal(0.0, 20 * spread, int(late.sum()))
    drifted = monitor_coverage(fitted, from_frame(frame))
    others = drifted.by_channel["channel"] != "noisy"  # their queries never see noisy's future
    pd.testing.assert_frame_equal(drifted.by_channel[others], monitored.by_channel[others])
    at_90 = [m.by_channel[(m.by_channel["channel"] == "noisy") & (m.by_channel["level"] == 0.9)].iloc[0]
             for m in (monitored, drifted)]
    assert at_90[1]["coverage"] < min(at_90[1]["lower"], at_90[0]["coverage"] - 0.3) and not at_90[1]["holds"]
    assert "noisy" in drifted.failing()[1]
    assert "does not hold everywhere" in drifted.summary() and "noisy" in drifted.summary()


def test_the_verdict_line_reads_as_levy_evaluate_prints_it(monitored) -> None:
    parts = monitored.verdicts().split(", ")
    assert len(parts) == len(LEVELS)
    for part, row in zip(parts, monitored.checks.itertuples(), strict=True):
        series = "holds" if row.holds_series else "OUTSIDE"
        assert part == f"{100 * row.level:.0f} % {row.coverage:.3f} {series} [{'holds' if row.holds_binomial else 'outside'}]"


def test_the_summary_says_when_the_band_holds(monitored) -> None:
    levels, channels = monitored.failing()
    text = monitored.summary()
    if not levels and not channels:
        assert text.startswith("The band still holds") and f"{monitored.n_queries:,} observed queries" in text
    else:
        assert "does not hold everywhere" in text


def test_data_without_an_observed_future_says_so(fitted, new_obs) -> None:
    early = new_obs.frame[new_obs.frame["time"] <= fitted.task.cutoff]
    nothing = monitor_coverage(fitted, from_frame(pd.DataFrame(early)))
    assert not nothing.observed and nothing.checks.empty and nothing.by_channel.empty
    assert nothing.failing() == ([], [])
    assert nothing.summary().startswith("Nothing to monitor yet")
    assert f"cut-off ({fitted.task.cutoff:g} hours)" in nothing.summary()


def test_on_the_fitted_data_it_checks_the_test_split(fitted, fit_obs) -> None:
    own = monitor_coverage(fitted, fit_obs)
    assert own.observed and not own.new_data
    assert own.n_series == len(fitted.split.test)
    assert "test split" in own.note


@pytest.mark.slow  # a fit on rolling origins
def test_a_model_on_rolling_origins_counts_forecast_origins() -> None:
    from levy_core.data import load_sample
    from levy_core.training.train import TrainConfig

    obs = load_sample("Single sensor series")
    fitted = fit(obs, train=TrainConfig(epochs=1, max_seconds=2.0, seed=0), train_twin=False)
    own = monitor_coverage(fitted, obs)
    assert fitted.split.mode == "origin" and own.unit == "forecast origins"
    assert own.n_series == len(fitted.split.test) and "forecast origins (the test split" in own.note
