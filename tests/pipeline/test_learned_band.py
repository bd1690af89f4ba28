"""The learned spread in the pipeline (issue 51): fitted on forecast panels past its gate only,
used for the band, saved and read back to the same numbers, and said in plain words.

The synthetic panel (40 series) is far below the gate; tests that need a learned spread lower
the gate to its size (``MIN_QUERIES`` 200), as a 300-stay PhysioNet file passes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from levy_core.calibration import learned_spread
from levy_core.data import Observations
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline.modelfile import learned_pass_spread, load_model
from levy_core.pipeline.predict import predict_grid
from levy_core.pipeline.prepared import prepare
from levy_core.pipeline.recipe import fit
from levy_core.pipeline.user_frames import predict_user_queries
from levy_core.training.train import TrainConfig

TRAIN = TrainConfig(epochs=2, seed=0)


@pytest.fixture(scope="module")
def learned(synthetic_obs: Observations):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(learned_spread, "MIN_QUERIES", 200)
        return fit(synthetic_obs, task=TaskConfig("forecast"), train=TRAIN, size="small", train_twin=False)


def test_a_forecast_panel_past_the_gate_learns_its_spread_and_a_smaller_one_keeps_sigma(learned, synthetic_obs,
                                                                                        monkeypatch) -> None:
    assert learned.learned_spread is not None and learned.learned_spread.n_channels == len(learned.channels)
    assert learned.learned_spread.n_queries >= 200
    assert learned_spread.LearnedSpread.within_reach(learned_spread.MIN_QUERIES)
    assert not learned_spread.LearnedSpread.within_reach(learned_spread.MIN_QUERIES - 1)

    def no_pass(*args, **kwargs):
        raise AssertionError("below the gate, the training queries are not predicted for the learned spread")
    monkeypatch.setattr(learned_spread.LearnedSpread, "from_frame", no_pass)
    below = fit(synthetic_obs, task=TaskConfig("forecast"), train=TRAIN, size="small", train_twin=False)
    assert below.learned_spread is None  # 40 synthetic series: far below 20,000 queries
    assert below.band_note() is None


def test_interpolation_never_learns_a_spread(synthetic_obs, monkeypatch) -> None:
    monkeypatch.setattr(learned_spread, "MIN_QUERIES", 200)
    fitted = fit(synthetic_obs, task=TaskConfig("interpolate"), train=TRAIN, size="small", train_twin=False)
    assert fitted.learned_spread is None


def test_the_band_is_the_learned_spread_calibrated(learned, synthetic_obs) -> None:
    data = prepare(learned, synthetic_obs)
    batch, _ = data.builder.batch(list(data.builder.series)[:6])
    with torch.no_grad():
        out = learned.levy(batch)
    spread, context = learned.band_spread(batch, out)
    np.testing.assert_allclose(spread, learned_pass_spread(learned.learned_spread, batch, out, context), rtol=1e-12)
    sigma = out.sigma.double().numpy()
    real = batch.qry_mask.numpy() > 0
    assert np.all(np.isfinite(spread[real])) and np.all(spread[real] > 0)
    assert not np.allclose(spread[real] / sigma[real], (spread[real] / sigma[real]).mean())  # not σ̂ rescaled


def test_saved_and_read_back_it_gives_the_same_band(learned, synthetic_obs, tmp_path: Path) -> None:
    before = predict_grid(learned, prepare(learned, synthetic_obs), n_points=7)
    opened = load_model(learned.save(tmp_path / "model"))
    assert opened.learned_spread is not None
    after = predict_grid(opened, prepare(opened, synthetic_obs), n_points=7)
    for column in ("mean", "sigma", "pred_std", "lower_conf", "upper_conf"):
        np.testing.assert_allclose(after[column], before[column], rtol=1e-6, atol=1e-9, err_msg=column)


def test_queries_get_the_learned_band_and_it_is_finite_and_ordered(learned, synthetic_obs) -> None:
    sid = synthetic_obs.series_ids[0]
    frame = synthetic_obs.frame
    last = float(frame.loc[frame["series_id"] == sid, "time"].max())
    queries = pd.DataFrame([(sid, channel, last + step) for channel in learned.channels for step in (0.5, 3.0, 12.0)],
                           columns=["series_id", "channel", "time"])
    pred = predict_user_queries(learned, synthetic_obs, queries, level=0.9)
    assert len(pred) == len(queries)
    assert np.all(np.isfinite(pred[["lower_conf", "upper_conf"]].to_numpy(float)))
    assert (pred["upper_conf"] > pred["lower_conf"]).all()


def test_the_band_note_says_what_sizes_the_band(learned) -> None:
    note = learned.band_note()
    assert note is not None and "learned from this file's own errors" in note
    assert f"{learned.learned_spread.n_queries:,} training queries" in note and "σ̂'s" in note
