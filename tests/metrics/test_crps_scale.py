"""The minimum-CRPS Gaussian scale against a numerical minimiser of the CRPS itself
(properscoring's closed form through ``levy_core.metrics``, minimised by scipy's Brent),
and what it changes in ``ScaledGaussian``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from levy_core import metrics as M
from levy_core.calibration.calibrate import Calibrator
from levy_core.calibration.scaled_gaussian import GROUP_SHRINKAGE, ScaledGaussian
from levy_core.metrics.crps_scale import crps_scale


def total_crps(c: float, y: np.ndarray, mean: np.ndarray, sigma: np.ndarray) -> float:
    return M.crps_gaussian(y, mean, c * sigma) * y.size


def case(seed: int, n: int, tail: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Errors from a Student t with ``tail`` degrees of freedom (heavy for small ``tail``)
    at a spread only roughly proportional to sigma."""
    rng = np.random.default_rng(seed)
    sigma = rng.uniform(0.2, 3.0, n)
    y = 1.7 * sigma * np.exp(0.3 * rng.standard_normal(n)) * rng.standard_t(tail, n)
    return y, np.zeros(n), sigma


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 400), tail=st.sampled_from([1.5, 3.0, 30.0]))
def test_the_scale_is_the_numerical_minimiser_of_the_crps(seed: int, n: int, tail: float) -> None:
    y, mean, sigma = case(seed, n, tail)
    c = crps_scale(np.abs(y - mean) / sigma, sigma)
    res = optimize.minimize_scalar(lambda log_c: total_crps(math.exp(log_c), y, mean, sigma),
                                   bracket=(math.log(c) - 1.0, math.log(c) + 1.0), method="brent",
                                   options={"xtol": 1e-10})
    best = math.exp(res.x)
    # the objective is flat at its minimum: compare values first (Brent's own tolerance), then
    # the arguments to the precision a flat minimum allows
    assert total_crps(c, y, mean, sigma) <= total_crps(best, y, mean, sigma) * (1 + 1e-9)
    assert c == pytest.approx(best, rel=1e-4)


def test_heavy_tails_pull_the_mle_scale_far_more_than_the_crps_one() -> None:
    """On Gaussian errors at twice sigma both estimate 2; add 1 % of errors 100 times
    larger and the MLE scale is ruled by them while the CRPS one barely moves."""
    rng = np.random.default_rng(3)
    sigma = np.ones(20_000)
    y = 2.0 * rng.standard_normal(sigma.size)
    for estimator in ("crps", "mle"):
        assert ScaledGaussian(estimator=estimator).fit(y, 0 * y, sigma).scale_ == pytest.approx(2.0, rel=0.03)
    y[:200] *= 100.0
    mle = ScaledGaussian(estimator="mle").fit(y, 0 * y, sigma).scale_
    crps = ScaledGaussian(estimator="crps").fit(y, 0 * y, sigma).scale_
    assert mle > 15.0 and crps < 2.6
    # and it is the better predictive by the CRPS on fresh data from the same mixture
    fresh = 2.0 * rng.standard_normal(sigma.size)
    fresh[:200] *= 100.0
    assert M.crps_gaussian(fresh, 0 * fresh, crps * sigma) < M.crps_gaussian(fresh, 0 * fresh, mle * sigma)


def test_exact_forecasts_give_a_zero_scale_and_bad_input_is_refused() -> None:
    assert crps_scale(np.zeros(5)) == 0.0
    # most of the weight exactly right: a positive scale only adds spread
    assert crps_scale(np.array([0.0, 0.0, 0.0, 0.0, 1.0])) == 0.0
    assert crps_scale(np.array([0.0, 1.0, 1.0, 1.0])) > 0.0
    for bad in (np.array([]), np.array([-1.0]), np.array([np.nan]), np.array([np.inf])):
        with pytest.raises(ValueError):
            crps_scale(bad)
    with pytest.raises(ValueError, match="as many weights"):
        crps_scale(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="estimator"):
        ScaledGaussian(estimator="median")  # type: ignore[arg-type]


def test_group_scales_are_shrunk_crps_scales_and_round_trip() -> None:
    """Each group's scale is (n ĉ_g + k c) / (n + k): its own minimum-CRPS scale and k =
    GROUP_SHRINKAGE pseudo-points at the global one; saved and loaded unchanged, with the
    estimator; a state saved before the estimator existed reads as MLE."""
    rng = np.random.default_rng(7)
    groups = np.repeat(["wide", "narrow", "rare"], [400, 400, 5])
    sigma = rng.uniform(0.5, 2.0, groups.size)
    width = np.select([groups == "wide", groups == "narrow"], [3.0, 1.0], 2.0)
    y = width * sigma * rng.standard_normal(groups.size)
    cal = Calibrator().fit(y, np.zeros_like(y), sigma, groups=groups)
    c = cal.scale_
    assert c == pytest.approx(crps_scale(np.abs(y) / sigma, sigma))
    for g in ("wide", "narrow", "rare"):
        m = groups == g
        own = crps_scale(np.abs(y[m]) / sigma[m], sigma[m])
        want = (m.sum() * own + GROUP_SHRINKAGE * c) / (m.sum() + GROUP_SHRINKAGE)
        assert cal.scaled_gaussian.group_scales_[g] == pytest.approx(want)
    # 400 Gaussian errors at σ ~ U(0.5, 2): the estimate's sd is 0.040 relative (500
    # simulations); 4 sd
    assert cal.scaled_gaussian.group_scales_["wide"] == pytest.approx(3.0, rel=0.16)
    assert cal.scaled_gaussian.group_scales_["narrow"] == pytest.approx(1.0, rel=0.16)
    state = cal.to_dict()
    assert state["scaled_gaussian"]["estimator"] == "crps"
    back = Calibrator.from_dict(state)
    assert back.scaled_gaussian.group_scales_ == cal.scaled_gaussian.group_scales_
    assert back.scaled_gaussian.estimator == "crps"
    del state["scaled_gaussian"]["estimator"]
    assert Calibrator.from_dict(state).scaled_gaussian.estimator == "mle"
    state["scaled_gaussian"]["estimator"] = "mode"
    with pytest.raises(ValueError, match="estimator"):
        Calibrator.from_dict(state)
