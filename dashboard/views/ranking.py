"""Panel 7 · Trust ranking: series ranked by trust in one batched pass; a picked row (or series)
becomes the band view's series, and a link opens the Predictive band page on it.

The link is a page link (the browser navigates, as with the navigation bar, and sends every
widget's state along); ``st.switch_page`` from a callback's rerun would drop the sidebar's
widgets (the data source, the upload) on the way."""

from __future__ import annotations

import streamlit as st
from levy_dashboard import charts, services
from levy_dashboard.display.markup import plain
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state


def _for_the_band(series_id: str) -> None:
    """The band view's series becomes ``series_id`` (its first channel, no query selected)."""
    st.session_state[state.SERIES] = str(series_id)
    st.session_state.pop(state.CHANNEL, None)
    state.clear_query()


def _open(series_id: str) -> None:
    """A callback's pick: the band view's series, and the picker's."""
    _for_the_band(series_id)
    st.session_state[state.RANK_OPEN] = str(series_id)


def _on_row_select() -> None:
    event = st.session_state.get(state.RANK_TABLE)
    rows = event.get("selection", {}).get("rows", []) if event else []
    ranked = st.session_state.get(state.RANKED_IDS, [])
    if rows and rows[0] < len(ranked):
        _open(ranked[rows[0]])


def _on_open_pick() -> None:
    sid = st.session_state.get(state.RANK_OPEN)
    if sid is not None:
        _open(sid)


def render(res: FitResult, band_page: st.Page) -> None:
    """The ranking; ``band_page`` is the Predictive band's page (``st.navigation``'s)."""
    ranked, seconds = services.evaluation.ranking(res.key, res)
    ids = ranked["series_id"].astype(str).tolist()
    st.session_state[state.RANKED_IDS] = ids
    st.subheader(f"{len(ranked):,} series ranked by trust")
    st.caption(
        f"Scored in {seconds:.3g} s in one batched pass. Trust score = the mean calibrated spread "
        "c·σ̂ on "
        "the normalised scale over each series' prediction range (lower = more trusted). Click a "
        "row "
        "(or a column header to sort) — a picked row becomes the band view's series; the link under the "
        "table opens it on the Predictive band page."
    )
    st.dataframe(
        ranked,
        key=state.RANK_TABLE,
        on_select=_on_row_select,
        selection_mode="single-row",
        hide_index=True,
        width="stretch",
        height=360,
        column_config={
            "rank": st.column_config.NumberColumn("rank", help="1 = most trusted"),
            "trust_score": st.column_config.NumberColumn("trust score c·σ̂", format="%.4f"),
            "mean_sigma": st.column_config.NumberColumn("mean σ̂", format="%.3g"),
            "mean_log_evidence": st.column_config.NumberColumn("mean log Λ", format="%.2f"),
            "mean_n_eff": st.column_config.NumberColumn("mean n_eff", format="%.3g"),
            "mean_disagreement": st.column_config.NumberColumn("mean tr Σ", format="%.3g"),
        },
    )
    shown = state.get(state.SERIES)
    if shown in ids:  # the picker follows the band view's series, wherever it was set
        st.session_state[state.RANK_OPEN] = shown
    c = st.columns([2, 1.4, 1.6], vertical_alignment="bottom")
    c[0].selectbox("Series for the band view", ids, key=state.RANK_OPEN, on_change=_on_open_pick)
    sid = st.session_state.get(state.RANK_OPEN)
    if shown not in ids:  # no band view yet (this page opened first): the link opens the picked one
        _for_the_band(sid)
    c[1].page_link(band_page, label=f"Open series {plain(sid)} on the band page", icon=":material/show_chart:")
    c[2].download_button(
        "Download the ranking (CSV)",
        data=services.evaluation.ranking_csv(ranked),
        file_name="levy_trust_ranking.csv",
        mime="text/csv",
        key=state.RANK_DOWNLOAD,
        on_click="ignore",
    )
    st.plotly_chart(
        charts.ranking_figure(ranked, highlight=state.get(state.SERIES)), key=state.RANKING_CHART
    )
    st.caption(
        "How to read: one bar per series, most trusted on the left; hover for its evidence (n_eff) "
        "and disagreement (tr Σ). The series open in the band view is outlined in orange."
    )
