"""levy_core.offsets.base_forecast and candidates: each classical forecaster on signals whose answer is known, the
periods it looks for, the choice on training origins, the record, and that an offset never
sees past its origin."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from levy_core.offsets import seasonality
from levy_core.offsets.autoregression import ar_order
from levy_core.offsets.base_forecast import BaseForecast, choose, score_candidates
from levy_core.offsets.candidates import forecast
from levy_core.offsets.seasonality import (
    calendar_power,
    candidate_periods,
    false_alarm,
    periodogram_peak,
)
from levy_core.offsets.spec import MAX_MEMBERS, METHODS, BaseForecastSpec


def frame_of(t: np.ndarray, y: np.ndarray, channel: str = "v", sid: str = "s") -> pd.DataFrame:
    return pd.DataFrame({"series_id": sid, "channel": channel, "time": t, "value": y})


def test_last_level_and_drift_on_known_signals() -> None:
    t = np.arange(50.0)
    tq = np.array([51.0, 60.0])
    line = 2.0 + 0.5 * t
    np.testing.assert_allclose(forecast("last", t, line, 49.0, tq), line[-1])
    np.testing.assert_allclose(forecast("drift", t, line, 49.0, tq), 2.0 + 0.5 * tq)  # exact on a line
    flat = np.full(50, 3.0)
    np.testing.assert_allclose(forecast("level", t, flat, 49.0, tq), 3.0)


def test_seasonal_naive_and_its_drift_are_exact_on_a_repeating_pattern() -> None:
    t = np.arange(0.0, 240.0)
    pattern = np.sin(2 * np.pi * t / 24) + 0.3 * np.cos(4 * np.pi * t / 24)
    tq = np.arange(240.0, 300.0)
    truth = np.sin(2 * np.pi * tq / 24) + 0.3 * np.cos(4 * np.pi * tq / 24)
    np.testing.assert_allclose(forecast("seasonal", t, pattern, 239.0, tq, period=24.0), truth, atol=1e-12)
    rising = pattern + 0.01 * t  # the season's mean rises by 0.24 a season
    got = forecast("seasonal_drift", t, rising, 239.0, tq, period=24.0)
    np.testing.assert_allclose(got, truth + 0.01 * tq, atol=1e-9)


def test_harmonic_regression_recovers_a_trend_and_a_season_from_irregular_points() -> None:
    rng = np.random.default_rng(0)
    t = np.sort(rng.uniform(0, 24 * 60, 900))  # irregular, 60 days
    signal = lambda x: 0.001 * x + np.sin(2 * np.pi * x / 24) + 0.5 * np.sin(2 * np.pi * x / 168)  # noqa: E731
    y = signal(t) + rng.normal(0, 0.05, t.size)
    tq = t[-1] + np.linspace(1, 72, 30)
    for method in ("harmonic", "harmonic_recent"):
        got = forecast(method, t, y, t[-1], tq, harmonics=(24.0, 168.0), gap=float(np.median(np.diff(t))))
        assert np.max(np.abs(got - signal(tq))) < 0.15, method


def test_autoregression_follows_a_damped_cycle() -> None:
    rng = np.random.default_rng(1)
    n = 400
    z = np.zeros(n)
    for i in range(2, n):  # AR(2) with a 10-step quasi-cycle
        z[i] = 1.6 * z[i - 1] - 0.9 * z[i - 2] + rng.normal(0, 0.1)
    t = np.arange(n, dtype=float)
    order = ar_order(t, z, 1.0, 10.0)
    assert order >= 2
    tq = np.arange(n, n + 3, dtype=float)
    got = forecast("autoregressive", t, z, t[-1], tq, gap=1.0, order=order)
    expected = [1.6 * z[-1] - 0.9 * z[-2]]
    np.testing.assert_allclose(got[0], expected[0], atol=0.05)


def test_calendar_periods_and_a_periodogram_peak_survive_missing_points() -> None:
    rng = np.random.default_rng(2)
    t = np.arange(0.0, 24 * 30)  # hourly, 30 days
    keep = rng.random(t.size) > 0.3  # 30 % dropped
    y = np.sin(2 * np.pi * t / 24) + rng.normal(0, 0.3, t.size)
    assert 24.0 in candidate_periods(frame_of(t[keep], y[keep]))
    years = np.arange(300.0) * 8766  # yearly points, an 11-year cycle
    cycle = np.sin(2 * np.pi * np.arange(300) / 11) + rng.normal(0, 0.3, 300)
    found = candidate_periods(frame_of(years[keep[:300]], cycle[keep[:300]]))
    assert any(abs(p / (11 * 8766) - 1) < 0.05 for p in found), found


def test_a_calendar_period_is_tried_only_where_the_values_show_it() -> None:
    rng = np.random.default_rng(5)
    days = np.arange(0.0, 3 * 365) * 24  # daily, three years, a tenth of the days dropped
    days = days[rng.random(days.size) > 0.1]
    yearly = 10 * np.sin(2 * np.pi * days / (365.2425 * 24)) + rng.normal(0, 2.0, days.size)
    plain = candidate_periods(frame_of(days, yearly))
    assert any(abs(p / (365.2425 * 24) - 1) < 0.01 for p in plain) and 168.0 not in plain, plain
    weekend = np.where((days // 24) % 7 >= 5, -3.0, 0.0)  # a weekday pattern: a square wave
    assert 168.0 in candidate_periods(frame_of(days, yearly + weekend))
    hours = np.arange(0.0, 24 * 42)  # hourly, six weeks, a daily cycle and no weekly signal
    daily = np.sin(2 * np.pi * hours / 24) + rng.normal(0, 0.3, hours.size)
    assert calendar_power(hours, daily, 168.0) is None
    # kept all the same: the week's harmonics carry a daily cycle that differs between weekdays
    assert candidate_periods(frame_of(hours, daily))[:2] == (24.0, 168.0)


def test_calendar_power_is_the_share_of_variance_a_least_squares_sinusoid_explains() -> None:
    rng = np.random.default_rng(6)
    t = np.sort(rng.uniform(0, 24 * 60, 400))  # irregular hours over 60 days
    y = 0.02 * t + np.sin(2 * np.pi * t / 24 + 0.4) + rng.normal(0, 1.0, t.size)
    power = calendar_power(t, y, 24.0)
    tc = t - t.mean()
    resid = y - np.polyval(np.polyfit(tc, y, 1), tc)
    basis = np.column_stack([np.sin(2 * np.pi * tc / 24), np.cos(2 * np.pi * tc / 24)])
    fit = basis @ np.linalg.lstsq(basis, resid, rcond=None)[0]
    r2 = 1 - np.sum((resid - fit) ** 2) / np.sum(resid ** 2)
    assert power == pytest.approx(r2, rel=1e-6)
    assert calendar_power(t, rng.normal(size=t.size), 24.0) is None  # noise: not a period
    assert calendar_power(t[:10], y[:10], 24.0) is None  # too few points to say


def test_a_persistent_series_has_no_period_though_it_clears_the_white_noise_test() -> None:
    rng = np.random.default_rng(7)
    months = np.arange(240.0) * 730.5  # twenty years, monthly
    for path in (np.cumsum(rng.normal(size=240)),  # a random walk
                 np.array(list(_ar1(rng, 0.95, 240)))):  # and a slowly decaying AR(1)
        peak = periodogram_peak(months, path, 730.5)
        assert peak is not None and false_alarm(peak[1], 240, months[-1], 4 * 730.5) < 0.01  # the old test's "period"
        assert candidate_periods(frame_of(months, path)) == ()
    # a real period in the same red noise stands out (six cycles of three years)
    cycle = np.array(list(_ar1(rng, 0.9, 240))) + 3 * np.sin(2 * np.pi * np.arange(240) / 36)
    found = candidate_periods(frame_of(months, cycle))
    assert any(abs(p / (36 * 730.5) - 1) < 0.05 for p in found), found
    # but not one the history holds only twice, however clear (searched down to 2 cycles, it is found)
    clear = 3 * np.sin(2 * np.pi * np.arange(80) / 36) + np.random.default_rng(8).normal(0, 0.5, 80)
    assert candidate_periods(frame_of(months[:80], clear)) == ()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(seasonality, "MIN_CYCLES", 2)
        assert len(candidate_periods(frame_of(months[:80], clear))) == 1


def test_a_random_walk_shows_no_calendar_period_though_white_noise_would_give_one() -> None:
    """Hourly for 17 days (a week is resolved) and weekly for 8 years (a year is): the
    white-noise test alone shows the calendar period in most random walks; the red-noise
    test refuses it in every one. A daily cycle (amplitude 2 against steps of s.d. 1) and a
    yearly one (amplitude 5) in the same walks are still found."""
    white_only = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        for step, n, period in ((1.0, 400, 168.0), (168.0, 420, 8765.82)):
            t = np.arange(n) * step
            walk = np.cumsum(rng.normal(size=n))
            white_only += calendar_power(t, walk, period) is not None
            assert period not in candidate_periods(frame_of(t, walk)), (seed, period)
            if step == 1.0:
                seasonal = walk + 2 * np.sin(2 * np.pi * t / 24)  # a day in the same walk
                assert 24.0 in candidate_periods(frame_of(t, seasonal))
            else:
                seasonal = walk + 5 * np.sin(2 * np.pi * t / 8765.82)
                assert 8765.82 in candidate_periods(frame_of(t, seasonal))
    assert white_only >= 10  # of 20: the white-noise test alone would have offered them


def _ar1(rng: np.random.Generator, rho: float, n: int):
    x = 0.0
    for _ in range(n):
        x = rho * x + rng.normal()
        yield x


def test_white_noise_has_no_period_beyond_the_calendar() -> None:
    rng = np.random.default_rng(3)
    years = np.arange(100.0) * 8766
    assert candidate_periods(frame_of(years, rng.normal(size=100))) == ()
    assert false_alarm(0.05, 100, 50, 4) > 0.5 and false_alarm(0.5, 100, 50, 4) < 1e-6


def episodes_of(t: np.ndarray, y: np.ndarray, origins: list[float], horizon: float) -> tuple[dict, dict]:
    ids, eps = {}, {}
    for k, o in enumerate(origins):
        mid = f"s@{k}"
        ids[mid] = ("s", float(o))
        ahead = (t > o) & (t <= o + horizon)
        eps[mid] = pd.DataFrame({"channel": "v", "time": t[ahead], "value": y[ahead]})
    return ids, eps


def test_choose_prefers_the_season_on_seasonal_data_and_the_simplest_on_ties() -> None:
    rng = np.random.default_rng(4)
    t = np.arange(0.0, 24 * 20)
    y = np.sin(2 * np.pi * t / 24) + rng.normal(0, 0.05, t.size)
    origins, episodes = episodes_of(t, y, list(range(120, 400, 6)), 24.0)
    spec = choose(frame_of(t, y), origins, episodes)
    assert spec.methods["v"] != "last" and 24.0 in spec.harmonics
    assert spec.scores["v"]["last"] > 5 * min(spec.scores["v"].values())
    flat = np.full(t.size, 2.0)  # every candidate forecasts 2 exactly: the simplest wins
    origins, episodes = episodes_of(t, flat, list(range(120, 400, 6)), 24.0)
    assert choose(frame_of(t, flat), origins, episodes, season=0).methods["v"] == "last"


def test_the_scoring_choose_uses_records_every_candidate_at_every_scored_origin() -> None:
    """score_candidates: one record per scored episode, in their order, every candidate's
    forecast from that origin's past (as ``forecast`` gives it), the choice's scores its MSEs."""
    rng = np.random.default_rng(6)
    t = np.arange(0.0, 24 * 20)
    y = np.sin(2 * np.pi * t / 24) + 0.01 * t + rng.normal(0, 0.1, t.size)
    origins, episodes = episodes_of(t, y, list(range(120, 400, 6)), 24.0)
    scored = sorted(episodes, key=lambda m: origins[m][1])[len(episodes) // 2:]
    cands = score_candidates(frame_of(t, y), origins, episodes, scored)
    records = cands.records["v"]
    assert len(records) == len(scored) and 24.0 in cands.periods
    keys = set(records[0][0])
    assert {("last", 0.0), ("level", 0.0), ("seasonal", 24.0), ("harmonic_ar", 0.0), ("gp", 0.0)} <= keys
    for model_id, (preds, values) in zip(scored, records, strict=True):
        origin = origins[model_id][1]
        np.testing.assert_array_equal(values, episodes[model_id]["value"].to_numpy())
        past = t <= origin
        tq = episodes[model_id]["time"].to_numpy(np.float64)
        np.testing.assert_array_equal(preds[("last", 0.0)], np.full(len(tq), y[past][-1]))
        np.testing.assert_allclose(preds[("seasonal", 24.0)],
                                   forecast("seasonal", t[past], y[past], origin, tq, period=24.0))
    spec = choose(frame_of(t, y), origins, episodes)
    for key in keys:  # the choice scored exactly these forecasts
        mse = np.mean(np.concatenate([p[key] - v for p, v in records]) ** 2)
        name = key[0] + (f"@{key[1]:g}h" if key[1] else "")
        assert spec.scores["v"][name] == pytest.approx(mse, rel=1e-6, abs=1e-8)


def test_a_season_the_user_names_or_refuses() -> None:
    t = np.arange(0.0, 24 * 20)
    y = np.sin(2 * np.pi * t / 24)
    origins, episodes = episodes_of(t, y, list(range(120, 400, 12)), 24.0)
    none = choose(frame_of(t, y), origins, episodes, season=0)
    assert none.harmonics == () and none.methods["v"] not in ("seasonal", "seasonal_drift", "harmonic")
    named = choose(frame_of(t, y), origins, episodes, season=24.0)
    assert named.harmonics == (24.0,)


def test_the_offset_never_sees_past_its_origin() -> None:
    rng = np.random.default_rng(5)
    t = np.arange(0.0, 24 * 20)
    y = np.sin(2 * np.pi * t / 24) + rng.normal(0, 0.1, t.size)
    spec = BaseForecastSpec({"v": "combination"}, {"v": 0.0}, (24.0,), 1.0, {"v": 3},
                            {"v": [("harmonic", 0.0), ("seasonal", 24.0), ("autoregressive", 0.0)]})
    origins = {"s@0": ("s", 200.0)}
    base = BaseForecast(spec, frame_of(t, y), origins, ["v"])
    before = base.offsets("s@0", np.array([1.0, 5.0, 30.0]), np.array([0, 0, 0]))
    future = y.copy()
    future[t > 200] += 100.0  # what happens after the origin
    again = BaseForecast(spec, frame_of(t, future), origins, ["v"]).offsets("s@0", np.array([1.0, 5.0, 30.0]),
                                                                            np.array([0, 0, 0]))
    np.testing.assert_array_equal(before, again)
    assert np.isfinite(before).all()
    # a channel the series never observed before the origin: NaN (the model's own default)
    two = BaseForecast(spec, frame_of(t, y), origins, ["v", "w"])
    assert np.isnan(two.offsets("s@0", np.array([1.0]), np.array([1]))).all()


def test_spec_round_trip_and_refusals() -> None:
    spec = BaseForecastSpec({"a": "seasonal", "b": "combination"}, {"a": 24.0, "b": 0.0}, (24.0, 168.0), 0.5,
                            {"a": 0, "b": 4}, {"b": [("level", 0.0), ("autoregressive", 0.0)]},
                            {"a": {"last": 0.1}})
    back = BaseForecastSpec.from_dict(spec.to_dict())
    assert back == spec
    assert "mean of level, autoregressive (order 4)" in back.describe()
    with pytest.raises(ValueError, match="unknown method"):
        BaseForecastSpec({"a": "prophet"}, {}, (), 1.0)
    with pytest.raises(ValueError, match="combination needs"):
        BaseForecastSpec({"a": "combination"}, {}, (), 1.0)
    with pytest.raises(ValueError, match="combines 2 to"):
        BaseForecastSpec({"a": "combination"}, {}, (), 1.0, members={"a": [("last", 0.0)] * (MAX_MEMBERS + 1)})
    with pytest.raises(ValueError, match="combines 2 to"):
        BaseForecastSpec({"a": "combination"}, {}, (), 1.0, members={"a": [("last", 0.0)]})
    with pytest.raises(ValueError):
        BaseForecastSpec({"a": "last"}, {}, (), float("inf"))
    with pytest.raises(ValueError, match="unknown keys"):
        BaseForecastSpec.from_dict({**spec.to_dict(), "code": "import os"})
    assert set(METHODS) >= {"last", "harmonic", "autoregressive", "combination"}


def test_an_exploding_forecast_is_kept_finite_and_near_the_data() -> None:
    from levy_core.offsets.candidates import OFFSET_RANGE, bounded

    t = np.arange(10.0)
    y = np.linspace(0.0, 1.0, 10)
    out = bounded(t, y, np.array([np.nan, np.inf, -np.inf, 1e30, 0.5]))
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, [1.0, 1 + OFFSET_RANGE, -OFFSET_RANGE, 1 + OFFSET_RANGE, 0.5])


def test_a_weighted_combination_is_recorded_described_and_averaged_with_its_weights() -> None:
    members = [("last", 0.0), ("drift", 0.0)]
    spec = BaseForecastSpec({"v": "combination"}, {"v": 0.0}, (), 1.0, {"v": 0}, {"v": members},
                            weights={"v": [0.75, 0.25]})
    back = BaseForecastSpec.from_dict(spec.to_dict())
    assert back == spec and "weighted mean of last (75%), drift (25%)" in back.describe()
    t = np.arange(0.0, 50.0)
    y = 0.5 * t + np.sin(t)  # the last value and the drift differ ahead
    base = BaseForecast(spec, frame_of(t, y), {"s@0": ("s", 40.0)}, ["v"])
    got = base.offsets("s@0", np.array([1.0, 4.0]), np.array([0, 0]))
    tq = 40.0 + np.array([1.0, 4.0])
    want = (0.75 * forecast("last", t[:41], y[:41], 40.0, tq) + 0.25 * forecast("drift", t[:41], y[:41], 40.0, tq))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    for bad in ([0.5, 0.4], [1.0], [1.2, -0.2], [float("nan"), 1.0]):
        with pytest.raises(ValueError, match="one weight > 0 per member"):
            BaseForecastSpec({"v": "combination"}, {"v": 0.0}, (), 1.0, members={"v": members}, weights={"v": bad})


def test_two_equally_good_candidates_are_both_kept_one_clearly_better_alone() -> None:
    """The bagged choice: where two forecasts tie on the scored origins, the resamples split
    between them and the offset is their weighted mean; where one is far better, it alone."""
    rng = np.random.default_rng(9)
    t = np.arange(0.0, 24 * 20)
    y = np.sin(2 * np.pi * t / 24) + rng.normal(0, 0.05, t.size)
    origins, episodes = episodes_of(t, y, list(range(120, 400, 6)), 24.0)
    clear = choose(frame_of(t, y), origins, episodes)
    assert clear.methods["v"] != "last" and clear.scores["v"]["last"] > 5 * min(clear.scores["v"].values())
    walk = np.cumsum(rng.normal(0, 1.0, t.size))  # a random walk: the last value, the level and the AR tie
    origins, episodes = episodes_of(t, walk, list(range(120, 400, 6)), 24.0)
    spec = choose(frame_of(t, walk), origins, episodes, season=0)
    assert spec.methods["v"] == "combination"
    assert len(spec.members["v"]) == len(spec.weights["v"]) >= 2
    assert sum(spec.weights["v"]) == pytest.approx(1.0)
    assert spec.weights["v"] == sorted(spec.weights["v"], reverse=True)
    assert max(spec.weights["v"]) < 0.9  # no candidate wins every resample
    assert spec == choose(frame_of(t, walk), origins, episodes, season=0)  # the same draws every time
