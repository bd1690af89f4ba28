"""Measure next on a channel fitted on its log: a given value's advised band is the band of
really appending it (asymmetric, above zero), and a value the log cannot take is refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from levy_core.data import Observations, from_frame
from levy_core.decisions.advise import advise
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import predict_future
from levy_core.pipeline.recipe import fit
from levy_core.training.train import TrainConfig

HORIZON, POINTS = 6.0, 6


@pytest.fixture(scope="module")
def log_fit() -> tuple[FittedModel, Observations]:
    rng = np.random.default_rng(0)
    rows = []
    for s in range(40):
        level = rng.normal(0.0, 1.0)
        for t in np.sort(rng.uniform(0, 48, 14)):
            rows.append((f"p{s}", float(t), "bili", float(np.exp(level + rng.normal(0, 0.5)))))
            rows.append((f"p{s}", float(t), "temp", float(rng.normal(37.0, 0.4))))
    obs = from_frame(pd.DataFrame(rows, columns=["series_id", "time", "channel", "value"]))
    fitted = fit(obs, task=TaskConfig(cutoff=24.0), train=TrainConfig(epochs=2, seed=0), size="small",
                          train_twin=False)
    assert fitted.scaler.transforms == {"bili": "log"}
    return fitted, obs


def test_a_given_value_is_the_band_of_really_appending_it_on_a_log_channel(log_fit) -> None:
    fitted, obs = log_fit
    sid = obs.series_ids[0]
    one = obs.subset([sid])
    advice = advise(fitted, one, horizon=HORIZON, points=POINTS, targets=["bili"], candidates=[("bili", 0.0)],
                    values=[2.0])
    extra = pd.DataFrame({"series_id": [sid], "channel": ["bili"], "time": [advice.now], "value": [2.0]})
    frame = pd.concat([one.frame, extra]).sort_values(["series_id", "time", "channel"], kind="stable")
    real = predict_future(fitted, Observations(frame=frame.reset_index(drop=True), report=one.report),
                                   HORIZON, n_points=POINTS, series_ids=[sid], channels=["bili"])
    band = advice.band(0)
    assert len(band) == len(real) == POINTS
    np.testing.assert_allclose(band["mean"], real["mean"], rtol=1e-4)
    np.testing.assert_allclose(band["lower"], real["lower_conf"], rtol=1e-4)
    np.testing.assert_allclose(band["upper"], real["upper_conf"], rtol=1e-4)
    today = advice.band()
    assert (today["lower"] > 0).all() and (band["lower"] > 0).all()
    assert ((today["upper"] - today["mean"]) > (today["mean"] - today["lower"])).all()  # asymmetric: longer above
    assert (advice.candidates["value_std"] > 0).all()


def test_a_value_the_log_cannot_take_is_refused(log_fit) -> None:
    fitted, obs = log_fit
    with pytest.raises(ValueError, match=r"-1.*'bili'.*log"):
        advise(fitted, obs.subset([obs.series_ids[0]]), horizon=HORIZON, points=POINTS, targets=["bili"],
               candidates=[("bili", 0.0)], values=[-1.0])
