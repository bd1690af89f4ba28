"""Session-state keys and their defaults, in one place.

The current data and model live in ``st.session_state`` (``FIT_KEY`` names the model in the
services' fit store), so a bad upload or a failed fit leaves them in place. View controls
that several panels share (series, channel, level, …) are widget keys kept alive across
page switches (each panel is an ``st.navigation`` page: only the open one runs, and
Streamlit drops the state of widgets that were not drawn in a run). Every key the app and
its views read or write, widget keys included, is a constant here; keys tied to one file or
data set are ``keyed(PREFIX, suffix)``.
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
FIT_PROVENANCE = "_fit_provenance"  # (data label, fit time) as THIS session knows its model
FAILURES = "_failures"  # attempt key -> error message (not retried until the user asks)
PENDING_TWIN = "_pending_twin"  # True: queue the MC-Dropout twin on the next run
JOB = "_job"  # the pooled fit this session follows (session/controller.py: key, data, settings, what it has adopted)
PREVIEW = "_preview"  # (preview number, FitResult): the Lévy model mid-training, drawn until the next one
TWIN_FAILURE = "_twin_failure"  # why the pooled twin failed (shown once; the Lévy model is kept)
# sidebar, "3 · Saved model": an opened model is this session's own (never in the shared store)
MODEL_UPLOAD = "model_upload"  # file_uploader: a model zip
MODEL_UPLOAD_SEEN = "_model_upload_seen"  # file id of the last zip handled (opened or refused)
MODEL_ERROR = "_model_error"  # why the last zip was refused (shown until another is opened)
OPENED_MODEL = "_opened_model"  # services.OpenedModel, or absent: the model in use instead of a fit
OPENED_RESULT = "_opened_result"  # FitResult of the opened model on the data it was last applied to
CLOSE_MODEL = "close_model"  # button: back to fitting
# panels and shared view controls
OPEN_PANEL = "_open_panel"  # the panel this run draws (set by the app from the page the URL names)
SERIES = "series"
CHANNEL = "channel"
LEVEL = "level"
BAND_KIND = "band_kind"
BAND_KIND_ORIGINS = "_band_kind_origins"  # whether the band type was last set for a fit on rolling origins
MC_OVERLAY = "mc_overlay"
MC_T = "mc_T"
QUERY = "_query"  # selected query: {"series_id", "channel", "time"[, "origin"]} (user ids and hours) or None
IDENTITY_QUERY = "identity_query"
N_DRAWS = "n_draws"

# sidebar, "2 · Fit" (widget keys)
FIT_TASK = "fit_task"
FIT_TASK_FEW = "fit_task_few"  # the task radio for data with few series (forecast by default)
FIT_HORIZON = "fit_horizon"  # prefix: + "_" + the data's hash; few series: forecast horizon (a duration)
FIT_CUTOFF = "fit_cutoff"  # prefix: + "_" + the data's hash (the range depends on the data)
FIT_OWN_CUTOFF = "fit_own_cutoff"  # prefix: + "_" + the data's hash: each series its own cut-off (a checkbox)
FIT_HOLDOUT = "fit_holdout"
FIT_SIZE = "fit_size"
FIT_EPOCHS = "fit_epochs"
FIT_BUDGET = "fit_budget"
FIT_TWIN = "fit_twin"
FIT_TRANSFORM = "fit_transform"
FIT_BUTTON = "fit_button"
# Data panel: the column-mapping form (prefixes: + "_" + the file's digest) and the preview
MAP_FORM = "mapping_form"
MAP_LAYOUT = "map_layout"
MAP_TIME = "map_time"
MAP_SERIES = "map_series"
MAP_CHANNEL = "map_channel"
MAP_VALUE = "map_value"
MAP_WIDE = "map_wide"
MAP_UNIT = "map_unit"
MAP_APPLY = "map_apply"
MAP_RESET = "map_reset"
DATA_SERIES = "data_series"  # selectbox: series to preview
GAP_HIST = "gap_hist"
CHANNEL_COUNTS = "channel_counts"
TIMELINE = "timeline"
# Fit panel
TRAINING_CHART = "training_chart"
TWIN_BUTTON_FIT = "twin_button_fit"
CANCEL_FIT = "cancel_fit"  # the button that cancels this session's pooled fit (views/fit.py)
MODEL_DOWNLOAD = "model_download"  # download_button: the model as a zip
# Predictive band panel (views/band.py) and its evidence rows (views/evidence.py)
BAND_CHART = "band_chart"
FUTURE_CHART = "future_chart"  # rolling origins: the band past the end of the data
FUTURE_HORIZON = "future_horizon"  # prefix: + "_" + the fit key (text input: a duration)
FUTURE_HOURS = "_future_hours"  # fit key -> (text, hours) of the last valid horizon
EVIDENCE_SCATTER = "evidence_scatter"
QUERY_PICK = "query_pick"
# MC-Dropout panel
TWIN_BUTTON = "twin_button"
TIMING_CHART = "timing_chart"
MC_BAND_CHART = "mc_band_chart"
# Calibration panel
RELIABILITY_CHART = "reliability_chart"
PIT_CHART = "pit_chart"
RISK_CHART = "risk_chart"
QUANTILE_COVERAGE_CHART = "quantile_coverage_chart"
GUARANTEE_TABLE = "guarantee_table"
CHANNEL_COVERAGE_CHART = "channel_coverage_chart"
REPORT_DOWNLOAD = "report_download"
PRED_DOWNLOAD = "pred_download"
# Backtest panel (rolling origins)
BACKTEST_ORIGIN = "backtest_origin"  # select_slider: a test origin (user hours)
BACKTEST_CHART = "backtest_chart"
ROLLING_CHART = "rolling_coverage_chart"
# Trust ranking panel
RANK_TABLE = "rank_table"  # st.dataframe selection event
RANK_OPEN = "rank_open"  # selectbox: the series the band view shows (a page link opens it)
RANK_DOWNLOAD = "rank_download"
RANKING_CHART = "ranking_chart"
RANKED_IDS = "_ranked_ids"  # series ids in table order (maps a selected row to its series)
# Measure next panel (views/advise.py)
ADVISE_TARGETS = "advise_targets"  # prefix: + "_" + the series (multiselect: the target channels)
ADVISE_HORIZON = "advise_horizon"  # text_input: how far the targets reach
ADVISE_TABLE = "advise_table"
ADVISE_PICK = "advise_pick"  # selectbox: the suggestion whose band is drawn
ADVISE_CHANNEL = "advise_channel"  # selectbox: the target channel drawn
ADVISE_CHART = "advise_chart"
# Monitoring panel
MONITOR_TABLE = "monitor_table"
MONITOR_CHANNELS = "monitor_channels"
MONITOR_CHART = "monitor_chart"
MONITOR_DRIFT = "monitor_drift"
# Watch panel (views/watch.py)
WATCH_ALPHA = "watch_alpha"  # select_slider: the false-alarm rate
WATCH_SERIES = "watch_series"
WATCH_CHANNEL = "watch_channel"
WATCH_PLAY = "watch_play"  # button: play / pause
WATCH_PLAYING = "_watch_playing"  # True while the replay plays
WATCH_STEP = "watch_step"  # prefix: + "_" + the series (slider: the replay's time step)
WATCH_CHART = "watch_chart"
# Check the identity panel
IDENTITY_FROM_QUERY = "_identity_from_query"  # (series, time) last copied from QUERY
DRAWS_CHART = "draws_chart"

SOURCE_SAMPLE = "Bundled sample"
SOURCE_UPLOAD = "Upload a CSV"
SOURCE_FILE = "File given at start"
BAND_KINDS = {"Scaled Gaussian": "gaussian", "Conformal": "conformal", "Adaptive conformal": "adaptive"}
ADAPTIVE_KIND = "Adaptive conformal"  # offered (and the default) only for fits on rolling origins
PANEL_DATA = "Data"
PANEL_FIT = "Fit"
PANEL_BAND = "Predictive band"
PANEL_ADVISE = "Measure next"
PANEL_MC = "MC-Dropout"
PANEL_CALIBRATION = "Calibration"
PANEL_BACKTEST = "Backtest"
PANEL_RANKING = "Trust ranking"
PANEL_IDENTITY = "Check the identity"
PANEL_MONITORING = "Monitoring"
PANEL_WATCH = "Watch"
PANELS = [
    PANEL_DATA,
    PANEL_FIT,
    PANEL_BAND,
    PANEL_ADVISE,
    PANEL_MC,
    PANEL_CALIBRATION,
    PANEL_BACKTEST,
    PANEL_RANKING,
    PANEL_MONITORING,
    PANEL_WATCH,
    PANEL_IDENTITY,
]
DEFAULT_PANEL = PANEL_BAND  # what the app's root URL opens
# each panel's page: http://HOST:PORT/<url path> (stable: docs, bookmarks and tests use them)
PANEL_URLS = {
    PANEL_DATA: "data",
    PANEL_FIT: "fit",
    PANEL_BAND: "band",
    PANEL_ADVISE: "measure-next",
    PANEL_MC: "mc-dropout",
    PANEL_CALIBRATION: "calibration",
    PANEL_BACKTEST: "backtest",
    PANEL_RANKING: "ranking",
    PANEL_MONITORING: "monitoring",
    PANEL_WATCH: "watch",
    PANEL_IDENTITY: "identity",
}


def keyed(prefix: str, suffix: str) -> str:
    """A widget key tied to the data it is drawn for: ``"<prefix>_<suffix>"``."""
    return f"{prefix}_{suffix}"


_KEEP_ALIVE = (SERIES, CHANNEL, LEVEL, BAND_KIND, MC_OVERLAY, MC_T, IDENTITY_QUERY, N_DRAWS, BACKTEST_ORIGIN,
               WATCH_ALPHA, WATCH_SERIES, WATCH_CHANNEL)


def init(defaults: dict[str, Any]) -> None:
    """Set missing keys to their defaults and keep shared widget state alive."""
    ss = st.session_state
    for key, value in defaults.items():
        if key not in ss:
            ss[key] = value
    for key in (MAPPINGS, FAILURES, FUTURE_HOURS):
        if key not in ss:
            ss[key] = {}
    for key in _KEEP_ALIVE:
        if key in ss:
            ss[key] = ss[key]


def get(key: str, default: Any = None) -> Any:
    return st.session_state.get(key, default)


def select_query(series_id: str, channel: str, time_: float, *, move_view: bool = True,
                 origin: float | None = None) -> None:
    """Remember a query (the user's series id and hours; on rolling origins also the
    forecast origin it was predicted from); with ``move_view`` the band view shows its series
    and channel, and the backtest its origin.

    Call from widget callbacks (they run before the script, so setting widget keys is allowed).
    """
    ss = st.session_state
    ss[QUERY] = {"series_id": str(series_id), "channel": str(channel), "time": float(time_)}
    if origin is not None:
        ss[QUERY]["origin"] = float(origin)
        ss[BACKTEST_ORIGIN] = float(origin)
    if move_view:
        ss[SERIES] = str(series_id)
        ss[CHANNEL] = str(channel)


def clear_query() -> None:
    st.session_state[QUERY] = None


def close_saved_model() -> None:
    """Back to fitting: the session's own fit, if it has one, is the model again."""
    for key in (OPENED_MODEL, OPENED_RESULT):
        st.session_state.pop(key, None)
