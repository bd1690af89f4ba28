"""``LevyForecaster`` as the whole way in from Python: ``evaluate`` and ``backtest`` return
typed results whose numbers are the pipeline's own, levels are percents, and one save
format (a directory or its zip) loads back to the same predictions.

Tolerances: ``evaluate`` calls ``evaluation.evaluate`` on the same model and data, so its
scores are the same floats (compared to 1e-12 relative). A backtest forecast equals
``predict`` at the same times from the same history (the same model pass; compared to 1e-9
relative: float32 passes, float64 conversions, no randomness). Scores recomputed here from a
frame in the data's units differ from the library's normalised ones by rounding only
(``(y - m) / r`` against ``y/r - m/r``: relative 1e-12 at these magnitudes), and a coverage
could only differ where an observation lies within an ulp of a bound.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core import LevyForecaster
from levy_core.data import DataError, Observations
from levy_core.forecast.forecaster import Backtest, Evaluation
from levy_core.forecast.results import Scores, WindowScores
from levy_core.pipeline import evaluation, modelfile
from levy_core.serving.modelzip import model_zip_bytes

BANDS = ["Lévy", "Lévy-lo-90", "Lévy-lo-80", "Lévy-hi-80", "Lévy-hi-90"]


@pytest.fixture(scope="module")
def loaded(fitted_dir: Path) -> LevyForecaster:
    """The shared tiny model (Lévy + MC-Dropout twin), through ``FittedModel.save``'s directory."""
    return LevyForecaster.load(fitted_dir)


@pytest.fixture(scope="module")
def nixtla_df(fit_obs: Observations) -> pd.DataFrame:
    return fit_obs.frame.rename(columns={"series_id": "unique_id", "time": "ds", "value": "y"})


def test_evaluate_returns_the_pipelines_numbers(loaded: LevyForecaster, nixtla_df, fit_obs) -> None:
    ev = loaded.evaluate(nixtla_df, level=[80, 90])
    assert isinstance(ev, Evaluation) and all(isinstance(s, Scores) for s in ev.scores)
    assert [s.method for s in ev.scores] == ["Lévy", "MC-Dropout", "last value"]
    assert ev.scope == "test split", "the frame the model was fitted on is scored on its test split"
    result, pred = evaluation.evaluate(loaded.fitted, fit_obs, sampler_draws=0)
    assert ev.n_queries == result["n_test"] == len(pred)
    for scores, key in zip(ev.scores, ["levy", "mc_dropout", "last_value"], strict=True):
        for name in ("mse", "mae", "crps", "nll"):
            assert getattr(scores, name) == pytest.approx(result[key][name], rel=1e-12), (key, name)
        assert scores.band == {80: "conformal", 90: "conformal"}  # many series: split conformal
        assert scores.coverage == pytest.approx({80: result[key]["conformal_coverage"]["0.8"],
                                                 90: result[key]["conformal_coverage"]["0.9"]}, rel=1e-12)
    # the 90 % width: evaluate's conformal band in the data's units, over each channel's range
    scale = loaded.fitted.scaler.scale_of(pred["channel"].to_numpy())
    assert ev.width[90] == pytest.approx(np.mean((pred["upper_90"] - pred["lower_90"]) / scale), rel=1e-9)
    assert ev.mse == ev.levy.mse and ev.coverage == ev.levy.coverage
    assert ev.predictions["y_true"].to_numpy() == pytest.approx(pred["y_true"].to_numpy())


def test_the_evaluation_is_a_frozen_table(loaded: LevyForecaster, nixtla_df, new_obs) -> None:
    ev = loaded.evaluate(nixtla_df, level=[80, 97.5])
    frame = ev.to_frame()
    assert list(frame.columns) == ["method", "n_queries", "mse", "mae", "crps", "nll", "coverage_80",
                                   "coverage_97.5", "width_80", "width_97.5", "band_80", "band_97.5"]
    assert frame["method"].tolist() == ["Lévy", "MC-Dropout", "last value"]
    assert frame.loc[0, "coverage_97.5"] == ev.coverage[97.5]
    assert (frame["width_97.5"] > frame["width_80"]).all(), "the wider level's band is wider"
    text = str(ev)
    assert "Evaluation on the test split" in text and "coverage_80" in text and "last value" in text
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.n_queries = 0  # type: ignore[misc]
    assert loaded.evaluate(new_obs.frame, level=90).scope == "every series"
    assert ev.method("last value").mse == ev.scores[2].mse
    with pytest.raises(KeyError, match="scored"):
        ev.method("Prophet")


def test_evaluate_has_a_per_channel_table_in_data_units(loaded: LevyForecaster, nixtla_df) -> None:
    """``Evaluation.data_units``: one row per (method, channel), each channel's MAE and RMSE
    those of ``predictions``' ``y_true`` and ``mean`` (the Lévy rows), in the data's units."""
    ev = loaded.evaluate(nixtla_df, level=90)
    table = ev.data_unit_frame()
    assert list(table.columns) == ["method", "channel", "n_queries", "mae", "rmse", "crps"]
    pred = ev.predictions
    channels = sorted(pred["channel"].astype(str).unique())
    assert table["method"].tolist() == [m for m in ["Lévy", "MC-Dropout", "last value"] for _ in channels]
    levy = table[table["method"] == "Lévy"].set_index("channel")
    for channel, g in pred.groupby(pred["channel"].astype(str)):
        err = g["y_true"].to_numpy() - g["mean"].to_numpy()
        assert levy.loc[channel, "n_queries"] == len(g)
        assert levy.loc[channel, "mae"] == pytest.approx(np.mean(np.abs(err)), rel=1e-9)
        assert levy.loc[channel, "rmse"] == pytest.approx(np.sqrt(np.mean(err**2)), rel=1e-9)
    assert (table["crps"] > 0).all()
    assert "Per channel, in its own units" in ev.summary()
    assert table["mae"].tolist() == [ev.details[k]["per_channel_data_units"][c]["mae"]
                                     for k in ("levy", "mc_dropout", "last_value") for c in channels]


def test_levels_are_percents(loaded: LevyForecaster, nixtla_df) -> None:
    for bad in (0.9, [0.8, 0.9], [80, 0.5]):
        with pytest.raises(ValueError, match=r"levels are percents, e\.g\. level=\[80, 90\]"):
            loaded.evaluate(nixtla_df, level=bad)
    for bad in ([0], [100], [150], [], ["90"], [True]):
        with pytest.raises(ValueError, match="levels are percents"):
            loaded.predict(h=6, df=nixtla_df, level=bad)
    with pytest.raises(ValueError, match="levels are percents"):
        LevyForecaster().backtest(nixtla_df, h=6, level=[0.9])  # refused before any fit
    out = loaded.predict(h=6, df=nixtla_df, level=[5, 97.5], points=2)  # any percent in (0, 100)
    assert {"Lévy-lo-97.5", "Lévy-hi-5"} <= set(out.columns)


def test_bad_input_is_refused_with_a_message(loaded: LevyForecaster, nixtla_df, tmp_path: Path) -> None:
    fresh = LevyForecaster()
    with pytest.raises(ValueError, match="fit the forecaster first"):
        fresh.evaluate(nixtla_df)
    with pytest.raises(ValueError, match="fit the forecaster first"):
        fresh.save(tmp_path / "m.zip")
    with pytest.raises(DataError, match="DataFrame is empty"):
        loaded.evaluate(pd.DataFrame())
    with pytest.raises(DataError, match="DataFrame is empty"):
        fresh.backtest(nixtla_df.iloc[:0], h=6)
    with pytest.raises(ValueError, match="give h="):
        fresh.backtest(nixtla_df)
    with pytest.raises(ValueError, match="n_windows"):
        fresh.backtest(nixtla_df, h=6, n_windows=0)
    with pytest.raises(DataError, match="backtest window 1 of 40: no series has two observations"):
        fresh.backtest(nixtla_df, h=6, n_windows=40)
    with pytest.raises(ValueError, match="band must be one of"):
        loaded.evaluate(nixtla_df, band="adaptive")
    with pytest.raises(modelfile.ModelLoadError, match="does not exist"):
        LevyForecaster.load(tmp_path / "missing.zip")
    (tmp_path / "notes.zip").write_text("not a zip")
    with pytest.raises(modelfile.ModelLoadError, match="not a zip file"):
        LevyForecaster.load(tmp_path / "notes.zip")


def test_save_and_load_one_format_directory_or_zip(loaded: LevyForecaster, nixtla_df, fitted_dir,
                                                   tmp_path: Path) -> None:
    expected = loaded.predict(h=6, df=nixtla_df, level=[80, 90], points=3)
    directory, archive = loaded.save(tmp_path / "model"), loaded.save(tmp_path / "out" / "model.zip")
    assert archive.is_file() and sorted(p.name for p in directory.iterdir()) == [
        "levy.safetensors", "model.json", "softmax.safetensors"]
    assert archive.read_bytes() == model_zip_bytes(directory), "the zip holds the directory's files"
    for source in (directory, archive, directory / "model.json", archive.read_bytes(), model_zip_bytes(fitted_dir)):
        again = LevyForecaster.load(source)
        pd.testing.assert_frame_equal(again.predict(h=6, df=nixtla_df, level=[80, 90], points=3), expected)
    assert (again.epochs, again.seed, again.twin, again.size) == (3, 0, True, "small"), "the fit's settings"


@pytest.fixture(scope="module")
def backtests(nixtla_df) -> tuple[LevyForecaster, Backtest, Backtest]:
    """Two windows of 6 h on the shared 16 series: a model per window, and one model."""
    f = LevyForecaster(epochs=1, seed=0, size="small")
    return f, f.backtest(nixtla_df, n_windows=2, h=6), f.backtest(nixtla_df, n_windows=2, h=6, refit=False)


def test_backtest_windows_hold_every_observation_after_each_cutoff(backtests, nixtla_df) -> None:
    f, refit, _ = backtests
    assert isinstance(refit, Backtest) and all(isinstance(w, WindowScores) for w in refit.windows)
    assert f.fitted is None, "the forecaster's own model is neither made nor changed"
    frame = refit.to_frame()
    assert list(frame.columns) == ["unique_id", "ds", "channel", "cutoff", "window", "y", *BANDS]
    last = nixtla_df.groupby("unique_id")["ds"].max()
    for w in (0, 1):
        rows = frame[frame["window"] == w]
        np.testing.assert_allclose(rows["cutoff"], rows["unique_id"].map(last) - 6 - (1 - w) * 6)
        cut = nixtla_df["unique_id"].map(rows.groupby("unique_id")["cutoff"].first())
        held = nixtla_df[(nixtla_df["ds"] > cut) & (nixtla_df["ds"] <= cut + 6)]
        key = ["unique_id", "channel", "ds"]
        pd.testing.assert_frame_equal(rows[[*key, "y"]].sort_values(key).reset_index(drop=True),
                                      held[[*key, "y"]].sort_values(key).reset_index(drop=True), check_dtype=False)
        scores = refit.windows[w]
        assert scores.n_queries == len(rows) and scores.n_series == rows["unique_id"].nunique()
        for level in (80, 90):
            inside = (rows[f"Lévy-lo-{level}"] <= rows["y"]) & (rows["y"] <= rows[f"Lévy-hi-{level}"])
            assert scores.coverage[level] == pytest.approx(inside.mean(), abs=1e-12)
    assert refit.scores()["n_queries"].sum() == len(frame) == refit.overall()["n_queries"]
    assert "Backtest over 2 windows of h = 6 hours every 6 hours (one model per window)" in refit.summary()


def test_refit_fits_a_model_per_window_and_refit_false_one(backtests) -> None:
    _, refit, once = backtests
    a, b = refit.to_frame(), once.to_frame()
    first = a["window"] == 0
    pd.testing.assert_frame_equal(a[first], b[first])  # both fitted on the history before the first cut-offs
    assert refit.windows[0] == once.windows[0]
    assert not np.allclose(a.loc[~first, "Lévy"], b.loc[~first, "Lévy"]), "window 2: another model"
    assert (a.loc[~first, ["unique_id", "ds", "y"]].to_numpy() == b.loc[~first, ["unique_id", "ds", "y"]].to_numpy()).all()


@pytest.fixture(scope="module")
def daily_cycle() -> pd.DataFrame:
    """One series, hourly naive date-times over five days: a fit on rolling origins."""
    ds = pd.date_range("2024-01-01", periods=24 * 5, freq="h")
    y = 10 + np.sin(np.arange(len(ds)) * 2 * np.pi / 24) + np.random.default_rng(0).normal(0, 0.1, len(ds))
    return pd.DataFrame({"unique_id": "sensor", "ds": ds, "y": y})


CYCLE = {"epochs": 1, "seed": 0, "horizon": "12h"}


@pytest.fixture(scope="module")
def cycle_backtest(daily_cycle: pd.DataFrame) -> tuple[Backtest, LevyForecaster]:
    """Two windows of 12 h with refit=False (``h``: the forecaster's horizon), and the one
    model it forecasts with, fitted again on the history before the first cut-off."""
    bt = LevyForecaster(**CYCLE).backtest(daily_cycle, n_windows=2, refit=False)
    first_cut = bt.to_frame().loc[lambda f: f["window"] == 0, "cutoff"].iloc[0]
    return bt, LevyForecaster(**CYCLE).fit(daily_cycle[daily_cycle["ds"] <= first_cut])


def test_a_backtest_window_is_predict_from_the_history(cycle_backtest, daily_cycle: pd.DataFrame) -> None:
    """refit=False: one model, fitted on the history before the first cut-off, forecasts each
    window as ``predict`` does from that window's history; the scores are its own."""
    bt, model = cycle_backtest
    frame = bt.to_frame()
    assert bt.h == 12 and pd.api.types.is_datetime64_dtype(frame["cutoff"]) and frame["ds"].dt.tz is None
    first_cut = frame.loc[frame["window"] == 0, "cutoff"].iloc[0]
    for w, scores in enumerate(bt.windows):
        rows = frame[frame["window"] == w].reset_index(drop=True)
        history = daily_cycle[daily_cycle["ds"] <= rows["cutoff"].iloc[0]]
        direct = model.predict(rows[["ds"]], df=history, level=[80, 90])
        np.testing.assert_allclose(rows[BANDS], direct[BANDS], rtol=1e-9)
        scale = model.fitted.scaler.scale_of(np.array(["value"] * len(rows)))
        assert scores.mse == pytest.approx(np.mean(((rows["y"] - rows["Lévy"]) / scale) ** 2), rel=1e-9)
        assert scores.band == {80: "adaptive", 90: "adaptive"}, "few series: the band predict draws"
    # on a fit of few series, evaluate scores the adaptive walk over the test origins
    ev = model.evaluate(daily_cycle[daily_cycle["ds"] <= first_cut])
    result, _ = evaluation.evaluate(model.fitted, model.observations, sampler_draws=0)
    walk = result["levy"]
    assert ev.coverage == pytest.approx({80: walk["adaptive_coverage"]["0.8"], 90: walk["adaptive_coverage"]["0.9"]})
    assert ev.width == pytest.approx({80: walk["adaptive_mean_width"]["0.8"], 90: walk["adaptive_mean_width"]["0.9"]})
    assert ev.method("last value").band == {80: "conformal", 90: "conformal"}



LAST = ["last value", "last value-lo-90", "last value-lo-80", "last value-hi-80", "last value-hi-90"]


def _last_before_cutoff(df: pd.DataFrame, rows: pd.DataFrame) -> tuple[pd.Series, np.ndarray]:
    """Each of ``rows``' (series, channel) last observation at or before its cut-off, and
    which rows have one."""
    key = ["unique_id", "channel"] if "channel" in rows else ["unique_id"]
    before = df.merge(rows[["unique_id", "cutoff"]].drop_duplicates(), on="unique_id")
    last = before[before["ds"] <= before["cutoff"]].sort_values("ds", kind="stable").groupby(key)["y"].last()
    keys = pd.MultiIndex.from_frame(rows[key]) if len(key) > 1 else pd.Index(rows["unique_id"])
    seen = keys.isin(last.index)
    return last.reindex(keys[seen]), seen


def test_backtest_scores_the_last_value_beside_the_model_on_the_same_queries(backtests, nixtla_df) -> None:
    """The project's rule: every accuracy table has the trivial row beside ours. Each window
    scores the last value carried forward (the model's own baseline: spread fitted on the
    training part's errors, calibrated like the model) on the window's queries, the same way."""
    _, refit, once = backtests
    assert refit.methods == once.methods == ("Lévy", "last value")
    assert [w.method for w in refit.baselines] == ["last value"] * 2
    assert [w.method for w in refit.windows] == ["Lévy"] * 2
    table = refit.comparison()
    assert table["method"].tolist() == ["Lévy", "last value"]
    assert list(table.columns) == ["method", "n_queries", "mse", "mae", "crps", "nll", "coverage_80", "coverage_90",
                                   "width_80", "width_90", "band_80", "band_90"]
    assert (table["n_queries"] == len(refit.to_frame())).all(), "both scored on every held-out observation"
    assert table.loc[1, "crps"] == pytest.approx(refit.overall("last value")["crps"])
    assert "Every window, beside the trivial baseline" in str(refit) and "last value bands" in str(refit)
    # backward compatible: the Lévy-only views keep their columns; the baseline is asked for
    assert list(refit.to_frame().columns) == ["unique_id", "ds", "channel", "cutoff", "window", "y", *BANDS]
    assert refit.scores().equals(refit.scores("Lévy"))
    assert refit.scores("last value")["window"].tolist() == [0, 1]
    with pytest.raises(KeyError, match="scored"):
        refit.scores("Prophet")
    frame = refit.to_frame(baselines=True)
    assert list(frame.columns) == ["unique_id", "ds", "channel", "cutoff", "window", "y", *BANDS, *LAST]
    pd.testing.assert_frame_equal(frame.drop(columns=LAST), refit.to_frame())
    with_last = 0
    for w in (0, 1):
        rows = frame[frame["window"] == w]
        ours, base = refit.windows[w], refit.baselines[w]
        assert (base.window, base.n_series, base.n_queries) == (ours.window, ours.n_series, ours.n_queries)
        assert base.band == ours.band == {80: "conformal", 90: "conformal"}  # many series: split conformal
        last, seen = _last_before_cutoff(nixtla_df, rows)
        np.testing.assert_allclose(rows.loc[seen, "last value"], last.to_numpy(), rtol=1e-9)
        with_last += int(seen.sum())
        for level in (80, 90):  # coverage is scale-free: recomputed from the frame
            lo, hi = rows[f"last value-lo-{level}"], rows[f"last value-hi-{level}"]
            assert base.coverage[level] == pytest.approx(((lo <= rows["y"]) & (rows["y"] <= hi)).mean(), abs=1e-12)
            assert base.width[90] > base.width[80] > 0
    assert with_last > 0.9 * len(frame), "nearly every query's channel has a last value before the cut-off"


def test_the_baseline_is_scored_as_the_model_is(cycle_backtest, daily_cycle: pd.DataFrame) -> None:
    """One series, rolling origins: the baseline's MSE, MAE and band widths on the model's
    normalised scale, its band split conformal where the model's is the adaptive walk."""
    bt, model = cycle_backtest
    frame = bt.to_frame(baselines=True)
    for w, base in enumerate(bt.baselines):
        rows = frame[frame["window"] == w]
        last, seen = _last_before_cutoff(daily_cycle, rows)
        assert seen.all() and np.array_equal(rows["last value"].to_numpy(), last.to_numpy())
        scale = model.fitted.scaler.scale_of(np.array(["value"] * len(rows)))
        error = (rows["y"] - rows["last value"]) / scale
        assert base.mse == pytest.approx(np.mean(error ** 2), rel=1e-9)
        assert base.mae == pytest.approx(np.mean(np.abs(error)), rel=1e-9)
        for level in (80, 90):
            lo, hi = rows[f"last value-lo-{level}"], rows[f"last value-hi-{level}"]
            assert base.width[level] == pytest.approx(np.mean((hi - lo) / scale), rel=1e-9)
            assert base.coverage[level] == pytest.approx(((lo <= rows["y"]) & (rows["y"] <= hi)).mean(), abs=1e-12)
        assert base.band == {80: "conformal", 90: "conformal"} and bt.windows[w].band == {80: "adaptive", 90: "adaptive"}
    assert bt.comparison()["band_90"].tolist() == ["adaptive", "conformal"]


def test_on_a_constant_series_the_last_value_is_exact() -> None:
    """Where carrying the last value forward is exact, the baseline scores ~0 error."""
    ds = pd.date_range("2024-01-01", periods=24 * 5, freq="h")
    flat = pd.DataFrame({"unique_id": "flat", "ds": ds, "y": 5.0})
    bt = LevyForecaster(**CYCLE).backtest(flat, n_windows=2, refit=False)
    np.testing.assert_allclose(bt.to_frame(baselines=True)["last value"], 5.0, rtol=1e-12)
    for base in bt.baselines:
        assert base.n_queries == 12 and base.mse < 1e-12 and base.mae < 1e-6 and base.crps < 1e-6
        assert base.coverage == {80: 1.0, 90: 1.0}
    assert bt.overall("last value")["crps"] < 1e-6
