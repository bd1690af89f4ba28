"""A panel's band for new series: calibrated on the calibration and test series together
(``recipe.assemble`` → ``FittedModel.new_series_calibration``), while the held-out series keep
the calibration split's band (``FittedModel.predictives``, ``RowwiseCalibrator``); saved,
loaded, checked like every calibration, absent from older models and from fits that are not panels.

Fits are tiny (one epoch, no time budget: deterministic) on the bundled synthetic sample.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from levy_core.calibration.calibrate import Calibrator, RowwiseCalibrator
from levy_core.data import Observations, load_sample
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline.modelfile import FittedModel, ModelLoadError, load_model
from levy_core.pipeline.predict import observed_queries, split_predictions
from levy_core.pipeline.recipe import fit, prepare_fit
from levy_core.pipeline.user_frames import predict_user_queries
from levy_core.training.train import TrainConfig

LEVEL = 0.9


@pytest.fixture(scope="module")
def obs() -> Observations:
    sample = load_sample("Synthetic multichannel")
    return sample.subset(sample.series_ids[:16])


@pytest.fixture(scope="module")
def fitted(obs: Observations) -> FittedModel:
    return fit(obs, task=TaskConfig("forecast"), train=TrainConfig(epochs=1, seed=0), train_twin=True, mc_passes=3)


def queries_of(fitted: FittedModel, ids: list[str]) -> pd.DataFrame:
    """A normalised prediction frame with one query per channel of each series in ``ids``."""
    rng = np.random.default_rng(0)
    rows = [(sid, c) for sid in ids for c in fitted.channels]
    return pd.DataFrame({"series_id": [r[0] for r in rows], "channel": [r[1] for r in rows],
                         "mean_norm": rng.normal(size=len(rows)), "spread_norm": rng.uniform(0.05, 0.5, len(rows))})


def test_rowwise_calibrator_takes_each_point_from_its_own_calibrator() -> None:
    rng = np.random.default_rng(1)
    y, m, s = rng.normal(size=400), np.zeros(400), np.full(400, 0.5)
    groups = np.where(rng.uniform(size=400) < 0.5, "a", "b")
    narrow = Calibrator().fit(y * 0.5, m, s, groups=groups)
    wide = Calibrator().fit(y * 2.0, m, s, groups=groups)
    held = rng.uniform(size=50) < 0.4
    mean, sigma, g = rng.normal(size=50), rng.uniform(0.1, 1.0, 50), groups[:50]
    both = RowwiseCalibrator(narrow, wide, held)
    lo, hi = both.interval(mean, sigma, LEVEL, "conformal", groups=g)
    lo_n, hi_n = narrow.interval(mean, sigma, LEVEL, "conformal", groups=g)
    lo_w, hi_w = wide.interval(mean, sigma, LEVEL, "conformal", groups=g)
    np.testing.assert_array_equal(lo, np.where(held, lo_n, lo_w))
    np.testing.assert_array_equal(hi, np.where(held, hi_n, hi_w))
    np.testing.assert_array_equal(both.predict_std(sigma, g),
                                  np.where(held, narrow.predict_std(sigma, g), wide.predict_std(sigma, g)))
    assert both.conformal is narrow.conformal
    with pytest.raises(ValueError, match="holds 50 points, got 49"):
        both.predict_std(sigma[:49], g[:49])


def test_the_new_series_band_is_calibrated_on_the_calibration_and_test_series(obs, fitted) -> None:
    assert fitted.split.mode == "series" and fitted.split.test
    data = prepare_fit(obs.frame, fitted.task, seed=fitted.train_config.seed, split=fitted.split, scaler=fitted.scaler)
    held = observed_queries(fitted, data.builder, data.calibration_ids + data.test_ids)
    channels = held["channel"].to_numpy()
    new = fitted.new_series_calibration["levy"]
    # the scale: of minimum CRPS on both splits' queries, as a Calibrator fits it
    by_hand = Calibrator().fit(held["y_norm"], held["mean_norm"], held["spread_norm"], groups=channels)
    got, want = new.scaled_gaussian.to_dict(), by_hand.scaled_gaussian.to_dict()
    assert got["scale"] == pytest.approx(want["scale"], rel=1e-6)  # bisection's tolerance, the queries' order
    assert got["group_scales"] == pytest.approx(want["group_scales"], rel=1e-6)
    assert got["n_calibration"] == want["n_calibration"] == len(held)
    # the conformal scores: every query of both splits, scored with the calibration split's floor
    floor = fitted.levy_calibration.conformal.sigma_floor_
    y, m, sd = (held[c].to_numpy(np.float64) for c in ("y_norm", "mean_norm", "spread_norm"))
    scores = np.abs(y - m) / np.maximum(sd, floor)
    assert new.conformal.sigma_floor_ == floor and set(new.conformal.group_scores_) == set(channels)
    for channel, got in new.conformal.group_scores_.items():
        # (float32 passes batched differently: the two splits apart in the fit, together here)
        np.testing.assert_allclose(got, np.sort(scores[channels == channel]), rtol=1e-5)
    n_cal = len(observed_queries(fitted, data.builder, data.calibration_ids))
    assert fitted.levy_calibration.conformal.n_calibration_ == n_cal < len(held) == new.conformal.n_calibration_
    assert set(fitted.new_series_calibration) == {"levy", "mc", "last_value"}


def test_held_out_series_keep_the_calibration_splits_band_and_new_ones_take_the_larger(fitted) -> None:
    held_ids = fitted.split.test[:2] + fitted.split.calibration[:1]
    frame = queries_of(fitted, held_ids + ["a-new-series"] + fitted.split.train[:1])
    levy = fitted.predictives(frame)[0]
    assert isinstance(levy.calibrator, RowwiseCalibrator)
    lo, hi = levy.interval(LEVEL)
    is_held = frame["series_id"].isin(held_ids).to_numpy()
    for calibrator, rows in ((fitted.levy_calibration, is_held), (fitted.new_series_calibration["levy"], ~is_held)):
        want_lo, want_hi = calibrator.interval(frame["mean_norm"], frame["spread_norm"], LEVEL, "conformal",
                                               groups=frame["channel"].to_numpy())
        np.testing.assert_array_equal(lo[rows], want_lo[rows])
        np.testing.assert_array_equal(hi[rows], want_hi[rows])
    # a frame of one kind only takes that calibrator whole; the same query, the same band in any frame
    assert fitted.predictives(frame[is_held])[0].calibrator is fitted.levy_calibration
    alone = fitted.predictives(frame[~is_held].reset_index(drop=True))[0]
    assert alone.calibrator is fitted.new_series_calibration["levy"]
    np.testing.assert_array_equal(alone.interval(LEVEL)[0], lo[~is_held])


def test_evaluation_on_the_test_split_never_uses_the_band_that_saw_it(obs, fitted) -> None:
    pred = split_predictions(fitted, obs, "test")
    lo, _ = fitted.levy_calibration.interval(pred["mean_norm"], pred["spread_norm"], LEVEL, "conformal",
                                             groups=pred["channel"].to_numpy())
    np.testing.assert_allclose(pred["lower_conf"], fitted.scaler.inverse_value(lo, pred["channel"].to_numpy()))


def test_a_new_series_asked_by_queries_gets_the_larger_calibrations_band(obs, fitted) -> None:
    sid = fitted.split.test[0]
    renamed = dataclasses.replace(obs, frame=obs.frame.assign(series_id=obs.frame["series_id"].replace({sid: "renamed"})))
    later = obs.frame[(obs.frame["series_id"] == sid) & (obs.frame["time"] > fitted.task.cutoff)].head(4)
    asked = later[["series_id", "channel", "time"]].reset_index(drop=True)
    as_test = predict_user_queries(fitted, obs, asked)
    as_new = predict_user_queries(fitted, renamed, asked.assign(series_id="renamed"))
    np.testing.assert_array_equal(as_test["mean"], as_new["mean"])
    channels = asked["channel"].to_numpy()
    for pred, calibrator in ((as_test, fitted.levy_calibration), (as_new, fitted.new_series_calibration["levy"])):
        lo, _ = calibrator.interval(pred["mean_norm"], pred["spread_norm"], LEVEL, "conformal", groups=channels)
        np.testing.assert_allclose(pred["lower_conf"], fitted.scaler.inverse_value(lo, channels))


def test_the_new_series_band_is_saved_loaded_and_checked(tmp_path, fitted) -> None:
    fitted.save(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert {k: c.to_dict() for k, c in loaded.new_series_calibration.items()} == {
        k: c.to_dict() for k, c in fitted.new_series_calibration.items()}
    meta_path = tmp_path / "m" / "model.json"
    meta = json.loads(meta_path.read_text())
    # only the test series' scores are saved beside the calibration split's: none twice
    added = meta["new_series_calibration"]["levy"]["added_scores"]
    n_added = sum(len(v) for v in added.values())
    assert n_added + fitted.levy_calibration.conformal.n_calibration_ == fitted.new_series_calibration[
        "levy"].conformal.n_calibration_
    first = next(iter(added))
    added[first][0] = -1.0
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match=rf"new_series_calibration\.levy\.added_scores\.{first}\.0"):
        load_model(tmp_path / "m")
    meta["new_series_calibration"]["levy"]["added_scores"] = [0.5, 1.0]  # not per channel, as the model is
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="group_scores"):
        load_model(tmp_path / "m")
    meta["new_series_calibration"] = {"mystery": {}}
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="mystery"):
        load_model(tmp_path / "m")


def test_a_model_saved_before_gives_every_series_the_calibration_splits_band(tmp_path, fitted) -> None:
    fitted.save(tmp_path / "m")
    meta_path = tmp_path / "m" / "model.json"
    meta = json.loads(meta_path.read_text())
    del meta["new_series_calibration"]
    meta_path.write_text(json.dumps(meta))
    loaded = load_model(tmp_path / "m")
    assert loaded.new_series_calibration is None
    frame = queries_of(loaded, ["a-new-series"])
    assert loaded.predictives(frame)[0].calibrator.to_dict() == fitted.levy_calibration.to_dict()


def test_a_fit_that_is_not_a_panel_has_no_new_series_band() -> None:
    sample = load_sample("Synthetic multichannel")
    few = sample.subset(sample.series_ids[-3:])
    windows = fit(few, task=TaskConfig("interpolate"), train=TrainConfig(epochs=1, seed=0), train_twin=False)
    assert windows.split.mode == "window" and windows.new_series_calibration is None
    assert windows.new_series_note() is None


def test_the_new_series_note_says_both_bands_and_their_sizes(fitted) -> None:
    note = fitted.new_series_note()
    n_new = fitted.new_series_calibration["levy"].conformal.n_calibration_
    assert f"calibration and test series together ({n_new:,} queries" in note
    assert f"calibration series alone ({fitted.levy_calibration.conformal.n_calibration_:,} queries" in note


def test_calibration_for_names_the_calibrator_each_series_takes(fitted) -> None:
    for key in ("levy", "mc", "last_value"):
        own = {"levy": fitted.levy_calibration, "mc": fitted.mc_calibration,
               "last_value": fitted.last_value_calibration}[key]
        assert fitted.calibration_for(fitted.split.test[0], key) is own
        assert fitted.calibration_for(fitted.split.calibration[0], key) is own
        assert fitted.calibration_for(fitted.split.train[0], key) is fitted.new_series_calibration[key]
        assert fitted.calibration_for("a-new-series", key) is fitted.new_series_calibration[key]


def test_the_scores_a_band_rests_on_are_those_of_the_calibrator_its_series_take(fitted) -> None:
    own = fitted.levy_calibration.conformal.n_calibration_
    new = fitted.new_series_calibration["levy"].conformal.n_calibration_
    assert fitted.conformal_scores_count(["a-new-series", fitted.split.train[0]]) == new > own
    assert fitted.conformal_scores_count([fitted.split.test[0]]) == own
    assert fitted.conformal_scores_count(["a-new-series", fitted.split.calibration[0]]) == own, "the fewest"
    assert fitted.conformal_scores_count([]) == own
