"""levy_core.training.reversion: the last value's mean reversion, fitted per channel in closed
form — found where the data revert, not where they wander, and never worse than the last
value on the episodes it was fitted on."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from levy_core.episodes.scaling import ChannelScaler
from levy_core.episodes.tasks import EpisodeBuilder, TaskConfig
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.training.reversion import MIN_QUERIES, RATES, fit_mean_reversion, install

HALF_LIFE_H = 2.0
CHANNELS = ["reverting", "wandering"]


def panel(n_series: int = 80, seed: int = 0) -> pd.DataFrame:
    """Per series, 48 h at irregular times: ``reverting`` an Ornstein-Uhlenbeck process around
    the series' own level (half-life 2 h, levels spread far more than the noise), ``wandering``
    a random walk (the last value is its best forecast)."""
    rng = np.random.default_rng(seed)
    rows = []
    theta = math.log(2.0) / HALF_LIFE_H
    for s in range(n_series):
        times = np.sort(rng.uniform(0.0, 48.0, 40))
        level = rng.normal(0.0, 3.0)
        x, w, t_prev = level + rng.normal(0.0, 1.0), 0.0, 0.0
        for t in times:
            dt = t - t_prev
            decay = math.exp(-theta * dt)
            x = level + (x - level) * decay + rng.normal(0.0, math.sqrt(1 - decay**2))
            w += rng.normal(0.0, math.sqrt(dt) * 0.5)
            rows += [(f"s{s:03d}", "reverting", t, x), (f"s{s:03d}", "wandering", t, w)]
            t_prev = t
    return pd.DataFrame(rows, columns=["series_id", "channel", "time", "value"])


@pytest.fixture(scope="module")
def fitted() -> tuple[EpisodeBuilder, LevyModel, list[str]]:
    frame = panel()
    ids = sorted(frame["series_id"].unique())
    scaled = ChannelScaler.fit(frame, ids).transform(frame)
    builder = EpisodeBuilder(scaled, CHANNELS, TaskConfig("forecast", cutoff=24.0, horizon=24.0), seed=0)
    train_ids = builder.usable(ids)
    model = LevyModel(ModelConfig(n_channels=2, time_scale=48.0))
    with torch.no_grad():
        model.backbone.default.copy_(torch.from_numpy(builder.channel_means(train_ids)))
    return builder, model, train_ids


def test_the_reverting_channel_reverts_to_its_own_level_and_the_random_walk_keeps_its_last_value(fitted) -> None:
    builder, model, ids = fitted
    fit = fit_mean_reversion(model.backbone, builder, ids)
    rate, to_series = fit.rate.tolist(), fit.to_series.tolist()
    # the truth: half-life 2 h = 1/24 of the 48 h time_scale, rate 24 ln2 ≈ 16.6, towards a level that
    # 20 context values estimate with noise: the best forecast reverts somewhat slower (half-life 2-12 h)
    assert 2.5 <= rate[0] <= 17.0, rate
    assert to_series[0] >= 0.5  # the series' own level, not the population's
    assert rate[1] == 0.0 and to_series[1] == 0.0
    assert fit.mse < fit.last_mse
    assert set(fit.to_dict()) == {"rate", "to_series", "last_mse", "mse"}
    assert model.backbone.revert_rate.abs().sum() == 0  # fitting changes nothing


def test_installed_it_lowers_the_offsets_error_on_the_episodes(fitted) -> None:
    builder, model, ids = fitted
    batch, _ = builder.batch(ids)
    mask = batch.qry_mask > 0
    reverting, wandering = mask & (batch.qry_channel == 0), mask & (batch.qry_channel == 1)
    with torch.no_grad():
        before = model.operator(batch).offset
        install(model.backbone, fit_mean_reversion(model.backbone, builder, ids))
        after = model.operator(batch).offset
        model.backbone.revert_rate.zero_()

    def mse(offset: torch.Tensor, where: torch.Tensor) -> float:
        return float(((offset - batch.target)[where] ** 2).mean())

    assert mse(after, reverting) < 0.8 * mse(before, reverting)
    assert torch.equal(after[wandering], before[wandering])


def test_too_few_aged_queries_fit_nothing(fitted) -> None:
    builder, model, ids = fitted
    batch, _ = builder.batch(ids[:1])
    for channel in range(2):  # one series: too few queries a channel to fit two numbers on
        assert int(((batch.qry_mask > 0) & (batch.qry_channel == channel)).sum()) < MIN_QUERIES
    fit = fit_mean_reversion(model.backbone, builder, ids[:1])
    assert not fit.rate.any() and not fit.to_series.any()


def test_the_grid_holds_the_last_value_and_half_lives_from_minutes_to_weeks() -> None:
    assert RATES[0] == 0.0 and np.all(np.diff(RATES[1:]) < 0)
    assert math.log(2) / RATES[1] == pytest.approx(0.05) and math.log(2) / RATES[-1] == pytest.approx(20.0)
