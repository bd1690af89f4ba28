"""Panel 1 · Data: the column mapping (detected, with overrides) and a preview of the data."""

from __future__ import annotations

import numpy as np
import streamlit as st

from dashboard import charts, services, state
from dashboard.views.sidebar import Choice
from levy_core.data import TIME_UNITS, ColumnMapping, DataError, Observations

_NONE = "(none)"


def _mapping_form(choice: Choice) -> None:
    src = choice.source
    assert src is not None
    st.subheader("Column mapping")
    try:
        raw = services.raw_table(src.digest, src.data, src.name)
    except DataError as exc:
        st.error(f"{exc}", icon="🚫")
        return
    detected, why = services.detected_mapping(raw)
    override = services.mapping_from_json(choice.mapping_json)
    if detected is not None:
        st.markdown(f"Detected for **{src.name}**: `{detected.describe()}`")
    else:
        st.warning(f"Could not detect the columns of **{src.name}**: {why}")
    if override is not None:
        st.markdown(
            f"In use (your override): `{override.describe()}`; time unit: {choice.time_unit}."
        )
    current = override or detected
    cols = list(raw.columns)
    if not cols:
        return
    d = src.digest[:10]
    with st.form(key=f"mapping_form_{d}"):
        st.caption(
            "Override the detection: pick which column plays which role. Long form has one "
            "observation per row (a value column); wide form one numeric column per channel."
        )
        layout = st.radio(
            "Layout",
            ["long", "wide"],
            horizontal=True,
            key=f"map_layout_{d}",
            index=0 if current is None or current.layout == "long" else 1,
        )

        def pick(label: str, value: str | None, optional: bool, key: str) -> str:
            options = ([_NONE] if optional else []) + cols
            index = options.index(value) if value in options else 0
            return st.selectbox(label, options, index=index, key=f"{key}_{d}")

        c1, c2 = st.columns(2)
        time_col = pick("Time column", current.time if current else None, False, "map_time")
        series_col = pick("Series column", current.series if current else None, True, "map_series")
        channel_col = c1.selectbox(
            "Channel column (long)",
            [_NONE] + cols,
            key=f"map_channel_{d}",
            index=([_NONE] + cols).index(current.channel)
            if current and current.channel in cols
            else 0,
        )
        value_default = current.value if current and current.value in cols else cols[-1]
        value_col = c2.selectbox(
            "Value column (long)", cols, index=cols.index(value_default), key=f"map_value_{d}"
        )
        wide_default = [c for c in (current.wide_channels if current else ()) if c in cols]
        wide = st.multiselect(
            "Channel columns (wide)", cols, default=wide_default, key=f"map_wide_{d}"
        )
        units = list(TIME_UNITS)
        unit = st.selectbox(
            "Unit of a numeric time column",
            units,
            index=units.index(choice.time_unit),
            key=f"map_unit_{d}",
            help="Converted to hours. Date-times are read as such.",
        )
        applied = st.form_submit_button("Apply mapping", key=f"map_apply_{d}")
    if applied:
        series = None if series_col == _NONE else series_col
        if layout == "long":
            mapping = ColumnMapping(
                time=time_col,
                value=value_col,
                series=series,
                channel=None if channel_col == _NONE else channel_col,
                layout="long",
            )
        else:
            mapping = ColumnMapping(
                time=time_col,
                series=series,
                layout="wide",
                wide_channels=tuple(c for c in wide if c not in (time_col, series)),
            )
        st.session_state[state.MAPPINGS][src.digest] = (services.mapping_to_json(mapping), unit)
        st.rerun()
    if override is not None and st.button("Back to the detected mapping", key=f"map_reset_{d}"):
        st.session_state[state.MAPPINGS].pop(src.digest, None)
        st.rerun()


def _preview(obs: Observations, label: str) -> None:
    st.subheader(f"Loaded: {label}")
    t0, t1 = obs.time_span
    gaps = obs.gaps()
    c = st.columns(5)
    c[0].metric("Series", f"{obs.n_series:,}")
    c[1].metric("Channels", f"{obs.n_channels:,}")
    c[2].metric("Observations", f"{obs.n_obs:,}")
    c[3].metric("Time span", f"{t1 - t0:.3g} h", help=f"from {t0:.4g} h to {t1:.4g} h")
    c[4].metric("Median gap", f"{np.median(gaps):.3g} h" if gaps.size else "–")
    rep = obs.report
    notes = [m for m in rep.messages]
    if rep.n_nan_dropped or rep.n_duplicates_merged:
        st.info(
            f"{rep.n_nan_dropped:,} empty cells/rows dropped, {rep.n_duplicates_merged:,} "
            "repeated rows "
            "averaged (see the load report)."
        )
    with st.expander("Load report"):
        st.markdown("\n".join(f"- {m}" for m in notes))
        if rep.time_origin:
            first = list(rep.time_origin.items())[:5]
            st.caption(
                "Date-times: time 0 of each series is its first observation (UTC), e.g. "
                + "; ".join(f"{k}: {v}" for k, v in first)
            )
    left, right = st.columns(2)
    with left:
        st.plotly_chart(charts.gap_histogram(gaps), key="gap_hist")
        st.caption(
            "How to read: how long the data go without any observation; a wide spread (log axis) "
            "is "
            "what irregular sampling looks like."
        )
    with right:
        st.plotly_chart(charts.channel_counts_figure(obs.frame), key="channel_counts")
        st.caption(
            "How to read: how often each channel is measured; rare channels have less evidence."
        )
    series = obs.series_ids
    sid = (
        st.selectbox("Series to preview", series, key="data_series")
        if len(series) > 1
        else series[0]
    )
    st.plotly_chart(charts.series_timeline(obs.frame, sid), key="timeline")
    st.caption(
        "How to read: one tick per observation; gaps and unaligned channels are normal here."
    )
    st.dataframe(obs.frame[obs.frame["series_id"] == sid].head(500), width="stretch", height=240)


def render(choice: Choice, res: services.FitResult | None) -> None:
    if choice.source is not None:
        _mapping_form(choice)
    if choice.obs is not None and choice.source is not None:
        _preview(choice.obs, choice.source.label)
    elif res is not None:
        st.caption("The selected file could not be used; showing the data of the current model.")
        _preview(res.obs, res.data_label)
