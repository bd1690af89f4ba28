"""Measure next (``levy_core.decisions.advise``): the evidence part is exact (the evidence of really
appending the observation), a candidate whose value is given is the band of really
appending it, all candidates × draws run in one pass, bad input is named, and a seed fixes
the advice. Both a many-series fit and a fit on rolling origins (moving origin, classical
offset refitted with the new value)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from levy_core.data import DataError, Observations
from levy_core.decisions.advise import advise
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline.predict import predict_future
from levy_core.pipeline.recipe import fit
from levy_core.training.train import TrainConfig

HORIZON, POINTS = 6.0, 6


@pytest.fixture(scope="module")
def one_series(new_obs: Observations) -> Observations:
    return new_obs.subset([new_obs.series_ids[0]])


@pytest.fixture(scope="module")
def origin_fit(synthetic_obs: Observations):
    """A tiny fit on rolling origins (two series: classical offsets, lead factors)."""
    obs = synthetic_obs.subset(synthetic_obs.series_ids[:2])
    fitted = fit(obs, task=TaskConfig(horizon=HORIZON), train=TrainConfig(epochs=1, seed=0), size="small",
                          train_twin=False)
    return fitted, obs


def appended(obs: Observations, series_id: str, channel: str, time: float, value: float) -> Observations:
    extra = pd.DataFrame({"series_id": [series_id], "channel": [channel], "time": [time], "value": [value]})
    frame = pd.concat([obs.frame, extra]).sort_values(["series_id", "time", "channel"], kind="stable")
    return Observations(frame=frame.reset_index(drop=True), report=obs.report)


def really(fitted, obs: Observations, series_id: str, channel: str, ahead: float, value: float,
           advice) -> pd.DataFrame:
    """The forecast of the data with the measurement really appended, at the advice's
    target times still ahead of it (the grid is aligned: ``ahead`` is a whole step)."""
    data = appended(obs, series_id, channel, advice.now + ahead, value)
    steps = int(round(POINTS * (HORIZON - ahead) / HORIZON))
    pred = predict_future(fitted, data, HORIZON - ahead, n_points=steps, series_ids=[series_id],
                                   channels=list(advice.targets))
    band = advice.band(0).reset_index(names="query")
    merged = band.merge(pred, on="channel", suffixes=("", "_real"))
    merged = merged[np.isclose(merged["time"], merged["time_real"], atol=1e-6)]
    assert len(merged) == steps * len(advice.targets)
    return merged


def head_mean_log(log_ev: np.ndarray) -> np.ndarray:
    """log of the mean Λ over heads, as ``run_pass`` reports ``log_evidence``."""
    return np.log(np.exp(log_ev).mean(axis=0))


@pytest.mark.parametrize("ahead", [0.0, 2.0])
def test_given_value_is_the_band_of_really_appending_it(fitted, one_series, ahead: float) -> None:
    sid = one_series.series_ids[0]
    advice = advise(fitted, one_series, horizon=HORIZON, points=POINTS, candidates=[("noisy", ahead)], values=[90.0])
    merged = really(fitted, one_series, sid, "noisy", ahead, 90.0, advice)
    np.testing.assert_allclose(merged["lower"], merged["lower_conf"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(merged["upper"], merged["upper_conf"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(merged["mean"], merged["mean_real"], rtol=1e-4, atol=1e-4)
    # the exact evidence part: the evidence of the data with the observation appended
    ev = head_mean_log(advice.log_evidence_after[0])[merged["query"].to_numpy()]
    np.testing.assert_allclose(ev, merged["log_evidence"], atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("ahead", [0.0, 2.0])
def test_rolling_origins_refit_the_offset_and_move_the_origin(origin_fit, ahead: float) -> None:
    fitted, obs = origin_fit
    assert fitted.split.mode == "origin" and fitted.base_forecast is not None
    sid = obs.series_ids[0]
    advice = advise(fitted, obs, sid, horizon=HORIZON, points=POINTS, candidates=[("smooth", ahead)], values=[5.0])
    merged = really(fitted, obs, sid, "smooth", ahead, 5.0, advice)
    np.testing.assert_allclose(merged["mean"], merged["mean_real"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(merged["upper"] - merged["lower"], merged["upper_conf"] - merged["lower_conf"],
                               rtol=1e-4, atol=1e-4)
    ev = head_mean_log(advice.log_evidence_after[0])[merged["query"].to_numpy()]
    np.testing.assert_allclose(ev, merged["log_evidence"], atol=1e-4)
    # a forecast issued at the measurement does not reach back: targets before it keep today's band
    before = advice.target_time < advice.now + ahead
    assert before.any() == (ahead > 0)
    np.testing.assert_array_equal(advice.width_after[0, before], advice.width_before[before])
    np.testing.assert_array_equal(advice.width_evidence[0, before], advice.width_before[before])


def test_evidence_part_does_not_depend_on_the_value(fitted, one_series) -> None:
    kw = dict(horizon=HORIZON, points=POINTS, candidates=[("coupled", 0.0), ("smooth", 1.0)])
    low, high = advise(fitted, one_series, values=[0.0, -5.0], **kw), advise(fitted, one_series, values=[40.0, 20.0],
                                                                             **kw)
    np.testing.assert_array_equal(low.log_evidence_after, high.log_evidence_after)
    np.testing.assert_array_equal(low.width_evidence, high.width_evidence)
    assert not np.allclose(low.width_after, high.width_after), "the value part must depend on the value"
    assert not np.allclose(low.mean_after, high.mean_after)
    # more evidence, today's disagreement: the evidence part never widens the band
    assert (low.width_evidence <= low.width_before[None] * (1 + 1e-9)).all()
    total, evidence, value = low.per_target()
    np.testing.assert_allclose(total, evidence + value)


def test_all_candidates_and_draws_run_in_one_pass(fitted, one_series, monkeypatch) -> None:
    sizes: list[int] = []
    model = fitted.levy

    def counting(batch):
        sizes.append(batch.ctx_time.shape[0])
        return model(batch)

    monkeypatch.setattr(fitted, "levy", counting)  # restored after the test
    advice = advise(fitted, one_series, horizon=HORIZON, points=POINTS, at=[0.0, 1.5, 3.0], draws=4)
    assert len(advice.candidates) == 3 * len(fitted.channels)
    assert sizes == [1, 3 * len(fitted.channels) * 4]  # today, then every candidate × draw at once


def test_ranking_table_and_sentences(fitted, one_series) -> None:
    advice = advise(fitted, one_series, horizon=HORIZON, points=POINTS, draws=4, seed=1)
    ranking = advice.ranking()
    assert list(ranking["rank"]) == list(range(1, len(ranking) + 1))
    assert ranking["narrowing_pct"].is_monotonic_decreasing
    frame = advice.to_frame()
    assert len(frame) == len(advice.candidates) * len(advice.targets)
    assert {"narrowing_pct", "evidence_pct", "value_pct", "width_before", "width_after"} <= set(frame.columns)
    assert np.isfinite(frame[["narrowing_pct", "evidence_pct", "value_pct"]].to_numpy()).all()
    best = ranking.iloc[0]
    sentence = advice.sentences(1)[0]
    assert sentence.startswith(f"measuring {best['channel']} ") and "6 h band of" in sentence and "%" in sentence
    assert sentence.count(" by ") == len(advice.targets)
    short = advice.sentences(1, targets=1)[0]  # many targets: the most narrowed by name, the rest summed up
    assert short.count(" by ") == 2 and f"of the {len(advice.targets) - 1} other targets by " in short


def test_a_seed_fixes_the_advice(fitted, one_series) -> None:
    kw = dict(horizon=HORIZON, points=POINTS, candidates=["noisy", "smooth"], at=[0.0, 2.0], draws=4)
    a, b = advise(fitted, one_series, seed=3, **kw), advise(fitted, one_series, seed=3, **kw)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    np.testing.assert_array_equal(a.draws, b.draws)
    c = advise(fitted, one_series, seed=4, **kw)
    assert not np.array_equal(a.draws, c.draws)
    np.testing.assert_array_equal(a.width_evidence, c.width_evidence)  # exact: no draw involved


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(targets=["Lactate"]), DataError, "unknown channel 'Lactate' among the targets"),
    (dict(candidates=["K"]), DataError, "unknown channel 'K' among the candidates"),
    (dict(candidates=[("noisy", -1.0)]), DataError, "before the series' last observation"),
    (dict(at=[0.0, 99.0]), DataError, "past the 6 hours horizon"),
    (dict(targets=[]), ValueError, "target set is empty"),
    (dict(candidates=[]), ValueError, "candidate set is empty"),
    (dict(draws=0), ValueError, "draws"),
    (dict(series_id="nope"), DataError, "unknown series 'nope'"),
    (dict(candidates=["noisy"], at=[0.0], values=[1.0, 2.0]), ValueError, "one value per candidate"),
])
def test_bad_input_is_named(fitted, one_series, kwargs, error, words) -> None:
    with pytest.raises(error, match=words):
        advise(fitted, one_series, horizon=HORIZON, points=POINTS, **kwargs)


def test_several_series_need_a_name(fitted, new_obs) -> None:
    with pytest.raises(DataError, match="name one"):
        advise(fitted, new_obs, horizon=HORIZON)
    advice = advise(fitted, new_obs, new_obs.series_ids[1], horizon=HORIZON, points=3, at=[0.0], draws=2)
    assert advice.series_id == new_obs.series_ids[1]


@pytest.mark.slow
def test_with_the_per_query_map_a_given_value_is_the_band_of_really_appending_it(synthetic_obs, one_series) -> None:
    """The opt-in map s(q) reads the context (distances, the channel's history): advice on a
    model with it gives, for a given value, the band of really appending that value."""
    mapped = fit(synthetic_obs, train=TrainConfig(epochs=2, seed=0), size="small", train_twin=False,
                          band_map=True)
    assert mapped.query_scale is not None
    sid = one_series.series_ids[0]
    advice = advise(mapped, one_series, horizon=HORIZON, points=POINTS, candidates=[("noisy", 2.0)], values=[90.0])
    merged = really(mapped, one_series, sid, "noisy", 2.0, 90.0, advice)
    np.testing.assert_allclose(merged["lower"], merged["lower_conf"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(merged["upper"], merged["upper_conf"], rtol=1e-4, atol=1e-4)
    assert np.isfinite(advice.width_evidence).all()


def test_with_a_learned_spread_a_given_value_is_the_band_of_really_appending_it(synthetic_obs, one_series,
                                                                                 monkeypatch) -> None:
    """A forecast panel past the gate sizes its band by the learned spread (here the gate is
    lowered to the synthetic panel's size): advice gives, for a given value, the band of really
    appending it, and an evidence part that does not depend on the value."""
    from levy_core.calibration import learned_spread

    monkeypatch.setattr(learned_spread, "MIN_QUERIES", 200)
    learned = fit(synthetic_obs, task=TaskConfig("forecast"), train=TrainConfig(epochs=2, seed=0), size="small",
                  train_twin=False)
    assert learned.learned_spread is not None and learned.query_scale is None
    sid = one_series.series_ids[0]
    advice = advise(learned, one_series, horizon=HORIZON, points=POINTS, candidates=[("noisy", 2.0)], values=[90.0])
    merged = really(learned, one_series, sid, "noisy", 2.0, 90.0, advice)
    np.testing.assert_allclose(merged["lower"], merged["lower_conf"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(merged["upper"], merged["upper_conf"], rtol=1e-4, atol=1e-4)
    other = advise(learned, one_series, horizon=HORIZON, points=POINTS, candidates=[("noisy", 2.0)], values=[40.0])
    np.testing.assert_array_equal(advice.width_evidence, other.width_evidence)
    assert np.isfinite(advice.width_evidence).all()
