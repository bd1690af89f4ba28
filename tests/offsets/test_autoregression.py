"""Autoregressions on a regular grid: ``levy_core.offsets.autoregression``."""

from __future__ import annotations

import numpy as np
import pytest

from levy_core.offsets.autoregression import MAX_PAST, aic_order, ar_ahead, regular_grid


def test_the_grid_interpolates_across_gaps_ends_at_the_origin_and_keeps_the_latest_points() -> None:
    t = np.array([0.0, 1.0, 4.0, 5.0])
    y = np.array([0.0, 1.0, 4.0, 5.0])  # a line: interpolation across the gap is exact
    np.testing.assert_allclose(regular_grid(t, y, 5.0, 1.0), np.arange(6.0))
    long = np.arange(MAX_PAST + 500, dtype=np.float64)
    z = regular_grid(long, long, float(long[-1]), 1.0)
    assert len(z) == MAX_PAST and z[-1] == long[-1]


@pytest.mark.parametrize("order", [1, 2, 4])
def test_the_path_ahead_is_statsmodels_autoreg_forecast(order: int) -> None:
    autoreg = pytest.importorskip("statsmodels.tsa.ar_model").AutoReg
    rng = np.random.default_rng(order)
    z = np.convolve(rng.normal(size=320), [1.0, 0.7, 0.3], mode="valid") + 2.0
    steps = 9
    ref = autoreg(z, lags=order, trend="c").fit().predict(start=len(z), end=len(z) + steps - 1)
    origin, gap = 3.0 * (len(z) - 1), 3.0
    ours = ar_ahead(z, order, origin, origin + gap * np.arange(1, steps + 1), gap)
    assert ours is not None
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9)
    assert ar_ahead(z[:3 * order + 2], order, origin, np.array([origin + gap]), gap) is None  # too short
    assert ar_ahead(z, 0, origin, np.array([origin + gap]), gap) is None


@pytest.mark.parametrize("seed", range(4))
def test_aic_order_is_the_brute_force_least_squares_choice(seed: int) -> None:
    rng = np.random.default_rng(seed)
    z = np.convolve(rng.normal(size=400), [1.0, 0.6, -0.4, 0.3], mode="valid")[: 150 + 50 * seed]
    top = 12
    aics = []
    for p in range(top + 1):  # every order on the same targets z[top:]
        x = np.column_stack([np.ones(len(z) - top)] + [z[top - j - 1:len(z) - j - 1] for j in range(p)])
        coef, *_ = np.linalg.lstsq(x, z[top:], rcond=None)
        rss = float(np.sum((z[top:] - x @ coef) ** 2))
        aics.append((len(z) - top) * np.log(rss / (len(z) - top)) + 2 * (p + 1))
    assert aic_order(z, top) == int(np.argmin(aics))
    assert aic_order(np.zeros(200), top) == 0  # no residual at all: no memory
    assert aic_order(z[:8], top) == 0  # too short for any order
