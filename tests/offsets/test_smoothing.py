"""levy_core.offsets.smoothing: Holt's damped trend against statsmodels' (the reference), the grid
search on a known trend, and the damped-trend candidate carrying a recovery's slope."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from levy_core.offsets import smoothing
from levy_core.offsets.base_forecast import BaseForecastSpec, choose, forecast


def test_forecast_equals_statsmodels_holt_with_the_same_start_and_parameters() -> None:
    holt = pytest.importorskip("statsmodels.tsa.holtwinters").Holt
    z = np.cumsum(np.random.default_rng(0).normal(0.3, 1.0, size=120)) + 50
    params = (0.35, 0.1, 0.9)
    ours = smoothing.forecast(z, params, 12)[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = holt(z[1:], damped_trend=True, initialization_method="known",
                     initial_level=z[0], initial_trend=z[1] - z[0])
        ref = model.fit(smoothing_level=params[0], smoothing_trend=params[1], damping_trend=params[2],
                        optimized=False).forecast(12)
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


def test_parameters_outside_the_unit_interval_are_refused_in_the_record() -> None:
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        smoothing.check_parameters(0.5, 0.0, 0.9)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        BaseForecastSpec({"v": "damped_trend"}, {"v": 0.0}, (), 1.0, smoothing={"v": (0.5, 0.1, float("nan"))})
    spec = BaseForecastSpec({"v": "damped_trend"}, {"v": 0.0}, (), 1.0, smoothing={"v": (0.5, 0.1, 0.9)})
    assert BaseForecastSpec.from_dict(spec.to_dict()) == spec


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
