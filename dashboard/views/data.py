"""Panel 1 · Data: the column mapping (detected, with overrides) and a preview of the data."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st
from levy_dashboard import charts, services
from levy_dashboard.display.markup import plain
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import state
from levy_dashboard.session.controller import Choice

from levy_core.data import TIME_UNITS, ColumnMapping, DataError, Observations

_NONE = "(none)"


@dataclass
class _Picks:
    """What the mapping form selects."""

    layout: str
    time: str
    series: str
    channel: str
    value: str
    wide: list[str]
    unit: str

    def mapping(self) -> ColumnMapping:
        series = None if self.series == _NONE else self.series
        if self.layout == "long":
            return ColumnMapping(
                time=self.time,
                value=self.value,
                series=series,
                channel=None if self.channel == _NONE else self.channel,
                layout="long",
            )
        return ColumnMapping(
            time=self.time,
            series=series,
            layout="wide",
            wide_channels=tuple(c for c in self.wide if c not in (self.time, series)),
        )


def _describe_mapping(
    name: str,
    detected: ColumnMapping | None,
    why: str | None,
    override: ColumnMapping | None,
    time_unit: str,
) -> None:
    if detected is not None:
        st.markdown(f"Detected for **{plain(name)}**: {plain(detected.describe())}")
    else:
        st.warning(f"Could not detect the columns of **{plain(name)}**: {plain(why)}")
    if override is not None:
        st.markdown(f"In use (your override): {plain(override.describe())}; time unit: {plain(time_unit)}.")


def _column_pickers(cols: list[str], current: ColumnMapping | None, d: str) -> dict[str, object]:
    """The role of each column: time, series, channel and value (long), channels (wide)."""

    def pick(label: str, value: str | None, optional: bool, key: str) -> str:
        options = ([_NONE] if optional else []) + cols
        index = options.index(value) if value in options else 0
        return st.selectbox(label, options, index=index, key=state.keyed(key, d))

    c1, c2 = st.columns(2)
    time_col = pick("Time column", current.time if current else None, False, state.MAP_TIME)
    series_col = pick("Series column", current.series if current else None, True, state.MAP_SERIES)
    channel_col = c1.selectbox(
        "Channel column (long)",
        [_NONE] + cols,
        key=state.keyed(state.MAP_CHANNEL, d),
        index=([_NONE] + cols).index(current.channel) if current and current.channel in cols else 0,
    )
    value_default = current.value if current and current.value in cols else cols[-1]
    value_col = c2.selectbox(
        "Value column (long)",
        cols,
        index=cols.index(value_default),
        key=state.keyed(state.MAP_VALUE, d),
    )
    wide_default = [c for c in (current.wide_channels if current else ()) if c in cols]
    wide = st.multiselect(
        "Channel columns (wide)", cols, default=wide_default, key=state.keyed(state.MAP_WIDE, d)
    )
    return {
        "time": time_col,
        "series": series_col,
        "channel": channel_col,
        "value": value_col,
        "wide": wide,
    }


def _mapping_inputs(
    cols: list[str], current: ColumnMapping | None, time_unit: str, d: str
) -> _Picks | None:
    """The override form; the picks once "Apply mapping" is pressed, else None."""
    with st.form(key=state.keyed(state.MAP_FORM, d)):
        st.caption(
            "Override the detection: pick which column plays which role. Long form has one "
            "observation per row (a value column); wide form one numeric column per channel."
        )
        layout = st.radio(
            "Layout",
            ["long", "wide"],
            horizontal=True,
            key=state.keyed(state.MAP_LAYOUT, d),
            index=0 if current is None or current.layout == "long" else 1,
        )
        columns = _column_pickers(cols, current, d)
        units = list(TIME_UNITS)
        unit = st.selectbox(
            "Unit of a numeric time column",
            units,
            index=units.index(time_unit),
            key=state.keyed(state.MAP_UNIT, d),
            help="Converted to hours. Date-times are read as such.",
        )
        applied = st.form_submit_button("Apply mapping", key=state.keyed(state.MAP_APPLY, d))
    return _Picks(layout=layout, unit=unit, **columns) if applied else None


def _mapping_form(choice: Choice) -> None:
    src = choice.source
    assert src is not None
    st.subheader("Column mapping")
    try:
        raw = services.data.raw_table(src.digest, src.data, src.name)
    except DataError as exc:
        st.error(plain(exc), icon="🚫")
        return
    detected, why = services.data.detected_mapping(raw)
    override = services.data.mapping_from_json(choice.mapping_json)
    _describe_mapping(src.name, detected, why, override, choice.time_unit)
    cols = list(raw.columns)
    if not cols:
        return
    d = src.digest[:10]
    picks = _mapping_inputs(cols, override or detected, choice.time_unit, d)
    if picks is not None:
        mapping_json = services.data.mapping_to_json(picks.mapping())
        st.session_state[state.MAPPINGS][src.digest] = (mapping_json, picks.unit)
        st.rerun()
    reset_key = state.keyed(state.MAP_RESET, d)
    if override is not None and st.button("Back to the detected mapping", key=reset_key):
        st.session_state[state.MAPPINGS].pop(src.digest, None)
        st.rerun()


def _preview(obs: Observations, obs_hash: str, label: str) -> None:
    st.subheader(f"Loaded: {plain(label)}")
    summary = services.data.summary(obs_hash, obs)
    c = st.columns(5)
    c[0].metric("Series", f"{summary.n_series:,}")
    c[1].metric("Channels", f"{summary.n_channels:,}")
    c[2].metric("Observations", f"{summary.n_obs:,}")
    c[3].metric("Time span", summary.say(summary.span), help="the longest stretch of time the data cover"
                + (", from each series' first observation" if summary.clock == "datetime" else ""))
    median_gap = summary.median_gap
    c[4].metric("Median gap", "–" if median_gap is None else summary.say(median_gap))
    rep = obs.report
    notes = [m for m in rep.messages]
    if rep.n_nan_dropped or rep.n_duplicates_merged:
        st.info(
            f"{rep.n_nan_dropped:,} empty cells/rows dropped, {rep.n_duplicates_merged:,} "
            "repeated rows "
            "averaged (see the load report)."
        )
    with st.expander("Load report"):
        st.markdown("\n".join(f"- {plain(m)}" for m in notes))
        if rep.time_origin:
            first = list(rep.time_origin.items())[:5]
            st.caption(
                "Date-times: time 0 of each series is its first observation (UTC), e.g. "
                + "; ".join(f"{k}: {v}" for k, v in first)
            )
    left, right = st.columns(2)
    with left:
        unit = summary.gap_unit
        st.plotly_chart(charts.gap_histogram(summary.gaps / services.data.hours_per(unit), unit=unit),
                        key=state.GAP_HIST)
        st.caption(
            "How to read: how long the data go without any observation; a wide spread (log axis) "
            "is "
            "what irregular sampling looks like."
        )
    with right:
        st.plotly_chart(charts.channel_counts_figure(obs.frame), key=state.CHANNEL_COUNTS)
        st.caption(
            "How to read: how often each channel is measured; rare channels have less evidence."
        )
    series = obs.series_ids
    sid = (
        st.selectbox("Series to preview", series, key=state.DATA_SERIES)
        if len(series) > 1
        else series[0]
    )
    frame, axis = services.data.user_frame(obs_hash, obs), services.data.data_time_axis(obs)
    st.plotly_chart(charts.series_timeline(frame, sid, time_axis=axis), key=state.TIMELINE)
    st.caption(
        "How to read: one tick per observation; gaps and unaligned channels are normal here."
    )
    st.dataframe(services.data.preview_rows(obs_hash, obs, sid), width="stretch", height=240, hide_index=True)


def render(choice: Choice, res: FitResult | None) -> None:
    if choice.source is not None:
        _mapping_form(choice)
    if choice.obs is not None and choice.source is not None and choice.obs_hash is not None:
        _preview(choice.obs, choice.obs_hash, choice.source.label)
    elif res is not None:
        st.caption("The selected file could not be used; showing the data of the current model.")
        _preview(res.obs, res.obs_hash, res.data_label)
