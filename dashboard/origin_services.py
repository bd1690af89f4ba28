"""Cached wrappers for few-series forecasts (rolling origins) and the HTML report.

The second half of ``services``: the forecast past the end of the data, the backtest over
the test origins, and the report that gathers every figure. Same rules: typed cache
wrappers around ``levy_core.pipeline``, nothing computed here.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from levy_dashboard import charts, user_clock
from levy_dashboard.fits import (
    FitResult,
    fast,
)
from levy_dashboard.inputs import (
    BAND_LABELS,
    BandInputs,
    FutureInputs,
    OriginInputs,
    history_frame,
    origin_frames,
)
from levy_dashboard.report import Figure, render_report
from levy_dashboard.services import (
    GUARANTEE,
    band_inputs,
    calibration_curves,
    channel_coverage,
    evaluation,
    guarantee_table,
    model_points,
    time_axis,
    timing_rows,
)
from levy_dashboard.tables import metrics_table

from levy_core import pipeline
from levy_core.data import (
    DataError,
    Observations,
    parse_duration,
)
from levy_core.episodes.origins import plan_origins

# ----------------------------------------------------------------------------- rolling origins


def band_kinds(res: FitResult) -> list[str]:
    """The band types a view offers (labels of ``state.BAND_KINDS``): the adaptive conformal
    band first where the fit walked it (rolling origins)."""
    base = ["Scaled Gaussian", "Conformal"]
    return ["Adaptive conformal", "Conformal", "Scaled Gaussian"] if res.fitted.adaptive.get("levy") else base


def adaptive_levels(res: FitResult) -> list[float]:
    """The levels the adaptive conformal walk holds (rolling origins), ascending."""
    return sorted(float(level) for level in res.fitted.adaptive.get("levy", {}))


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
        return plan_origins(_obs.frame).horizon
    except DataError:
        return None


def future_points() -> int:
    """Steps of the forecast past the end of the data."""
    return 60 if fast() else 120


@st.cache_data(show_spinner=False, max_entries=64)
def future(key: str, _res: FitResult, series_id: str, channel: str, horizon: float, mc_passes: int) -> pd.DataFrame:
    """``pipeline.predict_future`` of one series and channel up to ``horizon`` hours past its
    last observation (the user's ids and hours, ``when``), + MC-Dropout with T passes."""
    f = pipeline.predict_future(_res.fitted, _res.data, float(horizon), n_points=future_points(),
                                series_ids=[series_id], channels=[channel],
                                mc_passes=mc_passes if _res.has_twin else 0)
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
    g = pipeline.with_bands(frame, res.fitted, level, kind)
    _, last = res.data.clock.end_episode(series_id)
    when = user_clock.display_times(res.obs, [series_id], [last]).iloc[0]
    return FutureInputs(g, history_points(key, res, series_id, channel), series_id, channel, level,
                        BAND_LABELS[kind], show_mc, float(horizon), when, time_axis(res))


def future_chart(inputs: FutureInputs) -> go.Figure:
    return charts.future_figure(inputs.grid, inputs.points, **inputs.figure_arguments())


@st.cache_data(show_spinner=False, max_entries=8)
def backtest_predictions(key: str, _res: FitResult, mc_passes: int) -> pd.DataFrame:
    """``evaluate``'s per-query frame on rolling origins in the user's ids and clock: each
    query's ``origin`` (user hours), the adaptive (``lower_adaptive_90`` …) and split
    conformal (``lower_90`` …) 90 % bands, ``when`` and ``origin_when``."""
    return user_clock.to_user(_res.data, evaluation(key, _res, mc_passes)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def rolling_coverage(key: str, _res: FitResult, mc_passes: int, window: int = 10) -> pd.DataFrame:
    """``pipeline.rolling_coverage`` of the backtest, each origin in the user's clock (``when``)."""
    table = pipeline.rolling_coverage(evaluation(key, _res, mc_passes)[1], window=window)
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


def origin_chart(inputs: OriginInputs) -> go.Figure:
    return charts.origin_band_figure(inputs.queries, inputs.context, **inputs.figure_arguments())


# ----------------------------------------------------------------------------- report


def _report_figures(key: str, res: FitResult, mc_passes: int, level: float) -> list[Figure]:
    result, _ = evaluation(key, res, mc_passes)
    cal = calibration_curves(key, res, mc_passes)
    return [
        ("Reliability", charts.reliability_figure(cal["reliability"]),
         "Each curve is the share of test queries inside the central band of each nominal level; on the "
         "dotted diagonal the bands are calibrated, above it they are too wide, below too narrow."),
        ("Coverage by channel", charts.channel_coverage_figure(channel_coverage(key, res, mc_passes, level), level),
         "Each channel's share of test queries inside its conformal band at the report's level (dotted "
         "line); the band is conformalized per channel."),
        ("PIT", charts.pit_figure(cal["pit"]),
         "A flat histogram (density 1) means calibrated; a U shape means over-confident, a hump "
         "under-confident."),
        ("Risk–coverage", charts.risk_coverage_figure(cal["risk"], cal["oracle"]),
         "Lower is better: a spread that ranks errors well keeps the error low while the least trusted "
         "queries are left out."),
        ("Cost", charts.timing_figure(timing_rows(res, result)),
         "Wall time of training and of producing the uncertainty of the whole test split."),
    ]


def band_chart(inputs: BandInputs, **marks: Any) -> go.Figure:
    """``charts.band_figure`` of ``band_inputs`` (``marks``: the selected query's overlays)."""
    return charts.band_figure(inputs.grid, inputs.points, **inputs.figure_arguments(), **marks)


def _report_band(key: str, res: FitResult, mc_passes: int, series_id: str, channel: str, level: float, kind: str,
                 horizon: float | None) -> list[Figure]:
    """The report's band of one series and channel (on rolling origins: past the end of the
    data, and the coverage over time of the backtest)."""
    if not res.on_origins:
        return [("Predictive band", band_chart(band_inputs(key, res, series_id, channel, level, kind, mc_passes)),
                 "Band, n_eff and tr Σ on one time axis: a wide band with small n_eff lacks evidence; "
                 "with large tr Σ the observations it draws on disagree.")]
    ahead = future_chart(future_inputs(key, res, series_id, channel, level, kind, horizon or res.fitted.task.horizon,
                                       mc_passes))
    coverage = charts.rolling_coverage_figure(rolling_coverage(key, res, mc_passes), time_axis=time_axis(res))
    return [("Forecast past the end of the data", ahead,
             "The band widens as the forecast moves away from the data (n_eff falls). Adaptive conformal: "
             f"{GUARANTEE}."),
            ("Backtest: coverage over time", coverage,
             "Share of the last 10 test origins' queries inside each 90 % band; dotted: the nominal level.")]


def build_report(key: str, res: FitResult, mc_passes: int, *, series_id: str | None = None,
                 channel: str | None = None, level: float = 0.9, kind: str = "gaussian",
                 horizon: float | None = None) -> str:
    """The self-contained HTML report (``report.render_report``): plotly.js inlined once,
    every figure, the metrics tables and what was fitted, when and on what data."""
    result, _ = evaluation(key, res, mc_passes)
    figures = _report_figures(key, res, mc_passes, level)
    if series_id is not None and channel is not None:
        figures[:0] = _report_band(key, res, mc_passes, series_id, channel, level, kind, horizon)
    extra = {"softmax twin (no uncertainty)": result.get("softmax"), "50-draw sampler": result.get("sampler_50")}
    return render_report(description=res.describe(), n_test=result["n_test"], mc_passes=mc_passes,
                         figures=figures, metrics=metrics_table(result),
                         guarantee=guarantee_table(key, res, mc_passes), extra=extra)
