"""What to fit and what was fitted: the settings, the fitted result, the process-wide store
and the fit itself (``fit_model``, ``add_twin``: ``FittedVerbs.fitted_on`` / ``with_twin``
through the store; ``services`` re-exports them).

The store is the dashboard's model cache: keyed by the data's key (``services.data.data_key``:
its frame and the clock it is shown in) and the settings (``fit_key``), shared by every session
of the server, least recently used first out. What is a session's own (the file's name, when
it was fitted) is not the store's: each session sees a stored fit with its own
(``for_this_session``, ``session_fit``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st
from levy_dashboard.fitting import fit_pool
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from levy_core.data import Observations
from levy_core.forecast.verbs import FittedModel, FittedVerbs, ModelData
from levy_core.serving.modelzip import load_model_zip, model_zip_bytes
from levy_core.training.train import Progress

__all__ = ["ENV_FAST", "FIT_STORE_SIZE", "FitResult", "FitSettings", "add_twin", "cached_fit", "default_mc_passes",
           "default_settings", "fast", "fit_key", "fit_model", "recording", "release_job", "remember", "session_connected", "session_owner"]

ENV_FAST = "LEVY_DASHBOARD_FAST"  # "1": tiny default fits (tests)
FIT_STORE_SIZE = 6  # fitted models kept in memory


def fast() -> bool:
    """``LEVY_DASHBOARD_FAST=1``: tiny default fits and grids (tests); read at each call."""
    return os.environ.get(ENV_FAST, "").strip() not in ("", "0")


@dataclass(frozen=True)
class FitSettings:
    """What to fit; with the data's hash it is the cache key of a model."""

    task: str = "interpolate"  # "forecast" or "interpolate" (default: shows σ̂ widen in gaps)
    cutoff: float | None = None  # forecast: history ends here (h, model time); None → the median series midpoint
    horizon: float | None = None  # forecast on rolling origins (few series): hours ahead; None → a tenth of the span
    holdout_fraction: float = 0.2  # interpolate: share of observations held out
    size: str = "small"  # key of levy_core.model.sizes.MODEL_SIZES (what `levy fit --size auto` picks below 1,000 series)
    epochs: int = 40  # epochs per model, with early stopping on the early-stopping split (`levy fit`'s default)
    max_seconds: float = 600.0  # safety cap per model (s), not a budget: a fit that reaches it says it is under-trained
    train_twin: bool = True  # train the softmax+dropout twin alongside (MC-Dropout)
    mc_passes: int = 20  # T used to calibrate the twin
    seed: int = 0  # seeds the split, initialisation and hold-outs
    transform: str = "auto"  # value transform per channel, as `levy fit --transform` (auto, none, log, log1p, c=kind,…)

    def key(self) -> str:
        payload = json.dumps(dataclasses.asdict(self), sort_keys=True)
        return hashlib.sha1(payload.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class SessionLimits:
    """What one session may ask a shared server to fit (environment variables, read at
    each call): ``LEVY_DASHBOARD_MAX_EPOCHS`` (default 500), ``LEVY_DASHBOARD_MAX_SECONDS``
    the safety cap per model (default 600), ``LEVY_DASHBOARD_SIZES`` (default "small,medium"),
    ``LEVY_DASHBOARD_MAX_MC_PASSES`` (default 100)."""

    max_epochs: int
    max_seconds: float
    sizes: tuple[str, ...]
    max_mc_passes: int


def transform_error(text: str) -> str | None:
    """What is wrong with a fit form's value transform (``levy fit --transform``'s forms:
    auto, none, log, log1p or channel=kind pairs), None when it parses."""
    try:
        FittedVerbs.parse_transform(text)
    except ValueError as exc:
        return str(exc).replace("--transform", "Value transform")
    return None


def session_limits() -> SessionLimits:
    env = os.environ
    try:
        return SessionLimits(int(env.get("LEVY_DASHBOARD_MAX_EPOCHS", 500)),
                             float(env.get("LEVY_DASHBOARD_MAX_SECONDS", 600.0)),
                             tuple(s.strip() for s in env.get("LEVY_DASHBOARD_SIZES", "small,medium").split(",")
                                   if s.strip()),
                             int(env.get("LEVY_DASHBOARD_MAX_MC_PASSES", 100)))
    except ValueError as exc:
        raise ValueError(f"a LEVY_DASHBOARD_* limit is not a number ({exc}); fix the server's environment") from exc


def check_limits(settings: FitSettings) -> None:
    """Refuse settings beyond this server's per-session limits, naming the limit."""
    lim = session_limits()
    problems = []
    if settings.epochs > lim.max_epochs:
        problems.append(f"at most {lim.max_epochs} epochs (asked {settings.epochs})")
    if not settings.max_seconds or settings.max_seconds > lim.max_seconds:
        problems.append(f"a safety cap of at most {lim.max_seconds:g} s per model (asked {settings.max_seconds or 'none'})")
    if settings.size not in lim.sizes:
        problems.append(f"model size one of {', '.join(lim.sizes)} (asked {settings.size})")
    if settings.mc_passes > lim.max_mc_passes:
        problems.append(f"at most {lim.max_mc_passes} MC-Dropout passes (asked {settings.mc_passes})")
    if problems:
        raise ValueError("This server allows " + "; ".join(problems) + ". Lower the setting, or run your own "
                         "dashboard (`levy dashboard`) where the limits are yours to set.")


def for_this_session(hit: FitResult, data_label: str) -> FitResult:
    """A stored fit as this session sees it: another session that uploaded the same bytes
    under another name never shows its file name or fit time here."""
    if hit.data_label == data_label:
        return hit
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return dataclasses.replace(hit, data_label=data_label, fitted_at=now)


def session_fit(key: str, provenance: tuple[str, str] | None) -> FitResult | None:
    """The stored fit of ``key`` with this session's own provenance (data label, fit time)."""
    hit = cached_fit(key)
    if hit is None or provenance is None or (hit.data_label, hit.fitted_at) == tuple(provenance):
        return hit
    return dataclasses.replace(hit, data_label=provenance[0], fitted_at=provenance[1])


def default_settings() -> FitSettings:
    """The default fit: `levy fit`'s training (40 epochs, early stopping, seed 0), the time only
    a safety cap; what ``make sample-models`` ships for the bundled samples (tiny with
    ``LEVY_DASHBOARD_FAST=1``: 3 epochs)."""
    return FitSettings(epochs=3, mc_passes=5) if fast() else FitSettings()


def default_mc_passes() -> int:
    return 5 if fast() else 20


@dataclass
class FitResult:
    """A fitted model, the data it was fitted on (prepared once) and how it was fitted."""

    key: str
    fitted: FittedModel
    data: ModelData  # the observations in the model's series space
    obs_hash: str  # services.data.data_key of the data: its frame and its user's clock
    settings: FitSettings
    data_label: str
    history: list[dict[str, Any]]
    seconds: float
    fitted_at: str  # ISO 8601 UTC ("" for a model opened from a zip)
    opened_from: str = ""  # the zip a saved model was opened from (no training in this session)
    shipped: str = ""  # the recorded command of a model shipped with a bundled sample (no training here)
    preview: str = ""  # mid-training: "epoch k of n" (the band of the best epoch so far; training goes on)

    @property
    def obs(self) -> Observations:
        return self.data.obs

    @property
    def has_twin(self) -> bool:
        return self.fitted.twin is not None and self.fitted.mc_calibration is not None

    @property
    def verbs(self) -> FittedVerbs:
        """The fitted model's verbs (``levy_core.forecast.verbs``): predictions, scores, its clock."""
        return FittedVerbs(self.fitted)

    @property
    def on_origins(self) -> bool:
        """A forecast on rolling origins (few series): episodes cut from each series' past."""
        return self.fitted.split.mode == "origin"

    def _task_text(self) -> str:
        f, say = self.fitted, self.verbs.duration_text
        if self.on_origins:
            plan = f.split.origin_plan or {}
            return (f"forecast up to {say(plan.get('horizon', 0.0))} ahead from rolling origins every "
                    f"{say(plan.get('stride', 0.0))}, each with {say(plan.get('history', 0.0))} "
                    "of history")
        if f.task.kind == "forecast":
            return f"forecast after the cut-off {self.verbs.cutoff_text()}"
        return f"interpolation of {100 * f.task.holdout_fraction:.0f} % held-out observations"

    def cap_note(self) -> str:
        """Plain words when a model's training stopped at the time cap (empty otherwise)."""
        hit = [name for key, name in (("levy", "Lévy model"), ("softmax", "MC-Dropout twin"))
               if ((self.fitted.training or {}).get(key) or {}).get("stopped_by") == "time"]
        if not hit:
            return ""
        runs = {k: ((self.fitted.training or {}).get(k) or {}).get("epochs_run") for k in ("levy", "softmax")}
        return (f"Under-trained: the {' and the '.join(hit)} stopped at the server's safety cap of "
                f"{self.settings.max_seconds:g} s per model after {runs['levy']} of {self.settings.epochs} epochs, before "
                "early stopping ended it. Raise the cap (sidebar, up to the server's LEVY_DASHBOARD_MAX_SECONDS), "
                "lower the epochs or the model size, or fit on the command line (levy fit, no cap).")

    def describe(self) -> str:
        f, o, n = self.fitted, self.obs, self.fitted.training["n_series"]
        unit = {"origin": "forecast origins", "window": "windows"}.get(f.split.mode, "series")
        twin = " and its MC-Dropout twin" if self.has_twin else ""
        if self.preview:
            return (f"Training on {self.data_label}: the Lévy model as it stands after {self.preview} (its best "
                    f"epoch so far, calibrated: c = {f.levy_calibration.scale_:.3g}); the band is redrawn as the "
                    "early-stopping loss improves.")
        if self.shipped:
            lv = f.training.get("levy") or {}
            return (f"Lévy model{twin} trained on {self.data_label} and shipped with it: trained to the end "
                    f"(early stopping or its epochs) by “{self.shipped}” ({lv.get('epochs_run')} epochs, best {lv.get('best_epoch')}; "
                    f"split by {f.split.mode}: {n['train']} train / {n.get('stopping', 0)} early-stopping / "
                    f"{n['calibration']} calibration / {n['test']} test {unit}), task: {self._task_text()}; "
                    f"calibration scale c = {f.levy_calibration.scale_:.3g}; offset: {f.offset_description()}. "
                    "Opened with no training in this session: Refit (sidebar) trains it here."
                    + "".join(f" {note}" for note in (f.training_note(), f.band_note()) if note))
        if self.opened_from:
            return (f"Saved Lévy model ({self.settings.size}){twin} opened from {self.opened_from}, applied without "
                    f"refitting to {self.data_label} ({o.n_series} series, {o.n_channels} channels, {o.n_obs:,} "
                    f"observations; {'the data it was fitted on' if self.data.same_data else 'new data'}), task: "
                    f"{self._task_text()}; calibration scale c = {f.levy_calibration.scale_:.3g}.")
        return (f"Lévy model ({self.settings.size}){twin} fitted {self.fitted_at} on {self.data_label} "
                f"({o.n_series} series, {o.n_channels} channels, {o.n_obs:,} observations; split by "
                f"{f.split.mode}: {n['train']} train / {n.get('stopping', 0)} early-stopping / "
                f"{n['calibration']} calibration / {n['test']} test {unit}), task: {self._task_text()}; "
                f"{f.training['levy']['epochs_run']} epochs in {self.seconds:.1f} s; "
                f"calibration scale c = {f.levy_calibration.scale_:.3g}; offset: {f.offset_description()}."
                + "".join(f" {note}" for note in (f.training_note(), f.band_note()) if note)
                + (f" {self.cap_note()}" if self.cap_note() else ""))


_store_lock = threading.Lock()


@st.cache_resource(show_spinner=False)
def _fit_store() -> OrderedDict[str, FitResult]:
    """Process-wide store of fitted models (cleared with ``st.cache_resource.clear()``)."""
    return OrderedDict()


def fit_key(obs_hash: str, settings: FitSettings) -> str:
    return f"{obs_hash[:16]}-{settings.key()}"


def cached_fit(key: str) -> FitResult | None:
    """The stored fit of ``key`` (None if absent); a hit becomes the most recently used."""
    with _store_lock:
        store = _fit_store()
        if key in store:
            store.move_to_end(key)
        return store.get(key)


def remember(result: FitResult) -> FitResult:
    with _store_lock:
        store = _fit_store()
        store[result.key] = result
        store.move_to_end(result.key)
        while len(store) > FIT_STORE_SIZE:
            store.popitem(last=False)
    return result


def recording(history: list[dict[str, Any]],
               progress: Callable[[Progress], None] | None) -> Callable[[Progress], None]:
    """A progress callback that also appends each epoch to ``history`` (the training chart)."""
    def cb(p: Progress) -> None:
        history.append({"model": p.model, "epoch": p.epoch, "train_loss": p.train_loss, "val_loss": p.val_loss,
                        "seconds": p.seconds})
        if progress is not None:
            progress(p)

    return cb


# ----------------------------------------------------------------------------- fitting (through the store)


def fit_configs(settings: FitSettings) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``TaskConfig`` and ``TrainConfig`` arguments of ``settings`` (plain dicts: they
    also travel to the fit workers). The same for an in-process fit and a pooled one."""
    forecast = settings.task == "forecast"
    task = {"kind": settings.task, "cutoff": settings.cutoff if forecast else None,
            "horizon": settings.horizon if forecast else None, "holdout_fraction": settings.holdout_fraction}
    train = {"epochs": settings.epochs, "max_seconds": settings.max_seconds or None, "seed": settings.seed}
    return task, train


def fit_model(obs: Observations, obs_hash: str, data_label: str, settings: FitSettings,
              progress: Callable[[Progress], None] | None = None) -> FitResult:
    """``FittedVerbs.fitted_on`` with the settings, cached by (data hash, settings)."""
    check_limits(settings)
    key = fit_key(obs_hash, settings)
    hit = cached_fit(key)
    if hit is not None:
        return for_this_session(hit, data_label)
    history: list[dict[str, Any]] = []
    task, train = fit_configs(settings)
    t0 = time.perf_counter()
    fitted = FittedVerbs.fitted_on(obs, task=task, train=train, size=settings.size, twin=settings.train_twin,
                                   mc_passes=settings.mc_passes, progress=recording(history, progress),
                                   transform=settings.transform).fitted
    seconds = time.perf_counter() - t0
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return remember(FitResult(key, fitted, FittedVerbs(fitted).prepare(obs), obs_hash, settings, data_label, history,
                               seconds, now))


def add_twin(res: FitResult, progress: Callable[[Progress], None] | None = None) -> FitResult:
    """``FittedVerbs.with_twin``: the MC-Dropout twin for a model fitted without it (cached)."""
    if res.has_twin:
        return res
    key = res.key + "+twin"
    hit = cached_fit(key)
    if hit is not None:
        return for_this_session(hit, res.data_label)
    history = [h for h in res.history if h["model"] != "softmax"]
    t0 = time.perf_counter()
    fitted = res.verbs.with_twin(res.obs, mc_passes=res.settings.mc_passes, progress=recording(history, progress))
    settings = dataclasses.replace(res.settings, train_twin=True)
    # the split, scaler and channels are unchanged, so the prepared data still holds
    return remember(FitResult(key, fitted, res.data, res.obs_hash, settings, res.data_label, history,
                               res.seconds + time.perf_counter() - t0, res.fitted_at))


# ----------------------------------------------------------------------------- fitting in the server's pool


def levy_key(obs_hash: str, settings: FitSettings) -> str:
    """The store key of the Lévy model alone (what a pooled fit delivers first)."""
    return fit_key(obs_hash, dataclasses.replace(settings, train_twin=False))


def final_key(obs_hash: str, settings: FitSettings) -> str:
    """The store key of what a pooled fit of ``settings`` ends with (``+twin``: its twin added)."""
    return levy_key(obs_hash, settings) + ("+twin" if settings.train_twin else "")


def session_owner() -> str | None:
    """This script run's session id: the owner of the fits it submits (None outside a session)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else None


def session_connected(session_id: str) -> bool:
    """Whether the session ``session_id`` is still connected to this server (Streamlit's
    public ``runtime.get_instance().is_active_session``); True where no runtime runs (a
    script run under ``AppTest``: its session lasts as long as the test)."""
    if not runtime.exists():
        return True
    return runtime.get_instance().is_active_session(session_id)


def owned_pool() -> fit_pool.FitPool:
    """The server's pool, told how to see that a session is gone (its fits are then cancelled)."""
    p = fit_pool.pool()
    p.set_liveness(session_connected)
    return p


def submit_fit(obs: Observations, obs_hash: str, settings: FitSettings) -> str:
    """Queue ``settings`` on ``obs`` in the server's fit pool (or join the same fit already
    queued or running), owned by this session; returns the job's key. ValueError beyond the
    server's limits."""
    check_limits(settings)
    task, train = fit_configs(settings)
    key = fit_key(obs_hash, settings)
    owned_pool().submit_fit(key, obs, task=task, train=train, size=settings.size, train_twin=settings.train_twin,
                            mc_passes=settings.mc_passes, transform=FittedVerbs.parse_transform(settings.transform),
                            owner=session_owner())
    return key


def submit_twin(res: FitResult) -> str:
    """Queue the MC-Dropout twin of ``res`` (fitted without it) in the pool, owned by this
    session; the job's key."""
    key = res.key + "+twin"
    owned_pool().submit_twin(key, model_zip_bytes(res.fitted), res.obs, res.settings.mc_passes, owner=session_owner())
    return key


def release_job(key: str) -> bool:
    """This session no longer waits for the pooled job of ``key`` (its Cancel button, other
    data chosen): cancelled when no other session waits for it. True: it was cancelled."""
    owner = session_owner()
    return owner is not None and fit_pool.pool().release(key, owner)


def job_result(key: str, model_zip: bytes, obs: Observations, obs_hash: str, settings: FitSettings,
               data_label: str, history: list[dict[str, Any]]) -> FitResult:
    """A pooled fit's model as this session's ``FitResult`` (stored under ``key``: the first
    session to collect it prepares it, the others find it)."""
    hit = cached_fit(key)
    if hit is not None:
        return for_this_session(hit, data_label)
    fitted = load_model_zip(model_zip, name="the fitted model")
    seconds = sum(float(((fitted.training or {}).get(m) or {}).get("seconds", 0.0)) for m in ("levy", "softmax"))
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    settings = dataclasses.replace(settings, train_twin=fitted.twin is not None)
    return remember(FitResult(key, fitted, FittedVerbs(fitted).prepare(obs), obs_hash, settings, data_label,
                              [dict(h) for h in history], seconds, now))


def preview_result(key: str, model_zip: bytes, obs: Observations, obs_hash: str, settings: FitSettings,
                   data_label: str, progress: dict[str, Any], history: list[dict[str, Any]]) -> FitResult:
    """A preview (the Lévy model mid-training) as a ``FitResult`` of its own ``key`` (never
    stored: the views' caches tell it apart by its key)."""
    fitted = load_model_zip(model_zip, name="the preview")
    text = f"epoch {progress['epoch']} of at most {progress['epochs']} (best so far: epoch {progress['best_epoch']})"
    return FitResult(key, fitted, FittedVerbs(fitted).prepare(obs), obs_hash,
                     dataclasses.replace(settings, train_twin=False), data_label, [dict(h) for h in history],
                     float(progress["seconds"]), "", preview=text)
