"""The opt-in per-query band map through the fit recipe: where it is fitted and calibrated,
the spread it gives, and its saved form."""

from __future__ import annotations

import numpy as np
import pytest

from levy_core.calibration.query_scale import CONTEXT_COLUMNS, query_features
from levy_core.pipeline.modelfile import load_model
from levy_core.pipeline.predict import observed_queries, split_predictions
from levy_core.pipeline.recipe import band_map_split, fit, prepare_fit
from levy_core.training.train import TrainConfig


@pytest.fixture(scope="module")
def mapped(synthetic_obs):
    return fit(synthetic_obs, train=TrainConfig(epochs=2, seed=0), size="small", train_twin=False,
                        band_map=True)


def test_the_map_is_fitted_on_held_out_series_and_the_band_on_others(mapped, synthetic_obs) -> None:
    assert mapped.query_scale is not None
    data = prepare_fit(synthetic_obs.frame, mapped.task, seed=0, split=mapped.split, scaler=mapped.scaler)
    map_ids, conformal_ids = band_map_split(data)
    assert set(map_ids).isdisjoint(conformal_ids) and set(conformal_ids) < set(data.calibration_ids)
    assert set(map_ids).isdisjoint(data.train_ids)  # never trained on
    summary = mapped.training["band_map"]
    assert summary == {"fit_series": len(map_ids), "calibration_series": len(conformal_ids),
                       "fit_queries": mapped.query_scale.n_queries}
    # split conformal's scores are those of the conformal half alone
    held = observed_queries(mapped, data.builder, conformal_ids)
    assert mapped.levy_calibration.conformal.n_calibration_ == len(held)


def test_the_spread_is_the_map_of_the_pass(mapped, synthetic_obs) -> None:
    pred = split_predictions(mapped, synthetic_obs, "test")
    index = {c: i for i, c in enumerate(mapped.channels)}
    x = query_features(pred["evidence_term"].to_numpy(), pred["disagreement_term_norm"].to_numpy(),
                       {k: pred[k].to_numpy() for k in CONTEXT_COLUMNS}, mapped.query_scale.unit)
    want = np.exp(mapped.query_scale.log_spread(pred["channel"].map(index).to_numpy(), x))
    np.testing.assert_allclose(pred["spread_norm"], want, rtol=1e-5)
    c = mapped.levy_calibration.scaled_gaussian.scales_for(pred["channel"].to_numpy(), len(pred))
    np.testing.assert_allclose(pred["pred_std"], c * pred["spread"], rtol=1e-6)
    assert not np.allclose(pred["spread_norm"], pred["sigma_norm"])


def test_a_saved_map_loads_and_predicts_the_same(mapped, synthetic_obs, tmp_path) -> None:
    loaded = load_model(mapped.save(tmp_path / "m"))
    assert loaded.query_scale == mapped.query_scale
    a = split_predictions(mapped, synthetic_obs, "test")
    b = split_predictions(loaded, synthetic_obs, "test")
    np.testing.assert_array_equal(a["upper_conf"], b["upper_conf"])


def test_without_the_option_the_spread_is_sigma_hat(fitted) -> None:
    assert fitted.query_scale is None and "band_map" not in fitted.training
