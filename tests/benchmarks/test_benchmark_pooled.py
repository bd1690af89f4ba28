"""benchmarks/pooled.py: Lévy's CRPS ÷ another row's, as a geometric mean over series with a
paired two-level bootstrap, per set and pooled."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import pooled


def _predictions(half_widths: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    """Every query hits its mean: a row's CRPS is proportional to its half-width, so each
    (series, method) with half-widths per end point has a known CRPS per end point."""
    rows = []
    for (series, method), halves in half_widths.items():
        for end, half in enumerate(halves, start=1):
            rows.append(pd.DataFrame({"series": series, "end": end, "method": method, "y": 0.0, "mean": 0.0,
                                      "lo": -half * np.ones(3), "hi": half * np.ones(3), "seconds": 1.0}))
    return pd.concat(rows, ignore_index=True)


def test_a_row_twice_as_wide_everywhere_gives_one_half_with_no_spread() -> None:
    p = _predictions({("a", "levy"): [1, 1, 1], ("a", "gp"): [2, 2, 2], ("b", "levy"): [3, 3], ("b", "gp"): [6, 6]})
    sets = [pooled.paired_crps(pooled.window_crps(p), "gp")]
    assert pooled.summary(sets) == pytest.approx((0.5, 1.0, 2))
    rng = np.random.default_rng(0)
    for _ in range(20):  # every draw the same: each series' ratio is the same at every end point
        assert pooled.summary(sets, rng)[:2] == pytest.approx((0.5, 1.0))


def test_the_geometric_mean_weighs_a_win_and_a_loss_of_one_size_alike_and_pools_sets() -> None:
    # series a: Lévy half the GP's CRPS; series b: twice; series c in another set: a tie
    first = _predictions({("a", "levy"): [1, 1], ("a", "gp"): [2, 2], ("b", "levy"): [4, 4], ("b", "gp"): [2, 2]})
    second = _predictions({("c", "levy"): [1, 3], ("c", "gp"): [2, 2]})  # mean over ends: 2 vs 2
    ratio, share, n = pooled.summary([pooled.paired_crps(pooled.window_crps(first), "gp"), pooled.paired_crps(pooled.window_crps(second), "gp")])
    assert (ratio, share, n) == pytest.approx((1.0, 2 / 3, 3))
    assert pooled.paired_crps(pooled.window_crps(first), "prophet") == {}  # a row that never ran is left out
    text = pooled.table({"one": first, "two": second}, draws=50)
    assert "| GP (sklearn) | one + two | 3 | 1.000 |" in text
    assert "Prophet" not in text
