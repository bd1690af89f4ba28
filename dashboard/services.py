"""The only place the dashboard calls ``levy_core.pipeline``: cached adapters.

Every expensive result is cached, keyed by the data's hash and the settings:

* ``load_observations`` (``st.cache_resource``) by the file's SHA-256, the column mapping
  and the time unit;
* fits live in a process-wide store (``st.cache_resource``) keyed by
  ``Observations.content_hash()`` and the ``FitSettings`` (``fit_key``), so a rerun, a
  second browser tab or going back to earlier settings is instant;
* predictions, evaluations, rankings, attention weights and operator draws
  (``st.cache_data``) by that fit key and their own arguments. The fitted model itself is
  passed as an unhashed ``_res`` argument: the key says which model it is.

Views never compute: they call these functions and hand the results to ``charts``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import hashlib
import html
import io
import json
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
import torch

from dashboard import charts
from levy_core import metrics, pipeline
from levy_core.calibrate import Calibrator
from levy_core.data import (
    SAMPLES,
    ColumnMapping,
    DataError,
    Observations,
    detect_mapping,
    read_csv,
)
from levy_core.model import SoftmaxTwin
from levy_core.tasks import EpisodeBuilder, TaskConfig, make_split, resolve_task, to_windows
from levy_core.train import Progress, TrainConfig, train_model

ENV_DATA = "LEVY_DASHBOARD_DATA"  # set by `levy dashboard DATA`: the file to open first
ENV_FAST = "LEVY_DASHBOARD_FAST"  # "1": tiny default fits (tests)
DEFAULT_SAMPLE = "Synthetic multichannel"


def fast() -> bool:
    """``LEVY_DASHBOARD_FAST=1``: tiny default fits and grids (tests); read at each call."""
    return os.environ.get(ENV_FAST, "").strip() not in ("", "0")


def grid_points() -> int:
    """Points of the dense query grid per series and channel."""
    return 120 if fast() else 300


LEVELS = np.round(np.concatenate([np.arange(0.05, 0.951, 0.05), [0.99]]), 2)  # reliability diagram
_FIT_STORE_SIZE = 6  # fitted models kept in memory
MODEL_SIZES = pipeline.MODEL_SIZES  # for the sidebar: views do not import the pipeline


# ----------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class FitSettings:
    """What to fit; with the data's hash it is the cache key of a model."""

    task: str = "interpolate"  # "forecast" or "interpolate" (default: shows σ̂ widen in gaps)
    cutoff: float | None = (
        None  # forecast: history ends here (h, model time); None → the median series midpoint
    )
    holdout_fraction: float = 0.2  # interpolate: share of observations held out
    size: str = "small"  # key of pipeline.MODEL_SIZES
    epochs: int = 200  # upper bound on epochs per model (the time budget usually binds first)
    max_seconds: float = 3.5  # wall-clock budget per model (s); keeps the first band within 15 s
    train_twin: bool = True  # train the softmax+dropout twin alongside (MC-Dropout)
    mc_passes: int = 20  # T used to calibrate the twin
    seed: int = 0  # seeds the split, initialisation and hold-outs

    def key(self) -> str:
        payload = json.dumps(dataclasses.asdict(self), sort_keys=True)
        return hashlib.sha1(payload.encode()).hexdigest()[:12]


def default_settings() -> FitSettings:
    """Short default fit: a few seconds on 2 CPU cores (tiny with ``LEVY_DASHBOARD_FAST=1``)."""
    if fast():
        return FitSettings(epochs=3, max_seconds=1.5, mc_passes=5)
    return FitSettings()


def default_mc_passes() -> int:
    return 5 if fast() else 20


# ----------------------------------------------------------------------------- data sources


@dataclass(frozen=True)
class DataSource:
    """Raw bytes of a CSV and where they came from."""

    label: str  # what the user sees, e.g. "sample: Synthetic multichannel"
    name: str  # file name, for messages
    data: bytes = field(repr=False)
    digest: str = ""  # SHA-256 of ``data``


def _source(label: str, name: str, data: bytes) -> DataSource:
    return DataSource(label, name, data, hashlib.sha256(data).hexdigest())


def source_from_path(path: str | os.PathLike[str], label: str | None = None) -> DataSource:
    p = Path(path)
    if not p.is_file():
        raise DataError(
            f"File not found: {str(p)!r}. Check the path given to `levy dashboard`, "
            "or pick a bundled sample / upload a CSV in the sidebar."
        )
    return _source(label or f"file: {p.name}", p.name, p.read_bytes())


def source_from_sample(name: str) -> DataSource:
    if name not in SAMPLES:
        raise DataError(f"Unknown sample {name!r}; choose one of {list(SAMPLES)}.")
    return source_from_path(SAMPLES[name], label=f"sample: {name}")


def source_from_upload(name: str, data: bytes) -> DataSource:
    return _source(f"upload: {name}", name, bytes(data))


def env_data_path() -> str | None:
    value = os.environ.get(ENV_DATA, "").strip()
    return value or None


class _NamedBytes(io.BytesIO):
    """BytesIO with a ``name`` so ``read_csv``'s messages quote the user's file name."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name = name


def _decode_text(data: bytes, name: str) -> str:
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise DataError(
                f"{name!r} looks gzipped but could not be unpacked ({exc}); upload the plain CSV."
            ) from exc
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


@st.cache_data(show_spinner=False, max_entries=16)
def raw_table(digest: str, _data: bytes, name: str, nrows: int = 500) -> pd.DataFrame:
    """The first rows of the file as text (for the column mapping and the preview)."""
    text = _decode_text(_data, name)
    if not text.strip():
        raise DataError(f"{name!r} is empty. Upload a CSV with a header line and data rows.")
    header = text.lstrip().split("\n", 1)[0]
    counts = {",": header.count(","), ";": header.count(";"), "\t": header.count("\t")}
    sep = max(counts, key=lambda s: counts[s]) if max(counts.values()) else ","
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, nrows=nrows)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeError, ValueError) as exc:
        raise DataError(
            f"{name!r} is not a well-formed CSV ({str(exc).strip()}). Every row needs the same "
            "number of comma-separated fields as the header."
        ) from exc
    df.columns = [str(c).strip() for c in df.columns]
    return df


def detected_mapping(raw: pd.DataFrame) -> tuple[ColumnMapping | None, str | None]:
    """``detect_mapping`` on the file's first rows: (mapping, None) or (None, why not)."""
    try:
        return detect_mapping(raw), None
    except DataError as exc:
        return None, str(exc)


def mapping_to_json(mapping: ColumnMapping | None) -> str | None:
    if mapping is None:
        return None
    d = dataclasses.asdict(mapping)
    d["wide_channels"] = list(d["wide_channels"])
    return json.dumps(d, sort_keys=True)


def mapping_from_json(text: str | None) -> ColumnMapping | None:
    if not text:
        return None
    d = json.loads(text)
    d["wide_channels"] = tuple(d.get("wide_channels", ()))
    return ColumnMapping(**d)


@st.cache_resource(show_spinner=False, max_entries=8)
def load_observations(
    digest: str, _data: bytes, name: str, mapping_json: str | None = None, time_unit: str = "hours"
) -> Observations:
    """Parse the file into ``Observations``.

    ``DataError`` on any problem (exceptions are not cached: the caller remembers them)."""
    return read_csv(
        _NamedBytes(_data, name), mapping=mapping_from_json(mapping_json), time_unit=time_unit
    )


@st.cache_resource(show_spinner=False, max_entries=8)
def content_hash(digest: str, mapping_json: str | None, time_unit: str, _obs: Observations) -> str:
    return _obs.content_hash()


@st.cache_data(show_spinner=False, max_entries=8)
def cutoff_range(obs_hash: str, _obs: Observations, seed: int = 0) -> tuple[float, float, float]:
    """(min, max, default) forecast cut-off in the model's time (windows in few-series mode)."""
    frame, _ = make_split(_obs.frame, seed=seed)
    default = resolve_task(TaskConfig("forecast"), frame).cutoff
    spans = frame.groupby("series_id")["time"].max()
    lo, hi = float(frame["time"].min()), float(spans.max())
    return lo, hi, float(default)


# ----------------------------------------------------------------------------- fitting


@dataclass
class FitResult:
    """A fitted model with the data it was fitted on and how it was fitted."""

    key: str
    fitted: pipeline.FittedModel
    obs: Observations
    obs_hash: str  # Observations.content_hash() of ``obs``
    settings: FitSettings
    data_label: str
    history: list[dict[str, Any]]
    seconds: float
    fitted_at: str  # ISO 8601 UTC

    @property
    def has_twin(self) -> bool:
        return self.fitted.twin is not None and self.fitted.mc_calibration is not None

    def describe(self) -> str:
        f, o = self.fitted, self.obs
        task = (
            f"forecast after the cut-off {f.task.cutoff:g} h"
            if f.task.kind == "forecast"
            else f"interpolation of {100 * f.task.holdout_fraction:.0f} % held-out observations"
        )
        tr = f.training
        twin = " and its MC-Dropout twin" if self.has_twin else ""
        return (
            f"Lévy model ({self.settings.size}){twin} fitted {self.fitted_at} on {self.data_label} "
            f"({o.n_series} series, {o.n_channels} channels, {o.n_obs:,} observations; split by "
            f"{f.split.mode}: {tr['n_series']['train']} train / "
            f"{tr['n_series'].get('stopping', 0)} early-stopping / "
            f"{tr['n_series']['calibration']} calibration / "
            f"{tr['n_series']['test']} test series), task: {task}; {tr['levy']['epochs_run']} "
            "epochs in "
            f"{self.seconds:.1f} s; calibration scale c = {f.levy_calibration.scale_:.3g}."
        )


_store_lock = threading.Lock()


@st.cache_resource(show_spinner=False)
def _fit_store() -> OrderedDict[str, FitResult]:
    """Process-wide store of fitted models (cleared with ``st.cache_resource.clear()``)."""
    return OrderedDict()


def fit_key(obs_hash: str, settings: FitSettings) -> str:
    return f"{obs_hash[:16]}-{settings.key()}"


def cached_fit(key: str) -> FitResult | None:
    with _store_lock:
        return _fit_store().get(key)


def _remember(result: FitResult) -> FitResult:
    with _store_lock:
        store = _fit_store()
        store[result.key] = result
        store.move_to_end(result.key)
        while len(store) > _FIT_STORE_SIZE:
            store.popitem(last=False)
    return result


def _history_callback(
    history: list[dict[str, Any]], progress: Callable[[Progress], None] | None
) -> Callable[[Progress], None]:
    def cb(p: Progress) -> None:
        history.append(
            {
                "model": p.model,
                "epoch": p.epoch,
                "train_loss": p.train_loss,
                "val_loss": p.val_loss,
                "seconds": p.seconds,
            }
        )
        if progress is not None:
            progress(p)

    return cb


def fit_model(
    obs: Observations,
    obs_hash: str,
    data_label: str,
    settings: FitSettings,
    progress: Callable[[Progress], None] | None = None,
) -> FitResult:
    """``pipeline.fit`` with the settings, cached by (data hash, settings)."""
    key = fit_key(obs_hash, settings)
    hit = cached_fit(key)
    if hit is not None:
        return hit
    history: list[dict[str, Any]] = []
    task = TaskConfig(
        settings.task,
        cutoff=settings.cutoff if settings.task == "forecast" else None,
        holdout_fraction=settings.holdout_fraction,
    )
    train = TrainConfig(
        epochs=settings.epochs, max_seconds=settings.max_seconds or None, seed=settings.seed
    )
    t0 = time.perf_counter()
    fitted = pipeline.fit(
        obs,
        task=task,
        train=train,
        size=settings.size,
        train_twin=settings.train_twin,
        mc_passes=settings.mc_passes,
        progress=_history_callback(history, progress),
    )
    seconds = time.perf_counter() - t0
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return _remember(
        FitResult(key, fitted, obs, obs_hash, settings, data_label, history, seconds, now)
    )


def _model_frame(fitted: pipeline.FittedModel, obs: Observations) -> pd.DataFrame:
    """The frame in the model's series space (few-series mode cuts series into windows)."""
    if fitted.split.mode == "window" and fitted.split.window_hours:
        return to_windows(obs.frame, fitted.split.window_hours)
    return obs.frame


def add_twin(res: FitResult, progress: Callable[[Progress], None] | None = None) -> FitResult:
    """Train the MC-Dropout twin on demand for a model fitted without it.

    Same steps as ``pipeline.fit`` with ``train_twin=True`` (same split, episodes, seed and
    budget), then the twin's calibration on the calibration split with
    ``pipeline.split_predictions(..., mc_passes=T)``. Built here from public pieces because
    ``levy_core`` has no "add a twin to a fitted model" function.
    """
    if res.has_twin:
        return res
    key = res.key + "+twin"
    hit = cached_fit(key)
    if hit is not None:
        return hit
    f = res.fitted
    builder = EpisodeBuilder(
        f.scaler.transform(_model_frame(f, res.obs)), f.channels, f.task, seed=f.train_config.seed
    )
    train_ids = builder.usable(f.split.fitting())
    stop_ids = builder.usable(f.split.stopping) or train_ids
    history = [h for h in res.history if h["model"] != "softmax"]
    t0 = time.perf_counter()
    torch.manual_seed(f.train_config.seed)
    twin = SoftmaxTwin(f.model_config)
    out = train_model(
        twin,
        builder,
        train_ids,
        stop_ids,
        f.train_config,
        label="softmax",
        progress=_history_callback(history, progress),
    )
    new = dataclasses.replace(f, twin=twin, mc_calibration=None, training=dict(f.training))
    T = res.settings.mc_passes
    cal = pipeline.split_predictions(new, res.obs, "calibration", mc_passes=T)
    new.mc_calibration = Calibrator().fit(
        cal["y_norm"], cal["mc_mean_norm"], cal["mc_std_norm"], groups=cal["channel"].to_numpy()
    )
    new.mc_passes = T
    new.training["softmax"] = {
        "best_epoch": out.best_epoch,
        "epochs_run": out.epochs_run,
        "seconds": round(out.seconds, 3),
        "best_val_mse": out.best_val_loss,
    }
    seconds = res.seconds + time.perf_counter() - t0
    settings = dataclasses.replace(res.settings, train_twin=True)
    return _remember(
        FitResult(
            key,
            new,
            res.obs,
            res.obs_hash,
            settings,
            res.data_label,
            history,
            seconds,
            res.fitted_at,
        )
    )


# ----------------------------------------------------------------------------- views of a fit


@st.cache_data(show_spinner=False, max_entries=8)
def model_points(key: str, _res: FitResult) -> pd.DataFrame:
    """Every observation in the model's series space with its role.

    Columns ``series_id, channel, time, value`` (original units), ``role`` ("context",
    "held-out") and ``split`` ("train", "calibration", "test").
    """
    f = _res.fitted
    frame = _model_frame(f, _res.obs).reset_index(drop=True)
    builder = EpisodeBuilder(
        f.scaler.transform(frame), f.channels, f.task, seed=f.train_config.seed
    )
    role = np.full(len(frame), "unused", dtype=object)
    for sid, s in builder.series.items():
        ctx, qry = builder.split_indices(sid)
        role[s.row[ctx]] = "context"
        role[s.row[qry]] = "held-out"
    out = frame.copy()
    out["role"] = role
    split_of = {sid: r for r in ("train", "calibration", "test") for sid in getattr(f.split, r)}
    out["split"] = out["series_id"].map(split_of).fillna("unseen")
    return out


def series_choices(key: str, res: FitResult) -> list[str]:
    """Model series with context, test series first (held out from training), then calibration,
    then training."""
    pts = model_points(key, res)
    order = {"test": 0, "calibration": 1, "train": 2}
    split_of = pts.drop_duplicates("series_id").set_index("series_id")["split"]
    # a series (or window) with no context observation has nothing to predict from
    with_context = set(pts.loc[pts["role"] == "context", "series_id"])
    ids = [s for s in split_of.index if s in with_context] or list(split_of.index)
    return sorted(ids, key=lambda s: (order.get(split_of[s], 3), _natural(s)))


def channels_of(key: str, res: FitResult, series_id: str) -> list[str]:
    """Channels observed in one series, the one with most held-out observations first."""
    pts = model_points(key, res)
    part = pts[pts["series_id"] == series_id]
    held = part[part["role"] == "held-out"]["channel"].value_counts()
    chans = sorted(part["channel"].unique(), key=_natural)
    return sorted(chans, key=lambda c: -int(held.get(c, 0)))


def _natural(s: str) -> tuple:
    import re

    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(s)))


def split_of(key: str, res: FitResult, series_id: str) -> str:
    pts = model_points(key, res)
    hit = pts.loc[pts["series_id"] == series_id, "split"]
    return str(hit.iloc[0]) if len(hit) else "unseen"


@st.cache_data(show_spinner=False, max_entries=64)
def grid(
    key: str,
    _res: FitResult,
    series_id: str,
    channel: str,
    mc_passes: int,
    n_points: int | None = None,
) -> pd.DataFrame:
    """``pipeline.predict_grid`` for one series and channel (+ MC-Dropout with T passes)."""
    T = mc_passes if _res.has_twin else 0
    return pipeline.predict_grid(
        _res.fitted,
        _res.obs,
        [series_id],
        [channel],
        n_points=n_points or grid_points(),
        mc_passes=T,
    )


def with_bands(
    frame: pd.DataFrame, fitted: pipeline.FittedModel, level: float, kind: str
) -> pd.DataFrame:
    """Add ``lower, upper`` (and ``mc_lower, mc_upper``) at ``level`` to a prediction frame.

    Recomputed from the normalised columns with the fitted calibrators (cheap), so moving
    the level slider never re-runs the model. ``kind``: "gaussian" or "conformal".
    """
    out = frame.copy()
    ch = out["channel"].to_numpy()
    lo, hi = fitted.levy_calibration.interval(
        out["mean_norm"].to_numpy(), out["sigma_norm"].to_numpy(), level, kind=kind, groups=ch
    )
    out["lower"] = fitted.scaler.inverse_value(lo, ch)
    out["upper"] = fitted.scaler.inverse_value(hi, ch)
    if "mc_mean_norm" in out and fitted.mc_calibration is not None:
        lo, hi = fitted.mc_calibration.interval(
            out["mc_mean_norm"].to_numpy(), out["mc_std_norm"].to_numpy(), level, kind=kind, groups=ch
        )
        out["mc_lower"] = fitted.scaler.inverse_value(lo, ch)
        out["mc_upper"] = fitted.scaler.inverse_value(hi, ch)
    return out


def _user_clock(queries: pd.DataFrame, obs: Observations, window_hours: float) -> pd.DataFrame:
    """Window ids ``"<id>@<k>"`` and window-relative times → the user's series ids and clock
    (what ``pipeline.predict_queries`` takes in few-series mode)."""
    parts = queries["series_id"].astype(str).str.rpartition("@")
    base, k = parts[0], parts[2].astype(int).to_numpy()
    start = obs.frame.groupby("series_id")["time"].min()
    offset = k * window_hours + queries["time"].to_numpy(np.float64)
    # keep each query in its own window despite rounding at a window's first instant
    low = np.floor(offset / window_hours) < k
    offset[low] = np.nextafter(offset[low], np.inf)
    out = queries.copy()
    out["series_id"] = base.to_numpy()
    out["time"] = base.map(start).to_numpy(np.float64) + offset
    return out


@st.cache_data(show_spinner=False, max_entries=64)
def heldout_predictions(key: str, _res: FitResult, series_id: str) -> pd.DataFrame:
    """Predictions at the held-out observations of one series (all channels), with ``y_true``;
    ``series_id`` and ``time`` in the model's series space (windows in few-series mode)."""
    pts = model_points(key, _res)
    q = pts[(pts["series_id"] == series_id) & (pts["role"] == "held-out")].reset_index(drop=True)
    empty = pd.DataFrame(columns=["series_id", "channel", "time", "y_true", "mean", "pred_std"])
    if q.empty:
        return empty
    f = _res.fitted
    queries = q[["series_id", "channel", "time"]]
    if f.split.mode == "window" and f.split.window_hours:
        queries = _user_clock(queries, _res.obs, f.split.window_hours)
    try:
        pred = pipeline.predict_queries(f, _res.obs, queries)
    except DataError:
        return empty  # e.g. a series with no context: nothing to predict from
    pred["series_id"] = q["series_id"].to_numpy()  # back to the model's ids and clock
    pred["time"] = q["time"].to_numpy()
    pred["y_true"] = q["value"].to_numpy()
    return pred


@st.cache_data(show_spinner=False, max_entries=8)
def test_predictions(key: str, _res: FitResult) -> pd.DataFrame:
    """``pipeline.split_predictions`` on the test split, with ``abs_error_norm``."""
    try:
        pred = pipeline.split_predictions(_res.fitted, _res.obs, "test")
    except DataError:
        return pd.DataFrame()
    pred["abs_error_norm"] = np.abs(pred["y_norm"] - pred["mean_norm"])
    return pred


@st.cache_data(show_spinner=False, max_entries=16)
def evaluation(key: str, _res: FitResult, mc_passes: int) -> tuple[dict[str, Any], pd.DataFrame]:
    """``pipeline.evaluate`` (JSON metrics, per-query frame) with T MC-Dropout passes."""
    return pipeline.evaluate(_res.fitted, _res.obs, mc_passes=mc_passes if _res.has_twin else 0)


METRIC_ROWS: list[tuple[str, str]] = [
    ("mse", "MSE (normalised)"),
    ("mae", "MAE (normalised)"),
    ("crps", "CRPS (normalised)"),
    ("nll", "NLL (normalised)"),
    ("mean_width_90", "mean width of the 90 % band (normalised)"),
    ("spearman_sigma_abs_error", "Spearman(σ, |error|)"),
]


def metrics_table(result: dict[str, Any]) -> pd.DataFrame:
    """Side-by-side metrics of the Lévy closed form and MC-Dropout on the test split."""
    methods = [("Lévy (closed form)", result.get("levy"))]
    if result.get("mc_dropout"):
        methods.append(
            (f"MC-Dropout (T = {result['mc_dropout'].get('passes')})", result["mc_dropout"])
        )
    rows: dict[str, dict[str, float]] = {}
    for name, m in methods:
        col: dict[str, float] = {}
        for k, label in METRIC_ROWS:
            col[label] = m[k]
        for lvl, v in m["coverage"].items():
            col[f"coverage of the {100 * float(lvl):.0f} % band (scaled Gaussian)"] = v
        for lvl, v in m["conformal_coverage"].items():
            col[f"coverage of the {100 * float(lvl):.0f} % band (conformal)"] = v
        col["seconds for the test split's uncertainty"] = m["seconds"]
        col["ms per query"] = 1000 * m["seconds"] / max(1, result["n_test"])
        rows[name] = col
    return pd.DataFrame(rows)


def timing_rows(res: FitResult, result: dict[str, Any]) -> pd.DataFrame:
    tr = res.fitted.training
    rows = [
        ("Lévy", "training", tr["levy"]["seconds"]),
        ("Lévy", "uncertainty on the test split", result["levy"]["seconds"]),
    ]
    if result.get("mc_dropout") and tr.get("softmax"):
        T = result["mc_dropout"]["passes"]
        rows += [
            (f"MC-Dropout (T={T})", "training", tr["softmax"]["seconds"]),
            (
                f"MC-Dropout (T={T})",
                "uncertainty on the test split",
                result["mc_dropout"]["seconds"],
            ),
        ]
    return pd.DataFrame(rows, columns=["method", "stage", "seconds"])


@st.cache_data(show_spinner=False, max_entries=16)
def calibration_curves(key: str, _res: FitResult, mc_passes: int) -> dict[str, Any]:
    """Reliability (raw scaled-Gaussian and conformal), PIT and risk–coverage for both methods,
    on the test split's normalised columns with the calibrated spreads."""
    _, pred = evaluation(key, _res, mc_passes)
    f = _res.fitted
    y = pred["y_norm"].to_numpy(np.float64)
    channels = pred["channel"].to_numpy()
    methods = [
        (
            "Lévy",
            pred["mean_norm"].to_numpy(np.float64),
            pred["sigma_norm"].to_numpy(np.float64),
            f.levy_calibration,
        )
    ]
    if "mc_mean_norm" in pred and f.mc_calibration is not None:
        methods.append(
            (
                "MC-Dropout",
                pred["mc_mean_norm"].to_numpy(np.float64),
                pred["mc_std_norm"].to_numpy(np.float64),
                f.mc_calibration,
            )
        )
    reliability: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    pits: dict[str, np.ndarray] = {}
    risk: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, mean, sigma, cal in methods:
        std = cal.predict_std(sigma)
        reliability[f"{name} — scaled Gaussian"] = metrics.calibration_curve(y, mean, std, LEVELS)
        conf = [
            metrics.interval_coverage(
                y, *cal.interval(mean, sigma, float(p), kind="conformal", groups=channels)
            )
            for p in LEVELS
        ]
        reliability[f"{name} — conformal"] = (LEVELS.copy(), np.asarray(conf))
        pits[name] = metrics.pit_values(y, mean, std)
        risk[name] = metrics.risk_coverage_curve(y, mean, std)
    oracle = metrics.risk_coverage_curve(y, methods[0][1], np.abs(y - methods[0][1]))
    return {
        "reliability": reliability,
        "pit": pits,
        "risk": risk,
        "oracle": oracle,
        "n": int(len(y)),
    }


@st.cache_data(show_spinner=False, max_entries=16)
def guarantee_table(key: str, _res: FitResult, mc_passes: int) -> pd.DataFrame:
    """``pipeline.coverage_checks`` laid out for people: per method and level, the conformal
    band's coverage on the test split, the window a valid band lies in (per-series s.e.)
    and the verdicts with both standard errors."""
    _, pred = evaluation(key, _res, mc_passes)
    checks = pipeline.coverage_checks(_res.fitted, pred)

    def verdict(ok: bool | None) -> str:
        return "–" if ok is None else ("holds" if ok else "outside")

    def window(r: pd.Series) -> str:
        if r["lower_series"] is None:
            return "– (one series)"
        lo, hi = max(0.0, r["lower_series"]), min(1.0, r["upper_series"])
        return f"{100 * lo:.1f} – {100 * hi:.1f} %"

    return pd.DataFrame(
        {
            "method": checks["method"],
            "band": [f"{100 * lv:.0f} %" for lv in checks["level"]],
            "coverage on the test split": [f"{100 * c:.1f} %" for c in checks["coverage"]],
            "window (per-series s.e.)": checks.apply(window, axis=1),
            "verdict": [verdict(v) for v in checks["holds_series"]],
            "if queries were independent": [verdict(v) for v in checks["holds_binomial"]],
        }
    )


@st.cache_data(show_spinner=False, max_entries=32)
def channel_coverage(key: str, _res: FitResult, mc_passes: int, level: float) -> pd.DataFrame:
    """Coverage of each method's conformal band at ``level``, per channel, on the test split:
    columns channel, method, coverage, n."""
    _, pred = evaluation(key, _res, mc_passes)
    f = _res.fitted
    y, channels = pred["y_norm"].to_numpy(np.float64), pred["channel"].to_numpy()
    methods = [("Lévy", "mean_norm", "sigma_norm", f.levy_calibration)]
    if "mc_mean_norm" in pred and f.mc_calibration is not None:
        methods.append(("MC-Dropout", "mc_mean_norm", "mc_std_norm", f.mc_calibration))
    parts = []
    for name, mean_col, std_col, cal in methods:
        lo, hi = cal.interval(
            pred[mean_col].to_numpy(np.float64),
            pred[std_col].to_numpy(np.float64),
            level,
            kind="conformal",
            groups=channels,
        )
        inside = pd.Series((lo <= y) & (y <= hi)).groupby(channels)
        parts.append(
            pd.DataFrame(
                {"channel": inside.mean().index, "method": name, "coverage": inside.mean().values,
                 "n": inside.size().values}
            )
        )
    return pd.concat(parts, ignore_index=True)


def prediction_csv(pred: pd.DataFrame) -> bytes:
    """The per-query predictions (PRED.csv contract of ``levy evaluate``)."""
    cols = [c for c in getattr(pipeline, "PRED_COLUMNS", pred.columns) if c in pred.columns]
    return pred[cols].to_csv(index=False).encode()


@st.cache_data(show_spinner=False, max_entries=8)
def ranking(key: str, _res: FitResult) -> tuple[pd.DataFrame, float]:
    """``pipeline.rank``: series by trust, and the seconds it took."""
    return pipeline.rank(_res.fitted, _res.obs)


@st.cache_data(show_spinner=False, max_entries=64)
def attention(
    key: str, _res: FitResult, series_id: str, channel: str, time_: float
) -> pd.DataFrame:
    """``pipeline.attention_weights`` of one query."""
    return pipeline.attention_weights(_res.fitted, _res.obs, series_id, channel, float(time_))


@st.cache_data(show_spinner=False, max_entries=32)
def draws(
    key: str,
    _res: FitResult,
    series_id: str,
    channel: str,
    time_: float,
    n_draws: int,
    seed: int = 0,
) -> dict[str, Any]:
    """``pipeline.operator_draws`` at one query, plus the Monte-Carlo standard error of the RMSD."""
    out = pipeline.operator_draws(
        _res.fitted, _res.obs, series_id, channel, float(time_), n_draws=n_draws, seed=seed
    )
    d2 = (np.asarray(out["draws"]) - out["mean"]) ** 2
    rmsd = max(out["rmsd"], 1e-300)
    out["rmsd_se"] = float(np.std(d2) / (2 * rmsd * math.sqrt(len(d2))))
    return out


def query_crps(out: dict[str, Any], y_true: float, n_sampler: int = 50) -> dict[str, float]:
    """CRPS at one query: closed-form scaled Gaussian vs the first ``n_sampler`` scaled draws."""
    c = float(out["scale_c"])
    closed = metrics.crps_gaussian_per_point([y_true], [out["mean"]], [c * out["sigma"]])[0]
    ens = metrics.crps_ensemble_per_point(
        [y_true], np.asarray(out["scaled_draws"])[None, :n_sampler], fair=True
    )[0]
    return {"closed_form": float(closed), "sampler": float(ens)}


# ----------------------------------------------------------------------------- report


def band_for(
    key: str,
    res: FitResult,
    series_id: str,
    channel: str,
    level: float,
    kind: str,
    mc_passes: int,
    show_mc: bool = True,
) -> go.Figure:
    """The band + evidence figure of one series and channel (shared by the view and the report)."""
    g = with_bands(grid(key, res, series_id, channel, mc_passes), res.fitted, level, kind)
    pts = model_points(key, res)
    p = pts[
        (pts["series_id"] == series_id) & (pts["channel"] == channel) & (pts["role"] != "unused")
    ]
    cutoff = res.fitted.task.cutoff if res.fitted.task.kind == "forecast" else None
    return charts.band_figure(
        g,
        p,
        series_id=series_id,
        channel=channel,
        level=level,
        band_label="conformal" if kind == "conformal" else "scaled Gaussian",
        show_mc=show_mc and res.has_twin,
        cutoff=cutoff,
    )


GUARANTEE_CAPTION = (
    "Split conformal promises at least the band's level on average when series are exchangeable. "
    "The queries of one series share its difficulty, so the coverage of one test split strays "
    "from the level by the per-series standard error (test and calibration draws), often "
    "several times the binomial one; the window is level − 3 s.e. to level + 1/(n+1) + 3 s.e. "
    "The last column shows the verdict the binomial s.e. would give."
)


def build_report(
    key: str,
    res: FitResult,
    mc_passes: int,
    *,
    series_id: str | None = None,
    channel: str | None = None,
    level: float = 0.9,
    kind: str = "gaussian",
) -> str:
    """A self-contained HTML report: plotly.js inlined once, every figure, the metrics tables and
    what was fitted, when and on what data. Opens with no network."""
    result, _ = evaluation(key, res, mc_passes)
    cal = calibration_curves(key, res, mc_passes)
    figs: list[tuple[str, go.Figure, str]] = [
        (
            "Reliability",
            charts.reliability_figure(cal["reliability"]),
            "Each curve is the share of test queries inside the central band of each nominal "
            "level; on the "
            "dotted diagonal the bands are calibrated, above it they are too wide, below too "
            "narrow.",
        ),
        (
            "Coverage by channel",
            charts.channel_coverage_figure(channel_coverage(key, res, mc_passes, level), level),
            "Each channel's share of test queries inside its conformal band at the report's "
            "level (dotted line); the band is conformalized per channel.",
        ),
        (
            "PIT",
            charts.pit_figure(cal["pit"]),
            "A flat histogram (density 1) means calibrated; a U shape means over-confident, a "
            "hump under-confident.",
        ),
        (
            "Risk–coverage",
            charts.risk_coverage_figure(cal["risk"], cal["oracle"]),
            "Lower is better: a spread that ranks errors well keeps the error low while the least "
            "trusted "
            "queries are left out.",
        ),
        (
            "Cost",
            charts.timing_figure(timing_rows(res, result)),
            "Wall time of training and of producing the uncertainty of the whole test split.",
        ),
    ]
    if series_id is not None and channel is not None:
        figs.insert(
            0,
            (
                "Predictive band",
                band_for(key, res, series_id, channel, level, kind, mc_passes),
                "Band, n_eff and tr Σ on one time axis: a wide band with small n_eff lacks "
                "evidence; "
                "with large tr Σ the observations it draws on disagree.",
            ),
        )
    parts = []
    for i, (title, fig, caption) in enumerate(figs):
        div = pio.to_html(
            fig,
            include_plotlyjs=(i == 0),
            full_html=False,
            config={"displaylogo": False},
            default_width="100%",
        )
        parts.append(
            f"<section><h2>{html.escape(title)}</h2>{div}<p class='cap'>{html.escape(caption)}</p>"
            "</section>"
        )
    table = metrics_table(result)
    guarantee = guarantee_table(key, res, mc_passes)
    extra = {
        "softmax twin (no uncertainty)": result.get("softmax"),
        "50-draw sampler": result.get("sampler_50"),
    }
    extra_html = "".join(
        f"<li><b>{html.escape(k)}</b>: {html.escape(json.dumps(v, default=float))}</li>"
        for k, v in extra.items()
        if v
    )
    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    style = (
        "body{font-family:Arial,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:4px 8px;"
        "text-align:right}th{background:#f4f4f4}.cap{color:#555;font-size:13px}h1{font-size:24px}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Lévy uncertainty report</title>"
        f"<style>{style}</style></head><body>"
        f"<h1>Lévy uncertainty report</h1><p>{html.escape(res.describe())}</p>"
        f"<p>Report generated {generated}; {result['n_test']:,} test queries; MC-Dropout with "
        f"T = {mc_passes} passes. Error metrics are on the per-channel min–max normalised scale; "
        f"coverage is scale-free.</p>"
        f"<h2>Metrics on the test split</h2>{table.to_html(float_format=lambda v: f'{v:.4g}')}"
        f"<h2>Does the conformal band hold its level?</h2>{guarantee.to_html(index=False)}"
        f"<p class='cap'>{html.escape(GUARANTEE_CAPTION)}</p>"
        f"<ul>{extra_html}</ul>{''.join(parts)}</body></html>"
    )


def report_is_offline(text: str) -> bool:
    """True when the HTML loads no external script (no ``<script src=...>``)."""
    import re

    return re.search(r"<script[^>]*\bsrc\s*=", text, flags=re.IGNORECASE) is None
