"""Saved models in the dashboard: download the fitted model as a zip, open one, apply it to
the current data without refitting (``services`` re-exports these).

An opened model belongs to the session that opened it: it lives in that session's
``st.session_state`` (``state.OPENED_MODEL``), never in the shared fit store, so a server
shared by several users never hands one user's model to another. The views' caches are
keyed by ``opened_key`` — the zip's SHA-256 and the data's hash — so a result is reused only
for the very same zip bytes on the very same data.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from levy_dashboard.fitting.fits import FitResult, FitSettings

from levy_core.data import ColumnMapping, Observations
from levy_core.forecast.verbs import FittedModel, FittedVerbs
from levy_core.serving.modelzip import load_model_zip

__all__ = ["OpenedModel", "apply_model", "open_model", "opened_key", "recorded_reading", "saved_settings"]


@dataclass(frozen=True)
class OpenedModel:
    """A model opened from a zip: the upload's name, its SHA-256 and the model."""

    name: str
    digest: str
    fitted: FittedModel


def open_model(name: str, data: bytes) -> OpenedModel:
    """``levy_core.serving.modelzip.load_model_zip`` of an upload; ``ModelLoadError`` (a ``ValueError``)
    saying what is wrong with a tampered or foreign zip."""
    return OpenedModel(name, hashlib.sha256(data).hexdigest(), load_model_zip(data, name=name))


def opened_key(opened: OpenedModel, obs_hash: str) -> str:
    """The views' cache key of an opened model on one data set (never a fit store key)."""
    return f"opened-{opened.digest[:16]}-{obs_hash[:16]}"


def recorded_reading(opened: OpenedModel, columns: list[str]) -> tuple[ColumnMapping | None, str] | None:
    """How the opened model's data were read (``model.json``'s ``reading``), for a file with
    ``columns``: the recorded column mapping when the file has every column it names (else
    None: the columns are found by name), and the recorded time unit. None for a model saved
    without a record, which leaves the data read as the user set it (the CLI's rule: the
    fit's columns and clock unless told otherwise)."""
    reading = opened.fitted.reading
    if reading is None:
        return None
    mapping = reading.mapping
    if mapping is not None and not set(mapping.used_columns()) <= set(columns):
        mapping = None
    return mapping, reading.time_unit


def saved_settings(fitted: FittedModel) -> FitSettings:
    """The settings a saved model was fitted with, as far as its ``model.json`` records them."""
    task, train = fitted.task, fitted.train_config
    return FitSettings(task=task.kind, cutoff=task.cutoff, horizon=task.horizon,
                       holdout_fraction=task.holdout_fraction, size=FittedVerbs(fitted).size_name(), epochs=train.epochs,
                       max_seconds=float(train.max_seconds or 0.0), train_twin=fitted.twin is not None,
                       mc_passes=fitted.mc_passes, seed=train.seed,
                       transform=",".join(f"{c}={fitted.scaler.transform_of(c)}" for c in fitted.scaler.channels)
                       if fitted.scaler.transforms else "none")


def apply_model(opened: OpenedModel, obs: Observations, obs_hash: str, data_label: str) -> FitResult:
    """The opened model on ``obs`` (prepared once in its series space; no training): every
    view works on it as on a fit. ``DataError`` when the data cannot be scored by it (a
    channel it never saw)."""
    fitted = opened.fitted
    data = FittedVerbs(fitted).prepare(obs)
    training = fitted.training or {}
    seconds = sum(float((training.get(m) or {}).get("seconds", 0.0)) for m in ("levy", "softmax"))
    return FitResult(opened_key(opened, obs_hash), fitted, data, obs_hash, saved_settings(fitted), data_label,
                     history=[], seconds=seconds, fitted_at="", opened_from=opened.name)

