"""Panel 8 · Check the identity: draws of the sampled operator vs the closed-form σ̂."""

from __future__ import annotations

import streamlit as st
from levy_dashboard import charts, services
from levy_dashboard.display import widgets
from levy_dashboard.display.markup import plain
from levy_dashboard.display.widgets import View
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state

DRAW_CHOICES = [500, 1000, 2000, 5000, 20000]


def _follow_selected_query(view: View, times: list[float], origin: float | None) -> None:
    """Preselect the query chosen in the band view (once per choice), else a middle one."""
    ss = st.session_state
    q = state.get(state.QUERY)
    if q and q["series_id"] == view.series_id and q["channel"] == view.channel and q.get("origin") == origin:
        match = next((t for t in times if abs(t - q["time"]) < 1e-9), None)
        if match is not None and ss.get(state.IDENTITY_FROM_QUERY) != (q["series_id"], q["time"]):
            ss[state.IDENTITY_QUERY] = match
            ss[state.IDENTITY_FROM_QUERY] = (q["series_id"], q["time"])
    if ss.get(state.IDENTITY_QUERY) not in times:
        ss[state.IDENTITY_QUERY] = times[len(times) // 2]


def _query_controls(
    res: FitResult, view: View, times: list[float], y_of: dict[float, float], at: str
) -> tuple[float, int]:
    """(query time, number of draws)."""
    c = st.columns([3, 2])
    t = c[0].selectbox(
        f"Held-out query of series {plain(view.series_id)}, channel {plain(view.channel)}{at}",
        times,
        key=state.IDENTITY_QUERY,
        format_func=lambda x: f"{services.band.time_text(res, view.series_id, x)} (observed {y_of[x]:.4g})",
        help="Defaults to the query selected in the band view"
        + (" (rolling origins: among the queries of the origin open on the Backtest page)." if at else "."),
    )
    n = c[1].select_slider("Draws", DRAW_CHOICES, key=state.N_DRAWS)
    return float(t), int(n)


def _metrics(out: dict, n: int, crps: dict) -> None:
    """Closed-form σ̂, the draws' RMSD, their difference in standard errors, CRPS here."""
    rel, k = out["rmsd_relative_gap"], out["rmsd_z"]
    m = st.columns(4)
    m[0].metric("closed-form σ̂", f"{out['sigma']:.4g}", help="sqrt(tr Σ · φ(Λ)), one forward pass")
    m[1].metric(
        f"RMSD of {n:,} draws",
        f"{out['rmsd']:.4g}",
        f"{100 * rel:+.1f} %",
        delta_color="off",
        help=f"Monte-Carlo standard error ±{out['rmsd_se']:.2g}",
    )
    m[2].metric(
        "difference",
        f"{k:.1f} SE",
        help="in Monte-Carlo standard errors of the RMSD; within ~2 is what sampling noise gives",
    )
    m[3].metric(
        "CRPS here: closed / sampler",
        f"{crps['closed_form']:.3g} / {crps['sampler']:.3g}",
        help="At this query: the closed-form scaled Gaussian vs 50 scaled operator draws; data "
        "units, lower is better",
    )


def _test_split_summary(res: FitResult, view: View) -> None:
    """CRPS of the closed form vs the 50-draw sampler over the test split."""
    result, _ = services.evaluation.evaluation(res.key, res, view.mc_passes)
    sampler = services.evaluation.sampler_check(res.key, res)
    if not sampler:
        return
    closed = sampler.get("closed_form_crps_same_queries", result["levy"]["crps"])
    n_q = sampler.get("n_queries", result["n_test"])
    st.markdown(
        f"On the test split ({n_q:,} queries, normalised scale): CRPS of the closed form "
        f"**{closed:.4g}** vs the {sampler.get('draws', 50)}-draw sampler "
        f"**{sampler['crps']:.4g}** "
        "— the closed form matches the sampler with no sampling at all."
    )


def render(res: FitResult) -> None:
    widgets.ensure_view_state(res)
    view = widgets.current_view(res)
    origin = widgets.current_origin(res, view.series_id, query_first=True)
    here = services.evidence.channel_queries(res.key, res, view.series_id, view.channel, origin)
    if here.empty:
        st.info(
            f"Series {plain(view.series_id)}, channel {plain(view.channel)} has no held-out query; pick another "
            "on the "
            "Predictive band page."
        )
        return
    times = [float(t) for t in here["time"]]
    _follow_selected_query(view, times, origin)
    y_of = dict(zip(times, here["y_true"], strict=True))
    at = "" if origin is None else f", forecast at {services.band.time_text(res, view.series_id, origin)}"
    t, n = _query_controls(res, view, times, y_of, at)
    out = services.evidence.query_draws(res.key, res, view.series_id, view.channel, float(t), int(n), origin)
    crps = services.evidence.query_crps(out, float(y_of[float(t)]))
    _metrics(out, n, crps)
    if out.get("transform", "none") != "none":
        st.caption(f"This channel is modelled on its {out['transform']} scale: the draws, σ̂, the RMSD and the "
                   "CRPS here are in those units, where the identity holds (its band is mapped back to the data's).")
    st.plotly_chart(
        charts.draws_figure(out["draws"], mean=out["mean"], sigma=out["sigma"], rmsd=out["rmsd"]),
        key=state.DRAWS_CHART,
    )
    st.caption(
        "How to read: the sky-blue histogram is the sampled operator m + (1/Λ) Σ N_i (v_i − m) "
        "with Poisson "
        "counts N_i; its RMS deviation (dotted) should sit on the closed-form σ̂ (dashed), computed "
        "without sampling. These are raw draws: the predictive band multiplies the spread by the "
        f"calibration scale c = {out['scale_c']:.3g}."
    )
    _test_split_summary(res, view)
