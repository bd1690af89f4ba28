"""Widgets several panels share: the band view's controls (series, channel, level, band type,
MC-Dropout overlay) and what they select (``View``), the band chart of that view, which test
origin a panel shows, and the red message of a failure.

Not a panel: views import this module, never each other. Like a view it only lays out widgets
and reads or writes session state; it gets every number from ``services`` and every figure
from ``charts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import streamlit as st
from levy_dashboard import charts, services
from levy_dashboard.display.markup import plain
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["View", "band_figure", "current_origin", "current_view", "ensure_view_state", "level_and_kind",
           "mc_controls", "selected_query_here", "series_and_channel", "show_failure"]


@dataclass
class View:
    """The shared view controls: which series/channel, which band, MC-Dropout overlay (the
    user's series ids; on rolling origins also the horizon past the end, in hours)."""

    series_id: str
    channel: str
    level: float
    kind: str  # "gaussian", "conformal" or "adaptive"
    show_mc: bool
    mc_passes: int
    horizon: float | None = None  # rolling origins: hours past the last observation


def show_failure(message: str) -> None:
    """A failure as a red message, ending in a full stop, with what to do; the previous data
    and model stay."""
    text = message.strip()
    if text and text[-1] not in ".!?":
        text += "."
    hint = " Fix it on the Data page (column mapping)." if "mapping" in text.lower() else ""
    st.error(f"{plain(text)}{hint} The previous data and model are kept.", icon="🚫")


def ensure_view_state(res: FitResult) -> None:
    """Valid series, channel, band type and level in session state (before any widget using
    them is drawn): the user's series ids, the band types this fit offers (the adaptive band
    by default on rolling origins, at the levels its walk holds)."""
    ss = st.session_state
    options = services.band.series_options(res.key, res)
    if ss.get(state.SERIES) not in options:
        ss[state.SERIES] = options[0]
    chans = services.band.channel_options(res.key, res, ss[state.SERIES])
    if ss.get(state.CHANNEL) not in chans:
        ss[state.CHANNEL] = chans[0]
    kinds = services.band.band_kinds(res)
    # each kind of fit starts on its own default band (adaptive on rolling origins), even when
    # the model changed in a run that did not draw this panel (the radio's last value comes back)
    if ss.get(state.BAND_KIND) not in kinds or ss.get(state.BAND_KIND_ORIGINS, res.on_origins) != res.on_origins:
        ss[state.BAND_KIND] = kinds[0]
    ss[state.BAND_KIND_ORIGINS] = res.on_origins
    levels = services.band.adaptive_levels(res) if res.on_origins else []
    if levels and ss.get(state.LEVEL) not in levels:
        ss[state.LEVEL] = min(levels, key=lambda v: abs(v - float(ss.get(state.LEVEL, 0.9))))


def mc_controls(res: FitResult, container: Any = None) -> None:
    """MC-Dropout overlay toggle and T (shared keys: the band and MC-Dropout pages show both)."""
    c = container or st
    cols = c.columns([1, 2])
    cols[0].toggle(
        "MC-Dropout band",
        key=state.MC_OVERLAY,
        disabled=not res.has_twin,
        help="Overlay the MC-Dropout twin's band (vermillion) on the Lévy band (blue).",
    )
    cols[1].slider(
        "MC-Dropout passes T",
        2,
        100,
        key=state.MC_T,
        disabled=not res.has_twin,
        help="Stochastic forward passes of the dropout twin per prediction; cost grows with T.",
    )


def level_and_kind(res: FitResult, level_col: Any, kind_col: Any) -> None:
    """The band level (on rolling origins: the levels the adaptive walk holds) and type."""
    levels = services.band.adaptive_levels(res)
    if res.on_origins and levels:
        level_col.select_slider(
            "Band level",
            options=levels,
            key=state.LEVEL,
            format_func=lambda v: f"{100 * v:.0f} %",
            help="Nominal coverage of the central band; the adaptive band holds at the levels "
            "its walk over the test origins was run at.",
        )
    else:
        level_col.slider(
            "Band level", 0.50, 0.99, step=0.01, key=state.LEVEL, format="%.2f",
            help="Nominal coverage of the central band.",
        )
    kind_col.radio(
        "Band type",
        services.band.band_kinds(res),
        key=state.BAND_KIND,
        horizontal=True,
        help="Scaled Gaussian: ŷ ± z·c·σ̂. Conformal: split-conformal quantile of |y−ŷ|/σ̂ among "
        "this channel's calibration queries (pooled over channels when it has fewer than 50), "
        "with a finite-sample coverage guarantee for the channel when series are exchangeable. "
        "Adaptive conformal (rolling origins): the split-conformal band walked along the test "
        "origins in time order, " + services.band.GUARANTEE + ".",
    )


def series_and_channel(res: FitResult, series_col: Any, channel_col: Any) -> None:
    """The user's series (test series first when they are the model's) and its channels."""
    ss = st.session_state
    series_col.selectbox(
        "Series",
        services.band.series_options(res.key, res),
        key=state.SERIES,
        format_func=lambda s: services.band.series_label(res.key, res, s),
        help="Test series were held out from training and calibration.",
    )
    if ss[state.CHANNEL] not in services.band.channel_options(res.key, res, ss[state.SERIES]):
        ss.pop(state.CHANNEL, None)
    chans = services.band.channel_options(res.key, res, ss[state.SERIES])
    channel_col.selectbox("Channel", chans, key=state.CHANNEL)


def current_view(res: FitResult) -> View:
    """What the shared controls select now (the horizon: the last valid one typed for this fit)."""
    ss = st.session_state
    horizon = None
    if res.on_origins:
        horizon = ss[state.FUTURE_HOURS].get(res.key, (None, res.fitted.task.horizon))[1]
    return View(
        series_id=str(ss[state.SERIES]),
        channel=str(ss[state.CHANNEL]),
        level=float(ss[state.LEVEL]),
        kind=state.BAND_KINDS[ss[state.BAND_KIND]],
        show_mc=bool(ss[state.MC_OVERLAY]) and res.has_twin,
        mc_passes=int(ss[state.MC_T]),
        horizon=horizon,
    )


def selected_query_here(view: View) -> dict[str, Any] | None:
    """The selected query when it belongs on the band of the view's series (not a backtest's)."""
    q = state.get(state.QUERY)
    if q and q["series_id"] == view.series_id and "origin" not in q:
        return q
    return None


def band_figure(res: FitResult, view: View) -> tuple[go.Figure, bool]:
    """The band chart of the view and whether its band is infinite somewhere. On rolling
    origins: the forecast past the end of the data (``views/future.py`` draws its controls)."""
    if res.on_origins:
        future = services.origins.future_inputs(res.key, res, view.series_id, view.channel, view.level, view.kind,
                                                view.horizon or res.fitted.task.horizon, view.mc_passes,
                                                view.show_mc)
        return charts.future_figure(future.grid, future.points, **future.figure_arguments()), future.infinite
    inputs = services.band.selectable_band_inputs(res.key, res, view.series_id, view.channel, view.level,
                                                  view.kind, view.mc_passes, view.show_mc)
    marks = services.evidence.query_marks(res.key, res, selected_query_here(view), view.series_id, view.channel)
    marks = services.band.marks_on_user_clock(res, view.series_id, inputs, marks)
    return charts.band_figure(inputs.grid, inputs.points, **inputs.figure_arguments(), **marks), inputs.infinite


def current_origin(res: FitResult, series_id: str, *, query_first: bool = False) -> float | None:
    """Rolling origins: the test origin of ``series_id`` whose queries a panel offers — the
    selected query's (with ``query_first``), the backtest's, else the latest; None otherwise."""
    if not res.on_origins:
        return None
    origins = services.origins.test_origins(res, series_id)
    chosen = [(state.get(state.QUERY) or {}).get("origin")] if query_first else []
    for origin in (*chosen, state.get(state.BACKTEST_ORIGIN)):
        if origin in origins:
            return origin
    return origins[-1] if origins else None
