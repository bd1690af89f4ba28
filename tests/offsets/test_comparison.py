"""Diebold and Mariano's test of rolling-origin losses (levy_core.offsets.comparison)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from levy_core.offsets import comparison


@pytest.mark.parametrize("lag", [0, 1, 5, 11])
def test_the_t_statistic_matches_statsmodels_hac_standard_error(lag):
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(lag)
    n = 60
    # overlapping windows: a moving sum of white noise is correlated over `lag` origins
    noise = rng.normal(size=n + lag)
    a = np.convolve(noise, np.ones(lag + 1), mode="valid") + 0.3 + rng.normal(size=n) ** 2
    b = rng.normal(size=n) ** 2
    d = a - b
    fit = sm.OLS(d, np.ones((n, 1))).fit(cov_type="HAC", cov_kwds={"maxlags": lag, "use_correction": False})
    expected = float(fit.params[0] / fit.bse[0])
    assert comparison.loss_difference_t(a, b, lag) == pytest.approx(expected, rel=1e-10)


def test_overlapping_windows_make_the_same_gap_less_certain():
    # the same per-origin differences, read as independent or as windows overlapping over 11 origins
    rng = np.random.default_rng(0)
    d = np.convolve(rng.normal(size=132), np.ones(12) / 12, mode="valid") - 0.1  # (121,), positively correlated
    base = np.ones_like(d)
    independent = comparison.loss_difference_t(base + d, base, lag=0)
    overlapping = comparison.loss_difference_t(base + d, base, lag=11)
    assert independent < overlapping < 0  # the HAC variance is larger: |t| shrinks
    z = (abs(independent) + abs(overlapping)) / 2  # a bar that only the independent reading clears
    assert comparison.clearly_better(base + d, base, lag=0, z=z)
    assert not comparison.clearly_better(base + d, base, lag=11, z=z)


def test_a_lower_loss_everywhere_by_the_same_amount_is_certain():
    old = np.array([1.0, 2.0, 3.0, 4.0])
    assert comparison.loss_difference_t(old - 0.5, old, lag=2) == -math.inf
    assert comparison.clearly_better(old - 0.5, old, lag=2)
    assert comparison.loss_difference_t(old + 0.5, old, lag=2) == math.inf
    assert comparison.loss_difference_t(old, old, lag=2) == 0.0
    assert not comparison.clearly_better(old, old, lag=2)


def test_a_lag_past_the_sample_is_capped():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=8) ** 2, rng.normal(size=8) ** 2
    assert comparison.loss_difference_t(a, b, lag=50) == comparison.loss_difference_t(a, b, lag=7)


@pytest.mark.parametrize("a, b, lag, match", [
    (np.ones(3), np.ones(4), 0, "one length"),
    (np.ones((2, 2)), np.ones((2, 2)), 0, "1-D"),
    (np.array([]), np.array([]), 0, "one length > 0"),
    (np.array([1.0, np.nan]), np.ones(2), 0, "finite"),
    (np.ones(3), np.ones(3), -1, "lag"),
])
def test_bad_input_is_refused_by_name(a, b, lag, match):
    with pytest.raises(ValueError, match=match):
        comparison.loss_difference_t(a, b, lag)


def test_overlap_lag_counts_the_later_origins_inside_a_window():
    # monthly origins (hours), 12-month windows: each window holds the next 11 origins
    month = 730.0
    origins = np.arange(40) * month
    assert comparison.overlap_lag(origins, origins + 12 * month) == 11
    # windows shorter than the spacing do not overlap; order does not matter
    rng = np.random.default_rng(2)
    shuffled = rng.permutation(40)
    assert comparison.overlap_lag(origins[shuffled], origins[shuffled] + 0.5 * month) == 0
    assert comparison.overlap_lag(np.array([]), np.array([])) == 0
    with pytest.raises(ValueError, match="one length"):
        comparison.overlap_lag(origins, origins[:-1])
