"""Panel 5 · MC-Dropout, on the fly: its band overlaid, metrics side by side, what each costs."""

from __future__ import annotations

import streamlit as st
from levy_dashboard import charts, services
from levy_dashboard.display import widgets
from levy_dashboard.display.markup import plain
from levy_dashboard.display.widgets import View
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import controller, state


def _fmt(table):
    def f(v: float) -> str:
        return f"{v:.4g}"

    return table.style.format(f)


def _offer_twin() -> None:
    st.info(
        "This model was fitted without its MC-Dropout twin. Train it now (same split, seed and "
        "budget as the Lévy model); the band overlay, the metrics and the calibration then "
        "compare "
        "both."
    )
    st.button(
        "Train the MC-Dropout twin now",
        type="primary",
        on_click=controller.request_twin,
        key=state.TWIN_BUTTON,
    )


def _cost_metrics(lev: dict, mc: dict, T: int) -> None:
    """Seconds each method took for the test split's uncertainty, their ratio and CRPS."""
    speed = mc["cost_vs_levy"]
    c = st.columns(4)
    c[0].metric(
        "Lévy: uncertainty for the test split",
        f"{lev['seconds']:.3g} s",
        help="one forward pass",
    )
    c[1].metric(f"MC-Dropout (T = {T})", f"{mc['seconds']:.3g} s", help=f"{T} stochastic passes")
    c[2].metric("MC-Dropout takes", f"×{speed:.0f}", help="its time / Lévy's time")
    c[3].metric(
        "CRPS (Lévy / MC)",
        f"{lev['crps']:.3g} / {mc['crps']:.3g}",
        help="normalised scale, lower is better",
    )


def _metrics_table(result: dict, sampler: dict) -> None:
    """Both methods' metrics, with the twin's deterministic mean and the sampler below."""
    table = services.evaluation.metrics_table(result)
    st.dataframe(_fmt(table), width="stretch", height=36 * (len(table) + 1) + 4)
    own = services.evaluation.data_units_table(result)
    if own is not None:
        st.markdown("**Per channel, in its own units** (MAE, RMSE and CRPS in the data's units: mg/dL, ppm, …; "
                    "the table above is on the normalised scale, for comparing channels)")
        st.dataframe(own, hide_index=True, width="stretch")
    extra = []
    if result.get("softmax"):
        extra.append(
            f"the twin's deterministic mean (no dropout): MSE {result['softmax']['mse']:.4g}"
        )
    if sampler:
        closed = sampler.get("closed_form_crps_same_queries", result["levy"]["crps"])
        extra.append(
            f"Lévy's {sampler.get('draws', 50)}-draw sampler: CRPS {sampler['crps']:.4g} (closed form "
            f"{closed:.4g} on the same queries)"
        )
    st.caption(
        "How to read: error metrics (lower is better) on the per-channel normalised scale; "
        "coverage is the "
        "share of test queries inside each band (close to its level is good); Spearman(σ, |error|) "
        "says whether larger σ goes with larger errors. Also: " + "; ".join(extra) + "."
    )


def _band_overlay(res: FitResult, view: View) -> None:
    where = " past the end of the data" if res.on_origins else ""
    st.subheader(f"Both bands on series {plain(view.series_id)}, channel {plain(view.channel)}{where}")
    fig, _ = widgets.band_figure(res, view)
    st.plotly_chart(fig, key=state.MC_BAND_CHART)
    st.caption(
        f"How to read: blue = Lévy, vermillion = MC-Dropout ({100 * view.level:.0f} % bands, "
        f"{state.get(state.BAND_KIND).lower()}); change the series, channel and level on the "
        "Predictive band page, and the overlay and T above."
    )


def render(res: FitResult) -> None:
    if not res.has_twin and res.opened_from:
        st.info("This saved model was fitted without its MC-Dropout twin, and an opened model is never "
                "retrained: close it (sidebar, 3 · Saved model) and fit to compare with MC-Dropout.")
        return
    if controller.twin_deferred(res):
        st.info("The MC-Dropout twin is training (progress under the title); this panel fills in when it is done.")
        return
    if not res.has_twin:
        _offer_twin()
        return
    widgets.ensure_view_state(res)
    widgets.mc_controls(res)
    view = widgets.current_view(res)
    T = view.mc_passes
    with st.spinner(f"Evaluating both methods on the test split (T = {T}) …"):
        result, _ = services.evaluation.evaluation(res.key, res, T)
        sampler = services.evaluation.sampler_check(res.key, res)
    lev, mc = result["levy"], result.get("mc_dropout")
    st.subheader(f"Lévy vs MC-Dropout on {result['n_test']:,} test queries")
    if mc:
        _cost_metrics(lev, mc, T)
    _metrics_table(result, sampler)
    st.plotly_chart(charts.timing_figure(services.evaluation.timing_rows(res, result)), key=state.TIMING_CHART)
    st.caption(
        "How to read: wall time on this machine (log axis). The Lévy band costs one forward pass; "
        "MC-Dropout needs T passes, so its cost grows with T."
    )
    _band_overlay(res, view)
