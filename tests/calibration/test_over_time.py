"""levy_core.calibration.over_time: the adaptive walk over channels whose raw spreads sit on
different scales (one channel's σ̂ shrunk 20× by its correction share, as a fit gives a
channel whose corrections did not hold out) keeps each channel's band at its own scale; and
its step, scaled by how much consecutive origins overlap, keeps one bad window seen from many
origins from driving the forecast's band to its extreme."""

from __future__ import annotations

import numpy as np
import pytest

from levy_core.calibration.calibrate import Calibrator
from levy_core.calibration.over_time import (
    ADAPTIVE_GAMMA,
    channel_scores,
    channel_sigma,
    origin_gamma,
    walk,
)


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


def test_origin_gamma_counts_one_horizon_of_overlapping_origins_as_one_step() -> None:
    assert origin_gamma({"history": 48.0, "horizon": 24.0, "stride": 0.5}) == pytest.approx(ADAPTIVE_GAMMA / 48)
    assert origin_gamma({"history": 24.0, "horizon": 12.0, "stride": 12.0}) == ADAPTIVE_GAMMA
    assert origin_gamma({"history": 24.0, "horizon": 12.0, "stride": 30.0}) == ADAPTIVE_GAMMA  # never above
    assert origin_gamma(None) == ADAPTIVE_GAMMA
    assert origin_gamma({"horizon": 0.0, "stride": 1.0}) == ADAPTIVE_GAMMA


def test_a_run_of_misses_over_overlapping_origins_leaves_the_forecast_band_near_its_calibrated_width(
        calibrated: Calibrator) -> None:
    # 48 origins half an hour apart with a 24 h horizon forecast nearly the same day: one bad
    # day is a miss at every one of them. At γ per origin the walk reads 48 fresh misses and
    # the band beyond the end blows up; at the overlap-scaled step it stays near its width.
    rng = np.random.default_rng(2)
    n_origins, per = 48, 6
    origin = np.repeat(np.arange(n_origins) * 0.5, per)
    channels = np.where(np.arange(origin.size) % 2 == 0, "a", "b")
    spread = np.where(channels == "a", 1.0, 0.05)
    mean = rng.normal(size=origin.size)
    y = mean + 2.5 + 0.3 * rng.normal(size=origin.size)  # the same bad day seen from every origin
    step = origin_gamma({"history": 48.0, "horizon": 24.0, "stride": 0.5})
    width, alpha = {}, {}
    for gamma in (ADAPTIVE_GAMMA, step):
        aci, result = walk(calibrated, 0.9, y, mean, spread, origin, channels=channels, gamma=gamma)
        assert abs(result.coverage - 0.9) <= result.bound + 1e-12  # the bound holds at either step
        lo, hi = aci.next_interval(mean[:1], channel_sigma(calibrated, spread[:1], channels[:1]), finite=True)
        width[gamma], alpha[gamma], plain = float((hi - lo)[0] / 2), aci.alpha_, aci.quantile(0.1)
    # per origin, α is driven through 0: the band is the largest score seen
    assert alpha[ADAPTIVE_GAMMA] <= 0.0
    # one horizon of origins counted as one forecast: α moves as one miss would move it,
    # the band widens past the plain 90 % quantile (the errors are larger now) and no further
    assert 0.05 <= alpha[step] < 0.1
    assert plain <= width[step] < 0.8 * width[ADAPTIVE_GAMMA]

