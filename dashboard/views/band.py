"""Panel 3 · Predictive band (with panel 4's evidence and disagreement rows under it)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import streamlit as st
from levy_dashboard import charts, origin_services, services, state


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


def _series_label(key: str, res: services.FitResult):
    return lambda s: services.series_label(key, res, s)


def ensure_view_state(res: services.FitResult) -> None:
    """Valid series, channel, band type and level in session state (before any widget using
    them is drawn): the user's series ids, the band types this fit offers (the adaptive band
    by default on rolling origins, at the levels its walk holds)."""
    ss = st.session_state
    options = services.series_options(res.key, res)
    if ss.get(state.SERIES) not in options:
        ss[state.SERIES] = options[0]
    chans = services.channel_options(res.key, res, ss[state.SERIES])
    if ss.get(state.CHANNEL) not in chans:
        ss[state.CHANNEL] = chans[0]
    kinds = origin_services.band_kinds(res)
    # each kind of fit starts on its own default band (adaptive on rolling origins), even when
    # the model changed in a run that did not draw this panel (the radio's last value comes back)
    if ss.get(state.BAND_KIND) not in kinds or ss.get(state.BAND_KIND_ORIGINS, res.on_origins) != res.on_origins:
        ss[state.BAND_KIND] = kinds[0]
    ss[state.BAND_KIND_ORIGINS] = res.on_origins
    levels = origin_services.adaptive_levels(res) if res.on_origins else []
    if levels and ss.get(state.LEVEL) not in levels:
        ss[state.LEVEL] = min(levels, key=lambda v: abs(v - float(ss.get(state.LEVEL, 0.9))))


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


def level_and_kind(res: services.FitResult, level_col, kind_col) -> None:
    """The band level (on rolling origins: the levels the adaptive walk holds) and type."""
    if res.on_origins and origin_services.adaptive_levels(res):
        level_col.select_slider(
            "Band level",
            options=origin_services.adaptive_levels(res),
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
        origin_services.band_kinds(res),
        key=state.BAND_KIND,
        horizontal=True,
        help="Scaled Gaussian: ŷ ± z·c·σ̂. Conformal: split-conformal quantile of |y−ŷ|/σ̂ among "
        "this channel's calibration queries (pooled over channels when it has fewer than 50), "
        "with a finite-sample coverage guarantee for the channel when series are exchangeable. "
        "Adaptive conformal (rolling origins): the split-conformal band walked along the test "
        "origins in time order, " + services.GUARANTEE + ".",
    )


def series_and_channel(res: services.FitResult, series_col, channel_col) -> None:
    """The user's series (test series first when they are the model's) and its channels."""
    ss = st.session_state
    series_col.selectbox(
        "Series",
        services.series_options(res.key, res),
        key=state.SERIES,
        format_func=_series_label(res.key, res),
        help="Test series were held out from training and calibration.",
    )
    if ss[state.CHANNEL] not in services.channel_options(res.key, res, ss[state.SERIES]):
        ss.pop(state.CHANNEL, None)
    chans = services.channel_options(res.key, res, ss[state.SERIES])
    channel_col.selectbox("Channel", chans, key=state.CHANNEL)


def controls(res: services.FitResult) -> View:
    ensure_view_state(res)
    c = st.columns([2.2, 1.4, 2.2, 1.6])
    series_and_channel(res, c[0], c[1])
    level_and_kind(res, c[2], c[3])
    mc_controls(res)
    return current_view(res)


def current_view(res: services.FitResult) -> View:
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
    if q and q["series_id"] == view.series_id and "origin" not in q:
        return q
    return None


def query_marks(res: services.FitResult, view: View) -> dict:
    """The selected query's overlays on the band: what it drew on (this channel) and a star."""
    q = selected_query_here(res, view)
    if q is None:
        return {"attended": None, "query": None}
    att = services.query_attention(res.key, res, q["series_id"], q["channel"], q["time"])
    held = services.heldout_queries(res.key, res, view.series_id)
    row = held[(held["channel"] == q["channel"]) & ((held["time"] - q["time"]).abs() < 1e-9)]
    mark = {"time": q["time"]}
    if len(row) and "when" in row.columns:
        mark["when"] = row["when"].iloc[0]
    if len(row) and q["channel"] == view.channel:
        mark["value"] = float(row["y_true"].iloc[0])
    return {"attended": att[att["channel"] == view.channel], "query": mark}


def band_figure(res: services.FitResult, view: View):
    """The band chart of the view and whether its band is infinite somewhere. On rolling
    origins: the forecast past the end of the data (``views/future.py`` draws its controls)."""
    if res.on_origins:
        inputs = origin_services.future_inputs(res.key, res, view.series_id, view.channel, view.level, view.kind,
                                        view.horizon or res.fitted.task.horizon, view.mc_passes, view.show_mc)
        fig = origin_services.future_chart(inputs)
    else:
        inputs = band_data(res, view)
        fig = charts.band_figure(inputs.grid, inputs.points, **inputs.figure_arguments(), **query_marks(res, view))
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
