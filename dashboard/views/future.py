"""Panel 3 on rolling origins (a forecast on few series) · the forecast past the end of the data.

The user picks a series (their own ids), a channel, how far ahead to look (a duration, read by
``levy_core.data.parse_duration``), the band level and type (adaptive conformal by default);
the chart shows the series' history and the band past its last observation, widening with the
horizon. A horizon that cannot be read is an ``st.error``; the chart keeps the last valid one.
"""

from __future__ import annotations

import streamlit as st
from levy_dashboard import services
from levy_dashboard.display import widgets
from levy_dashboard.display.markup import plain
from levy_dashboard.display.widgets import View
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state

from levy_core.data import DataError


def horizon_control(res: FitResult, container) -> tuple[float, str | None]:
    """The horizon box → (hours to draw, the error of an unreadable entry or None)."""
    ss = st.session_state
    default = res.fitted.task.horizon
    last_text, last_hours = ss[state.FUTURE_HOURS].get(res.key, (services.origins.horizon_text(default), default))
    text = container.text_input(
        "Forecast horizon",
        value=last_text,
        key=state.keyed(state.FUTURE_HORIZON, res.key),
        help="How far past the last observation to forecast: a duration such as 36h, 3d, 2w or 1y (a bare number is in "
        "the data's time unit, not allowed for date-times). The fit's own horizon is "
        f"{services.origins.horizon_text(default)}; beyond it the model extrapolates further than it "
        "was trained to.",
    )
    try:
        hours = services.origins.parse_horizon(res.obs, text)
    except DataError as exc:
        return last_hours, (f"Horizon {text!r}: {exc} The chart keeps the last valid horizon, "
                            f"{services.origins.horizon_text(last_hours)}.")
    ss[state.FUTURE_HOURS][res.key] = (text, hours)
    return hours, None


def _caption(view: View) -> None:
    lvl = f"{100 * view.level:.0f} %"
    guarantee = (
        f" The adaptive conformal band is the one with a guarantee over time: {services.band.GUARANTEE}; "
        "past the end of the data it continues from the walk's last step."
        if view.kind == "adaptive"
        else " This band type has no guarantee over time on one drifting series; the adaptive "
        "conformal band has."
    )
    st.caption(
        "How to read: black dots are the observations the forecast draws on (grey: earlier ones; "
        "double-click the chart to see the whole history); right of the dashed line, the blue "
        f"line is the Lévy forecast and the blue band its {lvl} band"
        + (" (vermillion: MC-Dropout's)" if view.show_mc else "")
        + ". The band widens as the forecast moves away from the data: under it, n_eff (the "
        "evidence left at each time) falls and the evidence term of log σ̂ rises." + guarantee
    )


def render(res: FitResult) -> View:
    widgets.ensure_view_state(res)
    c = st.columns([1.8, 1.3, 1.5, 1.8, 2.6])
    widgets.series_and_channel(res, c[0], c[1])
    _, error = horizon_control(res, c[2])
    widgets.level_and_kind(res, c[3], c[4])
    widgets.mc_controls(res)
    if error:
        st.error(plain(error), icon="🚫")
    view = widgets.current_view(res)
    fig, infinite = widgets.band_figure(res, view)
    if infinite:
        st.warning("The conformal band is infinite at this level: too few calibration queries for it. "
                   "Lower the level or use another band type.")
    st.plotly_chart(fig, key=state.FUTURE_CHART)
    _caption(view)
    return view
