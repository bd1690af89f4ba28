"""benchmarks/studies/band_or_mean.py: Lévy's CRPS ÷ another row's with the band or the mean swapped."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.studies import band_or_mean as bm


def _rows(series: str, method: str, mean: np.ndarray, half: np.ndarray, y: np.ndarray) -> pd.DataFrame:
    n = len(y)
    return pd.DataFrame({"series": series, "end": np.repeat([1, 2], n // 2), "channel": "value",
                         "time": pd.date_range("2020-01-01", periods=n, freq="D"), "method": method, "y": y,
                         "mean": mean, "lo": mean - half, "hi": mean + half})


def test_a_band_twice_too_wide_is_found_by_the_oracle_and_the_other_band() -> None:
    rng = np.random.default_rng(0)
    y = rng.normal(size=400)
    # the same mean for both rows; Lévy's band twice the other's, which is the right one
    right = np.full(400, bm.anchors.Z90)
    preds = pd.concat([_rows("a", "levy", np.zeros(400), 2 * right, y), _rows("a", "gp", np.zeros(400), right, y)])
    r = bm.ratios(preds).loc["a"]
    assert r["as run"] > 1.05
    assert r["scale"] == pytest.approx(0.5)
    assert r["best scale"] == pytest.approx(1.0, abs=1e-9) and r["its band"] == pytest.approx(1.0, abs=1e-9)
    assert r["its mean"] == pytest.approx(r["as run"])  # the same mean: swapping it changes nothing


def test_a_worse_mean_stays_a_loss_whatever_the_band() -> None:
    rng = np.random.default_rng(1)
    y = rng.normal(size=400)
    half = np.full(400, bm.anchors.Z90)
    preds = pd.concat([_rows("b", "levy", np.full(400, 1.5), half, y), _rows("b", "gp", np.zeros(400), half, y)])
    r = bm.ratios(preds).loc["b"]
    assert r["best scale"] > 1.1 and r["its band"] > 1.1
    assert r["its mean"] == pytest.approx(1.0, abs=1e-9)
    text = bm.table(bm.ratios(preds), "gp")
    assert "| b |" in text and "| at or below 1 | 0 of 1 | 0 of 1 | 0 of 1 | 1 of 1 |" in text
