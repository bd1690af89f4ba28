"""Panel 3 · Predictive band (with panel 4's evidence and disagreement rows under it).

The shared controls and the band chart are ``widgets``' (the MC-Dropout panel and the
forecast past the end draw them too); this panel lays them out and takes clicks on the
held-out observations.
"""

from __future__ import annotations

import streamlit as st
from levy_dashboard import services
from levy_dashboard.display import widgets
from levy_dashboard.display.widgets import View
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state


def controls(res: FitResult) -> View:
    widgets.ensure_view_state(res)
    c = st.columns([2.2, 1.4, 2.2, 1.6])
    widgets.series_and_channel(res, c[0], c[1])
    widgets.level_and_kind(res, c[2], c[3])
    widgets.mc_controls(res)
    return widgets.current_view(res)


def _on_band_select() -> None:
    event = st.session_state.get(state.BAND_CHART)
    points = (event or {}).get("selection", {}).get("points", []) if event else []
    hits = [q for q in (services.band.parse_query_id(p.get("customdata")) for p in points) if q is not None]
    if hits:
        sid, ch, t = sorted(hits, key=lambda q: q[2])[0]
        state.select_query(sid, ch, t, move_view=False)


def render(res: FitResult) -> View:
    view = controls(res)
    fig, infinite = widgets.band_figure(res, view)
    if infinite:
        st.warning(
            "The conformal band is infinite at this level: this channel's calibration queries "
            "are too few for it. Lower the level or use the scaled Gaussian band."
        )
    st.plotly_chart(
        fig, key=state.BAND_CHART, on_select=_on_band_select, selection_mode=("points", "box")
    )
    lvl = f"{100 * view.level:.0f} %"
    st.caption(
        "How to read: the blue line is the Lévy mean on a dense time grid and the blue band its "
        f"{lvl} band"
        + (" (vermillion: MC-Dropout's)" if view.show_mc else "")
        + "; black dots were seen by the model (context), orange diamonds were held out and are "
        "predicted. "
        "Under it, on the same time axis: n_eff, how many fully compatible observations support "
        "each time "
        "(hover for log Λ); tr Σ, how much the observations drawn on disagree; and the two terms "
        "whose sum "
        "is log σ̂ — where the green one is high the band is wide for lack of evidence, where the "
        "pink one "
        "is high because of disagreement. Click an orange diamond (or box-select) to see what it "
        "drew on."
        + (" On this panel the band's width is learned from the file's own errors: σ̂'s two terms, "
           "how long ago the query's channel was seen, how far the forecast moves from that value and "
           "how much the channel moves, so a band can widen where σ̂ does not (the note under Fit)."
           if res.fitted.learned_spread is not None else "")
    )
    return view
