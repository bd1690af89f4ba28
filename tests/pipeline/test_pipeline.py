"""levy_core.pipeline on one tiny shared model (conftest ``fitted``): save/load, refusal of
anything that is not a model directory, predictions in original units, the split roles,
the evaluate contract, ranking and the diagnostics."""

from __future__ import annotations

import json
import math
import pickle
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from levy_core import metrics as M
from levy_core.data import DataError, Observations, from_frame
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline.diagnostics import attention_weights, operator_draws
from levy_core.pipeline.evaluation import (
    PRED_COLUMNS,
    coverage_checks,
    evaluate,
    sampler_check,
    timed,
)
from levy_core.pipeline.modelfile import FORMAT, ModelLoadError, load_model
from levy_core.pipeline.predict import predict_grid, predict_queries, split_predictions
from levy_core.pipeline.prepared import prepare
from levy_core.pipeline.query_context import predict_from_past, user_queries_to_model
from levy_core.pipeline.ranking import rank
from levy_core.pipeline.recipe import fit
from levy_core.pipeline.user_frames import predict_user_queries
from levy_core.training.train import TrainConfig

LEVELS = ["0.5", "0.8", "0.9", "0.95"]
M_KEYS = {
    "mse",
    "mae",
    "crps",
    "nll",
    "coverage",
    "conformal_coverage",
    "mean_width_90",
    "spearman_sigma_abs_error",
    "seconds",
}
GRID_COLUMNS = [
    "series_id",
    "channel",
    "time",
    "mean",
    "sigma",
    "pred_std",
    "lower_gauss",
    "upper_gauss",
    "lower_conf",
    "upper_conf",
    "log_evidence",
    "disagreement",
    "n_eff",
    "evidence_term",
    "disagreement_term",
]


@pytest.fixture(scope="module")
def evaluated(fitted, fit_obs):
    """``evaluate`` on the data the model was fitted on (its recorded test split)."""
    return evaluate(fitted, fit_obs, mc_passes=4)


def copy_model(fitted_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(fitted_dir, tmp_path / "copy"))


# ----------------------------------------------------------------------------- save / load


def test_save_load_round_trip_gives_identical_predictions(fitted, fitted_dir, fit_obs) -> None:
    loaded = load_model(fitted_dir)
    assert loaded.split == fitted.split and loaded.task == fitted.task
    assert loaded.channels == fitted.channels and loaded.model_config == fitted.model_config
    assert (
        loaded.scaler == fitted.scaler
        and loaded.data_hash == fitted.data_hash == fit_obs.content_hash()
    )
    assert loaded.levy_calibration.scale_ == fitted.levy_calibration.scale_
    # the last-value baseline and its calibration travel with the model
    np.testing.assert_array_equal(loaded.last_value.spread, fitted.last_value.spread)
    assert loaded.last_value_calibration.scale_ == fitted.last_value_calibration.scale_
    assert not loaded.levy.training and loaded.twin is not None and not loaded.twin.training
    for key, value in fitted.levy.state_dict().items():
        assert torch.equal(loaded.levy.state_dict()[key], value), key
    ids = fit_obs.series_ids[:3]
    a = predict_grid(fitted, fit_obs, ids, n_points=9, mc_passes=3)
    b = predict_grid(loaded, fit_obs, ids, n_points=9, mc_passes=3)
    pd.testing.assert_frame_equal(a, b)


def _truncate(d: Path) -> None:
    data = (d / "levy.safetensors").read_bytes()
    (d / "levy.safetensors").write_bytes(data[: len(data) // 2])


def _pickle_renamed(d: Path) -> None:
    state = {k: v.clone() for k, v in load_model(d).levy.state_dict().items()}
    (d / "levy.safetensors").write_bytes(pickle.dumps(state))


def _other_format(d: Path) -> None:
    meta = json.loads((d / "model.json").read_text())
    meta["format"] = "levy-model/999"
    (d / "model.json").write_text(json.dumps(meta))


def _no_model_json(d: Path) -> None:
    (d / "model.json").unlink()


def _json_not_json(d: Path) -> None:
    (d / "model.json").write_text("{ this is not json")


def _missing_key(d: Path) -> None:
    meta = json.loads((d / "model.json").read_text())
    del meta["split"]
    (d / "model.json").write_text(json.dumps(meta))


def _shape_mismatch(d: Path) -> None:
    meta = json.loads((d / "model.json").read_text())
    meta["model_config"]["d_model"] *= 2
    (d / "model.json").write_text(json.dumps(meta))


def _unknown_config_field(d: Path) -> None:
    meta = json.loads((d / "model.json").read_text())
    meta["model_config"]["from_a_newer_version"] = 1
    (d / "model.json").write_text(json.dumps(meta))


def _bad_scaler(d: Path) -> None:
    meta = json.loads((d / "model.json").read_text())
    meta["scaler"] = {"min": {}}
    (d / "model.json").write_text(json.dumps(meta))


def _bad_calibration(d: Path) -> None:
    meta = json.loads((d / "model.json").read_text())
    meta["levy_calibration"] = {"type": "something else"}
    (d / "model.json").write_text(json.dumps(meta))


def _truncate_twin(d: Path) -> None:
    data = (d / "softmax.safetensors").read_bytes()
    (d / "softmax.safetensors").write_bytes(data[:100])



@pytest.mark.parametrize(
    "corrupt",
    [
        _no_model_json,
        _other_format,
        _json_not_json,
        _missing_key,
        _shape_mismatch,
        _truncate,
        _pickle_renamed,
        _truncate_twin,
        _unknown_config_field,
        _bad_scaler,
        _bad_calibration,
    ],
)
def test_load_model_refuses_broken_directories(corrupt, fitted_dir: Path, tmp_path: Path) -> None:
    d = copy_model(fitted_dir, tmp_path)
    corrupt(d)
    with pytest.raises(ModelLoadError, match="levy fit") as info:
        load_model(d)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("where", ["missing", "empty", "file"])
def test_load_model_refuses_what_is_not_a_model_directory(where: str, tmp_path: Path) -> None:
    target = tmp_path / "m"
    if where == "empty":
        target.mkdir()
    elif where == "file":
        target.write_text("series_id,time,value\n")
    with pytest.raises(ModelLoadError, match="levy fit"):
        load_model(target)


def test_saved_format_is_recorded(fitted_dir: Path) -> None:
    meta = json.loads((fitted_dir / "model.json").read_text())
    assert meta["format"] == FORMAT
    assert (fitted_dir / "levy.safetensors").is_file() and (
        fitted_dir / "softmax.safetensors"
    ).is_file()


# ----------------------------------------------------------------------------- predictions


def test_predict_grid_columns_sizes_bands_and_units(fitted, fit_obs) -> None:
    n_points = 7
    ids = fit_obs.series_ids[:5]
    grid = predict_grid(fitted, fit_obs, ids, n_points=n_points, level=0.9)
    assert set(GRID_COLUMNS) <= set(grid.columns)
    assert len(grid) == len(ids) * len(fitted.channels) * n_points
    counts = grid.groupby(["series_id", "channel"]).size()
    assert len(counts) == len(ids) * len(fitted.channels) and (counts == n_points).all()
    numeric = grid[GRID_COLUMNS[2:]].to_numpy(np.float64)
    assert np.isfinite(numeric).all()
    for lo, hi in (("lower_gauss", "upper_gauss"), ("lower_conf", "upper_conf")):
        assert (grid[lo] <= grid["mean"]).all() and (grid["mean"] <= grid[hi]).all()
    assert (
        (grid["sigma"] >= 0).all()
        and (grid["pred_std"] >= 0).all()
        and (grid["disagreement"] >= 0).all()
    )
    # scaled Gaussian: pred_std = c_channel s(q) (each channel's own scale; s(q) the per-query map
    # of σ̂'s terms on a panel, σ̂ itself without one) and the 90 % band is mean ± z_0.95 c_channel s(q)
    # (a panel's held-out series: the calibration split's scales; every other series: those of
    # the calibration and test series together)
    channels = grid["channel"].to_numpy()
    c = fitted.levy_calibration.scaled_gaussian.scales_for(channels, len(grid))
    if fitted.new_series_calibration is not None:
        held = grid["series_id"].isin(set(fitted.split.calibration) | set(fitted.split.test)).to_numpy()
        assert 0 < held.sum() < len(grid), "the grid mixes held-out and training series"
        c = np.where(held, c, fitted.new_series_calibration["levy"].scaled_gaussian.scales_for(channels, len(grid)))
    np.testing.assert_allclose(grid["pred_std"], c * grid["spread"], rtol=1e-6, atol=1e-12)
    if fitted.query_scale is None:
        np.testing.assert_allclose(grid["spread"], grid["sigma"], rtol=1e-6)
    z = stats.norm.ppf(0.95)
    np.testing.assert_allclose(
        grid["upper_gauss"] - grid["mean"], z * grid["pred_std"], rtol=1e-5, atol=1e-9
    )
    # log σ̂ = ½ log trΣ + ½ log φ(Λ): the two shares add up to log σ̂. The terms come
    # from the model's float32 pass: each log is good to a few float32 ulps of its size
    log_sigma = np.log(grid["sigma"].to_numpy())
    eps32 = np.finfo(np.float32).eps
    np.testing.assert_array_less(
        np.abs(grid["evidence_term"] + grid["disagreement_term"] - log_sigma),
        8 * eps32 * (1 + np.abs(log_sigma) + np.abs(grid["disagreement_term"].to_numpy())),
    )
    # original units: channels on very different scales (≈5, ≈20, ≈100) each land in their own range
    observed = fit_obs.frame.groupby("channel")["value"].agg(["min", "max", "median"])
    for channel, part in grid.groupby("channel"):
        lo, hi = observed.loc[channel, "min"], observed.loc[channel, "max"]
        width = hi - lo
        assert part["mean"].between(lo - width, hi + width).all(), channel
        nearest = (observed["median"] - part["mean"].median()).abs().idxmin()
        assert nearest == channel, f"{channel} predictions look like another channel's units"


def test_predict_grid_rejects_unknown_series(fitted, fit_obs) -> None:
    with pytest.raises(DataError):
        predict_grid(fitted, fit_obs, ["no-such-series"], n_points=3)


def test_predict_queries_returns_one_row_per_query(fitted, fit_obs) -> None:
    sid = fit_obs.series_ids[0]
    queries = pd.DataFrame(
        {
            "series_id": [sid, sid, sid],
            "channel": ["noisy", "smooth", "noisy"],
            "time": [30.0, 31.5, 47.0],
        }
    )
    pred = predict_queries(fitted, fit_obs, queries)
    assert len(pred) == 3
    assert sorted(zip(pred["channel"], pred["time"], strict=True)) == sorted(
        zip(queries["channel"], queries["time"], strict=True)
    )
    assert np.isfinite(pred[["mean", "sigma", "lower_gauss", "upper_gauss"]].to_numpy()).all()
    # same query through the grid gives the same number (one code path, one context)
    grid = predict_grid(fitted, fit_obs, [sid], ["noisy"], n_points=5)
    one = predict_queries(fitted, fit_obs, grid[["series_id", "channel", "time"]])
    np.testing.assert_allclose(one["mean"], grid["mean"], rtol=1e-5)
    for bad in (
        {"series_id": ["nope"], "channel": ["noisy"], "time": [30.0]},
        {"series_id": [sid], "channel": ["nope"], "time": [30.0]},
        {"series": [sid], "channel": ["noisy"], "time": [30.0]},
    ):
        with pytest.raises(DataError):
            predict_queries(fitted, fit_obs, pd.DataFrame(bad))


def test_series_without_context_does_not_break_predictions(fitted, fit_obs) -> None:
    frame = fit_obs.frame
    sids = fit_obs.series_ids[:2]
    late = frame[(frame["series_id"] == sids[0]) & (frame["time"] > fitted.task.cutoff + 1)]
    normal = frame[frame["series_id"] == sids[1]]
    assert len(late) and (normal["time"] < fitted.task.cutoff).any(), "one series without context, one with"
    obs = from_frame(pd.concat([late, normal], ignore_index=True))
    # every series by default: the one without context is skipped and named, the other predicted
    grid = predict_grid(fitted, obs, n_points=5)
    assert grid.attrs["skipped_series"] == [sids[0]]
    assert set(grid["series_id"]) == {sids[1]}
    assert len(grid) == len(fitted.channels) * 5
    assert np.isfinite(grid[["mean", "sigma", "lower_gauss", "upper_gauss"]].to_numpy()).all()
    # asked for by name, it is refused with a message naming it
    with pytest.raises(DataError, match="nothing to predict from") as exc:
        predict_grid(fitted, obs, [sids[0], sids[1]], n_points=5)
    assert sids[0] in str(exc.value)


def test_split_predictions_only_contain_the_role(fitted, fit_obs) -> None:
    frame = fit_obs.frame
    for role in ("test", "calibration"):
        pred = split_predictions(fitted, fit_obs, role)
        assert set(pred["series_id"]) == set(getattr(fitted.split, role))
        assert (pred["time"] > fitted.task.cutoff).all()
        # y_true is the observation itself, in original units
        merged = pred.merge(
            frame, on=["series_id", "channel", "time"], how="left", validate="one_to_one"
        )
        assert merged["value"].notna().all()
        scale = fitted.scaler.scale_of(merged["channel"].to_numpy())
        np.testing.assert_allclose(
            merged["y_true"], merged["value"], rtol=0, atol=1e-5 * scale.max()
        )
        expected = frame[
            frame["series_id"].isin(getattr(fitted.split, role))
            & (frame["time"] > fitted.task.cutoff)
        ]
        assert len(pred) == len(expected)


# ----------------------------------------------------------------------------- evaluate


def test_evaluate_returns_exactly_the_documented_json(evaluated, fitted) -> None:
    result, _ = evaluated
    assert set(result) == {"n_test", "levy", "mc_dropout", "last_value", "softmax", "sampler_50", "coverage_note"}
    assert isinstance(result["n_test"], int) and result["n_test"] > 0
    assert set(result["levy"]) == M_KEYS | {"per_channel_data_units"}
    assert set(result["last_value"]) == M_KEYS | {"per_channel_data_units"}
    assert set(result["mc_dropout"]) == M_KEYS | {"passes", "cost_vs_levy", "per_channel_data_units"}
    assert result["mc_dropout"]["passes"] == 4
    assert set(result["softmax"]) == {"mse", "mae"}
    assert "crps" in result["sampler_50"] and result["sampler_50"]["crps"] > 0
    for method in ("levy", "mc_dropout", "last_value"):
        m = result[method]
        for key in ("coverage", "conformal_coverage"):
            assert list(m[key]) == LEVELS
            assert all(0 <= v <= 1 for v in m[key].values())
            assert m[key]["0.5"] <= m[key]["0.8"] <= m[key]["0.9"] <= m[key]["0.95"]
        assert (m["seconds"] > 0 or method == "last_value") and m["mse"] >= 0 and m["mae"] >= 0 and m["mean_width_90"] > 0
        assert -1 <= m["spearman_sigma_abs_error"] <= 1
    json.dumps(result)  # serialisable as it is


def test_evaluate_frame_matches_the_json(evaluated, fitted) -> None:
    result, pred = evaluated
    assert set(PRED_COLUMNS) <= set(pred.columns)
    assert len(pred) == result["n_test"]
    assert set(pred["series_id"]) <= set(fitted.split.test)
    # errors in the JSON are on the normalised (training min-max) scale
    scale = fitted.scaler.scale_of(pred["channel"].to_numpy())
    err = (pred["y_true"] - pred["mean"]) / scale
    assert result["levy"]["mse"] == pytest.approx(float(np.mean(err**2)), rel=1e-4)
    assert result["levy"]["mae"] == pytest.approx(float(np.mean(np.abs(err))), rel=1e-4)
    # conformal 90 % coverage is the share of y_true inside [lower_90, upper_90]
    inside = (pred["y_true"] >= pred["lower_90"]) & (pred["y_true"] <= pred["upper_90"])
    assert result["levy"]["conformal_coverage"]["0.9"] == pytest.approx(inside.mean(), abs=1e-9)
    assert (pred["mc_std"] > 0).all() and np.isfinite(
        pred[PRED_COLUMNS[3:]].to_numpy(np.float64)
    ).all()
    np.testing.assert_allclose(
        pred["pred_std"],
        fitted.levy_calibration.scaled_gaussian.scales_for(pred["channel"].to_numpy(), len(pred)) * pred["spread"],
        rtol=1e-6
    )


def test_fit_picks_the_epoch_on_held_out_training_series(fitted) -> None:
    split, counts = fitted.split, fitted.training["n_series"]
    assert split.stopping and set(split.stopping) < set(split.train)
    assert not set(split.stopping) & set(split.calibration)
    assert counts["stopping"] == len(split.stopping)
    assert counts["train"] == len(split.fitting()) == len(split.train) - len(split.stopping)


def test_coverage_checks_agree_with_the_json_and_the_metrics(evaluated, fitted) -> None:
    result, pred = evaluated
    table = coverage_checks(fitted, pred)
    assert list(table["method"].unique()) == ["Lévy", "MC-Dropout"]
    assert len(table) == 2 * len(LEVELS)
    n_cal_series = (fitted.training.get("band_map") or fitted.training["n_series"])["calibration_series" if
                                                                                   "band_map" in fitted.training else "calibration"]
    for row in table.itertuples():
        key = "levy" if row.method == "Lévy" else "mc_dropout"
        assert row.coverage == pytest.approx(result[key]["conformal_coverage"][str(row.level)], abs=1e-12)
        p, n = row.coverage, row.n_test
        n_cal = (fitted.levy_calibration if key == "levy" else fitted.mc_calibration).conformal.n_calibration_
        assert row.se_binomial == pytest.approx(math.sqrt(p * (1 - p) / n) * math.sqrt(1 + n / n_cal))
        assert row.n_series == pred["series_id"].nunique() >= 2
        mean_col, sig_col = ("mean_norm", "spread_norm") if key == "levy" else ("mc_mean_norm", "mc_std_norm")
        cal = fitted.levy_calibration if key == "levy" else fitted.mc_calibration
        lo, hi = cal.interval(pred[mean_col], pred[sig_col], row.level, kind="conformal",
                              groups=pred["channel"].to_numpy())
        se_series = M.coverage_standard_error(pred["y_norm"], lo, hi, groups=pred["series_id"].to_numpy())
        expected = max(se_series * math.sqrt(1 + row.n_series / n_cal_series), row.se_binomial)
        assert row.se_series == pytest.approx(expected)
        assert row.lower_series == pytest.approx(row.level - 3 * row.se_series)
        conformal = (fitted.levy_calibration if key == "levy" else fitted.mc_calibration).conformal
        assert conformal.is_grouped  # per-channel conformal by default
        slack = np.mean(1 / (conformal.calibration_counts(pred["channel"].to_numpy()) + 1))
        assert row.upper_series == pytest.approx(row.level + slack + 3 * row.se_series)
        assert row.holds_series == (row.lower_series <= row.coverage <= row.upper_series)


def test_the_sampler_check_alone_is_evaluates_entry(evaluated, fitted, fit_obs) -> None:
    """``sampler_check`` (what the dashboard computes only on the panels that show it) gives
    ``evaluate``'s ``sampler_50`` entry exactly: the same seeded draws on the same queries."""
    result, _ = evaluated
    assert sampler_check(fitted, fit_obs) == result["sampler_50"]
    with pytest.raises(ValueError, match="at least 2 draws"):
        sampler_check(fitted, fit_obs, n_draws=1)


def test_evaluate_on_a_new_file_uses_all_its_series(fitted, new_obs: Observations) -> None:
    result, pred = evaluate(fitted, new_obs, mc_passes=2, sampler_draws=0)
    assert set(pred["series_id"]) == set(new_obs.series_ids)
    expected = int((new_obs.frame["time"] > fitted.task.cutoff).sum())
    assert result["n_test"] == len(pred) == expected
    assert "sampler_50" not in result


# ----------------------------------------------------------------------------- ranking


def test_rank_scores_every_series_once_in_trust_order(fitted, fit_obs) -> None:
    ranked, seconds = rank(fitted, fit_obs)
    assert seconds > 0
    assert sorted(ranked["series_id"]) == sorted(fit_obs.series_ids)
    assert ranked["rank"].tolist() == list(range(1, fit_obs.n_series + 1))
    assert ranked["trust_score"].is_monotonic_increasing
    assert np.isfinite(ranked["trust_score"]).all() and (ranked["trust_score"] > 0).all()
    np.testing.assert_allclose(
        ranked["trust_score"], fitted.levy_calibration.scale_ * ranked["mean_sigma"]
    )
    counts = fit_obs.frame.groupby("series_id").size()
    assert (
        ranked.set_index("series_id")["n_observations"].sort_index().tolist()
        == counts.sort_index().tolist()
    )


# ----------------------------------------------------------------------------- diagnostics


def test_attention_weights_sum_to_one_per_head(fitted, fit_obs) -> None:
    sid = fit_obs.series_ids[1]
    weights = attention_weights(fitted, fit_obs, sid, "smooth", fitted.task.cutoff + 2.0)
    n_ctx = int(
        ((fit_obs.frame["series_id"] == sid) & (fit_obs.frame["time"] <= fitted.task.cutoff)).sum()
    )
    assert len(weights) == n_ctx
    heads = [c for c in weights.columns if c.startswith("weight_head")]
    assert len(heads) == fitted.model_config.num_heads
    for col in [*heads, "weight"]:
        assert (weights[col] >= 0).all()
        assert weights[col].sum() == pytest.approx(1.0, abs=1e-5), col
    assert (weights["time"] <= fitted.task.cutoff).all()
    with pytest.raises(DataError):
        attention_weights(fitted, fit_obs, "nope", "smooth", 30.0)
    with pytest.raises(DataError):
        attention_weights(fitted, fit_obs, sid, "nope", 30.0)


def test_operator_draws_match_the_closed_form_sigma(fitted, fit_obs) -> None:
    """The RMSD of the sampled operator around its mean is σ̂ (Campbell, phi="rate").
    Tolerance: 5 standard errors of the Monte-Carlo RMSD, estimated from the draws."""
    sid = fit_obs.series_ids[2]
    rows = fit_obs.frame[
        (fit_obs.frame["series_id"] == sid)
        & (fit_obs.frame["channel"] == "coupled")
        & (fit_obs.frame["time"] <= fitted.task.cutoff)
    ]
    t = float(rows["time"].iloc[len(rows) // 2])  # among the context: plenty of evidence
    n = 4000
    out = operator_draws(fitted, fit_obs, sid, "coupled", t, n_draws=n, seed=1)
    draws, mean, sigma = out["draws"], out["mean"], out["sigma"]
    assert draws.shape == (n,) and np.isfinite(draws).all() and sigma > 0
    sq = (draws - mean) ** 2
    rmsd = math.sqrt(sq.mean())
    assert out["rmsd"] == pytest.approx(rmsd, rel=1e-6)
    se_rmsd = sq.std(ddof=1) / math.sqrt(n) / (2 * rmsd)  # delta method on the mean square
    assert abs(rmsd - sigma) <= 5 * se_rmsd, (rmsd, sigma, se_rmsd)
    # the draws are centred on the closed-form mean (5 standard errors)
    assert abs(draws.mean() - mean) <= 5 * draws.std(ddof=1) / math.sqrt(n)
    # the closed form is the prediction itself
    pred = predict_queries(
        fitted, fit_obs, pd.DataFrame({"series_id": [sid], "channel": ["coupled"], "time": [t]})
    )
    assert mean == pytest.approx(float(pred["mean"].iloc[0]), rel=1e-5)
    assert sigma == pytest.approx(float(pred["sigma"].iloc[0]), rel=1e-5)
    # scaled draws spread by c, and the same seed replays the same draws
    c = out["scale_c"]
    # (draws are float32: compare to float32 resolution of the values)
    np.testing.assert_allclose(
        out["scaled_draws"] - mean,
        c * (draws - mean),
        rtol=1e-5,
        atol=1e-6 * c * np.abs(draws).max(),
    )
    again = operator_draws(fitted, fit_obs, sid, "coupled", t, n_draws=n, seed=1)
    np.testing.assert_array_equal(again["draws"], draws)


# ----------------------------------------------------------------------------- window mode


@pytest.fixture(scope="module")
def window_fitted(synthetic_obs: Observations):
    """Few series (< 10) interpolated: split by time windows. Lévy only, one epoch."""
    obs = synthetic_obs.subset(synthetic_obs.series_ids[-3:])
    return obs, fit(obs, task=TaskConfig("interpolate"), train=TrainConfig(epochs=1), train_twin=False)


def test_window_mode_pipeline_predicts_and_evaluates_test_windows(window_fitted) -> None:
    obs, fitted = window_fitted
    assert fitted.split.mode == "window" and fitted.twin is None
    grid = predict_grid(fitted, obs, fitted.split.test[:2], n_points=4)
    assert len(grid) == 2 * len(fitted.channels) * 4
    assert np.isfinite(grid[["mean", "sigma", "lower_gauss", "upper_gauss"]].to_numpy()).all()
    result, pred = evaluate(fitted, obs, sampler_draws=0)
    assert set(result) == {"n_test", "levy", "last_value", "coverage_note"}, "no twin: no MC-Dropout or softmax entries"
    assert set(pred["series_id"]) <= set(fitted.split.test) and len(pred) == result["n_test"] > 0


def test_window_mode_accepts_queries_in_the_users_series_ids(window_fitted) -> None:
    obs, fitted = window_fitted
    sid = obs.series_ids[0]
    queries = pd.DataFrame({"series_id": [sid], "channel": ["smooth"], "time": [30.0]})
    pred = predict_user_queries(fitted, obs, queries)
    assert len(pred) == 1 and np.isfinite(pred["mean"]).all()
    assert pred["series_id"].iloc[0] == sid and pred["time"].iloc[0] == 30.0, "reported in the user's clock"
    # the same query in the model's own space (the window holding 30 h) gives the same numbers
    data = prepare(fitted, obs)
    model_q = user_queries_to_model(data, queries)
    assert model_q["series_id"].iloc[0] == data.clock.queries_to_model(queries)["series_id"].iloc[0]
    assert model_q["series_id"].iloc[0].startswith(f"{sid}@")
    same = predict_from_past(fitted, obs, model_q)
    np.testing.assert_array_equal(same["mean"].to_numpy(), pred["mean"].to_numpy())
    # interpolation: the whole window is the context, the fixed hold-out included
    assert int(pred["n_context"].iloc[0]) == len(data.builder.series[model_q["series_id"].iloc[0]].time)


def test_short_timings_are_repeated_and_the_median_reported() -> None:
    calls = []

    def work():
        calls.append(1)
        return len(calls)

    result, seconds = timed(work, min_total=10.0, max_runs=7)
    assert result == 1 and len(calls) == 7 and 0 <= seconds < 0.1  # instant work: all 7 runs
    calls.clear()
    result, _ = timed(work, min_total=0.0)
    assert result == 1 and len(calls) == 1  # long enough at once: one run


def test_a_panel_fit_fits_the_offsets_mean_reversion_and_reports_it(fitted) -> None:
    """Panels: each channel's reversion (levy_core.training.reversion) is fitted before training,
    the same for both models, and the fit report says it."""
    report = fitted.training["levy"]["reversion"]
    assert report["rate"] == pytest.approx(fitted.levy.backbone.revert_rate.tolist(), rel=1e-5)
    assert report["mse"] <= report["last_mse"]
    assert torch.equal(fitted.levy.backbone.revert_rate, fitted.twin.backbone.revert_rate)
    assert torch.equal(fitted.levy.backbone.revert_to_series, fitted.twin.backbone.revert_to_series)


def test_a_panel_fit_installs_no_correction_bound(fitted) -> None:
    """New series of a panel are exchangeable with the held-out ones: no bound (recipe.keep_correction)."""
    assert fitted.split.mode != "origin"
    assert bool(torch.isinf(fitted.levy.correction_bound).all())
    assert fitted.training["levy"]["correction_bound"] is None


def test_a_panel_fit_applies_the_correction_it_measured(fitted) -> None:
    """Only one series or a few on rolling origins hold the learned correction back
    (recipe.keep_correction): a panel keeps the share its held-out series chose."""
    info = fitted.training["levy"]
    assert "correction_held_back" not in info and fitted.base_forecast is None
    assert fitted.levy.correction_scale.tolist() == pytest.approx(info["correction_scale"])
