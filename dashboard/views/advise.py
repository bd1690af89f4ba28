"""Panel · Measure next: which measurement would narrow the band most (``levy_core.decisions.advise``).

The user picks a series, the target channels and the horizon; a ranked table lists every
channel measured now or a little later, with how much each target's calibrated band would
narrow and how much of that is evidence (exact) and how much the value (expected). Choosing
a suggestion redraws one target's band as it would be, the hypothetical observation marked.
"""

from __future__ import annotations

import streamlit as st
from levy_dashboard import services
from levy_dashboard.charts.advise import advice_figure
from levy_dashboard.display import widgets
from levy_dashboard.display.markup import plain
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state

from levy_core.data import DataError

ADVISE_SHOWN = "_advise_shown"  # (series, candidate) whose band was last drawn


def _targets(res: FitResult, series_id: str) -> list[str]:
    observed = services.band.channel_options(res.key, res, series_id)
    key = state.keyed(state.ADVISE_TARGETS, series_id)
    if key not in st.session_state:
        st.session_state[key] = list(observed)
    return st.multiselect("Targets: whose band should narrow", res.fitted.channels, key=key,
                          help="The channels whose calibrated band over the horizon counts; default: every "
                          "channel this series has observed.")


def _horizon(res: FitResult, container) -> float | None:
    default = services.advise.default_horizon(res)
    text = container.text_input("Over the next", value=services.origins.horizon_text(default),
                                key=state.ADVISE_HORIZON, help="How far after now the targets reach: a duration "
                                "such as 12h or 2d (a bare number is in the data's unit).")
    try:
        return services.origins.parse_horizon(res.obs, text)
    except DataError as exc:
        st.error(plain(f"Horizon {text!r}: {exc}"), icon="🚫")
        return None


def render(res: FitResult) -> None:
    widgets.ensure_view_state(res)
    ss = st.session_state
    c = st.columns([2.2, 1.4, 1.4])
    c[0].selectbox("Series", services.band.series_options(res.key, res), key=state.SERIES,
                   format_func=lambda s: services.band.series_label(res.key, res, s))
    sid = str(ss[state.SERIES])
    horizon = _horizon(res, c[1])
    c[2].markdown(f"Band level **{100 * float(ss[state.LEVEL]):.0f} %** (set on the band panel)")
    targets = _targets(res, sid)
    if not targets:
        st.info("Pick at least one target channel: the advice is about whose band should narrow.")
        return
    if horizon is None:
        return
    level = float(ss[state.LEVEL])
    view = services.advise.advice(res.key, res, sid, tuple(targets), horizon, level)
    ranking = view.ranking
    st.markdown("\n".join(f"- {plain(line)}" for line in view.advice.sentences(3)))  # channel names: text
    picks = list(range(len(ranking)))
    if ss.get(state.ADVISE_PICK) not in picks:
        ss[state.ADVISE_PICK] = 0
    st.dataframe(services.advise.advice_table(view), hide_index=True, key=state.ADVISE_TABLE, height=280)
    cols = st.columns(2)
    pick = cols[0].selectbox("Show the band with", picks, key=state.ADVISE_PICK,
                             format_func=lambda i: f"#{ranking['rank'][i]} · measuring {ranking['measure'][i]}")
    row = ranking.iloc[pick]
    if ss.get(ADVISE_SHOWN) != (sid, int(row["candidate"])):  # a new suggestion: the band of its own channel
        ss[ADVISE_SHOWN] = (sid, int(row["candidate"]))
        if row["channel"] in view.advice.targets:
            ss[state.ADVISE_CHANNEL] = row["channel"]
    if ss.get(state.ADVISE_CHANNEL) not in view.advice.targets:
        ss[state.ADVISE_CHANNEL] = ss[state.CHANNEL] if ss.get(state.CHANNEL) in targets else targets[0]
    channel = cols[1].selectbox("Band of", list(view.advice.targets), key=state.ADVISE_CHANNEL)
    chart = services.advise.advice_chart(res, view, pick, channel)
    fig = advice_figure(chart.points, chart.before, chart.after, channel=channel, measure=chart.measure,
                        level=level, time_title=services.band.user_axis(res))
    st.plotly_chart(fig, key=state.ADVISE_CHART)
    st.caption(
        f"How to read: advice starts from {view.start}. Each row is one measurement — a channel, now or a "
        "little later — and how much it would narrow the calibrated band of the targets over the horizon "
        "(mean over the targets; one column per target). The evidence part is exact: an observation's "
        "weight in the Lévy measure depends on its channel and time, not on its value. The value part is "
        f"an expectation over what the measurement might read ({view.advice.draws.shape[1]} draws from its "
        "own calibrated band, every measurement and draw in one batched model pass); it can be negative "
        "when a new value may disagree with the old. The chart: dashed grey, the band today; blue, the band "
        "expected with the chosen measurement; the star, the measurement (± its predictive std)."
    )
