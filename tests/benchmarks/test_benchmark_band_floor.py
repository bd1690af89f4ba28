"""benchmarks/studies/band_floor.py: the thirds of the horizon and each screened band, on widths and
history errors whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.studies import band_floor

WIDTH = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 3.0])  # a band that grows 2× and 3× by third
WHICH = np.array([0, 0, 1, 1, 2, 2])
HOURS = np.zeros(6)


def test_thirds_of_the_horizon() -> None:
    np.testing.assert_array_equal(band_floor.third_of(np.array([0.0, 0.33, 0.34, 0.66, 0.67, 1.0])),
                                  [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(band_floor.third_of(np.arange(12) / 12), np.repeat([0, 1, 2], 4))


def test_growth_variants_widen_only_where_the_history_grew_faster_than_the_band() -> None:
    hist = {"rms": np.array([1.0, 4.0, 3.0]), "q90": np.array([0.5, 0.5, 5.0])}  # grew 4× then 3×
    floor = band_floor.half_width("growth_floor", WIDTH, WHICH, hist, HOURS)
    np.testing.assert_allclose(floor, [1, 1, 4, 4, 3, 3])  # 2 → 4 (history 4× vs band 2×); 3 stays
    np.testing.assert_allclose(band_floor.half_width("growth_sqrt", WIDTH, WHICH, hist, HOURS),
                               [1, 1, 2 * np.sqrt(2), 2 * np.sqrt(2), 3, 3])
    prior = band_floor.half_width("growth_prior", WIDTH, WHICH, hist, HOURS)
    np.testing.assert_allclose(prior, WIDTH * np.sqrt(0.5 + 0.5 * np.array([1, 1, 4, 4, 1, 1])))
    np.testing.assert_array_equal(band_floor.half_width("shipped", WIDTH, WHICH, hist, HOURS), WIDTH)
    np.testing.assert_array_equal(band_floor.half_width("growth_floor", WIDTH, WHICH, None, HOURS), WIDTH)


def test_quantile_variants_and_the_phase_without_a_period() -> None:
    hist = {"rms": np.ones(3), "q90": np.array([0.5, 4.0, 1.0])}
    np.testing.assert_allclose(band_floor.half_width("quantile_floor", WIDTH, WHICH, hist, HOURS), [1, 1, 4, 4, 3, 3])
    np.testing.assert_allclose(band_floor.half_width("quantile_floor_80", WIDTH, WHICH, hist, HOURS),
                               [1, 1, 3.2, 3.2, 3, 3])
    np.testing.assert_allclose(band_floor.half_width("quantile_mix", WIDTH, WHICH, hist, HOURS),
                               np.sqrt(0.5 * WIDTH**2 + 0.5 * np.array([0.5, 0.5, 4, 4, 1, 1]) ** 2))
    np.testing.assert_array_equal(band_floor.half_width("phase", WIDTH, WHICH, hist, HOURS), WIDTH)


def test_phase_scales_each_query_by_its_phase_bin() -> None:
    ratio = np.ones(band_floor.PHASE_BINS)
    ratio[0] = 4.0  # the first twelfth of the period is twice as variable
    hist = {"rms": np.ones(3), "q90": np.ones(3), "period": 24.0, "last": 0.0, "phase_ratio": ratio}
    hours = np.array([0.5, 1.9, 2.1, 12.0, 24.5, 47.0])  # bin 0, 0, 1, 6, 0, 11
    np.testing.assert_allclose(band_floor.half_width("phase", WIDTH, WHICH, hist, hours), WIDTH * [2, 2, 1, 1, 2, 1])


@pytest.mark.parametrize("variant", band_floor.VARIANTS)
def test_every_variant_is_defined(variant: str) -> None:
    hist = {"rms": np.ones(3), "q90": np.ones(3)}
    assert band_floor.half_width(variant, WIDTH, WHICH, hist, HOURS).shape == WIDTH.shape
