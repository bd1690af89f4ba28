"""levy_core.offsets.gp: the Gaussian-process offset against scikit-learn's own posterior
(the reference), its record, the thinning of a long past, and that it carries a cycle
through missing points where the last value cannot."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor

from levy_core.offsets import gp as gp_forecast
from levy_core.offsets.base_forecast import choose
from levy_core.offsets.candidates import forecast
from levy_core.offsets.gp import GPSpec, fit, gram, kernel_for, posterior_mean, thinned
from levy_core.offsets.spec import BaseForecastSpec


def cycle(n: int = 400, period: float = 24.0, drop: float = 0.3, seed: int = 0):
    rng = np.random.default_rng(seed)
    t = np.arange(float(n))
    y = np.sin(2 * np.pi * t / period) + 0.01 * t + 0.1 * rng.normal(size=n)
    keep = rng.random(n) >= drop
    return t[keep], y[keep]


def test_posterior_mean_equals_scikit_learns_posterior_with_the_same_kernel() -> None:
    t, y = cycle(150)
    spec = fit(t, y, (24.0,), gap=1.0)
    assert spec is not None and spec.periods == (24.0,)
    tq = t[-1] + np.array([0.5, 3.0, 17.0, 40.0])
    ours = posterior_mean(spec, t, y, tq)
    # the reference: scikit-learn's regressor with the fitted kernel frozen, normalize_y
    kernel = kernel_for(tuple(p / spec.unit for p in spec.periods)).clone_with_theta(np.asarray(spec.theta))
    ref = GaussianProcessRegressor(kernel, optimizer=None, normalize_y=True, alpha=gp_forecast.JITTER)
    x = ((t - t[-1]) / spec.unit)[:, None]
    ref.fit(x, y)
    expected = ref.predict(((tq - t[-1]) / spec.unit)[:, None])
    # both solve the same 1e-8-jittered system; the difference is rounding in a Cholesky
    # of a matrix whose condition number is at most ~1/noise
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-6 * np.ptp(y))


@pytest.mark.parametrize("periods", [(), (0.3,), (0.3, 0.07)], ids=["no period", "one", "two"])
def test_the_numpy_kernel_is_scikit_learns_bit_for_bit(periods: tuple[float, ...]) -> None:
    """``gram`` (asked at every origin) against the reference, scikit-learn's kernel object
    with the same log-hyperparameters: equal to the last bit, the Gram matrix with its noise
    and the cross-covariance without, at random hyperparameters within the fit's bounds."""
    rng = np.random.default_rng(len(periods))
    reference = kernel_for(periods)
    low, high = reference.bounds[:, 0], reference.bounds[:, 1]
    for _ in range(10):
        theta = rng.uniform(low, high)
        kernel = reference.clone_with_theta(theta)
        x = np.sort(rng.uniform(-1.0, 0.0, 60))
        xq = rng.uniform(-0.1, 0.3, 9)
        assert np.array_equal(gram(theta, periods, x), kernel(x[:, None]))
        assert np.array_equal(gram(theta, periods, x, xq), kernel(xq[:, None], x[:, None]))


def test_the_gp_carries_a_cycle_through_missing_points_better_than_the_last_value() -> None:
    t, y = cycle(480, drop=0.3, seed=1)
    past = t <= 400
    spec = fit(t[past], y[past], (24.0,), gap=1.0)
    future = ~past
    gp = posterior_mean(spec, t[past], y[past], t[future])
    truth = np.sin(2 * np.pi * t[future] / 24) + 0.01 * t[future]
    last = np.full(future.sum(), y[past][-1])
    assert np.mean((gp - truth) ** 2) < 0.1 * np.mean((last - truth) ** 2)


def test_thinning_keeps_the_latest_points_and_reaches_back_a_few_periods() -> None:
    t = np.arange(5000.0)
    tt, yy = thinned(t, t * 2, longest=1000.0)
    assert len(tt) == gp_forecast.MAX_POINTS
    np.testing.assert_array_equal(tt[-gp_forecast.RECENT_POINTS:], t[-gp_forecast.RECENT_POINTS:])
    assert tt[0] >= t[-1] - gp_forecast.PERIODS_KEPT * 1000.0 and np.all(np.diff(tt) > 0)
    np.testing.assert_array_equal(yy, tt * 2)
    short = np.arange(50.0)
    assert thinned(short, short, 10.0)[0] is short


def test_gp_spec_round_trips_and_refuses_what_it_cannot_use() -> None:
    spec = GPSpec(100.0, (24.0,), tuple(float(i) / 10 for i in range(8)))
    assert GPSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(ValueError, match="log-hyperparameters"):
        GPSpec(100.0, (24.0,), (0.0,) * 5)  # 8 expected with one period
    with pytest.raises(ValueError, match="log-hyperparameters"):
        GPSpec(100.0, (), (0.0, 0.0, 1e300, 0.0, 0.0))
    with pytest.raises(ValueError, match="time unit"):
        GPSpec(float("inf"), (), (0.0,) * 5)
    with pytest.raises(ValueError, match="malformed"):
        GPSpec.from_dict({"unit": 1.0})


def test_a_spec_using_the_gp_needs_its_kernel_and_saves_it() -> None:
    with pytest.raises(ValueError, match="without its kernel"):
        BaseForecastSpec({"v": "gp"}, {"v": 0.0}, (), 1.0)
    kernel = GPSpec(100.0, (), (0.0,) * 5)
    spec = BaseForecastSpec({"v": "gp"}, {"v": 0.0}, (), 1.0, gp={"v": kernel})
    assert BaseForecastSpec.from_dict(spec.to_dict()) == spec
    assert "Gaussian process" in spec.describe()


def test_choose_scores_the_gp_on_a_few_series_and_fits_it_before_the_scored_origins() -> None:
    t, y = cycle(600, drop=0.3, seed=2)
    frame = pd.DataFrame({"series_id": "s", "channel": "v", "time": t, "value": y})
    origins, episodes = {}, {}
    for k, origin in enumerate(np.arange(300.0, 560.0, 10.0)):
        ahead = (t > origin) & (t <= origin + 24)
        origins[f"e{k}"] = ("s", float(origin))
        episodes[f"e{k}"] = pd.DataFrame({"channel": "v", "time": t[ahead], "value": y[ahead]})
    spec = choose(frame, origins, episodes)
    assert "gp" in spec.scores["v"]
    # on a noisy cycle with missing points the GP's posterior beats the seasonal lookups
    assert spec.scores["v"]["gp"] < spec.scores["v"]["seasonal@24h"]
    if spec.methods["v"] == "gp" or any(m == "gp" for m, _ in spec.members.get("v", [])):
        assert "v" in spec.gp
    # a panel of many series gets no GP candidate (a fit per channel, a solve per origin)
    many = pd.concat([frame.assign(series_id=f"s{i}") for i in range(gp_forecast.MAX_SERIES + 1)])
    origins_many = {m: ("s0", origin) for m, (_, origin) in origins.items()}
    scores = choose(many, origins_many, episodes).scores["v"]
    assert "seasonal@24h" in scores and "gp" not in scores


def test_the_gp_forecast_falls_back_to_the_last_value_without_a_kernel_or_past() -> None:
    t, y = cycle(30, drop=0.0)
    np.testing.assert_allclose(forecast("gp", t, y, t[-1], t[-1] + np.array([1.0, 2.0])), y[-1])
    spec = GPSpec(100.0, (), (0.0,) * 5)
    np.testing.assert_allclose(posterior_mean(spec, t[:5], y[:5], np.array([10.0])), y[4])
