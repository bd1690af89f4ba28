"""benchmarks/band_per_query.py: the panels' draws (training and unseen series apart, the
context before the cut-off, every later value a query) and the deep ensemble's combination."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import band_per_query as bench


@pytest.mark.parametrize("panel", ["pbc", "framingham"])
def test_each_draw_keeps_training_and_unseen_series_apart(panel: str) -> None:
    spec = bench.PANELS[panel]
    full = bench.load(panel, None)
    train, context, queries = bench.draw(panel, full, spec, seed=0)
    assert train["series_id"].nunique() == spec.n_train
    unseen = set(context["series_id"]) | set(queries["series_id"])
    assert not unseen & set(train["series_id"])
    assert (context["time"] <= spec.history).all() and (queries["time"] > spec.history).all()
    assert set(queries["channel"]) <= set(train["channel"])
    # the same seed draws the same series
    again = bench.draw(panel, full, spec, seed=0)
    assert again[0]["series_id"].tolist() == train["series_id"].tolist()


def test_the_ensemble_adds_the_members_spread_to_their_mean_variance() -> None:
    parts = [pd.DataFrame({"m": [1.0, 2.0], "s": [1.0, 0.0]}), pd.DataFrame({"m": [3.0, 2.0], "s": [1.0, 2.0]})]
    mean, spread = bench.combine(parts, "m", "s")
    np.testing.assert_allclose(mean, [2.0, 2.0])
    # mean of the variances + variance of the means: (1 + 1)/2 + 1 and (0 + 4)/2 + 0
    np.testing.assert_allclose(spread, np.sqrt([2.0, 2.0]))
