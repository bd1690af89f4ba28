"""Panel 3 · Predictive band (with panel 4's evidence and disagreement rows under it)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import streamlit as st

from dashboard import charts, services, state


@dataclass
class View:
    """The shared view controls: which series/channel, which band, MC-Dropout overlay."""

    series_id: str
    channel: str
    level: float
    kind: str  # "gaussian" or "conformal"
    show_mc: bool
    mc_passes: int


def _split_label(key: str, res: services.FitResult):
    return lambda s: f"{s} · {services.split_of(key, res, s)}"


def ensure_view_state(res: services.FitResult) -> None:
    """Valid series and channel in session state (before any widget using them is drawn)."""
    ss = st.session_state
    options = services.series_choices(res.key, res)
    if ss.get(state.SERIES) not in options:
        ss[state.SERIES] = options[0]
    chans = services.channels_of(res.key, res, ss[state.SERIES])
    if ss.get(state.CHANNEL) not in chans:
        ss[state.CHANNEL] = chans[0]


def mc_controls(res: services.FitResult, container=None) -> None:
    """MC-Dropout overlay toggle and T (shared keys: the band and MC-Dropout tabs show both)."""
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


def controls(res: services.FitResult) -> View:
    ensure_view_state(res)
    ss = st.session_state
    c = st.columns([2.2, 1.4, 2.2, 1.6])
    c[0].selectbox(
        "Series",
        services.series_choices(res.key, res),
        key=state.SERIES,
        format_func=_split_label(res.key, res),
        help="Test series were held out from training and calibration.",
    )
    if ss[state.CHANNEL] not in services.channels_of(res.key, res, ss[state.SERIES]):
        ss.pop(state.CHANNEL, None)
    chans = services.channels_of(res.key, res, ss[state.SERIES])
    c[1].selectbox("Channel", chans, key=state.CHANNEL)
    c[2].slider(
        "Band level",
        0.50,
        0.99,
        step=0.01,
        key=state.LEVEL,
        format="%.2f",
        help="Nominal coverage of the central band.",
    )
    c[3].radio(
        "Band type",
        list(state.BAND_KINDS),
        key=state.BAND_KIND,
        horizontal=True,
        help="Scaled Gaussian: ŷ ± z·c·σ̂. Conformal: split-conformal quantile of |y−ŷ|/σ̂ among "
        "this channel's calibration queries (pooled over channels when it has fewer than 50), "
        "with a finite-sample coverage guarantee for the channel.",
    )
    mc_controls(res)
    return current_view(res)


def current_view(res: services.FitResult) -> View:
    ss = st.session_state
    return View(
        series_id=str(ss[state.SERIES]),
        channel=str(ss[state.CHANNEL]),
        level=float(ss[state.LEVEL]),
        kind=state.BAND_KINDS[ss[state.BAND_KIND]],
        show_mc=bool(ss[state.MC_OVERLAY]) and res.has_twin,
        mc_passes=int(ss[state.MC_T]),
    )


def query_id(series_id: str, channel: str, time_: float) -> str:
    return f"{series_id}|{channel}|{float(time_)!r}"


def parse_query_id(value: object) -> tuple[str, str, float] | None:
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    if not isinstance(value, str) or value.count("|") < 2:
        return None
    sid, ch, t = value.rsplit("|", 2)
    try:
        return sid, ch, float(t)
    except ValueError:
        return None


def _on_band_select() -> None:
    event = st.session_state.get(state.BAND_CHART)
    points = (event or {}).get("selection", {}).get("points", []) if event else []
    hits = [q for q in (parse_query_id(p.get("customdata")) for p in points) if q is not None]
    if hits:
        sid, ch, t = sorted(hits, key=lambda q: q[2])[0]
        state.select_query(sid, ch, t, move_view=False)


def band_data(res: services.FitResult, view: View) -> services.BandInputs:
    """What the band chart draws, with a query id on each held-out observation (for clicks)."""
    inputs = services.band_inputs(res.key, res, view.series_id, view.channel, view.level, view.kind,
                                  view.mc_passes, view.show_mc)
    p = inputs.points.copy()
    p["query_id"] = [query_id(view.series_id, view.channel, t) if r == "held-out" else ""
                     for t, r in zip(p["time"], p["role"], strict=True)]
    return dataclasses.replace(inputs, points=p)


def selected_query_here(res: services.FitResult, view: View) -> dict | None:
    q = state.get(state.QUERY)
    if q and q["series_id"] == view.series_id:
        return q
    return None


def band_figure(res: services.FitResult, view: View):
    inputs = band_data(res, view)
    q = selected_query_here(res, view)
    attended = query_mark = None
    if q is not None:
        att = services.attention(res.key, res, q["series_id"], q["channel"], q["time"])
        attended = att[att["channel"] == view.channel]
        held = services.heldout_predictions(res.key, res, view.series_id)
        row = held[(held["channel"] == q["channel"]) & ((held["time"] - q["time"]).abs() < 1e-9)]
        query_mark = {"time": q["time"]}
        if len(row) and q["channel"] == view.channel:
            query_mark["value"] = float(row["y_true"].iloc[0])
    fig = charts.band_figure(inputs.grid, inputs.points, **inputs.figure_arguments(), attended=attended,
                             query=query_mark)
    infinite = not inputs.grid["upper"].replace([float("inf")], float("nan")).notna().all()
    return fig, infinite


def render(res: services.FitResult) -> View:
    view = controls(res)
    fig, infinite = band_figure(res, view)
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
    )
    return view
