"""Band: the series and channels a view offers, the dense grid of one series and channel (one
model pass, cached) and its bands at a level and type (no pass when only those move).

Few series: the model's series are windows or forecast episodes ("<id>@<k>") on relative
clocks; what the views get (``series_options``, ``channel_options``, ``band_inputs``, …) is
in the user's ids and clock, mapped by ``user_clock``; the model-space wrappers under them
(``series_choices``, ``grid``, …) stay in the model's space. The fitted model is passed as
an unhashed ``_res`` argument: the fit key says which model it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
import streamlit as st
from levy_dashboard.data import user_clock
from levy_dashboard.display.chart_inputs import BAND_LABELS, BandInputs, parse_query_id, query_id
from levy_dashboard.fitting.fits import FitResult, fast

from levy_core.calibration import over_time
from levy_core.data import DataError, user_time_label

__all__ = ["BAND_LABELS", "GUARANTEE", "BandInputs", "adaptive_levels", "band_inputs", "band_kinds",
           "channel_options", "channels_of", "grid", "grid_points", "model_ids", "model_points",
           "parse_query_id", "selectable_band_inputs", "series_choices", "series_label", "series_options",
           "marks_on_user_clock", "on_user_clock", "split_of", "time_axis", "time_text", "user_axis", "user_grid", "user_points"]

GUARANTEE = over_time.GUARANTEE  # the adaptive band's guarantee, in words (views name it)


def grid_points() -> int:
    """Points of the dense query grid per series and channel."""
    return 120 if fast() else 300


# ----------------------------------------------------------------------------- the model's series


@st.cache_data(show_spinner=False, max_entries=8)
def model_points(key: str, _res: FitResult) -> pd.DataFrame:
    """``ModelData.points``: every observation in the model's series space with its role
    ("context", "held-out", "unused") and split."""
    return _res.data.points()


@st.cache_data(show_spinner=False, max_entries=8)
def series_choices(key: str, _res: FitResult) -> list[str]:
    """``ModelData.series_choices``: test series first, then calibration, then training."""
    return _res.data.series_choices()


@st.cache_data(show_spinner=False, max_entries=64)
def channels_of(key: str, _res: FitResult, series_id: str) -> list[str]:
    """``ModelData.channels_of``: the series' channels, most held-out observations first."""
    return _res.data.channels_of(series_id, _res.fitted.channels)


def split_of(key: str, res: FitResult, series_id: str) -> str:
    return res.data.role_of(series_id)


# ----------------------------------------------------------------------------- the user's series and clock


def time_axis(res: FitResult) -> str:
    """The views' time axis title: the user's clock for few series ("time (UTC)"), else hours."""
    return user_clock.time_axis(res.data)


def marks_on_user_clock(res: FitResult, series_id: str, inputs: BandInputs, marks: dict[str, Any]) -> dict[str, Any]:
    """The selected query's marks (``evidence.query_marks``) on the clock the band is drawn
    on: with ``when`` when the band has it (many series on the user's clock)."""
    if "when" not in inputs.grid.columns or user_clock.windowed(res.data):
        return marks
    out = dict(marks)
    if out.get("query") is not None and "when" not in out["query"]:
        when = user_clock.display_times(res.obs, series_id, [float(out["query"]["time"])]).iloc[0]
        out["query"] = {**out["query"], "when": when}
    attended = out.get("attended")
    if attended is not None and len(attended) and "when" not in attended.columns:
        out["attended"] = attended.assign(when=user_clock.display_times(res.obs, series_id,
                                                                        attended["time"].to_numpy()).to_numpy())
    return out


def user_axis(res: FitResult) -> str:
    """The time axis title of a view drawn on the user's clock, few series or many ("time (days)")."""
    return user_clock.user_axis(res.data)


def time_text(res: FitResult, series_id: str, hours: float) -> str:
    """One time of a series for a label, in the user's clock for few series."""
    return user_clock.time_text(res.data, series_id, hours)


@st.cache_data(show_spinner=False, max_entries=8)
def series_options(key: str, _res: FitResult) -> list[str]:
    """The user's series ids for the selectors: ``series_choices`` (test first) with windows
    and forecast episodes folded into the series they come from."""
    return user_clock.user_series(_res.data, series_choices(key, _res))


def series_label(key: str, res: FitResult, series_id: str) -> str:
    """A series in a selector: with its split role when the model's series are the user's."""
    return series_id if user_clock.windowed(res.data) else f"{series_id} · {split_of(key, res, series_id)}"


def model_ids(key: str, res: FitResult, series_id: str) -> list[str]:
    """The model's series (windows, episodes) of one user series that have context."""
    return user_clock.model_ids_of(res.data, series_id, series_choices(key, res))


@st.cache_data(show_spinner=False, max_entries=64)
def channel_options(key: str, _res: FitResult, series_id: str) -> list[str]:
    """The channels of one user series, most held-out observations first (``channels_of``;
    rolling origins: those its forecast past the end starts from; windows: over its windows)."""
    data = _res.data
    if not user_clock.windowed(data):
        return channels_of(key, _res, series_id)
    if user_clock.on_origins(data):
        return channels_of(key, _res, data.clock.end_episode(series_id)[0])
    return list(dict.fromkeys(c for m in model_ids(key, _res, series_id) for c in channels_of(key, _res, m)))


@st.cache_data(show_spinner=False, max_entries=8)
def user_points(key: str, _res: FitResult) -> pd.DataFrame:
    """``model_points`` in the user's ids and clock (``when``)."""
    return user_clock.to_user(_res.data, model_points(key, _res))


# ----------------------------------------------------------------------------- band types


def band_kinds(res: FitResult) -> list[str]:
    """The band types a view offers (labels of ``state.BAND_KINDS``): the adaptive conformal
    band first where the fit walked it (rolling origins)."""
    base = ["Scaled Gaussian", "Conformal"]
    return ["Adaptive conformal", "Conformal", "Scaled Gaussian"] if res.fitted.adaptive.get("levy") else base


def adaptive_levels(res: FitResult) -> list[float]:
    """The levels the adaptive conformal walk holds (rolling origins), ascending."""
    return sorted(float(level) for level in res.fitted.adaptive.get("levy", {}))


# ----------------------------------------------------------------------------- the grid and its bands


@st.cache_data(show_spinner=False, max_entries=64)
def user_grid(key: str, _res: FitResult, series_id: str, channel: str, mc_passes: int) -> pd.DataFrame:
    """Windows: ``predict_grid`` over every window of one user series, in the user's clock."""
    g = _res.verbs.predict_grid(_res.data, model_ids(key, _res, series_id), [channel],
                                n_points=grid_points(), mc_passes=mc_passes if _res.has_twin else 0)
    return user_clock.to_user(_res.data, g).sort_values("time", kind="stable").reset_index(drop=True)


@st.cache_data(show_spinner=False, max_entries=64)
def grid(key: str, _res: FitResult, series_id: str, channel: str, mc_passes: int,
         n_points: int | None = None) -> pd.DataFrame:
    """``predict_grid`` for one series and channel (+ MC-Dropout with T passes)."""
    return _res.verbs.predict_grid(_res.data, [series_id], [channel], n_points=n_points or grid_points(),
                                   mc_passes=mc_passes if _res.has_twin else 0)


def band_inputs(key: str, res: FitResult, series_id: str, channel: str, level: float, kind: str,
                mc_passes: int, show_mc: bool = True) -> BandInputs:
    """The cached grid with its bands at ``level`` of ``kind`` (no model pass when only the
    level or kind moves) and the observations to draw with it. Few series (windows): the
    user's series over all its windows, in the user's clock."""
    show_mc = show_mc and res.has_twin
    passes = mc_passes if show_mc else 0
    windows = user_clock.windowed(res.data)
    frame = user_grid(key, res, series_id, channel, passes) if windows else grid(key, res, series_id, channel, passes)
    g = res.verbs.with_bands(frame, level, kind)
    pts = user_points(key, res) if windows else model_points(key, res)
    here = pts[(pts["series_id"] == series_id) & (pts["channel"] == channel) & (pts["role"] != "unused")]
    f = res.fitted
    cutoff = f.task.cutoff if f.task.kind == "forecast" and not windows else None
    if f.task.per_series and not windows:  # this series' own cut-off, from all its observations
        times = pts.loc[pts["series_id"] == series_id, "time"].to_numpy()
        cutoff = f.task.series_cutoff(times) if len(times) else None
    if windows:
        return BandInputs(g, here, series_id, channel, level, BAND_LABELS[kind], show_mc, cutoff, time_axis(res))
    return on_user_clock(res, BandInputs(g, here, series_id, channel, level, BAND_LABELS[kind], show_mc, cutoff))


def on_user_clock(res: FitResult, inputs: BandInputs) -> BandInputs:
    """Many series: the band of one series drawn on the user's clock (``when``: days for data
    in days, date-times for date-time data; the cut-off there too), not the model's hours."""
    try:
        user_time_label(res.obs)
    except DataError:  # observations built by hand: the model's hours
        return inputs
    axis = user_clock.user_axis(res.data)
    sid = inputs.series_id

    def when(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(when=user_clock.display_times(res.obs, sid, frame["time"].to_numpy()).to_numpy())

    cutoff = inputs.cutoff
    if cutoff is not None:
        cutoff = user_clock.display_times(res.obs, sid, [float(cutoff)]).iloc[0]
    return dataclasses.replace(inputs, grid=when(inputs.grid), points=when(inputs.points), cutoff=cutoff,
                               time_axis=axis)


def selectable_band_inputs(key: str, res: FitResult, series_id: str, channel: str, level: float, kind: str,
                           mc_passes: int, show_mc: bool = True) -> BandInputs:
    """``band_inputs`` with a query id (``inputs.query_id``) on each held-out observation, so
    a click on it selects that query (the band panel)."""
    inputs = band_inputs(key, res, series_id, channel, level, kind, mc_passes, show_mc)
    p = inputs.points.copy()
    p["query_id"] = [query_id(series_id, channel, t) if r == "held-out" else ""
                     for t, r in zip(p["time"], p["role"], strict=True)]
    return dataclasses.replace(inputs, points=p)
