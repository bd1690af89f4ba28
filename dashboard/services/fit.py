"""Fit: which model a session draws and how it gets one — the fit settings and their limits,
the process-wide fit store (``fitting.fits``), the server's pool of fit workers
(``fitting.fit_pool``), the models shipped with the bundled samples (``fitting.shipped``) and
models opened from a zip (``fitting.saved_models``).

The plain modules underneath (the ``fitting`` package) hold no Streamlit rendering; this is the views' and the
controller's one way to them (``session/controller.py`` decides, per run, which model a session
shows). Cache wrappers: ``shipped_model`` (once per server), ``model_zip`` (the download)
and ``cutoff_range``; the store itself is ``fits``'.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pandas as pd
import streamlit as st
from levy_dashboard.data.sources import DataSource
from levy_dashboard.display import tables
from levy_dashboard.fitting import fit_pool
from levy_dashboard.fitting.fit_pool import JobView
from levy_dashboard.fitting.fits import (
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
    release_job,
    remember,
    session_fit,
    session_limits,
    submit_fit,
    submit_twin,
    transform_error,
)
from levy_dashboard.fitting.saved_models import (
    OpenedModel,
    apply_model,
    open_model,
    opened_key,
    recorded_reading,
)
from levy_dashboard.fitting.shipped import ShippedModel, load_shipped, shipped_key, shipped_result

from levy_core.data import DataError, Observations
from levy_core.forecast.verbs import FittedVerbs
from levy_core.model.sizes import MODEL_SIZES
from levy_core.serving.modelzip import model_zip_bytes

__all__ = ["MODEL_SIZES", "FitResult", "FitSettings", "JobView", "OpenedModel", "SessionLimits", "add_twin",
           "apply_model", "cached_fit", "cutoff_range", "own_cutoffs_by_default", "default_mc_passes", "default_settings", "fast",
           "final_key", "fit_key", "fit_model", "fit_workers", "for_this_session", "job_models", "job_result",
           "job_view", "levy_key", "model_zip", "open_model", "opened_key", "preview_result", "recorded_reading",
           "release_job", "session_fit",
           "session_limits", "settings_summary", "shipped_fit", "shipped_model", "size_help", "size_options",
           "status_text", "submit_fit", "submit_twin", "training_table", "transform_error"]

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- the server's fit pool


def job_view(key: str) -> JobView | None:
    """The server pool's job of ``key`` as a session shows it (queue place, epoch, loss)."""
    return fit_pool.pool().view(key)


def job_models(key: str) -> tuple[bytes | None, dict[str, Any] | None, bytes | None, bytes | None]:
    """(preview zip, its epoch, Lévy-alone zip, final zip) of the pool's job of ``key``."""
    return fit_pool.pool().models(key)


def fit_workers() -> int:
    """How many fits this server runs at once."""
    return fit_pool.pool().size


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def status_text(view: JobView, label: str) -> tuple[float, str]:
    """(progress fraction, words) of a pooled job, for the status slot."""
    if view.state == "queued":
        return 0.0, (f"Queued: {_ordinal(view.position)} in line for a fit worker ({view.running} fit"
                     f"{'s' if view.running != 1 else ''} running; this server fits {fit_workers()} at a "
                     f"time). The panels keep the current model meanwhile.")
    p = view.progress
    if p is None:
        return 0.0, f"Preparing {label} …"
    name = "Lévy model" if p["model"] == "levy" else "MC-Dropout twin"
    share = 1 / 3 if p["model"] == "levy" else 2 / 3
    frac = (0 if p["model"] == "levy" else 1 / 3) + share * min(1.0, p["epoch"] / max(1, p["epochs"]))
    shown = " · the band shows the best epoch so far" if p["model"] == "levy" and view.preview_seq else ""
    return frac, (f"Training the {name} on {label}: epoch {p['epoch']} of at most {p['epochs']} · early-stopping "
                  f"MSE {p['val_loss']:.4f} (best {p['best_val_loss']:.4f}, epoch {p['best_epoch']}) · "
                  f"{view.seconds:.0f} s{shown}")


# ----------------------------------------------------------------------------- shipped models


@st.cache_resource(show_spinner=False)
def shipped_model(digest: str) -> ShippedModel | None:
    """The model shipped for the file of SHA-256 ``digest`` (loaded once per server; None: none)."""
    return load_shipped(digest)


def shipped_fit(source: DataSource, obs: Observations, obs_hash: str) -> FitResult | None:
    """The shipped model of a bundled sample as a fit (None for any other data, the sample
    read with another mapping or time unit among them): no training."""
    shipped = shipped_model(source.digest)
    if shipped is None:
        return None
    hit = cached_fit(shipped_key(source.digest, obs_hash))
    if hit is not None:
        return for_this_session(hit, source.label)
    try:
        return remember(shipped_result(shipped, obs, obs_hash, source.label))
    except (DataError, ValueError) as exc:  # read differently since it was made: fit instead
        log.warning("shipped model not used: %s", exc)
        return None


# ----------------------------------------------------------------------------- settings


@st.cache_data(show_spinner=False, max_entries=8)
def cutoff_range(obs_hash: str, _obs: Observations, seed: int = 0) -> tuple[float, float, float]:
    """``FittedVerbs.cutoff_range``: (min, max, default) forecast cut-off in the model's time."""
    return FittedVerbs.cutoff_range(_obs, seed)


@st.cache_data(show_spinner=False, max_entries=8)
def own_cutoffs_by_default(obs_hash: str, _obs: Observations, seed: int = 0) -> bool:
    """``FittedVerbs.own_cutoffs_by_default``: a forecast fit of these data gives each series its own cut-off."""
    return FittedVerbs.own_cutoffs_by_default(_obs, seed)


def size_options(limits: SessionLimits) -> list[str]:
    """The model sizes this server lets a session fit (all of them if it names none it knows)."""
    return [s for s in MODEL_SIZES if s in limits.sizes] or list(MODEL_SIZES)


def size_help() -> str:
    """Each model size in words (the size slider's help)."""
    return ", ".join(f"{k}: d_model {v['d_model']}, {v['num_heads']} heads" for k, v in MODEL_SIZES.items())


# ----------------------------------------------------------------------------- what was fitted


def training_table(res: FitResult) -> pd.DataFrame:
    """Each model's training (epochs, best epoch, seconds, best early-stopping MSE), one row each."""
    return tables.training_table(res.fitted.training)


def settings_summary(res: FitResult) -> dict[str, Any]:
    """The fit in words and the data's clock (``model.json``'s ``summary``), then its raw
    settings, task (hours), model configuration, split and calibration scale (JSON)."""
    return {
        "in words, on your clock": res.verbs.readable_summary(),
        "settings": dataclasses.asdict(res.settings),
        "task": res.fitted.task.to_dict(),
        "model": res.fitted.model_config.to_dict(),
        "split mode": res.fitted.split.mode,
        "window hours": res.fitted.split.window_hours,
        "calibration scale c": res.fitted.levy_calibration.scale_,
        "fit key": res.key,
    }


@st.cache_data(show_spinner=False, max_entries=4)
def model_zip(key: str, _res: FitResult) -> bytes:
    """``levy_core.serving.modelzip.model_zip_bytes``: the model directory as one zip (the download)."""
    return model_zip_bytes(_res.fitted)
