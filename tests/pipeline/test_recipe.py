"""levy_core.pipeline.recipe: the fit in steps. ``prepare_fit`` (its refusals, a given split and scaler),
``FitData.model_config``, ``fit`` with the twin against ``fit`` without it + ``add_twin``
(bit-identical twin and MC-Dropout calibration, Lévy side untouched), ``cutoff_range``; and
the settings objects' dict round trips (``TaskConfig.from_dict``, ``ColumnMapping``).

Fits are tiny (one epoch, no time budget: deterministic) on the bundled synthetic sample.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest
import torch

from levy_core.data import ColumnMapping, DataError, Observations, load_sample
from levy_core.episodes.scaling import ChannelScaler
from levy_core.episodes.tasks import Split, TaskConfig, make_split, resolve_task
from levy_core.model.config import ModelConfig
from levy_core.pipeline import recipe
from levy_core.pipeline.recipe import (
    MODEL_SIZES,
    add_twin,
    cutoff_range,
    fit,
    prepare_fit,
    resolve_size,
    size_name,
)
from levy_core.training.train import TrainConfig

MC_PASSES = 3
EPS = np.finfo(np.float64).eps


@pytest.fixture(scope="module")
def sample() -> Observations:
    return load_sample("Synthetic multichannel")


@pytest.fixture(scope="module")
def obs(sample: Observations) -> Observations:
    return sample.subset(sample.series_ids[:16])


@pytest.fixture(scope="module")
def few(sample: Observations) -> Observations:
    return sample.subset(sample.series_ids[-3:])


def usable(frame: pd.DataFrame, ids: list[str], cutoff: float) -> list[str]:
    """By hand: the ids with an observation at or before the cut-off and one after it."""
    out = []
    for sid in ids:
        t = frame.loc[frame["series_id"] == sid, "time"]
        if (t <= cutoff).any() and (t > cutoff).any():
            out.append(sid)
    return out


# ----------------------------------------------------------------------------- prepare_fit


def test_prepare_fit_refuses_calibration_series_without_queries(obs: Observations) -> None:
    frame, split = make_split(obs.frame, seed=0)
    cutoff = 24.0
    # the calibration series end before the cut-off: context, but nothing to calibrate on
    cut = frame[~frame["series_id"].isin(split.calibration) | (frame["time"] <= cutoff)]
    with pytest.raises(DataError) as err:
        prepare_fit(cut, TaskConfig("forecast", cutoff=cutoff), split=split)
    msg = str(err.value)
    assert "0 calibration series" in msg and "cut-off 24 h" in msg
    assert "move the forecast cut-off" in msg and "switch to interpolation" in msg, "says what to do"
    # the training series are fine: it is the calibration split that is refused
    n_train = len(usable(cut, split.fitting(), cutoff))
    assert n_train > 0 and f"{n_train} training" in msg


def test_prepare_fit_refuses_a_cutoff_after_every_observation(obs: Observations) -> None:
    with pytest.raises(DataError, match="0 training and 0 calibration series"):
        prepare_fit(obs.frame, TaskConfig("forecast", cutoff=1000.0))


def test_prepare_fit_respects_a_given_split_and_scaler(obs: Observations) -> None:
    ids = obs.series_ids
    split = Split("series", 0, train=ids[:8], calibration=ids[8:12], test=ids[12:], stopping=ids[6:8])
    scaler = ChannelScaler(minimum={c: -10.0 for c in obs.channels}, maximum={c: 190.0 for c in obs.channels})
    task = TaskConfig("forecast", cutoff=20.0)
    data = prepare_fit(obs.frame, task, split=split, scaler=scaler)
    assert data.split is split and data.scaler is scaler and data.task == task
    assert data.train_ids == usable(obs.frame, ids[:6], 20.0)
    assert data.stop_ids == usable(obs.frame, ids[6:8], 20.0)
    assert data.calibration_ids == usable(obs.frame, ids[8:12], 20.0)
    assert data.test_ids == usable(obs.frame, ids[12:], 20.0)
    assert data.channels == sorted(obs.channels)
    # the episodes are normalised with the given scaler, (v - min) / (max - min)
    sid = ids[3]
    raw = obs.frame.loc[obs.frame["series_id"] == sid, "value"].to_numpy()
    # two roundings of numbers ≤ 1 after the division → 4 eps
    np.testing.assert_allclose(data.builder.series[sid].value, (raw + 10.0) / 200.0, rtol=0, atol=4 * EPS)
    assert data.counts() == {"train": len(data.train_ids), "stopping": len(data.stop_ids),
                             "calibration": len(data.calibration_ids), "test": len(data.test_ids)}


def test_prepare_fit_without_a_split_fits_the_scaler_on_the_training_series(obs: Observations) -> None:
    data = prepare_fit(obs.frame, None, seed=3)
    _, split = make_split(obs.frame, seed=3)
    assert data.split == split
    assert data.scaler == ChannelScaler.fit(obs.frame, split.train)
    assert data.scaler != ChannelScaler.fit(obs.frame), "the training series alone, not all of them"
    assert data.task.kind == "forecast" and data.task.cutoff is not None  # resolved
    spans = obs.frame.groupby("series_id")["time"].agg(lambda t: t.max() - t.min())
    assert data.time_scale == pytest.approx(float(spans.median()), rel=1e-12), "the median span, not the latest time"


# ----------------------------------------------------------------------------- model_config


def test_model_config_sizes_and_overrides(obs: Observations) -> None:
    data = prepare_fit(obs.frame)
    with pytest.raises(ValueError, match="size must be one of"):
        data.model_config("huge")
    for size, settings in MODEL_SIZES.items():
        cfg = data.model_config(size)
        assert isinstance(cfg, ModelConfig)
        assert {k: getattr(cfg, k) for k in settings} == settings
        assert cfg.n_channels == len(data.channels) and cfg.time_scale == data.time_scale
    cfg = data.model_config("medium", "count", num_heads=2, dropout=0.3)
    assert cfg.num_heads == 2 and cfg.dropout == 0.3 and cfg.phi == "count"
    assert cfg.d_model == MODEL_SIZES["medium"]["d_model"], "the other size settings stay"
    with pytest.raises(TypeError):
        data.model_config("small", not_a_setting=1)


# ----------------------------------------------------------------------------- fit vs add_twin


def weights(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    unequal = [k for k in a if not torch.equal(a[k], b[k])]
    assert unequal == []


# the rolling-origin fits are the slow ones (the offsets refitted at each origin)
@pytest.fixture(scope="module", params=["series", "window", pytest.param("origin", marks=pytest.mark.slow)])
def both_ways(request, obs: Observations, few: Observations):
    """(data, fit with the twin, fit without it, that one + add_twin, its Lévy weights before);
    few series are cut into windows to interpolate, into rolling origins to forecast."""
    data = obs if request.param == "series" else few
    task = TaskConfig("interpolate") if request.param == "window" else TaskConfig("forecast")
    train = TrainConfig(epochs=1, seed=0)
    with_twin = fit(data, task=task, train=train, train_twin=True, mc_passes=MC_PASSES)
    without = fit(data, task=task, train=train, train_twin=False)
    levy_before = weights(without.levy)
    levy_cal_before = copy.deepcopy(without.levy_calibration.to_dict())
    added = add_twin(without, data, mc_passes=MC_PASSES)
    assert with_twin.split.mode == request.param
    return data, with_twin, without, added, levy_before, levy_cal_before


def test_add_twin_gives_the_twin_fit_would_have_trained(both_ways) -> None:
    _, with_twin, without, added, _, _ = both_ways
    assert without.twin is None and without.mc_calibration is None, "add_twin returns a copy"
    assert added.twin is not None and added.twin is not with_twin.twin
    assert_same_weights(weights(added.twin), weights(with_twin.twin))
    assert added.mc_calibration.scale_ == with_twin.mc_calibration.scale_
    assert added.mc_calibration.to_dict() == with_twin.mc_calibration.to_dict(), "same conformal scores"
    if with_twin.split.mode == "series":  # and the band for new series, on calibration and test series
        assert added.new_series_calibration["mc"].to_dict() == with_twin.new_series_calibration["mc"].to_dict()
        assert added.new_series_calibration["levy"].to_dict() == with_twin.new_series_calibration["levy"].to_dict()
    else:
        assert added.new_series_calibration is None and with_twin.new_series_calibration is None
    assert added.mc_passes == with_twin.mc_passes == MC_PASSES
    assert added.training["softmax"]["epochs_run"] == with_twin.training["softmax"]["epochs_run"] == 1


def test_add_twin_leaves_the_levy_model_and_its_calibration_alone(both_ways) -> None:
    _, with_twin, without, added, levy_before, levy_cal_before = both_ways
    assert_same_weights(weights(without.levy), levy_before)
    assert_same_weights(weights(added.levy), levy_before)
    assert without.levy_calibration.to_dict() == levy_cal_before
    assert added.levy_calibration.to_dict() == levy_cal_before
    assert added.training["levy"] == without.training["levy"]
    # the Lévy side of the twin fit is the same too (same seed, episodes and budget)
    assert_same_weights(weights(with_twin.levy), levy_before)
    assert with_twin.levy_calibration.scale_ == without.levy_calibration.scale_


def test_add_twin_gives_a_working_mc_dropout(both_ways) -> None:
    data, _, _, added, _, _ = both_ways
    from levy_core.pipeline.predict import split_predictions

    pred = split_predictions(added, data, "test", mc_passes=MC_PASSES)
    assert {"mc_mean", "mc_std", "mc_lower", "mc_upper"} <= set(pred.columns)
    assert np.isfinite(pred[["mc_mean", "mc_std"]].to_numpy()).all() and (pred["mc_std"] > 0).all()


@pytest.mark.parametrize("passes", [1, 0, -3])
def test_add_twin_refuses_fewer_than_two_passes(passes, both_ways) -> None:
    data, _, without, _, _, _ = both_ways
    with pytest.raises(ValueError, match=f"mc_passes must be at least 2.*got {passes}"):
        add_twin(without, data, mc_passes=passes)


def test_auto_size_is_medium_from_the_threshold_on_and_small_below() -> None:
    n = recipe.AUTO_MEDIUM_MIN_SERIES
    assert resolve_size("auto", 1) == resolve_size("auto", n - 1) == "small"
    assert resolve_size("auto", n) == resolve_size("auto", 10 * n) == "medium"
    for size in MODEL_SIZES:
        assert resolve_size(size, 1) == resolve_size(size, 10 * n) == size, "a named size is kept"
    with pytest.raises(ValueError, match="size must be 'auto' or one of"):
        resolve_size("huge", 1)


def test_size_name_names_each_preset_and_nothing_else(obs: Observations) -> None:
    data = prepare_fit(obs.frame)
    for size in MODEL_SIZES:
        assert size_name(data.model_config(size)) == size
    assert size_name(data.model_config("medium", context_layers=1)) == "custom"
    assert size_name(data.model_config("small", d_model=48)) == "custom"


def test_fit_resolves_auto_from_the_number_of_series(obs: Observations, monkeypatch) -> None:
    train = TrainConfig(epochs=1, max_seconds=2.0)
    assert size_name(fit(obs, train=train, train_twin=False).model_config) == "small"
    monkeypatch.setattr(recipe, "AUTO_MEDIUM_MIN_SERIES", obs.n_series)  # this file now counts as large
    assert size_name(fit(obs, train=train, train_twin=False).model_config) == "medium"
    assert size_name(fit(obs, train=train, size="small", train_twin=False).model_config) == "small"


def test_fit_refuses_an_unknown_size_and_too_few_passes(few: Observations) -> None:
    with pytest.raises(ValueError, match="size must be 'auto' or one of"):
        fit(few, train=TrainConfig(epochs=1), size="tiny", train_twin=False)
    with pytest.raises(ValueError, match="mc_passes must be at least 2"):
        fit(few, train=TrainConfig(epochs=1), mc_passes=1)


# ----------------------------------------------------------------------------- cutoff_range


@pytest.mark.parametrize("which", ["obs", "few"])
def test_cutoff_range_brackets_the_default(which, request) -> None:
    data = request.getfixturevalue(which)
    lo, hi, default = cutoff_range(data)
    assert all(isinstance(x, float) for x in (lo, hi, default))
    assert lo <= default <= hi
    frame, split = make_split(data.frame)
    assert lo == float(frame["time"].min()) and hi == float(frame.groupby("series_id")["time"].max().max())
    assert default == resolve_task(TaskConfig("forecast"), frame).cutoff
    if split.mode == "window":  # window-relative time: inside one window
        assert 0 <= lo and hi < split.window_hours


# ----------------------------------------------------------------------------- settings dicts


def test_task_config_from_dict_round_trips_and_refuses_unknown_keys() -> None:
    task = TaskConfig("interpolate", cutoff=None, horizon=None, holdout_fraction=0.3)
    assert TaskConfig.from_dict(json.loads(json.dumps(task.to_dict()))) == task
    with pytest.raises(ValueError, match=r"unknown task settings \['cut_off'\]"):
        TaskConfig.from_dict({"kind": "forecast", "cut_off": 12.0})
    with pytest.raises(ValueError, match="'bogus'.*'zzz'"):
        TaskConfig.from_dict({**task.to_dict(), "zzz": 1, "bogus": 2})


def test_column_mapping_round_trips_a_wide_mapping_and_refuses_unknown_keys() -> None:
    wide = ColumnMapping(time="charttime", series="patient", wide_channels=("HR", "SpO2", "Temp"), layout="wide")
    d = wide.to_dict()
    assert d["wide_channels"] == ["HR", "SpO2", "Temp"] and d["layout"] == "wide"
    back = ColumnMapping.from_dict(json.loads(json.dumps(d)))
    assert back == wide and isinstance(back.wide_channels, tuple)
    long = ColumnMapping(time="t", value="v", series="id", channel="name")
    assert ColumnMapping.from_dict(long.to_dict()) == long
    with pytest.raises(ValueError, match=r"unknown column-mapping keys \['channels'\]"):
        ColumnMapping.from_dict({**d, "channels": ["HR"]})


def test_a_shifted_clock_gives_the_same_model_and_band(obs: Observations) -> None:
    """Hours before an event (a clock that starts at −24 h) or far after its origin: the
    time scale follows the spans, so the fit and its band are those of the same data from 0
    (to float32 rounding of the shifted times, ~1e-6 relative at these magnitudes)."""

    from levy_core.data import from_frame
    from levy_core.pipeline.predict import predict_grid

    def fitted_band(shift: float):
        frame = obs.frame.assign(time=obs.frame["time"] + shift)
        shifted = from_frame(frame)
        task = TaskConfig("forecast", cutoff=24.0 + shift)
        f = fit(shifted, task=task, train=TrainConfig(epochs=1, seed=0), train_twin=False)
        grid = predict_grid(f, shifted, shifted.series_ids[:3], n_points=6)
        return f, grid

    base, band = fitted_band(0.0)
    for shift in (-24.0, 1000.0):
        other, shifted_band = fitted_band(shift)
        assert other.model_config.time_scale == pytest.approx(base.model_config.time_scale, rel=1e-12)
        np.testing.assert_allclose(shifted_band["time"] - shift, band["time"], rtol=0, atol=1e-9 * (1 + abs(shift)))
        for col in ("mean", "sigma", "lower_conf", "upper_conf"):
            np.testing.assert_allclose(shifted_band[col], band[col], rtol=2e-3, atol=1e-4, err_msg=f"{col} {shift}")


def test_a_never_observed_channel_is_offset_at_its_training_mean(obs: Observations) -> None:
    """``b(q)`` where a series has not observed the queried channel: the channel's mean over the
    training series (normalised), set by the fit and not trained — a buffer, saved with the weights."""
    fitted = fit(obs, train=TrainConfig(epochs=2, seed=0), size="small", train_twin=False)
    backbone = fitted.levy.backbone
    assert "default" not in dict(backbone.named_parameters()) and "default" in dict(backbone.named_buffers())
    data = prepare_fit(obs.frame, resolve_task(TaskConfig("forecast"), obs.frame))
    assert data.split == fitted.split
    frame = obs.frame[obs.frame["series_id"].isin(set(data.train_ids))]  # the series the weights are fitted on
    for i, channel in enumerate(fitted.channels):
        lo, hi = fitted.scaler.minimum[channel], fitted.scaler.maximum[channel]
        by_hand = ((frame.loc[frame["channel"] == channel, "value"] - lo) / (hi - lo)).mean()
        assert float(backbone.default[i]) == pytest.approx(by_hand, rel=1e-5, abs=1e-6)
    assert "backbone.default" in fitted.levy.state_dict()
