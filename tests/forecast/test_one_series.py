"""One series on rolling origins, as a new user fits it: the classical offset recorded and
reused, the band sized per lead time, the fit's plain words when training did not help,
and a warning for queries beyond the fitted horizon (library and CLI)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core import LevyForecaster
from levy_core.calibration.horizon_scale import HorizonScale, fit_horizon_scale
from levy_core.cli.main import main
from levy_core.data import read_queries
from levy_core.forecast.forecaster import BeyondHorizonWarning


@pytest.fixture(scope="module")
def daily_cycle() -> pd.DataFrame:
    """Ten days of hourly readings with a daily cycle and noise; ds date-times."""
    rng = np.random.default_rng(0)
    hours = np.arange(24 * 10)
    y = 20 + 3 * np.sin(2 * np.pi * hours / 24) + rng.normal(0, 0.3, hours.size)
    return pd.DataFrame({"unique_id": "room", "ds": pd.Timestamp("2024-03-01") + pd.to_timedelta(hours, "h"),
                         "y": y})


@pytest.fixture(scope="module")
def fitted_cycle(daily_cycle: pd.DataFrame) -> LevyForecaster:
    return LevyForecaster(epochs=2, seed=0, horizon="12h").fit(daily_cycle)


def test_the_offset_is_a_classical_forecaster_that_sees_the_cycle(fitted_cycle: LevyForecaster,
                                                                    daily_cycle: pd.DataFrame) -> None:
    fitted = fitted_cycle.fitted
    spec = fitted.base_forecast
    assert spec is not None and 24.0 in spec.harmonics
    assert spec.methods["value"] not in ("last", "level", "drift")
    assert "classical forecaster" in fitted.offset_description()
    # twelve hours ahead the forecast follows the cycle far better than carrying the last value
    future_hours = np.arange(24 * 10, 24 * 10 + 12)
    truth = 20 + 3 * np.sin(2 * np.pi * future_hours / 24)
    queries = pd.DataFrame({"unique_id": "room", "ds": pd.Timestamp("2024-03-01") + pd.to_timedelta(future_hours, "h")})
    pred = fitted_cycle.predict(queries, level=[90])
    lv = daily_cycle["y"].iloc[-1]
    assert np.mean(np.abs(pred["Lévy"] - truth)) < 0.5 * np.mean(np.abs(lv - truth))
    assert fitted.horizon_scale is not None


def test_the_offset_and_the_lead_factors_survive_save_and_load(fitted_cycle: LevyForecaster,
                                                               daily_cycle: pd.DataFrame, tmp_path: Path) -> None:
    path = fitted_cycle.save(tmp_path / "model")
    meta = json.loads((path / "model.json").read_text())
    assert meta["base_forecast"]["methods"] and meta["horizon_scale"]["factors"]
    assert len(meta["correction_scale"]["levy"]) == 1
    # rolling origins: the correction is bounded by what the held-out origins validated
    bound = meta["correction_bound"]["levy"][0]
    recorded = fitted_cycle.fitted.training["levy"]["correction_bound"][0]  # rounded to 6 decimals
    assert bound is not None and bound >= 0 and bound == pytest.approx(recorded, abs=1e-6)
    loaded = LevyForecaster.load(path)
    a = fitted_cycle.predict(h="6h", level=[90])
    b = loaded.predict(h="6h", level=[90], df=daily_cycle)
    pd.testing.assert_frame_equal(a, b)


def test_queries_past_the_fitted_horizon_are_warned_by_name(fitted_cycle: LevyForecaster) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted_cycle.predict(h="12h", level=[90])  # within: no warning
    with pytest.warns(BeyondHorizonWarning, match=r"beyond the fitted horizon.*12 hours ahead.*--horizon 2d"):
        fitted_cycle.predict(h="48h", level=[90])


def test_calendar_lengths_a_hair_past_the_horizon_are_within_it_and_the_refit_horizon_covers_the_query() -> None:
    """Ten yearly dates after 1 July 1901 end 13.8 h past a ``10y`` horizon (three leap days):
    no warning (the Nile's last benchmark window gave one, whose advice was to refit with
    ``--horizon 10y``, the horizon it had). Past the tolerance, the warning names the
    excess and a horizon that reads back as covering the farthest query."""
    from types import SimpleNamespace

    from levy_core.data import parse_duration
    from levy_core.pipeline.predict import HORIZON_TOLERANCE, horizon_note

    ten_years = 10 * 365.2425 * 24
    fitted = SimpleNamespace(split=SimpleNamespace(mode="origin", origin_plan={"horizon": ten_years}))
    assert horizon_note(fitted, np.array([ten_years / 2, ten_years + 13.8])) is None
    far = ten_years * (1 + 2 * HORIZON_TOLERANCE)
    note = horizon_note(fitted, np.array([ten_years / 2, ten_years, far]))
    assert note is not None and note.startswith("1 of 3 queries lie beyond the fitted horizon of 10 years")
    assert "up to 10.2 years after the data's end (the farthest 2.4 months past it)" in note
    refit = note.split("Refit with --horizon ")[1].split(" ")[0]
    assert refit == "10.2y" and parse_duration(refit, "hours") >= far * (1 - 1e-9)
    many = SimpleNamespace(split=SimpleNamespace(mode="series", origin_plan=None))
    assert horizon_note(many, np.array([far])) is None  # fits on many series have no such horizon


@pytest.mark.integration
def test_the_cli_says_what_the_offset_is_and_warns_past_the_horizon(daily_cycle: pd.DataFrame, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "room.csv"
    daily_cycle.rename(columns={"unique_id": "series_id", "ds": "time", "y": "value"}).to_csv(data, index=False)
    model = tmp_path / "model"
    # --nice 0: the worker's own priority (at the default, 10, this fit waited behind every other job
    # on the machine: 11.6 s instead of 2.3 under a load of 3; tests/runtime/test_priority.py tests it)
    assert main(["fit", str(data), "--task", "forecast", "--horizon", "12h", "--no-twin", "--epochs", "1",
                 "--out", str(model), "--quiet", "--nice", "0"]) == 0
    err = capsys.readouterr().err
    assert "offset: a classical forecaster chosen on the rolling origins" in err
    assert main(["predict", str(model), str(data), "--horizon", "3d", "--out", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "beyond the fitted horizon" in err and "Refit with --horizon 3d" in err
    assert main(["predict", str(model), str(data), "--horizon", "6h", "--out", str(tmp_path / "q.csv")]) == 0
    assert "beyond the fitted horizon" not in capsys.readouterr().err


def test_a_band_the_calibration_cannot_support_is_warned_not_left_as_inf_in_a_column(
        fitted_cycle: LevyForecaster) -> None:
    from levy_core.forecast.forecaster import UnboundedBandWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fine = fitted_cycle.predict(h="6h", level=[90, 98])  # 98 % needs 49 calibration errors: it has them
    assert np.isfinite(fine.filter(like="Lévy-").to_numpy(np.float64)).all()
    with pytest.warns(UnboundedBandWarning, match=r"^The 99.9 % band is unbounded .* holds 492 errors.* needs at least 999 per channel; bounded up to 99.8 % here.* Use the "
                                                 r"90 % band"):
        wide = fitted_cycle.predict(h="6h", level=[90, 99.9])
    assert np.isinf(wide["Lévy-hi-99.9"]).all() and np.isfinite(wide["Lévy-hi-90"]).all()


def test_a_forecast_that_is_the_offset_is_said_in_plain_words(fitted_cycle: LevyForecaster) -> None:
    """One series: the correction is measured but held back, and the note says the forecast
    is the offset with the measured errors. A model whose correction was applied (saved
    before, or a panel) says so only when training did not improve on the offset."""
    fitted = fitted_cycle.fitted
    info = dict(fitted.training["levy"])
    assert {"correction_scale", "offset_mse", "mse", "improves_on_offset", "measured_scale"} <= set(info)
    assert info["correction_held_back"] is True and fitted.levy.correction_scale.tolist() == [pytest.approx(0.05)]
    note = fitted.training_note()
    assert note.startswith("The forecast is the classical offset: on one series or a few, the network's learned "
                           "correction is measured on held-out forecast origins")
    assert f"{info['raw_mse']:.3g} with it against {info['offset_mse']:.3g} for the offset alone" in note
    assert note in fitted_cycle.notes()
    saved = fitted.training["levy"]
    applied = {k: v for k, v in info.items() if k not in ("correction_held_back", "measured_scale", "measured_mse")}
    try:
        fitted.training["levy"] = {**applied, "improves_on_offset": False, "mse": 0.02, "offset_mse": 0.019,
                                   "correction_scale": [0.05]}
        note = fitted.training_note()
        assert note is not None
        assert note.startswith("Training did not improve on the offset on held-out forecast origins")
        assert "0.02 against 0.019" in note and "5 % of the learned correction kept" in note
        fitted.training["levy"] = {**applied, "improves_on_offset": True}
        assert fitted.training_note() is None
    finally:
        fitted.training["levy"] = saved


def test_horizon_scale_follows_the_errors_per_lead() -> None:
    rng = np.random.default_rng(1)
    lead = rng.uniform(0, 10, 3000)
    sigma = 1.0 + lead  # σ̂ grows tenfold over the horizon …
    y = rng.normal(0, 2.0, lead.size)  # … while the errors do not grow at all
    scale = fit_horizon_scale(lead, y, np.zeros_like(y), sigma)
    assert scale is not None
    ratio = np.abs(y) / (sigma * scale.factor(lead))
    early, late = (lead > 3) & (lead < 4), (lead > 8) & (lead < 9)
    assert np.sqrt(np.mean(ratio[early] ** 2)) == pytest.approx(np.sqrt(np.mean(ratio[late] ** 2)), rel=0.2)
    assert scale.factor(np.array([0.5]))[0] > 3 * scale.factor(np.array([9.5]))[0]
    assert fit_horizon_scale(lead[:20], y[:20], np.zeros(20), sigma[:20]) is None  # too few: one scale
    assert HorizonScale.from_dict(scale.to_dict()) == scale
    with pytest.raises(ValueError):
        HorizonScale((1.0, 0.5), (1.0, 1.0))
    with pytest.raises(ValueError):
        HorizonScale((1.0,), (float("inf"),))


def test_horizon_scale_keeps_a_growth_its_few_queries_agree_on() -> None:
    """One series' held-out episodes give ~30 queries a bin: errors that grow like a random
    walk's (mean square ∝ lead) keep most of their growth; shrunk towards 1, as before, half
    of it was lost. Errors that do not grow stay flat."""
    rng = np.random.default_rng(3)
    lead = np.tile(np.arange(1.0, 31.0), 6)  # 180 queries: six origins, 30 steps each
    sigma = np.ones_like(lead)
    grows = fit_horizon_scale(lead, rng.normal(0, np.sqrt(lead)), np.zeros_like(lead), sigma)
    span = grows.factors[-1] / grows.factors[0]
    truth = np.sqrt(grows.leads[-1] / grows.leads[0])  # the RMS error's growth between the end bins
    assert span > 0.7 * truth  # a flat prior kept about half: sqrt(0.5 · 20 + 0.5) / sqrt(0.5 · 0.05 + 0.5) ≈ 4.5 of 9
    flat = fit_horizon_scale(lead, rng.normal(0, 1.0, lead.size), np.zeros_like(lead), sigma)
    assert max(flat.factors) / min(flat.factors) < 1.6


def test_three_centuries_of_yearly_dates_are_read_and_written_back() -> None:
    """Sunspots since 1700: a span past the 292 years nanosecond differences can hold."""
    years = np.arange(1700, 2009)
    df = pd.DataFrame({"unique_id": "sun", "ds": pd.to_datetime([f"{y}-07-01" for y in years]),
                       "y": 50 + 40 * np.sin(2 * np.pi * years / 11)})
    f = LevyForecaster(epochs=1, seed=0, horizon="11y").fit(df)
    times = f.observations.frame["time"].to_numpy()
    assert times[-1] / (365.2425 * 24) == pytest.approx(308, abs=0.01)
    queries = pd.DataFrame({"unique_id": "sun", "ds": pd.to_datetime(["2009-07-01", "2015-07-01"])})
    pred = f.predict(queries, level=[90])
    assert list(pred["ds"]) == list(queries["ds"])
    # the queries are read on the data's clock, 309 and 315 years after its start (under pandas
    # 2.x an hour in nanoseconds overflowed here: queries came out millions of hours before it)
    asked = read_queries(queries, f.observations)
    np.testing.assert_allclose(asked["time"] / (365.2425 * 24), [309.0, 315.0], atol=0.01)
    truth = 50 + 40 * np.sin(2 * np.pi * np.array([2009, 2015]) / 11)
    assert np.max(np.abs(pred["Lévy"].to_numpy() - truth)) < 15  # the cycle carried on, not a forecast of 1700


def test_a_persistent_series_without_a_season_is_told_where_its_band_falls_short(
        daily_cycle: pd.DataFrame, fitted_cycle: LevyForecaster, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A random walk (no season, lag-one autocorrelation near 1): the fit records the
    channel's persistence, `levy fit` says in plain words what the band has done on such
    series and what to do, and the note survives saving; a seasonal series gets none, and a
    hostile record in a model file is ignored."""
    rng = np.random.default_rng(3)
    days = np.arange(300)
    walk = pd.DataFrame({"series_id": "price", "time": pd.Timestamp("2020-01-01") + pd.to_timedelta(days, "D"),
                         "value": 100 + np.cumsum(rng.normal(0, 1, days.size))})
    data, model = tmp_path / "price.csv", tmp_path / "model"
    walk.to_csv(data, index=False)
    assert main(["fit", str(data), "--task", "forecast", "--horizon", "14d", "--no-twin", "--epochs", "1",
                 "--out", str(model), "--quiet", "--nice", "0"]) == 0
    err = capsys.readouterr().err
    assert "note: No season was found and the series carries its past forward like a random walk" in err
    assert "check it on this series with a backtest" in err
    forecaster = LevyForecaster.load(model)
    assert any(note.startswith("No season was found") for note in forecaster.notes())  # the same words from Python
    opened = forecaster.fitted
    assert opened.base_forecast.harmonics == ()
    assert min(opened.training["persistence"].values()) >= 0.9
    assert opened.band_note() is not None and "(lag-one autocorrelation 0.9" in opened.band_note() and "for value)" in opened.band_note()
    # the seasonal cycle: a period, so nothing measured and nothing said
    assert "persistence" not in fitted_cycle.fitted.training and fitted_cycle.fitted.band_note() is None
    assert all(not note.startswith("No season") for note in fitted_cycle.notes())
    with pytest.raises(ValueError, match="fit the forecaster first"):
        LevyForecaster().notes()
    for hostile in ("0.99", {"value": "x"}, {"value": True}, {"value": float("nan")}, {"value": 7.0}):
        opened.training["persistence"] = hostile
        assert opened.band_note() is None
