"""benchmarks/studies/band_by_persistence.py: the fit's rule for its band note, applied to a training
part, and the table by third."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.studies import band_by_persistence as bp


def _train(values: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"time": pd.date_range("2020-01-01", periods=len(values), freq="D"), "channel": "v",
                         "value": values})


def test_a_random_walk_is_flagged_and_a_season_or_white_noise_is_not() -> None:
    rng = np.random.default_rng(0)
    days = np.arange(400)
    assert bp.flagged(_train(np.cumsum(rng.normal(size=days.size))))
    assert not bp.flagged(_train(rng.normal(size=days.size)))  # no period, but no persistence
    assert not bp.flagged(_train(np.cumsum(rng.normal(size=days.size)) + 8 * np.sin(2 * np.pi * days / 7)))


def test_the_table_splits_coverage_by_flag_and_third() -> None:
    rows = pd.DataFrame([{"set": "dev", "series": s, "end": 1, "method": "levy", "flagged": f, "third": j,
                          "coverage": c} for s, f, cov in (("a", True, (1.0, 0.5, 0.0)), ("b", False, (1.0, 1.0, 1.0)))
                         for j, c in enumerate(cov)])
    text = bp.table(rows)
    assert "| flagged | Lévy | 1.000 | 0.500 | 0.000 |" in text and "| not flagged | Lévy | 1.000 | 1.000 | 1.000 |" in text
    assert "flagged at some end: a" in text
