"""levy_core.offsets.harmonic, the ``HARMONIC_AR`` candidates: a harmonic fit plus an AR(p) of
its residuals (regression with autoregressive errors). The AR path against statsmodels' AutoReg
(the reference), the order AIC picks (against a brute-force least-squares search, and on residuals
whose memory is known), the gain at short leads on a season with persistent deviations, and the
choice that offers them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from levy_core.offsets.base_forecast import choose
from levy_core.offsets.candidates import forecast
from levy_core.offsets.harmonic import residual_order
from levy_core.offsets.spec import HARMONIC_AR, METHODS, BaseForecastSpec


def ar1(n: int, rho: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = np.zeros(n)
    for i in range(1, n):
        e[i] = rho * e[i - 1] + rng.normal()
    return e


@pytest.mark.parametrize("order", [1, 3])
def test_the_residual_path_is_statsmodels_autoreg_forecast(order: int) -> None:
    autoreg = pytest.importorskip("statsmodels.tsa.ar_model").AutoReg
    z = ar1(300, 0.8, seed=order) + 0.5
    steps = 12
    ref = autoreg(z, lags=order, trend="c").fit().predict(start=len(z), end=len(z) + steps - 1)
    # the autoregressive candidate and the residual AR share one path; a regular 2-hour grid
    t = 2.0 * np.arange(len(z))
    ours = forecast("autoregressive", t, z, t[-1], t[-1] + 2.0 * np.arange(1, steps + 1), order=order, gap=2.0)
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9)
    short = forecast("autoregressive", t[:5], z[:5], t[4], np.array([t[4] + 2.0]), order=order, gap=2.0)
    assert short[0] == z[4]  # too short for the order: the last value


def test_aic_finds_no_memory_in_white_residuals_and_some_in_persistent_ones() -> None:
    t = np.arange(600.0)
    season = np.sin(2 * np.pi * t / 24)
    # AIC over 31 nested orders picks a spurious one now and then (about one draw in five here)
    white = [residual_order(t, season + np.random.default_rng(s).normal(0, 0.3, t.size), (24.0,), 1.0)
             for s in range(10)]
    assert sum(k == 0 for k in white) >= 6, white
    persistent = season + 0.3 * ar1(t.size, 0.9, seed=1)
    assert residual_order(t, persistent, (24.0,), 1.0) >= 1
    assert residual_order(t[:9], persistent[:9], (24.0,), 1.0) == 0  # under ten points: no order


def test_persistent_deviations_are_carried_forward_where_the_harmonic_fit_forgets_them() -> None:
    # a daily season plus AR(1) deviations (ρ = 0.9): at lead h the residual AR removes a share
    # ρ^(2h) of the harmonic fit's squared error; over leads 1-5 the expected ratio is
    # 1 - mean(0.9^(2h)) = 0.45, so 0.7 leaves room for 20 origins' sampling noise
    t = np.arange(2000.0)
    y = np.sin(2 * np.pi * t / 24) + 0.5 * ar1(t.size, 0.9, seed=2)
    assert residual_order(t[:1000], y[:1000], (24.0,), 1.0) >= 1
    se = {"harmonic": 0.0, "harmonic_ar": 0.0}
    for origin in range(1000, 1960, 48):
        past = t <= origin
        tq = origin + np.arange(1.0, 6.0)
        for method in se:
            got = forecast(method, t[past], y[past], float(origin), tq, harmonics=(24.0,), gap=1.0)
            se[method] += float(np.sum((got - y[tq.astype(int)]) ** 2))
    assert se["harmonic_ar"] < 0.7 * se["harmonic"]


@pytest.mark.parametrize("method", HARMONIC_AR)
def test_where_the_harmonic_fit_leaves_nothing_each_is_its_harmonic_fit(method: str) -> None:
    t = np.arange(300.0)
    y = np.sin(2 * np.pi * t / 24) + 2.0  # no trend: harmonic_level's profile is the signal too
    tq = np.arange(300.0, 330.0)
    plain = forecast(method.removesuffix("_ar"), t, y, 299.0, tq, harmonics=(24.0,), gap=1.0)
    got = forecast(method, t, y, 299.0, tq, harmonics=(24.0,), gap=1.0)
    np.testing.assert_allclose(got, plain, atol=0.02)  # the fit's own small bias carried, nothing more
    assert METHODS.index(method) > METHODS.index(method.removesuffix("_ar"))  # more complex than its base


def test_choose_offers_them_and_picks_one_where_deviations_persist() -> None:
    t = np.arange(0.0, 24 * 40)
    y = np.sin(2 * np.pi * t / 24) + 0.5 * ar1(t.size, 0.95, seed=3)
    frame = pd.DataFrame({"series_id": "s", "channel": "v", "time": t, "value": y})
    origins, episodes = {}, {}
    for i, origin in enumerate(np.arange(24 * 20, 24 * 39, 12.0)):
        origins[f"s@{i}"] = ("s", float(origin))
        q = (t > origin) & (t <= origin + 6)
        episodes[f"s@{i}"] = pd.DataFrame({"channel": "v", "time": t[q], "value": y[q]})
    spec = choose(frame, origins, episodes, season=24.0)
    assert {"harmonic_ar", "harmonic_level_ar", "harmonic_recent_ar"} <= set(spec.scores["v"])
    # persistent deviations over a six-hour horizon: a residual AR wins the choice
    assert any(m in HARMONIC_AR for m in [spec.methods["v"], *(m for m, _ in spec.members.get("v", []))])
    assert "AR residuals" in spec.describe()
    assert BaseForecastSpec.from_dict(spec.to_dict()) == spec
