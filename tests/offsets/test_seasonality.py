"""The season of a few series and the seasonal offset built on it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from levy_core.model.batch import Batch
from levy_core.model.config import ModelConfig
from levy_core.model.encoder import ChannelState, channel_state, seasonal_offset
from levy_core.model.levy_model import LevyModel
from levy_core.offsets import seasonality
from levy_core.offsets.seasonality import (
    FALSE_ALARM,
    autocorrelation,
    candidate_periods,
    detect_season,
    harmonics_f_test,
    snap_to_calendar,
)


def series(times: np.ndarray, values: np.ndarray, channel: str = "value") -> pd.DataFrame:
    return pd.DataFrame({"series_id": "s", "channel": channel, "time": times, "value": values})


def test_autocorrelation_matches_numpy_on_complete_data() -> None:
    x = np.random.default_rng(0).normal(size=500)
    x = x - x.mean()
    expected = [np.dot(x[: len(x) - k], x[k:]) / (len(x) - k) / np.mean(x * x) for k in range(6)]
    np.testing.assert_allclose(autocorrelation(x, 5), expected, rtol=1e-12)


def test_a_daily_cycle_under_trend_noise_and_irregular_sampling_is_found() -> None:
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 24 * 30, 3000))  # a month, about every 15 minutes, irregular
    y = 0.02 * t + 3 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 0.3, t.size)
    assert detect_season(series(t, y), max_period=24 * 7) == 24.0


def test_a_yearly_cycle_with_missing_weeks_is_found() -> None:
    rng = np.random.default_rng(2)
    weeks = np.arange(52 * 30)
    keep = rng.random(weeks.size) > 0.15  # 15 % of the weeks missing
    t = weeks[keep] * 168.0
    y = 300 + 0.03 * weeks[keep] + 3 * np.sin(2 * np.pi * weeks[keep] / 52.18) + rng.normal(0, 0.3, keep.sum())
    assert detect_season(series(t, y), max_period=24 * 365.2425 * 5) == pytest.approx(24 * 365.2425)


def test_no_season_in_a_random_walk_or_white_noise() -> None:
    rng = np.random.default_rng(3)
    t = np.arange(400.0)
    assert detect_season(series(t, np.cumsum(rng.normal(size=t.size))), max_period=100) is None
    assert detect_season(series(t, rng.normal(size=t.size)), max_period=100) is None


YEAR = 365.2425 * 24


def _ar1(rng: np.random.Generator, rho: float, n: int) -> np.ndarray:
    x, noise = np.zeros(n), rng.normal(size=n)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + noise[i]
    return x


def test_the_harmonics_f_test_is_statsmodels_nested_ols_f_test() -> None:
    from statsmodels.regression.linear_model import OLS

    rng = np.random.default_rng(11)
    t = np.sort(rng.uniform(0, 24 * 90, 300))  # irregular hours over 90 days
    omega = 2 * np.pi * np.arange(1, 4) / 24
    for y in (rng.normal(size=t.size), 0.3 * np.sin(omega[1] * t) + rng.normal(size=t.size)):
        line = np.column_stack([np.ones_like(t), t])
        full = np.column_stack([line] + [fn(w * t) for w in omega for fn in (np.sin, np.cos)])
        expected = OLS(y, full).fit().compare_f_test(OLS(y, line).fit())[1]
        assert harmonics_f_test(t, y, omega) == pytest.approx(expected, rel=1e-8)
    assert harmonics_f_test(t[:8], rng.normal(size=8), omega) == 1.0  # too few points to say


def _season_in_red_noise(rho: float, amplitude: float, n: int, seed: int) -> pd.DataFrame:
    """``n`` months, 30 % dropped: an AR(1) cycle and a yearly season in three harmonics."""
    rng = np.random.default_rng(seed)
    months = np.arange(n)
    season = amplitude * (np.sin(2 * np.pi * months / 12) + 0.8 * np.cos(4 * np.pi * months / 12)
                          + 0.5 * np.sin(6 * np.pi * months / 12))
    y = _ar1(rng, rho, n) + season
    keep = rng.random(n) >= 0.3
    return series(months[keep] * YEAR / 12, y[keep])


@pytest.mark.parametrize(("rho", "amplitude", "n", "seed", "joint"), [
    (0.95, 1.0, 240, 3, "white"),  # the cycle holds most of the variance: the white-noise F-test decides
    (0.6, 0.5, 160, 7, "red"),  # a weaker season: the red-noise sum decides
])
def test_a_season_spread_over_harmonics_under_a_persistent_cycle_is_found_with_points_dropped(
        rho: float, amplitude: float, n: int, seed: int, joint: str) -> None:
    """Neither harmonic alone clears the test; together they do (the monthly equipment orders
    of the fresh benchmark set, 30 % dropped, lost their year at four end points of six;
    tested together, at only one)."""
    import scipy.special

    frame = _season_in_red_noise(rho, amplitude, n, seed)
    assert YEAR in candidate_periods(frame)
    with pytest.MonkeyPatch.context() as patch:  # the harmonics one at a time: no year
        if joint == "white":
            patch.setattr(seasonality, "harmonics_f_test", lambda *_: 1.0)
        else:
            patch.setattr(scipy.special, "gammaincc", lambda *_: 1.0)
        assert YEAR not in candidate_periods(frame)


def test_the_joint_test_offers_a_year_to_noise_without_one_as_rarely_as_its_false_alarm_says() -> None:
    """White noise and AR(1) at ρ = 0.5 and 0.9, ten years of months: the year is offered at
    most at the two tests' (one harmonic; the harmonics together) summed false-alarm rate,
    ``2 · FALSE_ALARM``, plus three binomial standard errors of 100 draws each."""
    draws, offered = 100, {}
    for rho in (0.0, 0.5, 0.9):
        count = 0
        for seed in range(draws):
            rng = np.random.default_rng(1000 + seed)
            count += YEAR in candidate_periods(series(np.arange(120) * YEAR / 12, _ar1(rng, rho, 120)))
        offered[rho] = count / draws
    bound = 2 * FALSE_ALARM + 3 * math.sqrt(2 * FALSE_ALARM * (1 - 2 * FALSE_ALARM) / draws)
    assert max(offered.values()) <= bound, offered


def test_snap_to_calendar() -> None:
    assert snap_to_calendar(25.4) == 24.0
    assert snap_to_calendar(24 * 350) == pytest.approx(24 * 365.2425)
    assert snap_to_calendar(24 * 3650) == 24 * 3650, "no calendar period near ten years"


def batch(ctx_t, ctx_v, qry_t, ctx_c=None, qry_c=None) -> Batch:
    def row(x, dtype=torch.float32):
        return torch.tensor([x], dtype=dtype)

    ctx_c = ctx_c or [0] * len(ctx_t)
    qry_c = qry_c or [0] * len(qry_t)
    return Batch(row(ctx_t), row(ctx_c, torch.int64), row(ctx_v), torch.ones(1, len(ctx_t)), row(qry_t),
                 row(qry_c, torch.int64), torch.ones(1, len(qry_t)))


def test_seasonal_offset_is_the_value_one_season_before() -> None:
    # hourly context over two days, values = the hour of the day; now = 47 h
    t = np.arange(48.0)
    b = batch(list(t), list(t % 24), [50.0, 71.0, 30.0, 53.5])
    state = channel_state(b, 1)
    fallback = torch.full((1, 4), -1.0)
    out = seasonal_offset(b, state, 24.0, fallback)[0].tolist()
    assert out[0] == 50 % 24 and out[1] == 71 % 24, "one season back: the same hour yesterday"
    assert out[2] == -1.0, "a query inside the context keeps the fallback (the last value)"
    assert out[3] in (5.0, 6.0), "29.5 h: the nearest observation, within an eighth of a season"
    # a query two seasons ahead reaches two seasons back
    b2 = batch(list(t), list(t % 24), [47.0 + 30.0])
    assert seasonal_offset(b2, channel_state(b2, 1), 24.0, torch.zeros(1, 1))[0, 0] == (77 - 48) % 24


def test_seasonal_offset_falls_back_without_an_observation_near_its_time_or_channel() -> None:
    b = batch([0.0, 1.0, 40.0, 47.0], [1.0, 2.0, 3.0, 4.0], [60.0, 50.0], ctx_c=[0, 0, 1, 0], qry_c=[0, 1])
    state: ChannelState = channel_state(b, 2)
    out = seasonal_offset(b, state, 24.0, torch.tensor([[7.0, 8.0]]))[0].tolist()
    assert out == [7.0, 8.0], "36 h and 26 h: nothing of the channel within 3 h of either"


def test_the_model_uses_it_as_its_offset_only_when_asked() -> None:
    torch.manual_seed(0)
    t = list(np.arange(48.0))
    b = batch(t, [v / 24 for v in np.arange(48.0) % 24], [50.0, 70.0])
    plain = LevyModel(ModelConfig(n_channels=1, time_scale=48.0))
    seasonal = LevyModel(ModelConfig(n_channels=1, time_scale=48.0, season=24.0))
    assert torch.allclose(plain.operator(b).offset, torch.full((1, 2), 23 / 24)), "the last value"
    torch.testing.assert_close(seasonal.operator(b).offset, torch.tensor([[2 / 24, 22 / 24]]))
    with pytest.raises(ValueError, match="season"):
        ModelConfig(n_channels=1, season=-1.0)
    with pytest.raises(ValueError, match="season"):
        ModelConfig(n_channels=1, season=math.inf)
