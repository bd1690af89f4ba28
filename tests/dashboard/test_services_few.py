"""``levy_dashboard.services`` on few series: the wrappers of the rolling-origin fit (the forecast
past the end, the backtest) return what the ``levy_core`` calls they wrap return, mapped to
the user's ids and clock by ``ModelData.clock`` / ``to_user_time`` and nothing else; a cache
hit calls nothing in ``levy_core``. The model shipped with the bundled one-series sample (no fit).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from levy_dashboard import services
from levy_dashboard.data import user_clock
from levy_dashboard.display import tables
from levy_dashboard.fitting.fits import FitResult

from levy_core.calibration import over_time
from levy_core.data import DataError, parse_duration, to_user_time
from levy_core.pipeline import evaluation, predict, user_frames

MC = 5


@pytest.fixture(scope="module")
def ores() -> FitResult:
    """A forecast on the one-series sample: rolling origins. The model shipped with the sample
    (``levy fit --task forecast``, what the app opens it with), not a fit of its own: a
    rolling-origin fit, even of 3 epochs, took 10 s of this file's 12 s, and every test here
    compares a wrapper with the ``levy_core`` call it wraps, whatever the model."""
    src = services.data.source_from_sample("Single sensor series")
    obs = services.data.load_observations(src.digest, src.data, src.name)
    res = services.fit.shipped_fit(src, obs, services.data.data_key(obs))  # the key the app reads it under
    assert res is not None and res.shipped, "the one-series sample ships its model (make sample-models)"
    assert res.on_origins and res.fitted.task.kind == "forecast"
    return res


def test_series_and_channels_are_the_users(ores: FitResult):
    assert services.band.series_options(ores.key, ores) == ["series_0"]
    end_id, _ = ores.data.clock.end_episode("series_0")
    assert services.band.channel_options(ores.key, ores, "series_0") == ores.data.channels_of(end_id, ores.fitted.channels)
    assert services.band.series_label(ores.key, ores, "series_0") == "series_0"
    assert services.band.time_axis(ores) == "time (UTC)"
    assert services.band.band_kinds(ores)[0] == "Adaptive conformal"
    assert services.band.adaptive_levels(ores) == [0.5, 0.8, 0.9, 0.95]


def test_future_is_predict_future_in_the_users_clock(ores: FitResult):
    f = services.origins.future(ores.key, ores, "series_0", "temperature_c", 40.0, MC)
    direct = predict.predict_future(ores.fitted, ores.data, 40.0, n_points=services.origins.future_points(),
                                     series_ids=["series_0"], channels=["temperature_c"], mc_passes=MC)
    pd.testing.assert_frame_equal(f.drop(columns="when"), direct, check_exact=True)
    when = to_user_time(direct["series_id"], direct["time"], ores.obs).dt.tz_localize(None)
    np.testing.assert_array_equal(f["when"].to_numpy(), when.to_numpy())
    inputs = services.origins.future_inputs(ores.key, ores, "series_0", "temperature_c", 0.8, "adaptive", 40.0, MC)
    bands = user_frames.with_bands(direct, ores.fitted, 0.8, "adaptive")
    np.testing.assert_array_equal(inputs.grid["lower"].to_numpy(), bands["lower"].to_numpy())
    np.testing.assert_array_equal(inputs.grid["mc_upper"].to_numpy(), bands["mc_upper"].to_numpy())
    assert inputs.band_label == "adaptive conformal" and inputs.last == inputs.points["when"].max()
    assert set(inputs.points["role"]) == {"context", "history"}
    assert inputs.points["series_id"].eq("series_0").all()


@pytest.mark.usefixtures("fresh_caches")
def test_future_cache_hit_runs_no_model(ores: FitResult, monkeypatch: pytest.MonkeyPatch):
    services.origins.future(ores.key, ores, "series_0", "humidity_pct", 30.0, MC)
    calls = []
    original = predict.predict_future
    monkeypatch.setattr(predict, "predict_future", lambda *a, **k: calls.append(1) or original(*a, **k))
    for kind in ("adaptive", "conformal", "gaussian"):  # only the bands move: no model pass
        services.origins.future_inputs(ores.key, ores, "series_0", "humidity_pct", 0.9, kind, 30.0, MC)
    assert calls == []
    services.origins.future(ores.key, ores, "series_0", "humidity_pct", 31.0, MC)  # another horizon: a pass
    assert calls == [1]


@pytest.mark.slow  # a backtest refits on rolling origins
def test_backtest_is_evaluate_and_rolling_coverage_in_the_users_clock(ores: FitResult):
    result, pred = evaluation.evaluate(ores.fitted, ores.data, mc_passes=MC)
    user = services.origins.backtest_predictions(ores.key, ores, MC)
    mapped = ores.data.clock.to_user(pred)
    np.testing.assert_array_equal(user["time"].to_numpy(), mapped["time"].to_numpy())
    assert set(user["series_id"]) == {"series_0"}
    np.testing.assert_array_equal(user["origin"].to_numpy(), pred["origin"].to_numpy())
    np.testing.assert_array_equal(user["lower_adaptive_90"].to_numpy(), pred["lower_adaptive_90"].to_numpy())
    rolling = services.origins.rolling_coverage(ores.key, ores, MC, 10)
    direct = over_time.rolling_coverage(pred, window=10)
    pd.testing.assert_frame_equal(rolling[list(direct.columns)], direct, check_exact=True)
    assert rolling["series_id"].eq("series_0").all() and rolling["when"].notna().all()
    origins = services.origins.test_origins(ores, "series_0")
    assert origins == sorted(set(pred["origin"])) and len(origins) == result["levy"]["test_origins"]
    one = services.origins.origin_inputs(ores.key, ores, MC, "series_0", "temperature_c", origins[-1])
    assert len(one.queries) and (one.queries["origin"] == origins[-1]).all()
    assert (one.context["time"] <= origins[-1]).all() and (one.queries["time"] > origins[-1]).all()
    table = services.evaluation.backtest_table(result)
    assert list(table["method"]) == ["Lévy"] * 4 + ["MC-Dropout"] * 4
    assert table["long-run bound"].iloc[2] == tables.bound_text(result["levy"]["adaptive_bound"]["0.9"])


def test_a_bound_above_one_is_said_to_bound_nothing_yet():
    assert tables.bound_text(0.123) == "± 12.3 points"
    assert tables.bound_text(14.6) == "none yet (± 1460 points)"
    assert tables.bound_text(float("inf")).startswith("none yet")
    assert tables.bound_text(14.6, short=True) == "none yet"
    assert tables.bound_text(0.123, short=True) == "± 12.3 points"


def test_queries_of_an_origin_map_back_to_its_episode(ores: FitResult):
    origin = services.origins.test_origins(ores, "series_0")[-2]
    held = services.evidence.heldout_queries(ores.key, ores, "series_0", origin)
    model_id, _ = user_clock.model_query(ores.data, "series_0", origin, origin)
    direct = services.evidence.heldout_predictions(ores.key, ores, model_id)
    assert len(held) == len(direct) and (held["origin"] == origin).all()
    np.testing.assert_array_equal(held["time"].to_numpy(), direct["time"].to_numpy() + origin)
    t, ch = float(held["time"].iloc[0]), str(held["channel"].iloc[0])
    assert user_clock.model_query(ores.data, "series_0", t, origin) == (model_id, pytest.approx(t - origin))
    att = services.evidence.query_attention(ores.key, ores, "series_0", ch, t, origin)
    raw = services.evidence.attention(ores.key, ores, model_id, ch, t - origin)
    np.testing.assert_allclose(att["time"].to_numpy(), raw["time"].to_numpy() + origin)
    assert att["series_id"].eq("series_0").all()
    assert services.evidence.query_draws(ores.key, ores, "series_0", ch, t, 100, origin)["sigma"] == pytest.approx(
        services.evidence.draws(ores.key, ores, model_id, ch, t - origin, 100)["sigma"])


def test_horizon_text_round_trips_and_bad_text_is_a_data_error(ores: FitResult):
    for hours in (0.5, 33.535, 72.0, 24 * 30, 24 * 800):
        text = services.origins.horizon_text(hours)
        assert services.origins.parse_horizon(ores.obs, text) == pytest.approx(hours, rel=5e-3)
    assert services.origins.parse_horizon(ores.obs, "2w") == parse_duration("2w", ores.obs.report.input_time_unit)
    for bad in ("banana", "12", "-3h", ""):
        with pytest.raises(DataError):
            services.origins.parse_horizon(ores.obs, bad)
    assert services.origins.auto_horizon(ores.obs_hash, ores.obs) == pytest.approx(ores.fitted.task.horizon)
