"""Panel 4 · Evidence vs disagreement: held-out queries, and what a selected query drew on.

The per-time evidence and disagreement rows sit under the band (``views/band.py``, one
figure with a shared time axis); this panel adds the scatter of held-out queries and the
explanation of one query.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import charts, services, state
from dashboard.views.band import View


def _on_scatter_select() -> None:
    event = st.session_state.get(state.EVIDENCE_SCATTER)
    points = event.get("selection", {}).get("points", []) if event else []
    hits = []
    for p in points:
        cd = p.get("customdata")
        if isinstance(cd, (list, tuple)) and len(cd) >= 3:
            try:
                err = float(cd[7]) if len(cd) > 7 else 0.0
                hits.append((err, str(cd[0]), str(cd[1]), float(cd[2])))
            except (TypeError, ValueError):
                continue
    if hits:  # a box may hold many: explain the worst-predicted one
        _, sid, ch, t = max(hits)
        state.select_query(sid, ch, t, move_view=True)


def _on_pick() -> None:
    t = st.session_state.get(state.QUERY_PICK)
    if t is None:
        state.clear_query()
    else:
        state.select_query(
            st.session_state[state.SERIES],
            st.session_state[state.CHANNEL],
            float(t),
            move_view=False,
        )


def _pick_fallback(res: services.FitResult, view: View) -> None:
    held = services.heldout_predictions(res.key, res, view.series_id)
    here = held[held["channel"] == view.channel].sort_values("time")
    times = [float(t) for t in here["time"]]
    q = state.get(state.QUERY)
    current = None
    if q and q["series_id"] == view.series_id and q["channel"] == view.channel:
        current = next((t for t in times if abs(t - q["time"]) < 1e-9), None)
    st.session_state[state.QUERY_PICK] = current
    labels = {
        float(t): f"t = {t:.3f} h · y = {y:.4g} · ŷ = {m:.4g}"
        for t, y, m in zip(here["time"], here["y_true"], here["mean"], strict=True)
    }
    st.selectbox(
        f"…or pick a held-out query of series {view.series_id}, channel {view.channel}",
        [None, *times],
        key=state.QUERY_PICK,
        on_change=_on_pick,
        format_func=lambda t: "(none)" if t is None else labels.get(t, f"{t:.3f}"),
        help="Same as clicking an orange diamond on the band chart.",
    )


def _explain(res: services.FitResult, q: dict, test: pd.DataFrame) -> None:
    held = services.heldout_predictions(res.key, res, q["series_id"])
    row = held[(held["channel"] == q["channel"]) & ((held["time"] - q["time"]).abs() < 1e-9)]
    if row.empty:
        return
    r = row.iloc[0]
    st.markdown(
        f"**Selected query**: series {q['series_id']}, channel {q['channel']}, t = "
        f"{q['time']:.3f} h"
    )
    c = st.columns(6)
    c[0].metric("Observed y", f"{r['y_true']:.4g}")
    c[1].metric("Lévy ŷ", f"{r['mean']:.4g}")
    c[2].metric(
        "c·σ̂", f"{r['pred_std']:.3g}", help=f"raw σ̂ = {r['sigma']:.3g}, scaled by the calibration c"
    )
    c[3].metric("n_eff (evidence)", f"{r['n_eff']:.3g}", help=f"log Λ = {r['log_evidence']:.2f}")
    c[4].metric("tr Σ (disagreement)", f"{r['disagreement']:.3g}", help="data units²")
    c[5].metric("|error| / c·σ̂", f"{abs(r['y_true'] - r['mean']) / max(r['pred_std'], 1e-12):.2f}")
    w = services.width_factors(r, test if len(test) else held)
    wider = w["ratio"] > 1
    reasons = {(True, "evidence"): "lack of evidence",
               (True, "disagreement"): "disagreement among the observations it draws on",
               (False, "evidence"): "more evidence", (False, "disagreement"): "more agreement"}
    st.markdown(
        f"σ̂ here is **×{w['ratio']:.2f}** the median test query's: ×{w['evidence']:.2f} from the "
        f"evidence term and ×{w['disagreement']:.2f} from the disagreement term — "
        f"{'wider' if wider else 'narrower'} mostly because of **{reasons[(wider, w['reason'])]}**."
    )
    att = services.attention(res.key, res, q["series_id"], q["channel"], q["time"])
    by_channel = att.groupby("channel")["weight"].sum().sort_values(ascending=False)
    shares = ", ".join(f"{ch} {100 * w:.0f} %" for ch, w in by_channel.head(6).items())
    st.markdown(
        f"Attention weight by channel: {shares}. The band chart rings this channel's observations "
        "(ring size = weight)."
    )
    top = att.sort_values("weight", ascending=False).head(10)[
        ["time", "channel", "value", "weight"]
    ]
    st.dataframe(
        top.style.format({"time": "{:.3f}", "value": "{:.4g}", "weight": "{:.3f}"}),
        hide_index=True,
        width="stretch",
    )
    st.caption(
        "How to read: the ten context observations this query draws on most (Lévy weights p_i, "
        "averaged over heads); n_eff counts how many of them are fully compatible."
    )


def render(res: services.FitResult, view: View) -> None:
    st.subheader("Evidence vs disagreement on held-out queries")
    test = services.test_predictions(res.key, res)
    if len(test):
        st.plotly_chart(
            charts.heldout_scatter(
                test, current_series=view.series_id, selected=state.get(state.QUERY)
            ),
            key=state.EVIDENCE_SCATTER,
            on_select=_on_scatter_select,
            selection_mode=("points", "box"),
        )
        st.caption(
            "How to read: each dot is a held-out query of a test series; left = little evidence, "
            "up = the observations it draws on disagree, colour = its actual error. Good "
            "uncertainty "
            "puts the bright (large-error) dots left or up. Click a dot (or box-select: the worst "
            "in the box is taken) to open it in the band above; ringed dots are series "
            f"{view.series_id}."
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
