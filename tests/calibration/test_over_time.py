"""levy_core.calibration.over_time: the adaptive walk over channels whose raw spreads sit on
different scales (one channel's σ̂ shrunk 20× by its correction share, as a fit gives a
channel whose corrections did not hold out) keeps each channel's band at its own scale."""

from __future__ import annotations

import numpy as np
import pytest

from levy_core.calibration.calibrate import Calibrator
from levy_core.calibration.over_time import channel_scores, channel_sigma, walk


def two_channels(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Errors N(0, 1) on both channels; channel "b"'s raw spread is 0.05 instead of 1."""
    rng = np.random.default_rng(seed)
    channels = np.where(np.arange(n) % 2 == 0, "a", "b")
    mean = rng.normal(size=n)
    y = mean + rng.normal(size=n)
    spread = np.where(channels == "a", 1.0, 0.05)
    return y, mean, spread, channels


@pytest.fixture(scope="module")
def calibrated() -> Calibrator:
    y, mean, spread, channels = two_channels(2000, seed=0)
    return Calibrator().fit(y, mean, spread, groups=channels)


def test_channel_scores_put_every_channel_on_one_scale(calibrated: Calibrator) -> None:
    scores, floor = channel_scores(calibrated)
    raw = calibrated.conformal.group_scores_
    # raw: channel b's scores are 20x channel a's; divided by each channel's c they agree
    assert np.median(raw["b"]) / np.median(raw["a"]) == pytest.approx(20.0, rel=0.15)
    a, b = scores[: raw["a"].size], scores[raw["a"].size:]
    assert np.median(b) / np.median(a) == pytest.approx(1.0, rel=0.15)
    assert floor > 0
    sigma = channel_sigma(calibrated, np.array([1.0, 0.05]), np.array(["a", "b"]))
    assert sigma[0] == pytest.approx(sigma[1], rel=0.1)  # both about the errors' own 1


def test_the_walk_on_calibrated_sigma_keeps_each_channels_band(calibrated: Calibrator) -> None:
    y, mean, spread, channels = two_channels(600, seed=1)
    origin = np.repeat(np.arange(60.0), 10)  # 60 test origins of 10 queries
    aci, result = walk(calibrated, 0.9, y, mean, spread, origin, channels=channels)
    half = (result.upper - result.lower) / 2
    # each channel's errors are N(0, 1): its 90 % half-width about 1.645 whatever its raw spread
    for c in ("a", "b"):
        assert np.median(half[channels == c]) == pytest.approx(1.645, rel=0.25)
    assert abs(result.coverage - 0.9) <= result.bound + 1e-12  # Gibbs & Candès' bound, exactly
    lo, hi = aci.next_interval(mean[:2], channel_sigma(calibrated, spread[:2], channels[:2]), finite=True)
    assert (hi - lo) / 2 == pytest.approx([1.645, 1.645], rel=0.3)
    # the pooled raw scores (the walk before): channel a's band inflated by channel b's scale
    _, pooled = walk(calibrated, 0.9, y, mean, spread, origin)
    assert np.median(((pooled.upper - pooled.lower) / 2)[channels == "a"]) > 5 * 1.645
