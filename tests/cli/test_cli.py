"""The ``levy`` command line, in-process (``levy_core.cli.main``) on the shared tiny model,
plus one real ``python -m levy_core`` process for the exit code. Contract: product.md."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import assert_clean_error, run

from levy_core.pipeline.evaluation import PRED_COLUMNS
from levy_core.pipeline.modelfile import load_model
from levy_core.pipeline.predict import predict_grid
from levy_core.pipeline.recipe import size_name

PREDICT_COLUMNS = [
    "series_id",
    "channel",
    "time",
    "mean",
    "sigma",
    "lower",
    "upper",
    "log_evidence",
    "disagreement",
    "n_eff",
]
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
LEVELS = ["0.5", "0.8", "0.9", "0.95"]
# product.md, `levy evaluate --predictions PRED.csv`
EVALUATE_COLUMNS = [
    "series_id",
    "channel",
    "time",
    "y_true",
    "mean",
    "sigma",
    "spread",
    "pred_std",
    "lower_90",
    "upper_90",
    "log_evidence",
    "disagreement",
    "n_eff",
    "mc_mean",
    "mc_std",
]


# ----------------------------------------------------------------------------- happy paths


def test_fit_size_names_a_preset_and_refuses_others(capsys, fit_csv: Path, tmp_path: Path) -> None:
    # --nice 0: the worker's own priority (the default, 10, waits behind every other job on the machine)
    code, _, err = run(capsys, "fit", fit_csv, "--out", tmp_path / "m", "--epochs", 1, "--max-seconds", 2,
                       "--no-twin", "--quiet", "--size", "medium", "--nice", 0)
    assert code == 0, err
    assert "fitted a medium model" in err
    assert size_name(load_model(tmp_path / "m").model_config) == "medium"
    code, _, err = run(capsys, "fit", fit_csv, "--out", tmp_path / "n", "--size", "huge")
    assert code == 2 and "invalid choice: 'huge'" in err


def test_fit_writes_a_model_directory(capsys, fit_csv: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "model"
    code, out, err = run(
        capsys,
        "fit",
        fit_csv,
        "--out",
        out_dir,
        "--epochs",
        1,
        "--no-twin",
        "--quiet",
        "--task",
        "interpolate",
        "--seed",
        3,
    )
    assert code == 0, err
    assert (out_dir / "model.json").is_file() and (out_dir / "levy.safetensors").is_file()
    assert not (out_dir / "softmax.safetensors").exists(), "--no-twin"
    assert "saved to" in out + err and "Traceback" not in out + err
    assert "fitted a small model" in err, "--size auto on a file of few series: small, and said"
    fitted = load_model(out_dir)  # loadable, with the options recorded
    assert fitted.task.kind == "interpolate" and fitted.split.seed == 3
    assert size_name(fitted.model_config) == "small"
    assert fitted.train_config.epochs == 1 and fitted.twin is None
    assert sorted(fitted.split.train + fitted.split.calibration + fitted.split.test) == sorted(
        pd.read_csv(fit_csv)["series_id"].unique()
    )
    # a panel: the band for new series, on how many queries, said beside the test split's
    assert fitted.split.mode == "series" and fitted.new_series_calibration is not None
    n_new = fitted.new_series_calibration["levy"].conformal.n_calibration_
    n_cal = fitted.levy_calibration.conformal.n_calibration_
    assert f"band: A new series (or a training series' forecast) takes the band calibrated on the calibration and " \
           f"test series together ({n_new:,} queries" in err
    assert f"band of the calibration series alone ({n_cal:,} queries" in err and n_new > n_cal


def test_predict_writes_the_documented_columns(
    capsys, fitted, fitted_dir, fit_obs, fit_csv, tmp_path
) -> None:
    out = tmp_path / "pred.csv"
    code, _, err = run(capsys, "predict", fitted_dir, fit_csv, "--out", out, "--points", 4)
    assert code == 0, err
    pred = pd.read_csv(out)
    assert list(pred.columns) == PREDICT_COLUMNS
    assert len(pred) == fit_obs.n_series * len(fitted.channels) * 4
    assert set(pred["series_id"].astype(str)) == set(fit_obs.series_ids)
    assert np.isfinite(pred[PREDICT_COLUMNS[2:]].to_numpy(np.float64)).all()
    assert (pred["lower"] <= pred["mean"]).all() and (pred["mean"] <= pred["upper"]).all()
    assert (pred["sigma"] >= 0).all()
    # --band conformal and --level are passed through to the library
    out_conf = tmp_path / "pred_conf.csv"
    code, _, err = run(
        capsys,
        "predict",
        fitted_dir,
        fit_csv,
        "--out",
        out_conf,
        "--points",
        4,
        "--band",
        "conformal",
        "--level",
        0.8,
    )
    assert code == 0, err
    conf = pd.read_csv(out_conf)
    grid = predict_grid(fitted, fit_obs, n_points=4, level=0.8)
    np.testing.assert_allclose(conf["lower"], grid["lower_conf"], rtol=1e-6)
    np.testing.assert_allclose(conf["upper"], grid["upper_conf"], rtol=1e-6)


def test_predict_with_a_queries_file(capsys, fitted_dir, fit_obs, fit_csv, tmp_path) -> None:
    sid = fit_obs.series_ids[3]
    queries = pd.DataFrame(
        {
            "series_id": [sid] * 3,
            "channel": ["smooth", "noisy", "coupled"],
            "time": [25.0, 30.25, 47.9],
        }
    )
    qfile = tmp_path / "queries.csv"
    queries.to_csv(qfile, index=False)
    out = tmp_path / "pred.csv"
    code, _, err = run(capsys, "predict", fitted_dir, fit_csv, "--out", out, "--queries", qfile)
    assert code == 0, err
    pred = pd.read_csv(out)
    assert list(pred.columns) == PREDICT_COLUMNS and len(pred) == 3
    got = sorted(zip(pred["channel"], pred["time"], strict=True))
    assert got == sorted(zip(queries["channel"], queries["time"], strict=True))


def test_evaluate_writes_exactly_the_documented_json_and_columns(
    capsys, fitted, fitted_dir, fit_csv, tmp_path
) -> None:
    json_path, pred_path = tmp_path / "eval.json", tmp_path / "pred.csv"
    code, _, err = run(
        capsys,
        "evaluate",
        fitted_dir,
        fit_csv,
        "--json",
        json_path,
        "--predictions",
        pred_path,
        "--mc-passes",
        3,
    )
    assert code == 0, err

    def no_nan(token: str):
        raise AssertionError(f"JSON contains {token}: not valid JSON for other tools")

    result = json.loads(json_path.read_text(), parse_constant=no_nan)
    assert set(result) == {"n_test", "levy", "mc_dropout", "last_value", "softmax", "sampler_50", "coverage_note"}
    assert set(result["levy"]) == M_KEYS | {"per_channel_data_units"} == set(result["last_value"])
    assert set(result["mc_dropout"]) == M_KEYS | {"passes", "cost_vs_levy", "per_channel_data_units"}
    assert result["mc_dropout"]["passes"] == 3
    for method in ("levy", "mc_dropout", "last_value"):
        assert all(set(s) == {"n", "mae", "rmse", "crps"} for s in result[method]["per_channel_data_units"].values())
    for method in ("levy", "mc_dropout"):
        assert list(result[method]["coverage"]) == LEVELS
        assert list(result[method]["conformal_coverage"]) == LEVELS
    assert set(result["softmax"]) == {"mse", "mae"}
    assert "crps" in result["sampler_50"]
    pred = pd.read_csv(pred_path)
    assert list(pred.columns) == EVALUATE_COLUMNS == PRED_COLUMNS
    assert len(pred) == result["n_test"] > 0
    # the file the model was fitted on: its recorded test split, not every series
    assert set(pred["series_id"].astype(str)) <= set(fitted.split.test)
    # the verdict on each conformal band, per method, on stderr
    assert "per-series s.e." in err
    for method in ("Lévy", "MC-Dropout"):
        line = next(ln for ln in err.splitlines() if ln.strip().startswith(f"{method}:"))
        assert [p.split()[0] for p in line.split(":", 1)[1].split(",")] == ["50", "80", "90", "95"]
        cov90 = result["levy" if method == "Lévy" else "mc_dropout"]["conformal_coverage"]["0.9"]
        assert f"90 % {cov90:.3f}" in line


def test_rank_prints_the_summary_line(capsys, fit_obs, fitted_dir, fit_csv, tmp_path) -> None:
    out = tmp_path / "rank.csv"
    code, stdout, err = run(capsys, "rank", fitted_dir, fit_csv, "--out", out)
    assert code == 0, err
    last = stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"scored (\d+) series in (\d+\.\d\d) s", last)
    assert match, last
    assert int(match.group(1)) == fit_obs.n_series
    ranked = pd.read_csv(out)
    assert len(ranked) == fit_obs.n_series and ranked["rank"].tolist() == list(
        range(1, fit_obs.n_series + 1)
    )
    assert ranked["trust_score"].is_monotonic_increasing


# ----------------------------------------------------------------------------- bad input

HEADER = "series_id,channel,time,value\n"
BAD_FILES = {
    "empty": "",
    "header_only": HEADER,
    "non_numeric": HEADER + "p1,HR,0.5,72\np1,HR,1.0,seventy\np1,HR,1.5,75\np2,HR,0.2,80\n",
    "unit_in_value": HEADER + "p1,Temp,0.5,37.2 C\np1,Temp,1.0,37.4 C\n",
    "unparseable_time": HEADER + "p1,HR,2024-13-45 25:99,72\np1,HR,last tuesday,75\n",
    "single_observation": HEADER + "p1,HR,0.5,72\n",
    "no_value_column": "series_id,channel,time\np1,HR,0.5\np1,HR,1.0\n",
    "ragged_rows": HEADER + "p1,HR,0.5,72\np1,HR,1.0,75,extra,fields\n",
    "truncated_gzip": None,
    "corrupted_gzip": None,
}


def write_bad(tmp_path: Path, kind: str) -> Path:
    if kind.endswith("gzip"):  # a .csv.gz damaged in transfer
        path = tmp_path / f"{kind}.csv.gz"
        packed = bytearray(
            gzip.compress((HEADER + "p1,HR,0.5,72\np1,HR,1.0,75\n" * 400).encode(), mtime=0)
        )
        if kind == "truncated_gzip":
            del packed[len(packed) // 2 :]
        else:
            packed[30:46] = b"\xff" * 16  # damaged deflate data right after the header
        path.write_bytes(bytes(packed))
        return path
    path = tmp_path / f"{kind}.csv"
    path.write_text(BAD_FILES[kind])
    return path


@pytest.mark.parametrize(
    "kind",
    sorted(BAD_FILES),
)
def test_fit_on_bad_data_is_a_clean_error(capsys, kind: str, tmp_path: Path) -> None:
    out_dir = tmp_path / "model"
    assert_clean_error(
        *run(capsys, "fit", write_bad(tmp_path, kind), "--out", out_dir, "--epochs", 1, "--quiet")
    )
    assert not out_dir.exists(), "no half-written model directory"


@pytest.mark.parametrize("command", ["fit", "predict", "evaluate", "rank"])
def test_missing_data_file_is_a_clean_error(
    capsys, command: str, fitted_dir: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "no_such_file.csv"
    if command == "fit":
        argv = ["fit", missing, "--out", tmp_path / "m"]
    elif command == "evaluate":
        argv = ["evaluate", fitted_dir, missing, "--json", tmp_path / "e.json"]
    else:
        argv = [command, fitted_dir, missing, "--out", tmp_path / "o.csv"]
    code, out, err = run(capsys, *argv)
    assert_clean_error(code, out, err)
    assert "no_such_file.csv" in err


@pytest.mark.parametrize("command", ["predict", "evaluate", "rank"])
def test_bad_data_with_a_model_is_a_clean_error(
    capsys, command: str, fitted_dir: Path, tmp_path: Path
) -> None:
    bad = write_bad(tmp_path, "non_numeric")
    out = (
        ["--json", tmp_path / "e.json"] if command == "evaluate" else ["--out", tmp_path / "o.csv"]
    )
    assert_clean_error(*run(capsys, command, fitted_dir, bad, *out))


@pytest.mark.parametrize("command", ["predict", "evaluate", "rank"])
def test_a_directory_that_is_not_a_model_is_a_clean_error(
    capsys, command: str, fit_csv: Path, tmp_path: Path
) -> None:
    not_model = tmp_path / "not_a_model"
    not_model.mkdir()
    (not_model / "notes.txt").write_text("hello")
    out = (
        ["--json", tmp_path / "e.json"] if command == "evaluate" else ["--out", tmp_path / "o.csv"]
    )
    code, stdout, err = run(capsys, command, not_model, fit_csv, *out)
    assert_clean_error(code, stdout, err)
    assert "levy fit" in err


def test_a_model_with_corrupted_weights_is_a_clean_error(
    capsys, fitted_dir: Path, fit_csv: Path, tmp_path: Path
) -> None:
    model = Path(shutil.copytree(fitted_dir, tmp_path / "model"))
    weights = model / "levy.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1000])
    code, out, err = run(capsys, "predict", model, fit_csv, "--out", tmp_path / "p.csv")
    assert_clean_error(code, out, err)
    assert "levy fit" in err


@pytest.mark.parametrize(
    "queries, needle",
    [
        ("series_id,channel,time\ns00,smooth,30\nghost_patient,smooth,30\n", "ghost_patient"),
        ("series_id,channel,time\ns00,smooth,30\ns00,SpO2,30\n", "SpO2"),
        ("patient,variable,t\ns00,smooth,30\n", "series_id"),
    ],
)
def test_bad_queries_are_a_clean_error(
    capsys, queries: str, needle: str, fitted_dir: Path, fit_csv: Path, tmp_path: Path
) -> None:
    qfile = tmp_path / "queries.csv"
    qfile.write_text(queries)
    out = tmp_path / "pred.csv"
    code, stdout, err = run(
        capsys, "predict", fitted_dir, fit_csv, "--out", out, "--queries", qfile
    )
    assert_clean_error(code, stdout, err)
    assert needle in err
    assert not out.exists()


@pytest.mark.parametrize("level", ["1.5", "0", "-0.2"])
def test_level_outside_0_1_is_a_clean_error(
    capsys, level: str, fitted_dir: Path, fit_csv: Path, tmp_path: Path
) -> None:
    code, out, err = run(
        capsys,
        "predict",
        fitted_dir,
        fit_csv,
        "--out",
        tmp_path / "p.csv",
        "--points",
        3,
        f"--level={level}",
    )
    assert_clean_error(code, out, err)
    assert "level" in err


@pytest.mark.integration
def test_real_process_exits_2_without_traceback(tmp_path: Path) -> None:
    """The installed entry point, end to end: ``python -m levy_core fit BAD --quiet``."""
    bad = write_bad(tmp_path, "non_numeric")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "levy_core",
            "fit",
            str(bad),
            "--out",
            str(tmp_path / "m"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "seventy" in proc.stderr, "the message quotes the offending cell"
    assert not (tmp_path / "m").exists()


def test_evaluate_in_data_units_matches_a_hand_computation_from_predictions(
    capsys, fitted, fitted_dir, fit_csv, tmp_path
) -> None:
    """Each channel's MAE / RMSE (and CRPS, on a channel without transform) in the JSON's
    ``per_channel_data_units`` is what PRED.csv's ``y_true``, ``mean``, ``pred_std`` (and
    ``mc_mean``, ``mc_std``) give by hand; stderr prints the table."""
    from scipy.stats import norm

    out, pred_path = tmp_path / "e.json", tmp_path / "p.csv"
    code, _, err = run(capsys, "evaluate", fitted_dir, fit_csv, "--json", out, "--predictions", pred_path,
                       "--mc-passes", 3)
    assert code == 0, err
    result, pred = json.loads(out.read_text()), pd.read_csv(pred_path)
    assert "per channel in its own units (MAE, RMSE, CRPS):" in err
    for method, mean_col, std_col in (("levy", "mean", "pred_std"), ("mc_dropout", "mc_mean", "mc_std")):
        got = result[method]["per_channel_data_units"]
        assert set(got) == set(pred["channel"].astype(str))
        for channel, g in pred.groupby(pred["channel"].astype(str)):
            err_c = g["y_true"].to_numpy() - g[mean_col].to_numpy()
            assert got[channel]["n"] == len(g)
            assert got[channel]["mae"] == pytest.approx(np.mean(np.abs(err_c)), rel=1e-6)
            assert got[channel]["rmse"] == pytest.approx(np.sqrt(np.mean(err_c**2)), rel=1e-6)
            if fitted.scaler.transform_of(channel) == "none":
                s = g[std_col].to_numpy()
                z = err_c / s
                crps = s * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / np.sqrt(np.pi))
                assert got[channel]["crps"] == pytest.approx(np.mean(crps), rel=1e-6)
            assert f"  {channel} " in err


def test_data_unit_crps_of_a_log_channel_is_the_log_normal_predictive() -> None:
    """``crps_data_units_per_point`` on a log channel scores the log-normal whose median is
    the mean and whose delta-method std is ``std``: the CRPS of its samples, not a Gaussian's."""
    from levy_core.pipeline.evaluation import crps_data_units_per_point

    rng = np.random.default_rng(0)
    mu, sigma, y = 1.0, 0.5, np.array([0.8, 3.0, 9.0])
    mean, std = np.full(3, np.exp(mu)), np.full(3, sigma * np.exp(mu))
    got = crps_data_units_per_point(y, mean, std, np.array(["log"] * 3, dtype=object))
    draws = np.exp(rng.normal(mu, sigma, 200_000))
    for yi, gi in zip(y, got, strict=True):
        mc = np.mean(np.abs(draws - yi)) - 0.5 * np.mean(np.abs(draws - rng.permutation(draws)))
        assert gi == pytest.approx(mc, rel=0.02)
    none = crps_data_units_per_point(y, mean, std, np.array(["none"] * 3, dtype=object))
    assert not np.allclose(none, got)


def test_evaluate_prints_the_coverage_note_when_the_band_falls_short(capsys, fitted_dir, fit_csv, tmp_path,
                                                                   monkeypatch) -> None:
    """A band that covers nothing (its bounds pushed above every value): the JSON's
    ``coverage_note`` says so, and so does stderr, in plain words."""
    from levy_core.pipeline import evaluation

    real = evaluation.coverage_note

    def empty_band(y, lower, upper, **kwargs):
        return real(y, np.asarray(lower) + 1e9, np.asarray(upper) + 1e9, **kwargs)

    monkeypatch.setattr(evaluation, "coverage_note", empty_band)
    out = tmp_path / "m.json"
    code, _, err = run(capsys, "evaluate", fitted_dir, fit_csv, "--json", out, "--mc-passes", 0)
    assert code == 0, err
    note = json.loads(out.read_text())["coverage_note"]
    assert note["verdict"] == "outside" and note["coverage"] == 0.0 and note["unit"] == "series"
    assert note["text"].startswith(f"The 90 % band covered 0.00 of the test queries (± {note['se']:.2f} over "
                                   f"{note['n_groups']} series): below its level by more than chance allows.")
    assert f"note: {note['text']}" in err


def test_evaluate_says_which_band_a_new_file_is_scored_with(capsys, fitted, fitted_dir, fit_csv, new_obs,
                                                           tmp_path) -> None:
    assert fitted.new_series_calibration is not None, "the shared model is a panel"
    note = "this is not the file the model was fitted on, so its series are scored as new ones"
    code, _, err = run(capsys, "evaluate", fitted_dir, fit_csv, "--json", tmp_path / "a.json", "--mc-passes", 0)
    assert code == 0, err
    assert note not in err, "the fit's own file: its test split, with the calibration split's band"
    new_csv = tmp_path / "new.csv"
    new_obs.frame.to_csv(new_csv, index=False)
    code, _, err = run(capsys, "evaluate", fitted_dir, new_csv, "--json", tmp_path / "b.json", "--mc-passes", 0)
    assert code == 0, err
    n_new = fitted.new_series_calibration["levy"].conformal.n_calibration_
    assert note in err and f"together ({n_new:,} queries)" in err
