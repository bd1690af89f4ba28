"""σ̂ behaves as the theory says on data whose generating process is known.

On the bundled synthetic set (dense stretches separated by long gaps with no observation
of any channel), an interpolation model fitted with the default settings must put a larger
σ̂ inside the gaps — where the evidence Λ is thin — than in the dense stretches, and σ̂ must
rank the test errors (Spearman > 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from levy_core import metrics
from levy_core.data import SAMPLE_DIR, load_sample
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline import predict, recipe

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fitted_interpolation():
    obs = load_sample("Synthetic multichannel")
    fitted = recipe.fit(obs, task=TaskConfig("interpolate"), train_twin=False)
    return obs, fitted


def _in_gap(grid: pd.DataFrame, gaps: pd.DataFrame) -> np.ndarray:
    inside = np.zeros(len(grid), bool)
    for gap in gaps.itertuples():
        inside |= (grid["series_id"].to_numpy() == gap.series_id) & (grid["time"].to_numpy() > gap.start) & (
            grid["time"].to_numpy() < gap.end)
    return inside


def test_sigma_is_at_least_twice_as_large_inside_gaps(fitted_interpolation):
    obs, fitted = fitted_interpolation
    gaps = pd.read_csv(SAMPLE_DIR / "synthetic_gaps.csv", dtype={"series_id": str})
    grid = predict.predict_grid(fitted, obs, fitted.split.test, n_points=200)
    inside = _in_gap(grid, gaps)
    assert inside.sum() > 100 and (~inside).sum() > 100
    ratio = grid.loc[inside, "sigma"].mean() / grid.loc[~inside, "sigma"].mean()
    assert ratio >= 2.0, f"mean σ̂ in gaps / dense = {ratio:.2f}"
    # and for each channel separately (the noisy channel must not carry the pooled ratio)
    per_channel = grid.groupby([inside, "channel"])["sigma"].mean()
    for channel in fitted.channels:
        assert per_channel[(True, channel)] > 1.5 * per_channel[(False, channel)], channel
    # the evidence, not only the disagreement, drops in the gaps
    assert grid.loc[inside, "log_evidence"].mean() < grid.loc[~inside, "log_evidence"].mean()


def test_sigma_ranks_test_errors(fitted_interpolation):
    obs, fitted = fitted_interpolation
    pred = predict.split_predictions(fitted, obs, "test")
    rho = metrics.spearman_sigma_abs_error(pred["y_norm"], pred["mean_norm"], pred["sigma_norm"])
    assert rho > 0, f"Spearman(σ̂, |error|) = {rho:.3f}"


def test_no_flicker_between_observations(fitted_interpolation):
    """Within each gap longer than three median sampling intervals, σ̂ on a dense grid has
    at most one interior local maximum (one bump, not a comb) in at least 90 % of the gaps."""
    obs, fitted = fitted_interpolation
    grid = predict.predict_grid(fitted, obs, fitted.split.test, n_points=400)
    frame = obs.frame[obs.frame["series_id"].isin(fitted.split.test)]
    checked, smooth = 0, 0
    for sid, s in frame.groupby("series_id"):
        times = np.unique(s["time"].to_numpy())
        step = np.median(np.diff(times))
        for a, b in zip(times[:-1], times[1:], strict=True):
            if b - a <= 3 * step:
                continue
            for _, g in grid[(grid["series_id"] == sid) & (grid["time"] > a) & (grid["time"] < b)].groupby("channel"):
                sig = g.sort_values("time")["sigma"].to_numpy()
                if len(sig) < 5:
                    continue
                interior_max = np.sum((sig[1:-1] > sig[:-2]) & (sig[1:-1] > sig[2:]))
                checked += 1
                smooth += interior_max <= 1
    assert checked >= 20, f"only {checked} long gaps on the grid"
    assert smooth / checked >= 0.9, f"{smooth} of {checked} gaps have at most one bump"


def test_far_from_the_data_a_fitted_model_knows_less(fitted_interpolation):
    """Queried past each series' last observation by 1, 10 and 100 spans: n_eff falls for
    every (series, channel), σ̂ grows in median and keeps growing."""
    obs, fitted = fitted_interpolation
    frame = obs.frame[obs.frame["series_id"].isin(fitted.split.test)]
    span = frame.groupby("series_id")["time"].agg(lambda t: t.max() - t.min())
    end = frame.groupby("series_id")["time"].max()
    rows = [(sid, ch, end[sid] + m * span[sid], m) for sid in span.index for ch in fitted.channels
            for m in (0.01, 1.0, 10.0, 100.0)]
    queries = pd.DataFrame(rows, columns=["series_id", "channel", "time", "m"])
    pred = predict.predict_queries(fitted, obs, queries.drop(columns="m"))
    pred = pred.assign(m=queries["m"].to_numpy())
    wide = pred.pivot_table(index=["series_id", "channel"], columns="m", values=["sigma", "n_eff"])
    assert (wide[("n_eff", 10.0)] <= 0.5 * wide[("n_eff", 0.01)]).mean() >= 0.9
    assert (wide[("sigma", 10.0)] / wide[("sigma", 0.01)]).median() >= 1.5
    assert (wide[("sigma", 100.0)] >= wide[("sigma", 10.0)] * (1 - 1e-6)).mean() >= 0.9
    assert np.isfinite(pred["sigma"]).all() and np.isfinite(pred["mean"]).all()
