"""levy_core.offsets.smoothing: Holt's damped and linear trends against statsmodels' (the reference),
the grid search on a known trend, the damped-trend candidate carrying a recovery's slope, and
the linear one carrying a steady trend over a long horizon."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from levy_core.offsets import smoothing
from levy_core.offsets.base_forecast import choose
from levy_core.offsets.candidates import forecast
from levy_core.offsets.spec import BaseForecastSpec


@pytest.mark.parametrize("phi", [0.9, 1.0])  # damped, and Holt's linear trend
def test_forecast_equals_statsmodels_holt_with_the_same_start_and_parameters(phi: float) -> None:
    holt = pytest.importorskip("statsmodels.tsa.holtwinters").Holt
    z = np.cumsum(np.random.default_rng(0).normal(0.3, 1.0, size=120)) + 50
    params = (0.35, 0.1, phi)
    ours = smoothing.forecast(z, params, 12)[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = holt(z[1:], damped_trend=phi < 1, initialization_method="known",
                     initial_level=z[0], initial_trend=z[1] - z[0])
        ref = model.fit(smoothing_level=params[0], smoothing_trend=params[1],
                        **({"damping_trend": phi} if phi < 1 else {}), optimized=False).forecast(12)
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-10)


def test_the_grid_prefers_a_trend_on_a_line_and_no_trend_on_noise_around_a_level() -> None:
    rng = np.random.default_rng(1)
    line = 3.0 + 0.5 * np.arange(200.0) + 0.05 * rng.normal(size=200)
    path = smoothing.forecast(line, smoothing.fit(line), 10)
    np.testing.assert_allclose(path[1:], 3.0 + 0.5 * np.arange(200.0, 210.0), atol=2.0)
    assert path[-1] > line[-1] + 2.0  # the trend is carried
    flat = 5.0 + rng.normal(size=200)
    alpha, beta, phi = smoothing.fit(flat)
    assert alpha <= 0.2  # noise around a level: heavy smoothing
    assert smoothing.fit(np.arange(3.0)) is None
    assert smoothing.fit(line, damped=False)[2] == 1.0  # Holt's linear trend: φ = 1 only


def test_the_grid_matches_a_brute_force_search_of_the_one_step_error() -> None:
    z = np.cumsum(np.random.default_rng(4).normal(0.2, 1.0, size=90))

    def sse(a: float, b: float, phi: float) -> float:  # the recursion written out, one triple
        level, trend, total = z[0], z[1] - z[0], 0.0
        for k, value in enumerate(z[1:]):
            if k:
                total += (value - (level + phi * trend)) ** 2
            new = a * value + (1 - a) * (level + phi * trend)
            trend, level = b * (new - level) + (1 - b) * phi * trend, new
        return total

    for damped, phis in ((True, smoothing.PHIS), (False, (1.0,))):
        grid = [(a, b, p) for a in smoothing.ALPHAS for b in smoothing.BETAS for p in phis]
        assert smoothing.fit(z, damped=damped) == min(grid, key=lambda g: sse(*g))


def test_parameters_outside_the_unit_interval_are_refused_in_the_record() -> None:
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        smoothing.check_parameters(0.5, 0.0, 0.9)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        BaseForecastSpec({"v": "damped_trend"}, {"v": 0.0}, (), 1.0, smoothing={"v": (0.5, 0.1, float("nan"))})
    spec = BaseForecastSpec({"v": "damped_trend"}, {"v": 0.0}, (), 1.0, smoothing={"v": (0.5, 0.1, 0.9)})
    assert BaseForecastSpec.from_dict(spec.to_dict()) == spec
    spec = BaseForecastSpec({"v": "holt"}, {"v": 0.0}, (), 1.0, holt={"v": (0.5, 0.1, 1.0)})
    assert BaseForecastSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(ValueError, match="Holt's trend without its smoothing parameters"):
        BaseForecastSpec({"v": "holt"}, {"v": 0.0}, (), 1.0)
    with pytest.raises(ValueError, match="Holt's trend without"):
        BaseForecastSpec({"v": "combination"}, {"v": 0.0}, (), 1.0, members={"v": [("holt", 0.0), ("last", 0.0)]})
    old = spec.to_dict()
    del old["holt"]  # a model saved before the holt candidate existed still loads
    old["methods"] = {"v": "damped_trend"}
    old["smoothing"] = {"v": [0.5, 0.1, 0.9]}
    assert BaseForecastSpec.from_dict(old).holt == {}


def test_the_damped_trend_carries_a_recovery_that_a_global_drift_misses() -> None:
    # down for 40 steps, then up for 80: the global slope is ~0, the recent one is not
    t = np.arange(120.0)
    y = np.where(t < 40, 100 - 1.0 * t, 60 + 1.0 * (t - 40))
    params = smoothing.fit(y)
    tq = np.array([125.0, 130.0])
    holt = forecast("damped_trend", t, y, 119.0, tq, smoothing_parameters=params)
    drift = forecast("drift", t, y, 119.0, tq)
    truth = 60 + (tq - 40)
    assert np.max(np.abs(holt - truth)) < 0.25 * np.max(np.abs(drift - truth))
    # scored on the rolling origins: far better than the last value there
    frame = pd.DataFrame({"series_id": "s", "channel": "v", "time": t, "value": y})
    origins = {f"e{k}": ("s", float(o)) for k, o in enumerate(range(60, 110, 2))}
    episodes = {m: pd.DataFrame({"channel": "v", "time": o + np.arange(1.0, 11.0),
                                 "value": 60 + (o + np.arange(1.0, 11.0) - 40)}) for m, (_, o) in origins.items()}
    spec = choose(frame, origins, episodes)
    assert spec.scores["v"]["damped_trend"] < 0.1 * spec.scores["v"]["last"]
    assert "v" in spec.smoothing  # its parameters are recorded with the model


def test_holts_linear_trend_carries_a_steady_trend_that_the_damped_one_bends() -> None:
    # a steady rise with noise: over a long horizon the damped trend flattens, Holt's does not
    rng = np.random.default_rng(3)
    t = np.arange(160.0)
    y = 20.0 + 0.8 * t + rng.normal(0.0, 1.0, size=t.size)
    frame = pd.DataFrame({"series_id": "s", "channel": "v", "time": t[:120], "value": y[:120]})
    origins = {f"e{k}": ("s", float(o)) for k, o in enumerate(range(70, 96, 2))}
    episodes = {m: pd.DataFrame({"channel": "v", "time": o + np.arange(1.0, 25.0),
                                 "value": y[o + 1:o + 25]}) for m, (_, o) in
                ((m, (s, int(o))) for m, (s, o) in origins.items())}
    spec = choose(frame, origins, episodes, season=0.0)
    assert spec.holt["v"][2] == 1.0
    assert spec.scores["v"]["holt"] < spec.scores["v"]["damped_trend"]
    tq = np.arange(121.0, 161.0)
    linear = forecast("holt", t[:120], y[:120], 119.0, tq, smoothing_parameters=spec.holt["v"])
    damped = forecast("damped_trend", t[:120], y[:120], 119.0, tq, smoothing_parameters=spec.smoothing["v"])
    last = np.full(tq.size, y[119])
    truth = 20.0 + 0.8 * tq

    def rmse(pred: np.ndarray) -> float:
        return float(np.sqrt(np.mean((pred - truth) ** 2)))

    assert rmse(linear) < 0.5 * rmse(damped) and rmse(linear) < 0.5 * rmse(last)  # 40 steps ahead
