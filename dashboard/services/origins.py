"""Origins: forecasts on rolling origins (fewer than 10 series) — the horizon typed as a
duration, the forecast past the end of the data with its bands, and the backtest over the
test origins (the adaptive and split conformal bands against what happened, their coverage
over time).

Cache wrappers around the fitted model's verbs (``levy_core.forecast.verbs``:
``predict_future``, ``with_bands``) and ``calibration.over_time.rolling_coverage``, keyed by the fit key; everything handed back is in the user's ids and
clock (``user_clock``).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from levy_dashboard.data import user_clock
from levy_dashboard.display.chart_inputs import (
    BAND_LABELS,
    FutureInputs,
    OriginInputs,
    history_frame,
    origin_frames,
)
from levy_dashboard.fitting.fits import FitResult, fast
from levy_dashboard.services.band import model_points, time_axis
from levy_dashboard.services.evaluation import evaluation

from levy_core.calibration import over_time
from levy_core.data import DataError, Observations, parse_duration
from levy_core.forecast.verbs import FittedVerbs

__all__ = ["auto_horizon", "backtest_predictions", "future", "future_inputs", "future_points", "history_points",
           "horizon_text", "origin_inputs", "parse_horizon", "rolling_coverage", "test_origins"]


def parse_horizon(obs: Observations, text: str) -> float:
    """``levy_core.data.parse_duration`` in the data's unit: hours, or ``DataError`` saying why not."""
    return parse_duration(text, obs.report.input_time_unit)


def horizon_text(hours: float | None) -> str:
    """Hours as a duration the horizon box reads back ("33.5h", "2.5d")."""
    return "" if hours is None else user_clock.duration_text(hours)


@st.cache_data(show_spinner=False, max_entries=8)
def auto_horizon(obs_hash: str, _obs: Observations) -> float | None:
    """The horizon a few-series forecast gets when none is given (``plan_origins``; None
    when the series are too short for one)."""
    try:
        return FittedVerbs.default_horizon(_obs.frame)
    except DataError:
        return None


# ----------------------------------------------------------------------------- past the end of the data


def future_points() -> int:
    """Steps of the forecast past the end of the data."""
    return 60 if fast() else 120


@st.cache_data(show_spinner=False, max_entries=64)
def future(key: str, _res: FitResult, series_id: str, channel: str, horizon: float, mc_passes: int) -> pd.DataFrame:
    """``predict_future`` of one series and channel up to ``horizon`` hours past its
    last observation (the user's ids and hours, ``when``), + MC-Dropout with T passes."""
    f = _res.verbs.predict_future(_res.data, float(horizon), n_points=future_points(), series_ids=[series_id],
                                  channels=[channel], mc_passes=mc_passes if _res.has_twin else 0)
    return user_clock.with_when(_res.data, f)


@st.cache_data(show_spinner=False, max_entries=64)
def history_points(key: str, _res: FitResult, series_id: str, channel: str) -> pd.DataFrame:
    """``inputs.history_frame``: the series' observations of one channel, in the user's clock."""
    return history_frame(_res.data, model_points(key, _res), series_id, channel)


def future_inputs(key: str, res: FitResult, series_id: str, channel: str, level: float, kind: str,
                  horizon: float, mc_passes: int, show_mc: bool = True) -> FutureInputs:
    """The forecast past the end with its bands at ``level`` of ``kind`` (no model pass when
    only those move) and the series' history."""
    show_mc = show_mc and res.has_twin
    frame = future(key, res, series_id, channel, float(horizon), mc_passes if show_mc else 0)
    g = res.verbs.with_bands(frame, level, kind)
    _, last = res.data.clock.end_episode(series_id)
    when = user_clock.display_times(res.obs, [series_id], [last]).iloc[0]
    return FutureInputs(g, history_points(key, res, series_id, channel), series_id, channel, level,
                        BAND_LABELS[kind], show_mc, float(horizon), when, time_axis(res), res.verbs.clock())


# ----------------------------------------------------------------------------- the backtest


@st.cache_data(show_spinner=False, max_entries=8)
def backtest_predictions(key: str, _res: FitResult, mc_passes: int) -> pd.DataFrame:
    """``evaluate``'s per-query frame on rolling origins in the user's ids and clock: each
    query's ``origin`` (user hours), the adaptive (``lower_adaptive_90`` …) and split
    conformal (``lower_90`` …) 90 % bands, ``when`` and ``origin_when``."""
    return user_clock.to_user(_res.data, evaluation(key, _res, mc_passes)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def rolling_coverage(key: str, _res: FitResult, mc_passes: int, window: int = 10) -> pd.DataFrame:
    """``over_time.rolling_coverage`` of the backtest, each origin in the user's clock (``when``)."""
    table = over_time.rolling_coverage(evaluation(key, _res, mc_passes)[1], window=window)
    owner = backtest_predictions(key, _res, mc_passes).drop_duplicates("origin").set_index("origin")["series_id"]
    table = table.assign(series_id=owner.reindex(table["origin"]).to_numpy())
    return user_clock.with_when(_res.data, table, column="origin")


def test_origins(res: FitResult, series_id: str) -> list[float]:
    """The user hours of one series' test origins, oldest first."""
    return user_clock.series_test_origins(res.data, series_id)


def origin_inputs(key: str, res: FitResult, mc_passes: int, series_id: str, channel: str,
                  origin: float) -> OriginInputs:
    """The backtest at one test origin (user hours) of one series and channel."""
    queries, ctx = origin_frames(res.data, backtest_predictions(key, res, mc_passes), model_points(key, res),
                                 series_id, channel, origin)
    when = user_clock.display_times(res.obs, [series_id], [float(origin)]).iloc[0]
    return OriginInputs(queries, ctx, series_id, channel, when, time_axis(res))
