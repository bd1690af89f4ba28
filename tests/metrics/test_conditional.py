"""Coverage within quantile bins, per-group RMS factors, the risk–coverage ratio and the
within-group Spearman, each against a hand computation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from levy_core.metrics.conditional import (
    coverage_by_quantile,
    group_rms_factors,
    risk_coverage_ratio,
    within_group_spearman,
)
from levy_core.metrics.selective import risk_coverage_area


def test_coverage_by_quantile_counts_each_bin_and_its_series_error() -> None:
    key = np.arange(10.0)
    y = np.zeros(10)
    inside = np.array([1, 1, 0, 1, 1, 1, 0, 0, 1, 1], bool)
    lower, upper = np.where(inside, -1.0, 1.0), np.where(inside, 1.0, 2.0)
    series = np.array(["a", "b"] * 5)
    bins = coverage_by_quantile(y, lower, upper, key, series, level=0.9, n_bins=2)
    table = bins.table
    assert table["n"].tolist() == [5, 5]
    assert table["coverage"].tolist() == pytest.approx([0.8, 0.6])
    # bin 1: series a has keys 0, 2, 4 (in, out, in), b has 1, 3 (in, in)
    per_series = np.array([2 / 3, 1.0])
    assert table["se"].iloc[0] == pytest.approx(per_series.std(ddof=1) / np.sqrt(2))
    assert table["z"].iloc[0] == pytest.approx((0.8 - 0.9) / table["se"].iloc[0])
    assert bins.worst()["bin"] == 2
    assert not bins.within(tolerance=0.03, z=0.5) and bins.within(tolerance=0.31, z=0.0)


def test_bins_within_groups_cut_each_group_on_its_own() -> None:
    key = np.array([1.0, 2.0, 100.0, 200.0])
    group = np.array(["x", "x", "y", "y"])
    bins = coverage_by_quantile(np.zeros(4), -np.ones(4), np.ones(4), key, ["s1", "s2", "s3", "s4"], level=0.9,
                                n_bins=2, within=group)
    assert bins.table["n"].tolist() == [2, 2]
    assert bins.table["key_high"].iloc[0] == 100.0  # the low halves of both groups


def test_group_rms_factors_make_each_group_rms_one() -> None:
    rng = np.random.default_rng(0)
    g = np.repeat(["a", "b"], 500)
    s = rng.uniform(0.5, 2, 1000)
    y = rng.normal(0, 1, 1000) * s * np.where(g == "a", 3.0, 0.5)
    k = group_rms_factors(y, np.zeros(1000), s, g)
    for label in ("a", "b"):
        own = g == label
        assert np.sqrt(np.mean((y[own] / (k[label] * s[own])) ** 2)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no spread"):
        group_rms_factors(y, np.zeros(1000), np.zeros(1000), g)


def test_risk_coverage_ratio_is_one_for_the_reference_and_below_for_an_oracle() -> None:
    rng = np.random.default_rng(1)
    s = rng.uniform(0.1, 3, 2000)
    y = rng.normal(0, s)
    const = np.ones(2000)
    assert risk_coverage_ratio(y, np.zeros(2000), const, const) == pytest.approx(1.0)
    ratio = risk_coverage_ratio(y, np.zeros(2000), s, const)
    assert ratio == pytest.approx(risk_coverage_area(y, np.zeros(2000), s) / risk_coverage_area(y, np.zeros(2000), const))
    assert ratio < 0.8


def test_within_group_spearman_weights_groups_by_size() -> None:
    rng = np.random.default_rng(2)
    s = rng.uniform(0.1, 3, 300)
    y = rng.normal(0, s)
    g = np.repeat(["a", "b", "c"], [100, 150, 50])
    want = sum(n * stats.spearmanr(s[g == k], np.abs(y[g == k])).statistic for k, n in (("a", 100), ("b", 150), ("c", 50))) / 300
    assert within_group_spearman(y, np.zeros(300), s, g) == pytest.approx(want)
