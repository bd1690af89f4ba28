"""Panel · Backtest (fits on rolling origins): did the bands hold over time?

The latest test origins' 90 % bands — adaptive conformal, and split conformal for comparison —
against what happened (one origin at a time, the latest first), each method's coverage over
time (``pipeline.rolling_coverage``) with the nominal level, and the guarantee in use in
words with the walk's long-run coverage and bound (``evaluate``'s result).
"""

from __future__ import annotations

import streamlit as st
from levy_dashboard import charts, services
from levy_dashboard.display import widgets
from levy_dashboard.display.markup import plain
from levy_dashboard.display.widgets import View
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state

WINDOW = 10  # test origins per point of the coverage-over-time chart


def _summary(result: dict) -> None:
    lv = result["levy"]
    st.subheader(f"Backtest on the {lv['test_origins']} latest forecast origins")
    st.markdown(f"**Guarantee in use** (the adaptive band): {result.get('guarantee', services.band.GUARANTEE)}.")
    c = st.columns(4)
    c[0].metric("Test origins T", f"{lv['test_origins']}", help=f"step size γ = {lv['gamma']:g}")
    c[1].metric("Adaptive 90 % band: coverage", f"{100 * lv['adaptive_coverage']['0.9']:.1f} %",
                help="Share of all test queries inside the band, walked oldest origin first.")
    bound = lv["adaptive_bound"]["0.9"]
    c[2].metric("Long-run bound", services.evaluation.bound_text(bound, short=True),
                help="(max(α, 1 − α) + γ)/(γT): how far the walk's miss rate may stray from 10 % "
                f"over these T origins, whatever the data do (here {services.evaluation.bound_text(bound)}). "
                "Origins closer than a horizon forecast nearly the same window, so γ counts one horizon "
                "of them as one step: a few horizons of test origins bound nothing yet.")
    c[3].metric("Split conformal 90 %: coverage", f"{100 * lv['conformal_coverage']['0.9']:.1f} %",
                help="Its guarantee assumes exchangeable episodes, which a drifting series is not.")
    st.caption(
        "The bound holds whatever the data do and shrinks as 1/T: with few test origins it is wide, "
        "and the coverage over time below shows how close the walk actually stays to 90 %."
    )


def _origin_section(res: FitResult, view: View) -> None:
    origins = services.origins.test_origins(res, view.series_id)
    if not origins:
        st.info(f"Series {plain(view.series_id)} has no test origin.")
        return
    ss = st.session_state
    if ss.get(state.BACKTEST_ORIGIN) not in origins:
        ss[state.BACKTEST_ORIGIN] = origins[-1]
    st.select_slider(
        "Forecast origin (the latest on the right)",
        options=origins,
        key=state.BACKTEST_ORIGIN,
        format_func=lambda o: services.band.time_text(res, view.series_id, o),
        help="Each test origin is a forecast made with only the data up to it; the queries after "
        "it are what happened.",
    )
    inputs = services.origins.origin_inputs(res.key, res, view.mc_passes, view.series_id, view.channel,
                                            float(ss[state.BACKTEST_ORIGIN]))
    st.plotly_chart(charts.origin_band_figure(inputs.queries, inputs.context, **inputs.figure_arguments()),
                    key=state.BACKTEST_CHART)
    st.caption(
        "How to read: black dots are what the model saw at the origin (dashed line); right of it the "
        "blue line is its forecast, the blue band the adaptive conformal 90 % band and the dashed "
        "outline the split-conformal one; orange diamonds are what happened. Over many origins "
        "about 1 in 10 diamonds should fall outside the band."
    )


def _coverage_section(res: FitResult, view: View) -> None:
    table = services.origins.rolling_coverage(res.key, res, view.mc_passes, WINDOW)
    st.plotly_chart(
        charts.rolling_coverage_figure(table, level=0.9, window=WINDOW, time_axis=services.band.time_axis(res)),
        key=state.ROLLING_CHART,
    )
    st.caption(
        f"How to read: at each test origin, the share of the queries of the last {WINDOW} origins "
        "inside each method's 90 % band — solid the adaptive conformal band, dashed split conformal; "
        "the dotted line is the nominal 90 %. The adaptive band widens after each miss and narrows "
        "after runs of hits, which is what keeps its long-run coverage within the bound; split "
        "conformal keeps the quantile of its calibration origins whatever happens next."
    )


def render(res: FitResult) -> None:
    if not res.on_origins:
        st.info(
            "The backtest is for forecasts on rolling origins: fit a **Forecast** on data with fewer "
            "than 10 series (e.g. the bundled *Single sensor series* sample). A fit on many series "
            "is checked on held-out series on the Calibration page."
        )
        return
    widgets.ensure_view_state(res)
    c = st.columns([2, 1.4, 3])
    widgets.series_and_channel(res, c[0], c[1])
    view = widgets.current_view(res)
    with st.spinner("Walking the test origins …"):
        result, _ = services.evaluation.evaluation(res.key, res, view.mc_passes)
    _summary(result)
    _origin_section(res, view)
    _coverage_section(res, view)
    st.dataframe(services.evaluation.backtest_table(result), hide_index=True)
    st.caption(
        "Per method and level: the adaptive band's coverage over all test queries, the bound on its "
        "long-run distance from the level, its mean width (normalised units), and split conformal's "
        "coverage on the same queries."
    )
