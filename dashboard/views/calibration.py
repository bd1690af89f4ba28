"""Panel 6 · Calibration: reliability diagram, PIT histogram, coverage by quintile of width,
evidence and lead, risk–coverage against the per-channel constant, and the exports."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from levy_dashboard import charts, services
from levy_dashboard.display import report, widgets
from levy_dashboard.display.markup import plain
from levy_dashboard.display.widgets import View
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state


def _curves_section(curves: dict) -> None:
    """Reliability diagram over the full width, the PIT histogram below it."""
    st.subheader(f"Calibration on {curves['n']:,} test queries")
    st.plotly_chart(charts.reliability_figure(curves["reliability"]), key=state.RELIABILITY_CHART)
    st.caption(
        "How to read: for each nominal level, the share of test queries inside the central band; "
        "on the "
        "dotted diagonal a band means what it says, above it it is too wide, below too narrow. "
        "Solid: "
        "scaled Gaussian (ŷ ± z·c·σ); dashed: split conformal (guaranteed ≥ its level on average)."
    )
    st.plotly_chart(charts.pit_figure(curves["pit"]), key=state.PIT_CHART)
    st.caption(
        "How to read: where each truth falls in its predictive distribution; flat at 1 is "
        "calibrated, a U shape over-confident, a hump under-confident."
    )


def _per_query_section(res: FitResult, T: int, level: float) -> None:
    """Coverage by quintile of width, evidence and lead; risk–coverage against the per-channel constant."""
    st.subheader("Does the band hold per query, and does the spread earn its place?")
    bins = services.per_query.coverage_bins(res.key, res, T, level)
    st.plotly_chart(charts.coverage_by_quantile_figure(bins, level), key=state.QUANTILE_COVERAGE_CHART)
    st.caption(services.per_query.coverage_caption(bins, level))
    risk = services.per_query.selective_risk(res.key, res, T)
    st.plotly_chart(charts.risk_coverage_figure(risk.curves, risk.oracle, risk.constant), key=state.RISK_CHART)
    st.caption(services.per_query.risk_caption(risk))


def _guarantee_section(res: FitResult, T: int, level: float) -> None:
    """Conformal coverage: the guarantee table and the per-channel coverage at ``level``."""
    st.subheader("Does the conformal band hold its level?")
    st.dataframe(
        services.evaluation.guarantee_table(res.key, res, T), hide_index=True, key=state.GUARANTEE_TABLE
    )
    st.caption("How to read: " + services.evaluation.GUARANTEE_CAPTION)
    if res.fitted.new_series_note():
        st.caption(res.fitted.new_series_note())
    note = services.evaluation.coverage_note(res.key, res, T)
    if note:
        st.warning(note)
    st.plotly_chart(
        charts.channel_coverage_figure(services.evaluation.channel_coverage(res.key, res, T, level), level),
        key=state.CHANNEL_COVERAGE_CHART,
    )
    st.caption(
        "How to read: each channel's share of test queries inside its conformal band at the "
        "level chosen on the band panel (dotted line). The band is conformalized per channel, "
        "so each channel, not only the mix, should sit near the line; a channel with few test "
        "queries scatters more (hover for the count)."
    )


def _export_section(res: FitResult, T: int, view: View, pred: pd.DataFrame) -> None:
    """The HTML report (built only when downloaded) and the per-query predictions."""
    st.subheader("Export")
    kind = view.kind

    def html() -> str:
        return report.build_report(services.report.report_inputs(
            res.key,
            res,
            T,
            series_id=view.series_id,
            channel=view.channel,
            level=view.level,
            kind=kind,
            horizon=view.horizon,
        ))

    c = st.columns(2)
    c[0].download_button(
        "Download the report (HTML)",
        data=html,
        file_name="levy_uncertainty_report.html",
        mime="text/html",
        key=state.REPORT_DOWNLOAD,
        on_click="ignore",
        help="Self-contained: the figures (plotly.js inlined), metrics tables and what was "
        "fitted, when and on what data. Opens offline.",
    )
    c[1].download_button(
        "Download the per-query predictions (CSV)",
        data=services.evaluation.prediction_csv(pred, res),
        file_name="levy_test_predictions.csv",
        mime="text/csv",
        key=state.PRED_DOWNLOAD,
        on_click="ignore",
        help="One row per test query (the series ids and times as in your data): y_true, mean, "
        "σ̂, c·σ̂, the 90 % conformal band, evidence, disagreement, MC-Dropout.",
    )
    st.caption(
        f"The report also shows the band of series {plain(view.series_id)}, channel {plain(view.channel)} at "
        f"{100 * view.level:.0f} % ({state.get(state.BAND_KIND).lower()})."
    )


def render(res: FitResult) -> None:
    widgets.ensure_view_state(res)
    view = widgets.current_view(res)
    T = view.mc_passes
    with st.spinner("Scoring the test split …"):
        curves = services.evaluation.calibration_curves(res.key, res, T)
        result, pred = services.evaluation.evaluation(res.key, res, T)
    _curves_section(curves)
    _per_query_section(res, T, view.level)
    _guarantee_section(res, T, view.level)
    _export_section(res, T, view, pred)
