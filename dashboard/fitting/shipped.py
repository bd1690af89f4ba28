"""The models shipped with the bundled samples (``sample_data/models/``, ``make sample-models``).

A bundled sample opens on its shipped model (a model zip), with no fit: the first band is drawn from a
model trained to convergence by one recorded ``levy fit`` command. A model is used only for
the very bytes it was fitted on: the sample file's SHA-256 must equal the one ``levy fit``
recorded in its ``model.json`` (``source_sha256``) and the manifest's. **Refit** trains
the same settings in this server (a deterministic fit: the same model, bit for bit, at the
same thread count).
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from levy_dashboard.fitting.fits import FitResult
from levy_dashboard.fitting.saved_models import saved_settings

from levy_core.data import SAMPLE_DIR, Observations
from levy_core.forecast.verbs import FittedModel, FittedVerbs, ModelLoadError
from levy_core.serving.modelzip import load_model_zip

__all__ = ["MANIFEST", "MODELS_DIR", "ShippedModel", "load_shipped", "manifest", "shipped_key", "shipped_result"]

log = logging.getLogger(__name__)

MODELS_DIR = SAMPLE_DIR / "models"
MANIFEST = MODELS_DIR / "manifest.json"


@dataclass(frozen=True)
class ShippedModel:
    """A shipped model: its sample, zip, the data's SHA-256, the recorded command."""

    sample: str
    path: Path
    sha256: str
    command: str
    fitted: FittedModel


def manifest() -> dict:
    """``sample_data/models/manifest.json`` ({} when there is none)."""
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}


@functools.lru_cache(maxsize=8)
def load_shipped(digest: str) -> ShippedModel | None:
    """The shipped model fitted on the file whose SHA-256 is ``digest`` (None: none was, or
    it does not load, or its ``model.json`` names other bytes — logged, never raised).
    Loaded once per process (``dashboard/server/serve.py`` loads them before the first page), and
    never changed after (every view reads it)."""
    for sample, entry in (manifest().get("models") or {}).items():
        if entry.get("sha256") != digest:
            continue
        path = MODELS_DIR / PurePosixPath(entry["model"]).name  # beside the manifest, in a checkout or a wheel
        try:
            fitted = load_model_zip(path.read_bytes(), name=path.name)
        except (ModelLoadError, OSError) as exc:
            log.warning("shipped model of %s does not load (%s); the sample will be fitted", sample, exc)
            return None
        if fitted.source_sha256 != digest:
            log.warning("shipped model of %s was fitted on other bytes (%s…); the sample will be fitted", sample,
                        fitted.source_sha256[:12])
            return None
        return ShippedModel(sample, path, digest, str(entry.get("command", "make sample-models")), fitted)
    return None


def shipped_key(digest: str, obs_hash: str) -> str:
    """The store key of a shipped model on one reading of its sample (``obs_hash``: its
    ``services.data.data_key``): the views' caches are keyed by it, so it names the data as
    well as the model. Never a fit key: **Refit** is a fit of its own."""
    return f"shipped-{digest[:16]}-{obs_hash[:16]}"


def shipped_result(shipped: ShippedModel, obs: Observations, obs_hash: str, data_label: str) -> FitResult:
    """The shipped model on its sample's observations (prepared once), as the views see a fit."""
    fitted = shipped.fitted
    if fitted.data_hash and fitted.data_hash != obs.content_hash():  # the frame (obs_hash: with its clock)
        raise ValueError(f"the shipped model of {shipped.sample} was fitted on other observations (the "
                         "sample read with another mapping or time unit; or, for its default reading, the "
                         "reading changed since: run `make sample-models`)")
    training = fitted.training or {}
    seconds = sum(float((training.get(m) or {}).get("seconds", 0.0)) for m in ("levy", "softmax"))
    return FitResult(shipped_key(shipped.sha256, obs_hash), fitted, FittedVerbs(fitted).prepare(obs), obs_hash,
                     saved_settings(fitted), data_label, history=recorded_history(fitted), seconds=seconds,
                     fitted_at="", shipped=shipped.command)


def recorded_history(fitted: FittedModel) -> list[dict]:
    """The loss per epoch ``model.json`` recorded (``training.<model>.history``), as the Fit
    panel's chart takes it ([] for a model saved before it was recorded)."""
    out = []
    for model in ("levy", "softmax"):
        for row in ((fitted.training or {}).get(model) or {}).get("history") or []:
            epoch, train, val = row
            out.append({"model": model, "epoch": epoch, "train_loss": float("nan") if train is None else train,
                        "val_loss": float("nan") if val is None else val, "seconds": 0.0})
    return out


def warm_up() -> None:
    """Load the default sample's shipped model now (``dashboard/server/serve.py`` does, before the
    server listens, so the first page does not wait for it; the others load on first use)."""
    from levy_dashboard.data.sources import DEFAULT_SAMPLE

    entry = (manifest().get("models") or {}).get(DEFAULT_SAMPLE) or {}
    if entry.get("sha256"):
        load_shipped(entry["sha256"])
