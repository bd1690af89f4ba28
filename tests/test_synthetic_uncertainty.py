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

from levy_core import metrics, pipeline
from levy_core.data import SAMPLE_DIR, load_sample
from levy_core.tasks import TaskConfig

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fitted_interpolation():
    obs = load_sample("Synthetic multichannel")
    fitted = pipeline.fit(obs, task=TaskConfig("interpolate"), train_twin=False)
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
    grid = pipeline.predict_grid(fitted, obs, fitted.split.test, n_points=200)
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
    pred = pipeline.split_predictions(fitted, obs, "test")
    rho = metrics.spearman_sigma_abs_error(pred["y_norm"], pred["mean_norm"], pred["sigma_norm"])
    assert rho > 0, f"Spearman(σ̂, |error|) = {rho:.3f}"
