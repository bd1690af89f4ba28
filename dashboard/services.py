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

No computation lives here: training, calibration, decoding, episodes and bands are
``levy_core``'s; tables are laid out by ``tables``, figures by ``charts``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import charts, tables
from dashboard.fits import (
    FitResult,
    FitSettings,
    cached_fit,
    default_mc_passes,
    default_settings,
    fast,
    fit_key,
    recording,
    remember,
)
from dashboard.report import Figure, render_report, report_is_offline
from dashboard.sources import (
    DEFAULT_SAMPLE,
    DataSource,
    env_data_path,
    source_from_path,
    source_from_sample,
    source_from_upload,
)
from dashboard.tables import GUARANTEE_CAPTION, metrics_table
from levy_core import pipeline
from levy_core.data import (
    ColumnMapping,
    DataError,
    Observations,
    detect_mapping,
    preview_table,
    read_csv,
)
from levy_core.tasks import TaskConfig
from levy_core.train import Progress, TrainConfig

# re-exported: the views reach fits, sources and tables through services only
__all__ = ["DEFAULT_SAMPLE", "GUARANTEE_CAPTION", "DataSource", "FitResult", "FitSettings", "cached_fit",
           "default_mc_passes", "default_settings", "env_data_path", "fast", "fit_key", "metrics_table",
           "report_is_offline", "source_from_path", "source_from_sample", "source_from_upload"]

MODEL_SIZES = pipeline.MODEL_SIZES  # for the sidebar: views do not import the pipeline


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


@st.cache_data(show_spinner=False, max_entries=8)
def cutoff_range(obs_hash: str, _obs: Observations, seed: int = 0) -> tuple[float, float, float]:
    """``pipeline.cutoff_range``: (min, max, default) forecast cut-off in the model's time."""
    return pipeline.cutoff_range(_obs, seed)


# ----------------------------------------------------------------------------- fitting


def fit_model(obs: Observations, obs_hash: str, data_label: str, settings: FitSettings,
              progress: Callable[[Progress], None] | None = None) -> FitResult:
    """``pipeline.fit`` with the settings, cached by (data hash, settings)."""
    key = fit_key(obs_hash, settings)
    hit = cached_fit(key)
    if hit is not None:
        return hit
    history: list[dict[str, Any]] = []
    task = TaskConfig(settings.task, cutoff=settings.cutoff if settings.task == "forecast" else None,
                      holdout_fraction=settings.holdout_fraction)
    train = TrainConfig(epochs=settings.epochs, max_seconds=settings.max_seconds or None, seed=settings.seed)
    t0 = time.perf_counter()
    fitted = pipeline.fit(obs, task=task, train=train, size=settings.size, train_twin=settings.train_twin,
                          mc_passes=settings.mc_passes, progress=recording(history, progress))
    seconds = time.perf_counter() - t0
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return remember(FitResult(key, fitted, pipeline.prepare(fitted, obs), obs_hash, settings, data_label, history,
                               seconds, now))


def add_twin(res: FitResult, progress: Callable[[Progress], None] | None = None) -> FitResult:
    """``pipeline.add_twin``: the MC-Dropout twin for a model fitted without it (cached)."""
    if res.has_twin:
        return res
    key = res.key + "+twin"
    hit = cached_fit(key)
    if hit is not None:
        return hit
    history = [h for h in res.history if h["model"] != "softmax"]
    t0 = time.perf_counter()
    fitted = pipeline.add_twin(res.fitted, res.obs, mc_passes=res.settings.mc_passes,
                               progress=recording(history, progress))
    settings = dataclasses.replace(res.settings, train_twin=True)
    # the split, scaler and channels are unchanged, so the prepared data still holds
    return remember(FitResult(key, fitted, res.data, res.obs_hash, settings, res.data_label, history,
                               res.seconds + time.perf_counter() - t0, res.fitted_at))


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


@st.cache_data(show_spinner=False, max_entries=64)
def grid(key: str, _res: FitResult, series_id: str, channel: str, mc_passes: int,
         n_points: int | None = None) -> pd.DataFrame:
    """``pipeline.predict_grid`` for one series and channel (+ MC-Dropout with T passes)."""
    return pipeline.predict_grid(_res.fitted, _res.data, [series_id], [channel], n_points=n_points or grid_points(),
                                 mc_passes=mc_passes if _res.has_twin else 0)


@dataclass(frozen=True)
class BandInputs:
    """What ``charts.band_figure`` draws for one series and channel (the view and the report
    both build the chart from this)."""

    grid: pd.DataFrame  # the grid with ``lower, upper`` (and MC-Dropout's) at the level
    points: pd.DataFrame  # the series' observations of the channel that are context or held out
    series_id: str
    channel: str
    level: float
    band_label: str  # "conformal" or "scaled Gaussian"
    show_mc: bool
    cutoff: float | None  # forecast cut-off (model time), None for interpolation

    def figure_arguments(self) -> dict[str, Any]:
        return {"series_id": self.series_id, "channel": self.channel, "level": self.level,
                "band_label": self.band_label, "show_mc": self.show_mc, "cutoff": self.cutoff}


def band_inputs(key: str, res: FitResult, series_id: str, channel: str, level: float, kind: str,
                mc_passes: int, show_mc: bool = True) -> BandInputs:
    """The cached grid with its bands at ``level`` of ``kind`` (no model pass when only the
    level or kind moves) and the observations to draw with it."""
    show_mc = show_mc and res.has_twin
    g = pipeline.with_bands(grid(key, res, series_id, channel, mc_passes if show_mc else 0), res.fitted, level,
                            kind)
    pts = model_points(key, res)
    here = pts[(pts["series_id"] == series_id) & (pts["channel"] == channel) & (pts["role"] != "unused")]
    f = res.fitted
    return BandInputs(g, here, series_id, channel, level, "conformal" if kind == "conformal" else "scaled Gaussian",
                      show_mc, f.task.cutoff if f.task.kind == "forecast" else None)


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


def prediction_csv(pred: pd.DataFrame) -> bytes:
    """The per-query predictions (PRED.csv contract of ``levy evaluate``)."""
    return pred[[c for c in pipeline.PRED_COLUMNS if c in pred.columns]].to_csv(index=False).encode()


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


# ----------------------------------------------------------------------------- report


def _report_figures(key: str, res: FitResult, mc_passes: int, level: float) -> list[Figure]:
    result, _ = evaluation(key, res, mc_passes)
    cal = calibration_curves(key, res, mc_passes)
    return [
        ("Reliability", charts.reliability_figure(cal["reliability"]),
         "Each curve is the share of test queries inside the central band of each nominal level; on the "
         "dotted diagonal the bands are calibrated, above it they are too wide, below too narrow."),
        ("Coverage by channel", charts.channel_coverage_figure(channel_coverage(key, res, mc_passes, level), level),
         "Each channel's share of test queries inside its conformal band at the report's level (dotted "
         "line); the band is conformalized per channel."),
        ("PIT", charts.pit_figure(cal["pit"]),
         "A flat histogram (density 1) means calibrated; a U shape means over-confident, a hump "
         "under-confident."),
        ("Risk–coverage", charts.risk_coverage_figure(cal["risk"], cal["oracle"]),
         "Lower is better: a spread that ranks errors well keeps the error low while the least trusted "
         "queries are left out."),
        ("Cost", charts.timing_figure(timing_rows(res, result)),
         "Wall time of training and of producing the uncertainty of the whole test split."),
    ]


def band_chart(inputs: BandInputs, **marks: Any) -> go.Figure:
    """``charts.band_figure`` of ``band_inputs`` (``marks``: the selected query's overlays)."""
    return charts.band_figure(inputs.grid, inputs.points, **inputs.figure_arguments(), **marks)


def build_report(key: str, res: FitResult, mc_passes: int, *, series_id: str | None = None,
                 channel: str | None = None, level: float = 0.9, kind: str = "gaussian") -> str:
    """The self-contained HTML report (``report.render_report``): plotly.js inlined once,
    every figure, the metrics tables and what was fitted, when and on what data."""
    result, _ = evaluation(key, res, mc_passes)
    figures = _report_figures(key, res, mc_passes, level)
    if series_id is not None and channel is not None:
        band = band_chart(band_inputs(key, res, series_id, channel, level, kind, mc_passes))
        figures.insert(0, ("Predictive band", band,
                           "Band, n_eff and tr Σ on one time axis: a wide band with small n_eff lacks evidence; "
                           "with large tr Σ the observations it draws on disagree."))
    extra = {"softmax twin (no uncertainty)": result.get("softmax"), "50-draw sampler": result.get("sampler_50")}
    return render_report(description=res.describe(), n_test=result["n_test"], mc_passes=mc_passes,
                         figures=figures, metrics=metrics_table(result),
                         guarantee=guarantee_table(key, res, mc_passes), extra=extra)
