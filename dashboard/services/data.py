"""Data: where it comes from (a bundled sample, the file given at start, an upload), reading it
once, and what the Data panel previews.

Cache wrappers around ``levy_core.data`` (``preview_table``, ``detect_mapping``,
``read_csv``) keyed by the file's SHA-256, the column mapping and the time unit; the bytes
themselves come from ``sources`` (no Streamlit there). What was read is keyed by ``data_key``:
its frame and how it was read (the clock its times are shown in).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from levy_dashboard.data import user_clock
from levy_dashboard.data.sources import (
    DEFAULT_SAMPLE,
    DataSource,
    check_upload_size,
    env_data_path,
    source_from_path,
    source_from_sample,
    source_from_upload,
    upload_limit_text,
)

from levy_core.data import (
    TIME_UNITS,
    ColumnMapping,
    DataError,
    Observations,
    detect_mapping,
    display_unit,
    preview_table,
    read_csv,
    say_duration,
    user_time_unit,
)

__all__ = ["DEFAULT_SAMPLE", "DataSource", "DataSummary", "Loaded", "check_upload_size", "content_hash",
           "data_key", "data_time_axis", "detected_mapping", "env_data_path", "few_series", "hours_per", "load", "load_observations",
           "mapping_from_json", "mapping_to_json", "path_source", "preview_rows", "raw_table", "sample_source",
           "source_from_upload", "summary", "upload_limit_text", "user_frame"]

log = logging.getLogger(__name__)
PREVIEW_ROWS = 500  # rows of one series the Data panel lists


@st.cache_resource(show_spinner=False, max_entries=8)
def sample_source(name: str) -> DataSource:
    """``sources.source_from_sample``, read once per server."""
    return source_from_sample(name)


@st.cache_resource(show_spinner=False, max_entries=4)
def path_source(path: str) -> DataSource:
    """``sources.source_from_path`` (the file given to ``levy dashboard DATA``), read once."""
    return source_from_path(path)


@st.cache_data(show_spinner=False, max_entries=16)
def raw_table(digest: str, _data: bytes, name: str, nrows: int = 500) -> pd.DataFrame:
    """``levy_core.data.preview_table``: the first rows as text, for the mapping and preview."""
    return preview_table(_data, name, nrows)


def detected_mapping(raw: pd.DataFrame) -> tuple[ColumnMapping | None, str | None]:
    """``detect_mapping`` on the file's first rows: (mapping, None) or (None, why not)."""
    try:
        return detect_mapping(raw), None
    except DataError as exc:
        return None, str(exc)


def mapping_to_json(mapping: ColumnMapping | None) -> str | None:
    return None if mapping is None else json.dumps(mapping.to_dict(), sort_keys=True)


def mapping_from_json(text: str | None) -> ColumnMapping | None:
    return ColumnMapping.from_dict(json.loads(text)) if text else None


@st.cache_resource(show_spinner=False, max_entries=8)
def load_observations(digest: str, _data: bytes, name: str, mapping_json: str | None = None,
                      time_unit: str = "hours") -> Observations:
    """``read_csv`` of the bytes; ``DataError`` on any problem (not cached: the caller keeps it)."""
    source = io.BytesIO(_data)
    source.name = name  # read_csv's messages quote the user's file name
    return read_csv(source, mapping=mapping_from_json(mapping_json), time_unit=time_unit)


def data_key(obs: Observations) -> str:
    """The key of observations as the dashboard shows them (every cache and fit key starts
    with it): ``Observations.content_hash`` (the frame) and the whole load report — the
    user's clock the views write its times in (each series' first date-time, the input's
    time unit, time-zone offsets, the order of day and month), the columns read, what was
    dropped. The frame alone does not tell them apart: date-times are hours since each
    series' first observation, so the same measurements taken on other days read to the same
    frame, and views keyed by it showed one session the dates of another's file. The same
    bytes read the same way (under any file name: the report holds none) are the same key.

    Returns
    -------
    str
        64 hex digits (SHA-256).
    """
    report = json.dumps(dataclasses.asdict(obs.report), sort_keys=True, default=str)
    return hashlib.sha256(f"{obs.content_hash()}|{report}".encode()).hexdigest()


@st.cache_resource(show_spinner=False, max_entries=8)
def content_hash(digest: str, mapping_json: str | None, time_unit: str, _obs: Observations) -> str:
    """``data_key`` of the observations read from the file of SHA-256 ``digest`` with that
    mapping and time unit (computed once)."""
    return data_key(_obs)


@dataclass(frozen=True)
class Loaded:
    """A source read with a mapping: the observations and their content hash, or why not."""

    obs: Observations | None
    obs_hash: str | None
    error: str | None


def load(src: DataSource, mapping_json: str | None, time_unit: str) -> Loaded:
    """``load_observations`` and ``content_hash`` of a source; any problem is a message (a
    ``DataError``'s own, or one saying the file is not a CSV of observations), never a crash."""
    try:
        obs = load_observations(src.digest, src.data, src.name, mapping_json, time_unit)
        return Loaded(obs, content_hash(src.digest, mapping_json, time_unit, obs), None)
    except DataError as exc:
        return Loaded(None, None, str(exc))
    except Exception as exc:  # noqa: BLE001 - never let a file crash the app
        log.exception("unexpected error reading %s", src.name)
        return Loaded(None, None, f"Could not read {src.name!r}: {exc}. Check that it is a "
                      "CSV of timestamped observations (see the Data page).")


def few_series(obs: Observations) -> bool:
    """Fewer series than a split by series needs: a forecast runs on rolling origins."""
    from levy_core.forecast.verbs import (
        MIN_SERIES_FOR_SERIES_SPLIT,  # the fit's rule (loads PyTorch: here)
    )

    return obs.n_series < MIN_SERIES_FOR_SERIES_SPLIT


@dataclass(frozen=True)
class DataSummary:
    """The Data panel's figures of loaded observations (hours)."""

    n_series: int
    n_channels: int
    n_obs: int
    start: float
    end: float
    median_gap: float | None
    gaps: np.ndarray  # every gap between consecutive observations of a series (h)
    clock: str | None = None  # the data's clock ("days", "datetime"); None: observations built by hand

    @property
    def span(self) -> float:
        return self.end - self.start

    def say(self, hours: float) -> str:
        """A duration as the user reads it: in the data's unit, or a calendar length."""
        return say_duration(hours, self.clock or "hours")

    @property
    def gap_unit(self) -> str:
        """The unit the gap histogram runs in (the data's own; days or hours for date-times)."""
        return display_unit(self.clock or "hours", self.median_gap)


@st.cache_data(show_spinner=False, max_entries=8)
def summary(obs_hash: str, _obs: Observations) -> DataSummary:
    """``Observations``' counts, time span, gaps and median gap."""
    t0, t1 = _obs.time_span
    try:
        clock: str | None = user_time_unit(_obs)
    except DataError:
        clock = None
    return DataSummary(_obs.n_series, _obs.n_channels, _obs.n_obs, float(t0), float(t1), _obs.median_gap(),
                       np.asarray(_obs.gaps()), clock)


@st.cache_data(show_spinner=False, max_entries=8)
def user_frame(obs_hash: str, _obs: Observations) -> pd.DataFrame:
    """The observations with ``when``, each time in the user's clock (the Data panel)."""
    frame = _obs.frame.reset_index(drop=True)
    return frame.assign(when=user_clock.display_times(_obs, frame["series_id"].astype(str).to_numpy(),
                                                      frame["time"].to_numpy()).to_numpy())


def hours_per(unit: str) -> float:
    """The length of one ``unit`` (a key of ``TIME_UNITS``) in hours."""
    return TIME_UNITS[unit]


def data_time_axis(obs: Observations) -> str:
    """The Data panel's time axis title: the user's clock."""
    return user_clock.data_time_label(obs)


def preview_rows(obs_hash: str, obs: Observations, series_id: str) -> pd.DataFrame:
    """The first observations of one series as the Data panel lists them: series, its time
    in the user's clock (named by the axis title), channel and value."""
    frame = user_frame(obs_hash, obs)
    rows = frame[frame["series_id"] == series_id].head(PREVIEW_ROWS)
    return rows[["series_id", "when", "channel", "value"]].rename(columns={"when": data_time_axis(obs)})
