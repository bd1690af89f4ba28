"""Session-state keys and their defaults, in one place.

The current data and model live in ``st.session_state`` (``FIT_KEY`` names the model in the
services' fit store), so a bad upload or a failed fit leaves them in place. View controls
that several panels share (series, channel, level, …) are widget keys kept alive across
tab switches (only the open tab runs, and Streamlit drops the state of widgets that were
not drawn in a run).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

# data + fit
SOURCE = "source"  # radio: where the data comes from
SAMPLE = "sample_name"  # selectbox: which bundled sample
UPLOAD = "upload"  # file_uploader
UPLOAD_SOURCE = "_upload_source"  # (file_id, DataSource) of the last uploaded file
MAPPINGS = "_mappings"  # digest -> (mapping json or None, time unit): overrides from the Data panel
FIT_KEY = "_fit_key"  # key of the current model in the services' fit store
FAILURES = "_failures"  # attempt key -> error message (not retried until the user asks)
PENDING_TWIN = "_pending_twin"  # True: train the MC-Dropout twin on the next run
# panels and shared view controls
PANEL = "panel"  # st.tabs key (lazy tabs: only the open one runs)
SERIES = "series"
CHANNEL = "channel"
LEVEL = "level"
BAND_KIND = "band_kind"
MC_OVERLAY = "mc_overlay"
MC_T = "mc_T"
QUERY = "_query"  # selected query: {"series_id", "channel", "time"} or None
IDENTITY_QUERY = "identity_query"
N_DRAWS = "n_draws"

SOURCE_SAMPLE = "Bundled sample"
SOURCE_UPLOAD = "Upload a CSV"
SOURCE_FILE = "File given at start"
BAND_KINDS = {"Scaled Gaussian": "gaussian", "Conformal": "conformal"}
PANELS = [
    "Data",
    "Fit",
    "Predictive band",
    "MC-Dropout",
    "Calibration",
    "Trust ranking",
    "Check the identity",
]
DEFAULT_PANEL = "Predictive band"

_KEEP_ALIVE = (SERIES, CHANNEL, LEVEL, BAND_KIND, MC_OVERLAY, MC_T, IDENTITY_QUERY, N_DRAWS)


def init(defaults: dict[str, Any]) -> None:
    """Set missing keys to their defaults and keep shared widget state alive."""
    ss = st.session_state
    for key, value in defaults.items():
        if key not in ss:
            ss[key] = value
    for key in (MAPPINGS, FAILURES):
        if key not in ss:
            ss[key] = {}
    for key in _KEEP_ALIVE:
        if key in ss:
            ss[key] = ss[key]


def get(key: str, default: Any = None) -> Any:
    return st.session_state.get(key, default)


def select_query(series_id: str, channel: str, time_: float, *, move_view: bool = True) -> None:
    """Remember a query; with ``move_view`` the band view shows its series and channel.

    Call from widget callbacks (they run before the script, so setting widget keys is allowed).
    """
    ss = st.session_state
    ss[QUERY] = {"series_id": str(series_id), "channel": str(channel), "time": float(time_)}
    if move_view:
        ss[SERIES] = str(series_id)
        ss[CHANNEL] = str(channel)


def clear_query() -> None:
    st.session_state[QUERY] = None
