"""Panel · Watch: is a new observation a surprise? A replay with play/pause and a time slider."""

from __future__ import annotations

import streamlit as st
from levy_dashboard import services
from levy_dashboard.charts.watch import watch_figure
from levy_dashboard.display.markup import plain
from levy_dashboard.services.fit import FitResult
from levy_dashboard.services.watch import Replay
from levy_dashboard.session import state

PLAY_EVERY_S = 0.8  # seconds between two steps of the replay while it plays
HOW_TO_READ = (
    "How to read: at each observation the shaded band is the one the model issued from the observations "
    "before it (nothing at or after its time), at level 1 − α. A cross is an observation whose conformal "
    "p-value is at most α: it lies outside that band. The band then takes the observation in. Below, the "
    "share of observations flagged so far: on data like the calibration data it is the false-alarm rate, "
    "and it should stay near the dashed nominal α."
)


def _controls(res: FitResult, rep: Replay) -> tuple[str, str]:
    series = rep.series()
    if state.get(state.WATCH_SERIES) not in series:
        st.session_state[state.WATCH_SERIES] = series[0]
    left, right = st.columns(2)
    sid = left.selectbox("Series (most flags first)", series, key=state.WATCH_SERIES)
    channels = rep.channels(sid)
    if state.get(state.WATCH_CHANNEL) not in channels:
        st.session_state[state.WATCH_CHANNEL] = channels[0]
    channel = right.selectbox("Channel", channels, key=state.WATCH_CHANNEL)
    return sid, channel


def _toggle_play() -> None:
    st.session_state[state.WATCH_PLAYING] = not state.get(state.WATCH_PLAYING, False)


def _replay_view(res: FitResult, rep: Replay, sid: str, channel: str) -> None:
    """The slider, the figure and the running rate: one fragment, re-run every step while playing."""
    steps = rep.steps(sid)
    step_key = state.keyed(state.WATCH_STEP, sid)
    if step_key not in st.session_state:
        st.session_state[step_key] = len(steps) - 1
    if state.get(state.WATCH_PLAYING, False):
        st.session_state[step_key] = (int(st.session_state[step_key]) + 1) % len(steps)
    index = st.slider("Replay up to observation time step", 0, len(steps) - 1, key=step_key,
                      help="the replay's clock: observations after it are not shown yet")
    upto = float(steps[index])
    shown, rate = services.watch.series_frames(rep, sid, channel, upto)
    now = rate["when"].iloc[-1] if len(rate) else upto
    st.markdown(plain(f"Replay at {services.band.time_text(res, sid, upto)} — step {index + 1} of {len(steps)}"))
    st.plotly_chart(watch_figure(shown, rate, alpha=rep.alpha, upto=now, channel=channel,
                                 time_title=services.band.user_axis(res), value_title=channel),
                    key=state.WATCH_CHART)
    flagged, scored, rate_now = rep.so_far(sid, upto)
    cols = st.columns(3)
    cols[0].metric("flagged so far (this series)", f"{flagged} of {scored}")
    cols[1].metric("running flag rate", "–" if rate_now is None else f"{rate_now:.3f}")
    cols[2].metric("nominal false-alarm rate α", f"{rep.alpha:g}")
    st.caption(HOW_TO_READ)


def render(res: FitResult) -> None:
    st.subheader("Watch: which new observation is a surprise?")
    alpha = st.select_slider("False-alarm rate α", options=list(services.watch.ALPHAS), key=state.WATCH_ALPHA,
                             help="flag an observation whose conformal p-value is at most α")
    with st.spinner("Replaying the data, each observation against the band issued before it …"):
        rep = services.watch.replay(res.key, res, float(alpha))
    if rep.rows.empty:
        st.info("Nothing to watch: no series has an observation with one before it.")
        return
    st.caption(plain(f"Replaying {rep.watched}; p-values against {rep.calibration}. {rep.summary}."))
    if not rep.calibrated:
        st.warning(plain("These p-values are taken against the fit's own calibration scores (forecasts over the "
                         "fitted horizon, not one step ahead): the flag rate need not be α. On the data the "
                         "model was fitted on, the calibration split is replayed instead."))
    sid, channel = _controls(res, rep)
    playing = bool(state.get(state.WATCH_PLAYING, False))
    st.button("⏸ Pause" if playing else "▶ Play", key=state.WATCH_PLAY, on_click=_toggle_play)
    st.fragment(_replay_view, run_every=PLAY_EVERY_S if playing else None)(res, rep, sid, channel)
