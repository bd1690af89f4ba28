"""The notebook API (``levy_core.LevyForecaster``) against the command line: the same model
and data give the numbers ``levy predict --format nixtla`` writes, in the user's ids and
clock (numbers, or date-times), and it refuses what it cannot do with a message."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core import LevyForecaster
from levy_core.cli.main import main
from levy_core.data import ColumnMapping, DataError, Observations

EPOCHS = 2


@pytest.fixture(scope="module")
def nixtla_df(fit_obs: Observations) -> pd.DataFrame:
    """The shared fit data in NeuralForecast's long names (plus a channel column)."""
    return fit_obs.frame.rename(columns={"series_id": "unique_id", "time": "ds", "value": "y"})


@pytest.fixture(scope="module")
def forecaster(nixtla_df: pd.DataFrame) -> LevyForecaster:
    return LevyForecaster(epochs=EPOCHS, seed=0).fit(nixtla_df)


@pytest.fixture(scope="module")
def saved(forecaster: LevyForecaster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return forecaster.save(tmp_path_factory.mktemp("api") / "model")


def cli(*argv: object) -> None:
    assert main([str(a) for a in argv]) == 0


def test_predict_past_the_end_returns_nixtla_columns(forecaster: LevyForecaster, fit_obs: Observations) -> None:
    out = forecaster.predict(h=6, level=[80, 90], points=3)
    assert list(out.columns) == ["unique_id", "ds", "channel", "Lévy", "Lévy-lo-90", "Lévy-lo-80", "Lévy-hi-80",
                                 "Lévy-hi-90"]
    observed = fit_obs.frame.groupby("series_id")["channel"].nunique()
    assert len(out) == int(observed.sum()) * 3  # every observed (series, channel), 3 steps
    assert set(out["unique_id"]) == set(fit_obs.series_ids)
    last = fit_obs.frame.groupby("series_id")["time"].max()
    steps = out["ds"] - out["unique_id"].map(last)
    np.testing.assert_allclose(np.sort(steps.unique()), [2.0, 4.0, 6.0])  # in the data's own hours
    nested = out[["Lévy-lo-90", "Lévy-lo-80", "Lévy", "Lévy-hi-80", "Lévy-hi-90"]].to_numpy()
    assert (np.diff(nested, axis=1) >= 0).all(), "the 90 % band holds the 80 % band, which holds the mean"


def test_api_numbers_equal_levy_predicts(forecaster, saved, nixtla_df, tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    nixtla_df.to_csv(data, index=False)
    out = tmp_path / "pred.csv"
    cli("predict", saved, data, "--out", out, "--horizon", 6, "--points", 3, "--level", 80, 90, "--format", "nixtla")
    from_cli = pd.read_csv(out, dtype={"unique_id": str})
    api = forecaster.predict(h=6, level=[80, 90], points=3)
    assert list(from_cli.columns) == list(api.columns)
    pd.testing.assert_frame_equal(from_cli, api.astype({"unique_id": object}), check_dtype=False, rtol=1e-9)


def test_queries_api_equals_levy_predict_queries(forecaster, saved, nixtla_df, fit_obs, tmp_path: Path) -> None:
    sid = fit_obs.series_ids[2]
    queries = pd.DataFrame({"unique_id": [sid] * 3, "channel": ["noisy", "smooth", "coupled"],
                            "ds": [47.5, 25.0, 30.25]})
    qfile, data, out = tmp_path / "q.csv", tmp_path / "data.csv", tmp_path / "pred.csv"
    queries.to_csv(qfile, index=False)
    nixtla_df.to_csv(data, index=False)
    cli("predict", saved, data, "--out", out, "--queries", qfile, "--level", 90, "--format", "nixtla")
    api = forecaster.predict(queries, level=90)
    assert api["ds"].tolist() == queries["ds"].tolist(), "rows in the order of the queries"
    assert api["channel"].tolist() == queries["channel"].tolist()
    from_cli = pd.read_csv(out, dtype={"unique_id": str})
    np.testing.assert_allclose(from_cli[["Lévy", "Lévy-lo-90", "Lévy-hi-90"]],
                               api[["Lévy", "Lévy-lo-90", "Lévy-hi-90"]], rtol=1e-9)


def test_levels_are_percents_and_fractions_are_refused(forecaster: LevyForecaster) -> None:
    a = forecaster.predict(h=6, level=[90], points=2)
    pd.testing.assert_frame_equal(a, forecaster.predict(h=6, level=90.0, points=2))
    with pytest.raises(ValueError, match=r"levels are percents, e\.g\. level=\[80, 90\].*write 90"):
        forecaster.predict(h=6, level=0.9, points=2)


def test_save_and_load_give_the_same_predictions(forecaster, saved, nixtla_df) -> None:
    loaded = LevyForecaster.load(saved)
    with pytest.raises(ValueError, match="pass df="):
        loaded.predict(h=6)
    pd.testing.assert_frame_equal(loaded.predict(h=6, df=nixtla_df, level=[80]),
                                  forecaster.predict(h=6, level=[80]))


def test_new_series_are_predicted_from_their_own_observations(forecaster, new_obs: Observations) -> None:
    out = forecaster.predict(h="6h", df=new_obs.frame, level=[90], points=2)
    assert set(out["unique_id"]) == set(new_obs.series_ids)


def test_same_seed_same_model(nixtla_df, forecaster) -> None:
    again = LevyForecaster(epochs=EPOCHS, seed=0).fit(nixtla_df)
    pd.testing.assert_frame_equal(again.predict(h=6, level=[90]), forecaster.predict(h=6, level=[90]))


@pytest.fixture(scope="module")
def hourly() -> pd.DataFrame:
    """One series with naive date-times, as NeuralForecast's examples have them."""
    ds = pd.date_range("2024-01-01", periods=24 * 12, freq="h")
    y = 10 + np.sin(np.arange(len(ds)) * 2 * np.pi / 24) + np.random.default_rng(0).normal(0, 0.1, len(ds))
    return pd.DataFrame({"unique_id": "sensor", "ds": ds, "y": y})


@pytest.mark.integration
def test_date_times_in_date_times_out(hourly: pd.DataFrame, tmp_path: Path) -> None:
    f = LevyForecaster(epochs=EPOCHS, seed=0).fit(hourly)
    out = f.predict(h="12h", level=[80, 90], points=4)
    assert list(out.columns) == ["unique_id", "ds", "Lévy", "Lévy-lo-90", "Lévy-lo-80", "Lévy-hi-80", "Lévy-hi-90"]
    assert pd.api.types.is_datetime64_dtype(out["ds"]) and out["ds"].dt.tz is None, "naive in, naive out"
    assert out["ds"].tolist() == list(pd.date_range("2024-01-12 23:00", periods=5, freq="3h")[1:])
    queries = pd.DataFrame({"ds": [pd.Timestamp("2024-01-13 06:00")]})
    at = f.predict(queries, level=90)
    assert at["ds"].tolist() == queries["ds"].tolist()
    # the CLI on the same model and file: the same numbers, date-times in UTC
    model, data, pred = f.save(tmp_path / "m"), tmp_path / "d.csv", tmp_path / "p.csv"
    hourly.to_csv(data, index=False)
    cli("predict", model, data, "--out", pred, "--horizon", "12h", "--points", 4, "--level", 80, 90,
        "--format", "nixtla")
    from_cli = pd.read_csv(pred)
    assert (pd.to_datetime(from_cli["ds"], utc=True).dt.tz_localize(None) == out["ds"]).all()
    np.testing.assert_allclose(from_cli.iloc[:, 2:], out.iloc[:, 2:], rtol=1e-9)


def test_what_it_refuses(forecaster: LevyForecaster) -> None:
    with pytest.raises(ValueError, match="fit the forecaster first"):
        LevyForecaster().predict(h=6)
    with pytest.raises(ValueError, match="not both"):
        forecaster.predict(pd.DataFrame({"unique_id": ["x"], "ds": [1.0]}), h=6)
    with pytest.raises(ValueError, match="not both and not neither"):
        forecaster.predict()
    with pytest.raises(ValueError, match="levels are percents"):
        forecaster.predict(h=6, level=[100])
    with pytest.raises(ValueError, match="band must be one of"):
        forecaster.predict(h=6, band="wide")
    with pytest.raises(DataError, match="pandas DataFrame"):
        LevyForecaster().fit("data.csv")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="size must be 'auto' or one of"):
        LevyForecaster(size="huge")
    with pytest.raises(ValueError, match="epochs"):
        LevyForecaster(epochs=0)


def test_the_fit_mapping_reads_later_frames(forecaster, nixtla_df, new_obs) -> None:
    """Columns no alias names: the mapping given to fit also reads the frames predicted from."""
    names = {"unique_id": "stay", "ds": "hours_in", "channel": "signal", "y": "reading"}
    mapping = ColumnMapping(time="hours_in", value="reading", series="stay", channel="signal")
    f = LevyForecaster(epochs=EPOCHS, seed=0).fit(nixtla_df.rename(columns=names), mapping=mapping)
    pd.testing.assert_frame_equal(f.predict(h=6, level=[90]), forecaster.predict(h=6, level=[90]))
    new = new_obs.frame.rename(columns={"series_id": "stay", "time": "hours_in", "channel": "signal",
                                        "value": "reading"})
    assert set(f.predict(h=6, df=new)["unique_id"]) == set(new_obs.series_ids)


def test_queries_at_the_horizons_times_give_the_horizons_numbers(forecaster: LevyForecaster) -> None:
    """Issue 51: a query after a series' end sees the whole series, as ``h=`` does."""
    ahead = forecaster.predict(h=6, level=[80, 90], points=3)
    asked = forecaster.predict(ahead[["unique_id", "ds", "channel"]], level=[80, 90])
    pd.testing.assert_frame_equal(asked, ahead)
