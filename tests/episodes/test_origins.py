"""Few-series forecasting on rolling origins: the plan, the clock, the chronological split,
and through the whole pipeline and CLI on one drifting series — the adaptive band's
long-run guarantee, the future band, level carried past the training range, the user's
ids and clock in every output."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from levy_core.calibration.adaptive import AdaptiveConformal
from levy_core.calibration.over_time import ADAPTIVE_GAMMA, origin_gamma, rolling_coverage
from levy_core.cli.main import main
from levy_core.data import DataError, from_frame
from levy_core.episodes.origins import END, OriginClock, OriginPlan, plan_origins
from levy_core.episodes.tasks import TaskConfig, make_origin_split, training_frame
from levy_core.pipeline.evaluation import evaluate, walked_gamma
from levy_core.pipeline.modelfile import load_model
from levy_core.pipeline.predict import predict_future
from levy_core.pipeline.ranking import rank
from levy_core.pipeline.recipe import fit
from levy_core.training.train import TrainConfig

PSEUDO_ID = re.compile(r"@(\d+|end)\b")


def drifting_series(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """One irregularly sampled series (hours) with a rising level, a daily cycle and noise
    whose scale grows over time: what split conformal cannot calibrate."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 400, n))
    noise = rng.normal(0, 0.5 + 1.5 * t / 400)
    y = 10 + 0.05 * t + 2 * np.sin(2 * np.pi * t / 24) + noise
    return pd.DataFrame({"series_id": "sensor", "channel": "value", "time": t, "value": y})


@pytest.fixture(scope="module")
def drift():
    obs = from_frame(drifting_series())
    fitted = fit(obs, task=TaskConfig("forecast", horizon=24.0), train=TrainConfig(epochs=3, seed=0),
                          train_twin=False)
    return obs, fitted


# ----------------------------------------------------------------------------- plan and clock


def test_plan_defaults_and_refusals() -> None:
    frame = drifting_series()
    plan = plan_origins(frame)
    gap = float(np.median(np.diff(np.sort(frame["time"]))))
    span = float(frame["time"].max() - frame["time"].min())
    assert plan.horizon == pytest.approx(0.1 * span)
    assert plan.history >= 2 * plan.horizon and plan.history <= span / 2 + 1e-9
    assert plan.stride >= gap * (1 - 1e-9)
    assert plan_origins(frame, horizon=12.0).horizon == 12.0
    with pytest.raises(DataError, match="too short"):
        plan_origins(frame, horizon=1000.0)
    with pytest.raises(DataError, match="single instant"):
        plan_origins(frame.assign(time=1.0))
    with pytest.raises(ValueError, match="unknown origin-plan keys"):
        OriginPlan.from_dict({**plan.to_dict(), "extra": 1})
    assert OriginPlan.from_dict(plan.to_dict()) == plan


def test_clock_episodes_and_round_trip() -> None:
    frame = drifting_series()
    plan = OriginPlan(history=48.0, horizon=24.0, stride=5.0)
    clock = OriginClock.of(plan, frame)
    rolling = clock.rolling()
    origins = [clock.origins[m][1] for m in rolling]
    assert origins == sorted(origins) and np.allclose(np.diff(origins), 5.0)
    assert origins[0] == pytest.approx(frame["time"].min() + 48.0)
    assert origins[-1] <= frame["time"].max() - 24.0 + 1e-9
    episodes = clock.frame_to_model(frame)
    for model_id, g in episodes.groupby("series_id"):
        assert g["time"].min() >= -48.0 - 1e-9
        assert g["time"].max() <= (0.0 if model_id.endswith(f"@{END}") else 24.0) + 1e-9
    # a query maps to the latest origin at or before it, and back exactly (float64)
    times = np.array([origins[3] + 1.0, origins[3], frame["time"].max() + 100.0])
    queries = pd.DataFrame({"series_id": "sensor", "channel": "value", "time": times})
    model = clock.queries_to_model(queries)
    assert model["series_id"].tolist() == [rolling[3], rolling[3], f"sensor@{END}"]
    assert model["time"].iloc[1] == 0.0 and model["time"].iloc[2] == pytest.approx(100.0)
    back = clock.to_user(model)
    np.testing.assert_allclose(back["time"], times, rtol=4 * np.finfo(float).eps)
    assert set(back["series_id"]) == {"sensor"}
    with pytest.raises(DataError, match="no observations"):
        clock.queries_to_model(queries.assign(series_id="other"))


def test_split_is_chronological_and_training_targets_stop_at_the_first_calibration_origin() -> None:
    frame = drifting_series()
    model_frame, split, task = make_origin_split(frame, TaskConfig("forecast", horizon=24.0))
    assert split.mode == "origin" and task.cutoff == 0.0 and task.horizon == 24.0
    clock = split.clock(frame)
    origin = {m: o for m, (_, o) in clock.origins.items()}
    train, cal, test = ([origin[m] for m in ids] for ids in (split.train, split.calibration, split.test))
    assert max(train) < min(cal) and max(cal) < min(test), "nothing tested before what it was trained on"
    assert set(split.stopping) <= set(split.train) and split.stopping == split.train[-len(split.stopping):]
    trained = model_frame[model_frame["series_id"].isin(split.train) & (model_frame["time"] > 0)]
    absolute = trained["time"] + trained["series_id"].map(origin)
    assert (absolute < min(cal)).all()
    pd.testing.assert_frame_equal(training_frame(split, frame), model_frame)


# ------------------------------------------------- through the pipeline (slow: a rolling-origin fit, evaluated)


@pytest.mark.slow
def test_adaptive_walk_keeps_its_long_run_guarantee_on_a_drifting_series(drift) -> None:
    obs, fitted = drift
    assert fitted.split.mode == "origin" and set(fitted.adaptive) == {"levy"}
    result, pred = evaluate(fitted, obs, sampler_draws=0)
    levy = result["levy"]
    assert levy["test_origins"] == len(fitted.split.test)
    for level, coverage in levy["adaptive_coverage"].items():
        # Gibbs & Candès, Prop. 4.1: a theorem about the walk, so no slack at all
        assert abs((1 - coverage) - (1 - float(level))) <= levy["adaptive_bound"][level] + 1e-12
    assert "Gibbs" in result["guarantee"]
    assert {"origin", "lower_adaptive_90", "upper_adaptive_90"} <= set(pred.columns)
    rolling = rolling_coverage(pred)
    assert set(rolling["band"]) == {"adaptive", "split conformal"}
    assert rolling["coverage"].between(0, 1).all()


@pytest.mark.slow
def test_future_band_widens_and_keeps_the_level_past_the_training_range(drift) -> None:
    obs, fitted = drift
    fut = predict_future(fitted, obs, 72.0, n_points=12)
    assert set(fut["series_id"]) == {"sensor"} and (fut["horizon"] > 0).all()
    last_time = obs.frame["time"].max()
    np.testing.assert_allclose(fut["time"] - fut["horizon"], last_time)
    width = (fut["upper_adaptive"] - fut["lower_adaptive"]).to_numpy()
    assert np.isfinite(width).all() and width[-1] > width[0], "the band widens with the horizon"
    # the series rises past anything the training episodes saw: the forecast stays up there
    train_max = obs.frame["value"].iloc[: int(0.6 * len(obs.frame))].max()
    assert fut["mean"].median() > train_max, "pulled back to the training range"


@pytest.mark.slow
def test_a_walk_that_ends_past_its_step_still_gives_the_forecast_a_finite_band(drift) -> None:
    # ACI's α_t below 0 (more misses than γ absorbs) means an infinite band; a forecast takes
    # the widest normalised error seen instead, never ±inf (a user got ±inf for a whole year)
    obs, fitted = drift
    assert fitted.adaptive_by_channel  # walked on each channel's calibrated σ
    walked = fitted.adaptive["levy"]["0.9"]
    state = walked.to_dict() | {"alpha": -walked.gamma / 2}  # below 0: within ACI's reach [-γ, 1 + γ]
    fitted.adaptive["levy"]["0.9"] = AdaptiveConformal.from_dict(state)
    try:
        assert np.isinf(fitted.adaptive["levy"]["0.9"].quantile())
        fut = predict_future(fitted, obs, 24.0, n_points=6)
    finally:
        fitted.adaptive["levy"]["0.9"] = walked
    half = (fut["upper_adaptive"] - fut["lower_adaptive"]).to_numpy() / 2
    assert np.isfinite(half).all() and (half > 0).all()
    fut_walked = predict_future(fitted, obs, 24.0, n_points=6)
    ratio = half / ((fut_walked["upper_adaptive"] - fut_walked["lower_adaptive"]).to_numpy() / 2)
    # the same σ at each query: the widest score seen over the walked state's quantile
    np.testing.assert_allclose(ratio, max(walked.scores_) / walked.quantile(), rtol=1e-9)


@pytest.mark.slow
def test_the_fit_walks_at_one_step_per_horizon_of_overlapping_origins(drift) -> None:
    obs, fitted = drift
    plan = fitted.split.origin_plan
    assert plan["stride"] < plan["horizon"]  # consecutive origins share most of their window
    for walked in fitted.adaptive["levy"].values():
        assert walked.gamma == pytest.approx(ADAPTIVE_GAMMA * plan["stride"] / plan["horizon"])
    assert origin_gamma(plan) < ADAPTIVE_GAMMA
    # evaluate re-walks at the fit's own step; a model walked per origin (saved before the
    # step was scaled) is re-walked at that step, so its report matches its own band
    assert walked_gamma(fitted) == pytest.approx(origin_gamma(plan))
    walked = fitted.adaptive["levy"]
    fitted.adaptive["levy"] = {level: AdaptiveConformal.from_dict(aci.to_dict() | {"gamma": ADAPTIVE_GAMMA})
                               for level, aci in walked.items()}
    try:
        assert walked_gamma(fitted) == ADAPTIVE_GAMMA
        result, _ = evaluate(fitted, obs, sampler_draws=0)
        assert result["levy"]["gamma"] == ADAPTIVE_GAMMA
    finally:
        fitted.adaptive["levy"] = walked


@pytest.mark.slow
def test_the_adaptive_walks_scale_is_saved_and_a_model_saved_before_it_keeps_its_own(drift, tmp_path) -> None:
    obs, fitted = drift
    directory = fitted.save(tmp_path / "model")
    assert load_model(directory).adaptive_by_channel
    before = predict_future(fitted, obs, 24.0, n_points=4)
    meta_path = directory / "model.json"
    meta = json.loads(meta_path.read_text())
    del meta["adaptive_by_channel"]  # as a model saved before the walk ran on calibrated σ
    meta_path.write_text(json.dumps(meta))
    old = load_model(directory)
    assert not old.adaptive_by_channel
    # a model without the flag has its walk's state read with the raw spread, as it was walked:
    # here (the flag taken off a new model) the band moves by the channel's scale c, so the flag
    # is what decides which σ a saved walk is read with
    raw = predict_future(old, obs, 24.0, n_points=4)
    assert np.isfinite(raw["upper_adaptive"]).all()
    assert not np.allclose(raw["upper_adaptive"], before["upper_adaptive"])


@pytest.fixture(scope="module")
def evaluated(drift, tmp_path_factory):
    """``drift``'s model saved, its data written and ``levy evaluate`` run on them once (both
    tests below read its outputs): the folder, the model, the data, PRED.csv and the JSON."""
    obs, fitted = drift
    folder = tmp_path_factory.mktemp("evaluated")
    model_dir, data, pred_path, json_path = folder / "model", folder / "data.csv", folder / "pred.csv", folder / "e.json"
    fitted.save(model_dir)
    obs.frame.to_csv(data, index=False)
    assert main(["evaluate", str(model_dir), str(data), "--json", str(json_path), "--predictions",
                 str(pred_path), "--mc-passes", "0"]) == 0
    return model_dir, data, pred_path, json_path


@pytest.mark.slow
def test_outputs_are_in_the_users_ids_and_clock(drift, evaluated, tmp_path) -> None:
    obs, fitted = drift
    ranked, _ = rank(fitted, obs)
    assert ranked["series_id"].tolist() == ["sensor"]
    model_dir, data, pred_path, _ = evaluated
    queries = tmp_path / "q.csv"
    pd.DataFrame({"time": [390.5, 420.0]}).to_csv(queries, index=False)  # no series or channel: one of each
    outputs = {name: tmp_path / f"{name}.csv" for name in ("grid", "future", "queries", "rank")}
    outputs["pred"] = pred_path  # levy evaluate --predictions (the fixture's)
    assert main(["predict", str(model_dir), str(data), "--points", "3", "--out", str(outputs["grid"])]) == 0
    assert main(["predict", str(model_dir), str(data), "--horizon", "36", "--points", "4",
                 "--out", str(outputs["future"])]) == 0
    assert main(["predict", str(model_dir), str(data), "--queries", str(queries), "--out", str(outputs["queries"])]) == 0
    assert main(["rank", str(model_dir), str(data), "--out", str(outputs["rank"])]) == 0
    for name, path in outputs.items():
        text = path.read_text()
        assert not PSEUDO_ID.search(text), f"{name}: a pseudo id leaked"
        assert "sensor" in text, name
    q = pd.read_csv(outputs["queries"])
    assert q["time"].tolist() == [390.5, 420.0], "reported at the times asked, in the data's unit"
    future = pd.read_csv(outputs["future"])
    assert future["time"].min() > obs.frame["time"].max()


@pytest.mark.slow
def test_evaluate_predictions_carry_the_adaptive_walks_band(evaluated) -> None:
    """On rolling origins PRED.csv holds the band the walk gave each test origin (data
    units), not only split conformal's: what a backtest is judged on."""
    _, _, pred_path, json_path = evaluated
    pred = pd.read_csv(pred_path)
    assert {"origin", "lower_adaptive_90", "upper_adaptive_90"} <= set(pred.columns)
    assert (pred["lower_adaptive_90"] <= pred["upper_adaptive_90"]).all()
    y = pred["y_true"]
    walked = float(((pred["lower_adaptive_90"] <= y) & (y <= pred["upper_adaptive_90"])).mean())
    result = json.loads(json_path.read_text())
    # the walk's coverage is pooled over its queries: the written band must give it back
    # (up to a query on the band's edge after the round trip through data units)
    assert walked == pytest.approx(result["levy"]["adaptive_coverage"]["0.9"], abs=1.0 / len(pred))


@pytest.mark.parametrize(("unit", "said"), [("days", "spans 39 days"), ("hours", "spans 39 hours")])
def test_a_horizon_too_long_is_refused_in_the_datas_clock(unit: str, said: str) -> None:
    """One series of 40 daily (or hourly) readings asked for a 30-step horizon: the refusal
    says its durations in the unit the data came in, never raw hours for days."""
    from levy_core.data import DataError, from_frame
    from levy_core.episodes.tasks import TaskConfig
    from levy_core.training.train import TrainConfig

    t = np.arange(40.0)
    obs = from_frame(pd.DataFrame({"series_id": "a", "channel": "x", "time": t, "value": np.sin(t)}), time_unit=unit)
    hours = 30 * (24 if unit == "days" else 1)
    with pytest.raises(DataError, match=re.escape(said)) as err:
        fit(obs, task=TaskConfig("forecast", horizon=hours), train=TrainConfig(epochs=1))
    assert "30 " + unit in str(err.value) and not re.search(r"\d h\b", str(err.value))
