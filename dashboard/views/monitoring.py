"""Panel · Monitoring: does the model's band still hold on this data (per level, per channel)?"""

from __future__ import annotations

import streamlit as st
from levy_dashboard import charts, services
from levy_dashboard.display.markup import plain
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state


def _render_drift(res: FitResult) -> None:
    """Drift, said plainly: the band's guarantee assumed data like the calibration data."""
    st.markdown("**Drift** — is this data like the data the model was trained and calibrated on?")
    flags, checked, note = services.monitoring.drift(res.key, res)
    if not checked:
        st.info(plain(note))
    elif flags.empty:
        st.success("No drift flagged: every channel's values lie near its training range and it is sampled "
                   "about as often as in training.")
    else:
        st.warning(plain(f"{len(flags)} drift flag(s) on {flags['channel'].nunique()} channel(s): the band's "
                         "guarantee assumed data like the calibration data, so read its coverage on these "
                         "channels with care."))
        st.dataframe(flags, hide_index=True, key=state.MONITOR_DRIFT, width="stretch")
    st.caption(plain(services.monitoring.DRIFT_CAPTION))


def render(res: FitResult) -> None:
    st.subheader("Monitoring: does the band still hold on this data?")
    st.caption(plain(services.monitoring.what_is_checked(res)))
    _render_drift(res)
    with st.spinner("Scoring the observed queries …"):
        monitor = services.monitoring.monitoring(res.key, res)
    if not monitor.observed:
        st.info(plain(monitor.summary()))
        return
    levels, channels = monitor.failing()
    (st.success if not levels and not channels else st.warning)(plain(monitor.summary()))
    st.caption(plain(monitor.note))
    st.markdown(f"**Verdicts, as `levy evaluate` prints them** — Lévy: {plain(monitor.verdicts())}")
    by_level, by_channel, (at_level, level) = services.monitoring.monitoring_tables(monitor, float(state.get(state.LEVEL, 0.9)))
    st.dataframe(by_level, hide_index=True, key=state.MONITOR_TABLE)
    st.caption("How to read: the verdicts `levy evaluate` gives. " + services.monitoring.GUARANTEE_CAPTION)
    st.markdown("**Per channel** — the coverage at each level and its verdict (the window when outside)")
    st.dataframe(by_channel, hide_index=True, key=state.MONITOR_CHANNELS, width="stretch")
    st.plotly_chart(charts.channel_coverage_figure(at_level, level, "observed queries"), key=state.MONITOR_CHART)
    st.caption(
        "How to read: each channel's share of observed queries inside the model's conformal band "
        "(at the band panel's level, or the nearest level checked; dotted line). The band was "
        "conformalized per channel on the calibration data: a channel far from the line no longer "
        "behaves like the data the model was calibrated on."
    )
