"""Panel 4 · Evidence vs disagreement: held-out queries, and what a selected query drew on.

The per-time evidence and disagreement rows sit under the band (``views/band.py``, one
figure with a shared time axis); this panel adds the scatter of held-out queries and the
explanation of one query.
"""

from __future__ import annotations

import functools

import pandas as pd
import streamlit as st
from levy_dashboard import charts, services
from levy_dashboard.display import widgets
from levy_dashboard.display.markup import plain
from levy_dashboard.display.widgets import View
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state


def _origin_of(cd: list | tuple) -> float | None:
    """The forecast origin in a scatter point's customdata (rolling origins), else None."""
    try:
        raw = charts.evidence.customdata_field(cd, "origin")
        value = float(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None
    return value if value is not None and value == value else None  # NaN: no origin


def _on_scatter_select() -> None:
    event = st.session_state.get(state.EVIDENCE_SCATTER)
    points = event.get("selection", {}).get("points", []) if event else []
    hits = []
    for p in points:
        cd = p.get("customdata")
        if isinstance(cd, (list, tuple)) and len(cd) >= 3:
            field = functools.partial(charts.evidence.customdata_field, cd)
            try:
                err = float(field("abs_error_norm") or 0.0)
                hits.append((err, str(field("series_id")), str(field("channel")), float(field("time")), _origin_of(cd)))
            except (TypeError, ValueError):
                continue
    if hits:  # a box may hold many: explain the worst-predicted one
        _, sid, ch, t, origin = max(hits, key=lambda h: h[0])
        state.select_query(sid, ch, t, move_view=True, origin=origin)


def _on_pick(origin: float | None) -> None:
    t = st.session_state.get(state.QUERY_PICK)
    if t is None:
        state.clear_query()
        return
    state.select_query(
        st.session_state[state.SERIES],
        st.session_state[state.CHANNEL],
        float(t),
        move_view=False,
        origin=origin,
    )


def _pick_fallback(res: FitResult, view: View) -> None:
    origin = widgets.current_origin(res, view.series_id)
    here = services.evidence.channel_queries(res.key, res, view.series_id, view.channel, origin)
    times = [float(t) for t in here["time"]]
    q = state.get(state.QUERY)
    current = None
    if q and q["series_id"] == view.series_id and q["channel"] == view.channel and q.get("origin") == origin:
        current = next((t for t in times if abs(t - q["time"]) < 1e-9), None)
    st.session_state[state.QUERY_PICK] = current
    labels = {
        float(t): f"{services.band.time_text(res, view.series_id, t)} · y = {y:.4g} · ŷ = {m:.4g}"
        for t, y, m in zip(here["time"], here["y_true"], here["mean"], strict=True)
    }
    at = "" if origin is None else f" forecast at {services.band.time_text(res, view.series_id, origin)}"
    st.selectbox(
        f"…or pick a held-out query of series {plain(view.series_id)}, channel {plain(view.channel)}{at}",
        [None, *times],
        key=state.QUERY_PICK,
        on_change=_on_pick,
        args=(origin,),
        format_func=lambda t: "(none)" if t is None else labels.get(t, services.band.time_text(res, view.series_id, t)),
        help="Same as clicking an orange diamond on the band chart"
        + (" (rolling origins: the queries of the origin open on the Backtest page)." if origin is not None else "."),
    )


def _explain(res: FitResult, q: dict, test: pd.DataFrame) -> None:
    exp = services.evidence.explain_query(res.key, res, q, test)
    if exp is None:
        return
    origin = q.get("origin")
    r = exp.row
    made = "" if origin is None else f", forecast at {services.band.time_text(res, q['series_id'], origin)}"
    st.markdown(
        f"**Selected query**: series {plain(q['series_id'])}, channel {plain(q['channel'])}, "
        f"{services.band.time_text(res, q['series_id'], q['time'])}{made}"
    )
    c = st.columns(6)
    c[0].metric("Observed y", f"{r['y_true']:.4g}")
    c[1].metric("Lévy ŷ", f"{r['mean']:.4g}")
    c[2].metric(
        "c·σ̂", f"{r['pred_std']:.3g}", help=f"raw σ̂ = {r['sigma']:.3g}, scaled by the calibration c"
    )
    c[3].metric("n_eff (evidence)", f"{r['n_eff']:.3g}", help=f"log Λ = {r['log_evidence']:.2f}")
    c[4].metric("tr Σ (disagreement)", f"{r['disagreement']:.3g}", help="data units²")
    c[5].metric("|error| / c·σ̂", f"{exp.error_ratio:.2f}")
    w = exp.factors
    wider = w["ratio"] > 1
    reasons = {(True, "evidence"): "lack of evidence",
               (True, "disagreement"): "disagreement among the observations it draws on",
               (False, "evidence"): "more evidence", (False, "disagreement"): "more agreement"}
    st.markdown(
        f"σ̂ here is **×{w['ratio']:.2f}** the median test query's: ×{w['evidence']:.2f} from the "
        f"evidence term and ×{w['disagreement']:.2f} from the disagreement term — "
        f"{'wider' if wider else 'narrower'} mostly because of **{reasons[(wider, w['reason'])]}**."
    )
    shares = ", ".join(f"{ch} {100 * share:.0f} %" for ch, share in exp.channel_shares)
    st.markdown(
        f"Attention weight by channel: {shares}."
        + ("" if origin is not None else " The band chart rings this channel's observations (ring size = weight).")
    )
    formats = {"value": "{:.4g}", "weight": "{:.3f}"} | ({"time (h)": "{:.3f}"} if exp.in_hours else {})
    st.dataframe(exp.top.style.format(formats), hide_index=True, width="stretch")
    st.caption(
        "How to read: the ten context observations this query draws on most (Lévy weights p_i, "
        "averaged over heads); n_eff counts how many of them are fully compatible."
    )


def render(res: FitResult, view: View) -> None:
    st.subheader("Evidence vs disagreement on held-out queries")
    test = services.evidence.user_test_predictions(res.key, res)
    if len(test):
        several = len(services.band.series_options(res.key, res)) > 1  # one series: nothing to ring
        st.plotly_chart(
            charts.heldout_scatter(
                test, current_series=view.series_id if several else None, selected=state.get(state.QUERY),
                name=services.evidence.scatter_name(res),
            ),
            key=state.EVIDENCE_SCATTER,
            on_select=_on_scatter_select,
            selection_mode=("points", "box"),
        )
        st.caption(
            "How to read: each dot is a held-out query of a test "
            + ("origin" if res.on_origins else "series")
            + "; left = little evidence, "
            "up = the observations it draws on disagree, colour = its actual error. Good "
            "uncertainty "
            "puts the bright (large-error) dots left or up. Click a dot (or box-select: the worst "
            "in the box is taken) to "
            + ("explain it below and open its forecast origin on the Backtest page"
               if res.on_origins else "open it in the band above")
            + (f"; ringed dots are series {plain(view.series_id)}." if several else ".")
        )
    else:
        st.info("No test series with held-out queries: the scatter needs a test split.")
    _pick_fallback(res, view)
    q = state.get(state.QUERY)
    if q:
        _explain(res, q, test)
    else:
        st.caption(
            "Select a query to see which observations it drew on and why its band is as wide as "
            "it is."
        )
