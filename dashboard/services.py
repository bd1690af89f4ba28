"""Typed, cached wrappers around ``levy_core``: the only place the dashboard calls it.

Every expensive result is cached, keyed by the data's hash and the settings:

* ``load_observations`` (``st.cache_resource``) by the file's SHA-256, the column mapping
  and the time unit;
* fits live in a process-wide store (``st.cache_resource``) keyed by
  ``Observations.content_hash()`` and the ``FitSettings`` (``fit_key``), so a rerun, a
  second browser tab or going back to earlier settings is instant; each fit carries its
  data prepared once in the model's series space (``FitResult.data``);
* predictions, evaluations, rankings, attention weights and operator draws
  (``st.cache_data``) by that fit key and their own arguments. The fitted model itself is
  passed as an unhashed ``_res`` argument: the key says which model it is.

Few series: the model's series are windows or forecast episodes ("<id>@<k>") on relative
clocks; the wrappers the views call (``series_options``, ``channel_options``,
``band_inputs``, ``heldout_queries``, ``query_attention``, ``future_inputs``,
``backtest_predictions``, ``rolling_coverage``, …) hand back the user's ids and clock,
mapped by ``user_clock`` through ``ModelData.clock`` and ``to_user_time``; the model-space
wrappers under them (``series_choices``, ``grid``, ``heldout_predictions``, ``attention``, …)
stay as they were.

No computation lives here: training, calibration, decoding, episodes and bands are
``levy_core``'s; tables are laid out by ``tables``, figures by ``charts``.
"""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pandas as pd
import streamlit as st
from levy_dashboard import fit_pool, tables, user_clock
from levy_dashboard.fits import (
    FitResult,
    FitSettings,
    SessionLimits,
    add_twin,
    cached_fit,
    default_mc_passes,
    default_settings,
    fast,
    final_key,
    fit_key,
    fit_model,
    for_this_session,
    job_result,
    levy_key,
    preview_result,
    remember,
    session_fit,
    session_limits,
    submit_fit,
    submit_twin,
)
from levy_dashboard.inputs import (
    BAND_LABELS,
    BandInputs,
    FutureInputs,
    OriginInputs,
)
from levy_dashboard.report import report_is_offline
from levy_dashboard.saved_models import OpenedModel, apply_model, open_model, opened_key
from levy_dashboard.shipped import ShippedModel, load_shipped, shipped_key, shipped_result
from levy_dashboard.sources import (
    DEFAULT_SAMPLE,
    DataSource,
    check_upload_size,
    env_data_path,
    source_from_path,
    source_from_sample,
    source_from_upload,
    upload_limit_text,
)
from levy_dashboard.tables import GUARANTEE_CAPTION, backtest_table, metrics_table

from levy_core import pipeline
from levy_core.data import (
    ColumnMapping,
    DataError,
    Observations,
    detect_mapping,
    preview_table,
    read_csv,
)
from levy_core.data.drift import DENSITY_FACTOR, MIN_VALUES, RANGE_MARGIN, VALUE_SHARE
from levy_core.episodes.tasks import MIN_SERIES_FOR_SERIES_SPLIT
from levy_core.serving.csv_safety import to_safe_csv
from levy_core.serving.modelzip import model_zip_bytes
from levy_core.serving.monitoring import CoverageMonitor, monitor_coverage

# re-exported: the views reach fits, sources and tables through services only
__all__ = ["BAND_LABELS", "CoverageMonitor", "OpenedModel", "apply_model", "open_model", "opened_key", "DEFAULT_SAMPLE", "DRIFT_CAPTION", "GUARANTEE_CAPTION", "BandInputs", "DataSource", "FitResult",
           "FitSettings", "SessionLimits", "for_this_session", "session_fit", "session_limits", "FutureInputs", "OriginInputs", "add_twin", "backtest_table", "cached_fit", "default_mc_passes",
           "default_settings", "env_data_path", "fast", "fit_key", "fit_model", "metrics_table", "report_is_offline",
           "source_from_path", "source_from_sample", "source_from_upload", "check_upload_size", "upload_limit_text",
           "final_key", "job_result", "levy_key", "preview_result", "shipped_fit", "submit_fit", "submit_twin", "JobView", "job_view", "job_models", "fit_workers"]

DRIFT_CAPTION = (
    f"How to read: a channel is flagged when more than {VALUE_SHARE:.0%} of the series have their median "
    f"beyond the training range by over {RANGE_MARGIN:.0%} of its width, or when it is observed over "
    f"{DENSITY_FACTOR:g}× less or more often per hour than in training (each rule needs {MIN_VALUES} values "
    "of the channel); `levy predict`, `levy evaluate` and `levy rank` print the same warnings."
)
log = logging.getLogger(__name__)
GUARANTEE = pipeline.GUARANTEE  # the adaptive band's guarantee, in words (views name it)

MODEL_SIZES = pipeline.MODEL_SIZES  # for the sidebar: views do not import the pipeline


JobView = fit_pool.JobView


def job_view(key: str) -> JobView | None:
    """The server pool's job of ``key`` as a session shows it (queue place, epoch, loss)."""
    return fit_pool.pool().view(key)


def job_models(key: str) -> tuple[bytes | None, dict[str, Any] | None, bytes | None, bytes | None]:
    """(preview zip, its epoch, Lévy-alone zip, final zip) of the pool's job of ``key``."""
    return fit_pool.pool().models(key)


def fit_workers() -> int:
    """How many fits this server runs at once."""
    return fit_pool.pool().size


@st.cache_resource(show_spinner=False)
def shipped_model(digest: str) -> ShippedModel | None:
    """The model shipped for the file of SHA-256 ``digest`` (loaded once per server; None: none)."""
    return load_shipped(digest)


def shipped_fit(source: DataSource, obs: Observations, obs_hash: str) -> FitResult | None:
    """The shipped model of a bundled sample as a fit (None for any other data): no training."""
    shipped = shipped_model(source.digest)
    if shipped is None:
        return None
    hit = cached_fit(shipped_key(source.digest))
    if hit is not None:
        return for_this_session(hit, source.label)
    try:
        return remember(shipped_result(shipped, obs, obs_hash, source.label))
    except (DataError, ValueError) as exc:  # read differently since it was made: fit instead
        log.warning("shipped model not used: %s", exc)
        return None


def grid_points() -> int:
    """Points of the dense query grid per series and channel."""
    return 120 if fast() else 300


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


@st.cache_resource(show_spinner=False, max_entries=8)
def content_hash(digest: str, mapping_json: str | None, time_unit: str, _obs: Observations) -> str:
    return _obs.content_hash()


def few_series(obs: Observations) -> bool:
    """Fewer series than a split by series needs: a forecast runs on rolling origins."""
    return obs.n_series < MIN_SERIES_FOR_SERIES_SPLIT


@st.cache_data(show_spinner=False, max_entries=8)
def cutoff_range(obs_hash: str, _obs: Observations, seed: int = 0) -> tuple[float, float, float]:
    """``pipeline.cutoff_range``: (min, max, default) forecast cut-off in the model's time."""
    return pipeline.cutoff_range(_obs, seed)


# ----------------------------------------------------------------------------- views of a fit


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


@st.cache_data(show_spinner=False, max_entries=64)
def user_grid(key: str, _res: FitResult, series_id: str, channel: str, mc_passes: int) -> pd.DataFrame:
    """Windows: ``pipeline.predict_grid`` over every window of one user series, in the user's clock."""
    g = pipeline.predict_grid(_res.fitted, _res.data, model_ids(key, _res, series_id), [channel],
                              n_points=grid_points(), mc_passes=mc_passes if _res.has_twin else 0)
    return user_clock.to_user(_res.data, g).sort_values("time", kind="stable").reset_index(drop=True)


@st.cache_data(show_spinner=False, max_entries=64)
def grid(key: str, _res: FitResult, series_id: str, channel: str, mc_passes: int,
         n_points: int | None = None) -> pd.DataFrame:
    """``pipeline.predict_grid`` for one series and channel (+ MC-Dropout with T passes)."""
    return pipeline.predict_grid(_res.fitted, _res.data, [series_id], [channel], n_points=n_points or grid_points(),
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
    g = pipeline.with_bands(frame, res.fitted, level, kind)
    pts = user_points(key, res) if windows else model_points(key, res)
    here = pts[(pts["series_id"] == series_id) & (pts["channel"] == channel) & (pts["role"] != "unused")]
    f = res.fitted
    cutoff = f.task.cutoff if f.task.kind == "forecast" and not windows else None
    return BandInputs(g, here, series_id, channel, level, BAND_LABELS[kind], show_mc, cutoff, time_axis(res))


@st.cache_data(show_spinner=False, max_entries=64)
def heldout_predictions(key: str, _res: FitResult, series_id: str) -> pd.DataFrame:
    """Predictions at the held-out observations of one series (all channels), with ``y_true``;
    model series space (the queries never leave it)."""
    pts = model_points(key, _res)
    q = pts[(pts["series_id"] == series_id) & (pts["role"] == "held-out")].reset_index(drop=True)
    if q.empty:
        return pd.DataFrame(columns=["series_id", "channel", "time", "y_true", "mean", "pred_std"])
    pred = pipeline.predict_queries(_res.fitted, _res.data, q[["series_id", "channel", "time"]])
    pred["y_true"] = q["value"].to_numpy()
    return pred


@st.cache_data(show_spinner=False, max_entries=8)
def test_predictions(key: str, _res: FitResult) -> pd.DataFrame:
    """``pipeline.split_predictions`` on the test split (empty when it has no queries)."""
    try:
        return pipeline.split_predictions(_res.fitted, _res.data, "test")
    except DataError:
        return pd.DataFrame()


def width_factors(query: pd.Series, reference: pd.DataFrame) -> dict[str, float | str]:
    """``pipeline.width_factors``: one query's σ̂ against the median reference query's."""
    return pipeline.width_factors(query, reference)


@st.cache_data(show_spinner=False, max_entries=16)
def evaluation(key: str, _res: FitResult, mc_passes: int) -> tuple[dict[str, Any], pd.DataFrame]:
    """``pipeline.evaluate`` (JSON metrics, per-query frame) with T MC-Dropout passes."""
    return pipeline.evaluate(_res.fitted, _res.data, mc_passes=mc_passes if _res.has_twin else 0)


def timing_rows(res: FitResult, result: dict[str, Any]) -> pd.DataFrame:
    return tables.timing_rows(res.fitted.training, result)


@st.cache_data(show_spinner=False, max_entries=16)
def calibration_curves(key: str, _res: FitResult, mc_passes: int) -> dict[str, Any]:
    """``pipeline.calibration_curves`` on the test split's evaluation."""
    return pipeline.calibration_curves(_res.fitted, evaluation(key, _res, mc_passes)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def guarantee_table(key: str, _res: FitResult, mc_passes: int) -> pd.DataFrame:
    """``pipeline.coverage_checks`` on the test split, laid out by ``tables.guarantee_table``."""
    return tables.guarantee_table(pipeline.coverage_checks(_res.fitted, evaluation(key, _res, mc_passes)[1]))


@st.cache_data(show_spinner=False, max_entries=32)
def channel_coverage(key: str, _res: FitResult, mc_passes: int, level: float) -> pd.DataFrame:
    """``pipeline.channel_coverage`` of the conformal bands at ``level`` on the test split."""
    return pipeline.channel_coverage(_res.fitted, evaluation(key, _res, mc_passes)[1], level)


def prediction_csv(pred: pd.DataFrame, res: FitResult | None = None) -> bytes:
    """The per-query predictions as ``levy evaluate --predictions`` writes them: in the user's
    ids and clock with ``res`` (each query's forecast ``origin`` on rolling origins), cells a
    spreadsheet would run as formulas neutralised."""
    cols = [c for c in pipeline.PRED_COLUMNS if c in pred.columns]
    frame = pred[cols] if res is None else pipeline.user_predictions(pred, res.data, fill_missing=False)
    return to_safe_csv(frame, index=False).encode()


def ranking_csv(ranked: pd.DataFrame) -> bytes:
    """The trust ranking as a CSV download, cells a spreadsheet would run neutralised."""
    return to_safe_csv(ranked, index=False).encode()


@st.cache_data(show_spinner=False, max_entries=8)
def user_frame(obs_hash: str, _obs: Observations) -> pd.DataFrame:
    """The observations with ``when``, each time in the user's clock (the Data panel)."""
    frame = _obs.frame.reset_index(drop=True)
    return frame.assign(when=user_clock.display_times(_obs, frame["series_id"].astype(str).to_numpy(),
                                                      frame["time"].to_numpy()).to_numpy())


def data_time_axis(obs: Observations) -> str:
    """The Data panel's time axis title: the user's clock."""
    return user_clock.data_time_label(obs)


@st.cache_data(show_spinner=False, max_entries=8)
def ranking(key: str, _res: FitResult) -> tuple[pd.DataFrame, float]:
    """``pipeline.rank``: series by trust, and the seconds it took."""
    return pipeline.rank(_res.fitted, _res.data)


@st.cache_data(show_spinner=False, max_entries=64)
def attention(key: str, _res: FitResult, series_id: str, channel: str, time_: float) -> pd.DataFrame:
    """``pipeline.attention_weights`` of one query."""
    return pipeline.attention_weights(_res.fitted, _res.data, series_id, channel, float(time_))


@st.cache_data(show_spinner=False, max_entries=32)
def draws(key: str, _res: FitResult, series_id: str, channel: str, time_: float, n_draws: int,
          seed: int = 0) -> dict[str, Any]:
    """``pipeline.operator_draws`` at one query (with the RMSD's Monte-Carlo s.e.)."""
    return pipeline.operator_draws(_res.fitted, _res.data, series_id, channel, float(time_), n_draws=n_draws,
                                   seed=seed)


def query_crps(out: dict[str, Any], y_true: float, n_sampler: int = 50) -> dict[str, float]:
    """``pipeline.query_crps``: closed form vs the first ``n_sampler`` scaled draws."""
    return pipeline.query_crps(out, y_true, n_sampler)


@st.cache_data(show_spinner=False, max_entries=64)
def heldout_queries(key: str, _res: FitResult, series_id: str, origin: float | None = None) -> pd.DataFrame:
    """``heldout_predictions`` of one user series in the user's ids and clock: over all its
    windows; on rolling origins those of one test origin (``origin``, user hours; default the
    latest), with ``origin``."""
    data = _res.data
    if not user_clock.windowed(data):
        return heldout_predictions(key, _res, series_id)
    ids = model_ids(key, _res, series_id)
    if user_clock.on_origins(data):
        origins = user_clock.series_test_origins(data, series_id)
        at = float(origin) if origin is not None else (origins[-1] if origins else None)
        ids = [] if at is None else [user_clock.model_query(data, series_id, at, at)[0]]
    parts = [heldout_predictions(key, _res, m) for m in ids]
    return user_clock.to_user(data, pd.concat(parts, ignore_index=True) if parts else heldout_predictions(key, _res, ""))


@st.cache_data(show_spinner=False, max_entries=8)
def user_test_predictions(key: str, _res: FitResult) -> pd.DataFrame:
    """``test_predictions`` in the user's ids and clock (with ``origin`` on rolling origins)."""
    return user_clock.to_user(_res.data, test_predictions(key, _res))


def query_attention(key: str, res: FitResult, series_id: str, channel: str, time_: float,
                    origin: float | None = None) -> pd.DataFrame:
    """``attention`` of a query given in the user's id and hours (and origin), with the
    observations it drew on in the user's clock."""
    model_id, t = user_clock.model_query(res.data, series_id, time_, origin)
    att = attention(key, res, model_id, channel, t)
    return user_clock.to_user(res.data, att.assign(series_id=model_id)) if user_clock.windowed(res.data) else att


def query_draws(key: str, res: FitResult, series_id: str, channel: str, time_: float, n_draws: int,
                origin: float | None = None) -> dict[str, Any]:
    """``draws`` at a query given in the user's id and hours (and origin)."""
    model_id, t = user_clock.model_query(res.data, series_id, time_, origin)
    return draws(key, res, model_id, channel, t, n_draws)


# ----------------------------------------------------------------------------- saved models and monitoring


@st.cache_data(show_spinner=False, max_entries=4)
def model_zip(key: str, _res: FitResult) -> bytes:
    """``levy_core.serving.modelzip.model_zip_bytes``: the model directory as one zip (the download)."""
    return model_zip_bytes(_res.fitted)


@st.cache_data(show_spinner=False, max_entries=16)
def monitoring(key: str, _res: FitResult) -> CoverageMonitor:
    """``levy_core.serving.monitoring.monitor_coverage``: the band's coverage per level and channel on
    the observed queries of the data (every series of new data; the test split otherwise)."""
    return monitor_coverage(_res.fitted, _res.data)


@st.cache_data(show_spinner=False, max_entries=16)
def drift(key: str, _res: FitResult) -> tuple[pd.DataFrame, bool, str]:
    """``levy_core.pipeline.drift_report``: channels whose values lie far outside the training
    range or whose sampling is far sparser or denser than in training, laid out by
    ``tables.drift_table``; with whether anything was checked and why not."""
    report = pipeline.drift_report(_res.fitted, _res.data)
    return tables.drift_table(report.flags), report.checked, report.note


def monitoring_tables(monitor: CoverageMonitor,
                      level: float) -> tuple[pd.DataFrame, pd.DataFrame, tuple[pd.DataFrame, float]]:
    """(verdict per level, verdict per channel and level, (coverage per channel, level) at
    the checked level nearest ``level``, for the chart), laid out by ``tables``."""
    return (tables.guarantee_table(monitor.checks, coverage_label="coverage on this data"),
            tables.channel_verdict_table(monitor.by_channel), tables.channel_coverage_at(monitor.by_channel, level))
