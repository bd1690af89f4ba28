"""The fit controller: which model this session draws, run by run.

Keeps, fetches or fits the model for the sidebar's ``Choice`` (``ensure_model``), follows
this session's job in the server's pool of fit workers and adopts what it delivers (a
preview of the Lévy model mid-training, the Lévy model alone, the final model), applies a
saved model opened from a zip to the data instead of fitting, and remembers the session's
own model and its provenance in ``st.session_state`` (``state``). It draws nothing: what it
has to say comes back in ``Model`` (failures, a note for the sidebar) for the app to lay out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from dataclasses import dataclass, field

import streamlit as st
from levy_dashboard import services
from levy_dashboard.services.data import DataSource
from levy_dashboard.services.fit import FitResult, FitSettings, OpenedModel
from levy_dashboard.session import state

from levy_core.data import DataError, Observations

__all__ = ["CANCELLED", "Choice", "Model", "cancel_fit", "ensure_model", "open_uploaded_model", "request_twin",
           "twin_deferred"]

CANCELLED = "You cancelled this fit: press Fit in the sidebar to start it again"

log = logging.getLogger(__name__)


@dataclass
class Choice:
    """What the sidebar selects: the candidate data (loaded, or why not) and the fit settings."""

    source: DataSource | None
    obs: Observations | None
    obs_hash: str | None
    error: str | None  # why the selected data cannot be used (None: fine, or nothing selected)
    mapping_json: str | None
    time_unit: str
    settings: FitSettings
    fit_clicked: bool
    settings_error: str | None = None  # why a fit setting cannot be used (the model is kept)


@dataclass
class Model:
    """The model the panels draw this run (None: none yet), what failed on the way (each a red
    message, in order; the previous data and model stay) and a note for the sidebar."""

    res: FitResult | None
    failures: list[str] = field(default_factory=list)
    note: str | None = None


def _levy_first(settings: FitSettings) -> FitSettings:
    """The settings of the Lévy model alone (a pooled fit delivers it first, its twin next)."""
    return dataclasses.replace(settings, train_twin=False)


def _keys_of(obs_hash: str, settings: FitSettings) -> tuple[str, ...]:
    """Every fit key that stands for ``settings`` on this data: fitted with the twin at once,
    or the Lévy model first and its twin added (``+twin``), or still waiting for it."""
    key, first = services.fit.fit_key(obs_hash, settings), services.fit.fit_key(obs_hash, _levy_first(settings))
    return (key, key + "+twin", first + "+twin", first) if settings.train_twin else (key, key + "+twin")


def _submit(choice: Choice, failures: list[str], *, new_data: bool) -> bool:
    """Queue the sidebar's fit in the server's pool; this session follows it (``state.JOB``)."""
    assert choice.obs is not None and choice.obs_hash is not None and choice.source is not None
    try:
        key = services.fit.submit_fit(choice.obs, choice.obs_hash, choice.settings)
    except ValueError as exc:  # beyond this server's limits
        failures.append(str(exc))
        return False
    st.session_state[state.JOB] = {
        "key": key, "kind": "fit", "obs": choice.obs, "obs_hash": choice.obs_hash, "label": choice.source.label,
        "settings": choice.settings, "new_data": new_data, "levy": False, "seq": 0,
        "final": services.fit.final_key(choice.obs_hash, choice.settings),
        "levy_key": services.fit.levy_key(choice.obs_hash, choice.settings),
        "failure_key": services.fit.fit_key(choice.obs_hash, choice.settings)}
    st.session_state.pop(state.PREVIEW, None)
    return True


def _submit_twin(res: FitResult) -> None:
    key = services.fit.submit_twin(res)
    st.session_state[state.JOB] = {
        "key": key, "kind": "twin", "obs": res.obs, "obs_hash": res.obs_hash, "label": res.data_label,
        "settings": dataclasses.replace(res.settings, train_twin=True), "new_data": False, "levy": True, "seq": 0,
        "final": key, "levy_key": res.key, "failure_key": key}


def _collect_failed(job: dict, view: services.fit.JobView, levy_zip: bytes | None, args: tuple,
                    failures: list[str]) -> None:
    """A failed pooled job: keep the Lévy model if it was trained, say what failed once."""
    ss = st.session_state
    ss.pop(state.JOB, None)
    ss.pop(state.PREVIEW, None)
    if levy_zip is not None and not job["levy"]:  # the Lévy model was trained: keep it
        _adopt(services.fit.job_result(job["levy_key"], levy_zip, *args),
               new_data=job["new_data"] and not job.get("views_reset"))
        job["levy"] = True
    if job["kind"] == "twin" or job["levy"]:
        ss[state.TWIN_FAILURE] = view.error or "the twin's fit failed"
    else:
        ss[state.FAILURES][job["failure_key"]] = view.error or "the fit failed"
        failures.append(view.error or "the fit failed")
    log.warning("pooled fit failed: %s", view.error)


def collect_job(failures: list[str]) -> FitResult | None:
    """This session's pooled job: adopt what it has delivered (the Lévy model alone, then the
    final model), say a failure once; returns the latest preview while the Lévy model trains."""
    ss = st.session_state
    job = ss.get(state.JOB)
    if not job:
        return None
    view = services.fit.job_view(job["key"])
    if view is None:  # the server forgot it (restarted pool): nothing to follow
        ss.pop(state.JOB, None)
        return None
    preview_zip, preview_progress, levy_zip, final_zip = services.fit.job_models(job["key"])
    args = (job["obs"], job["obs_hash"], job["settings"], job["label"], view.history)
    if view.state == "failed":
        _collect_failed(job, view, levy_zip, args, failures)
        return None
    if view.state == "done" and final_zip is not None:
        try:
            res = services.fit.job_result(job["final"], final_zip, *args)
        except ValueError as exc:  # a model the checks refuse (the worker checks first: a safety net)
            ss.pop(state.JOB, None)
            ss[state.FAILURES][job["failure_key"]] = str(exc)
            failures.append(str(exc))
            return None
        ss.pop(state.JOB, None)
        ss.pop(state.PREVIEW, None)
        ss[state.FAILURES].pop(job["failure_key"], None)
        _adopt(res, new_data=job["new_data"] and not job["levy"] and not job.get("views_reset"))
        return None
    if levy_zip is not None and not job["levy"]:
        res = services.fit.job_result(job["levy_key"], levy_zip, *args)
        _adopt(res, new_data=job["new_data"] and not job.get("views_reset"))
        job["levy"] = True
        ss.pop(state.PREVIEW, None)
        return None
    if job["levy"] or preview_zip is None or preview_progress is None:
        return None
    held = ss.get(state.PREVIEW)
    if held is not None and held[0] == view.preview_seq:
        return held[1]
    # keyed by the preview's own bytes, not its number: a job of the same key run again (a retry,
    # or a refit once the store and the pool forgot it) numbers its previews from 1 again, of
    # other models, and the views' caches would draw the first run's under the second's name
    key = f"{job['key']}~preview-{hashlib.sha256(preview_zip).hexdigest()[:16]}"
    preview = services.fit.preview_result(key, preview_zip, job["obs"], job["obs_hash"], job["settings"], job["label"],
                                          preview_progress, view.history)
    if job["new_data"] and not job.get("views_reset"):  # the first preview of new data: its first series
        _reset_views(None, preview, new_data=True)
        job["views_reset"] = True
    ss[state.PREVIEW] = (view.preview_seq, preview)
    job["seq"] = view.preview_seq
    return preview


def _reset_views(before: FitResult | None, res: FitResult, *, new_data: bool) -> None:
    ss = st.session_state
    state.clear_query()
    if new_data:  # the band view starts again on the new data's first series
        for key in (state.SERIES, state.CHANNEL, state.IDENTITY_QUERY, state.BACKTEST_ORIGIN):
            ss.pop(key, None)
    if before is None or before.on_origins != res.on_origins:  # each kind of fit has its default band
        ss.pop(state.BAND_KIND, None)


def _adopt(res: FitResult, *, new_data: bool) -> FitResult:
    ss = st.session_state
    before = services.fit.cached_fit(ss[state.FIT_KEY]) if ss.get(state.FIT_KEY) else None
    ss[state.FIT_KEY] = res.key
    ss[state.FIT_PROVENANCE] = (res.data_label, res.fitted_at)
    _reset_views(before, res, new_data=new_data)
    return res


def _apply_saved_model(choice: Choice, fitted: FitResult | None, failures: list[str]) -> FitResult | None:
    """The opened model on the sidebar's data, without refitting (the data's first
    application prepares it; later runs reuse it). A data set it cannot score is refused
    with a message, and the model stays open on the data it had."""
    ss = st.session_state
    opened: OpenedModel = ss[state.OPENED_MODEL]
    current: FitResult | None = ss.get(state.OPENED_RESULT)
    if choice.error:
        failures.append(choice.error)
        return current
    if choice.obs is None or choice.obs_hash is None or choice.source is None:
        return current
    label = choice.source.label
    if current is not None and current.key == services.fit.opened_key(opened, choice.obs_hash):
        if current.data_label != label:  # the same bytes under another name
            current = ss[state.OPENED_RESULT] = dataclasses.replace(current, data_label=label)
        return current
    try:
        res = services.fit.apply_model(opened, choice.obs, choice.obs_hash, label)
    except (DataError, ValueError) as exc:
        log.warning("saved model refused the data: %s", exc)
        failures.append(f"The saved model {opened.name} cannot score {label}: {str(exc).rstrip('.')}. Load data "
                        "with its channels, or close the saved model (sidebar, 3 · Saved model)")
        return current
    _reset_views(current or fitted, res, new_data=True)
    ss[state.OPENED_RESULT] = res
    return res


def _same_settings(res: FitResult, settings: FitSettings) -> bool:
    """A shipped model stands for the sidebar's settings when they are its recorded ones (the
    cut-off and horizon it resolved count as the sidebar's "auto"; the time cap, which it
    was trained without, changes nothing a fit reaches its end within; the value transform
    "auto" stands for the one it recorded, as a model saved before transforms has none)."""
    auto = dataclasses.replace(settings, cutoff=settings.cutoff if settings.cutoff is not None else res.settings.cutoff,
                               horizon=settings.horizon if settings.horizon is not None else res.settings.horizon,
                               max_seconds=res.settings.max_seconds,
                               transform=res.settings.transform if settings.transform == "auto" else settings.transform)
    return auto == res.settings


def _fetch_or_fit(choice: Choice, res: FitResult | None, failures: list[str]) -> Model:
    """New data or a Fit click: the shipped model of a bundled sample, a fit in the store
    (another session's, or earlier settings), else a fit queued in the pool."""
    assert choice.obs_hash is not None and choice.source is not None and choice.obs is not None
    ss = st.session_state
    key = services.fit.fit_key(choice.obs_hash, choice.settings)
    keys = _keys_of(choice.obs_hash, choice.settings)
    same_data = res is not None and res.obs_hash == choice.obs_hash
    if same_data and not choice.fit_clicked:
        differ = res.key not in keys and not (res.shipped and _same_settings(res, choice.settings))
        return Model(res, failures, "The settings differ from the current model's: press **Refit** to fit them."
                     if differ else None)
    if key in ss[state.FAILURES] and not choice.fit_clicked:
        failures.append(ss[state.FAILURES][key])
        return Model(res, failures)
    if not choice.fit_clicked:
        shipped = services.fit.shipped_fit(choice.source, choice.obs, choice.obs_hash)
        if shipped is not None:  # a bundled sample: its shipped model, no fit
            return Model(_adopt(shipped, new_data=True), failures)
    hit = next((h for k in keys if (h := services.fit.cached_fit(k)) is not None), None)
    if hit is not None:  # another session may have fitted it: this session's file name only
        adopted = _adopt(services.fit.for_this_session(hit, choice.source.label), new_data=not same_data)
        if choice.settings.train_twin and not hit.has_twin:
            _submit_twin(adopted)
        return Model(adopted, failures)
    _submit(choice, failures, new_data=not same_data)
    return Model(res, failures)


def ensure_model(choice: Choice) -> Model:
    """Keep, fetch or fit the model for the sidebar's choice; returns the model the panels draw.

    A bundled sample opens on its shipped model (no fit). Other new data is fitted
    automatically; changed settings wait for the Fit (Refit) button. Fits run in the server's
    pool (``fit_pool``): this returns at once, with the current model — or, while the Lévy
    model trains, its latest preview — and ``views.fit.follow_job`` (after the panels) shows
    the queue and the training, and redraws as previews and models arrive. With a saved model
    open, the data is scored by it instead (no fit) until Fit is pressed or the model is
    closed. Any problem is a failure in ``Model.failures`` and the previous data and model stay.
    """
    ss = st.session_state
    failures: list[str] = []
    job = ss.get(state.JOB)
    if job and choice.obs_hash is not None and job["obs_hash"] != choice.obs_hash and job["kind"] == "fit":
        services.fit.release_job(job["key"])  # other data chosen meanwhile: nobody else waiting, it is cancelled
        ss.pop(state.JOB, None)
        ss.pop(state.PREVIEW, None)
    preview = collect_job(failures)
    key = ss.get(state.FIT_KEY)
    res = services.fit.session_fit(key, ss.get(state.FIT_PROVENANCE)) if key else None
    if ss.get(state.OPENED_MODEL) is not None:
        if not choice.fit_clicked:
            return Model(_apply_saved_model(choice, res, failures), failures)
        state.close_saved_model()  # Fit: a new fit replaces the saved model
    if res is not None and ss.pop(state.PENDING_TWIN, False) and not res.has_twin and not ss.get(state.JOB):
        _submit_twin(res)
    if choice.error or choice.settings_error:
        failures.append(choice.error or choice.settings_error or "")
        return Model(preview or res, failures)
    if choice.obs is None or choice.obs_hash is None or choice.source is None:
        return Model(preview or res, failures)
    if ss.get(state.JOB) and not choice.fit_clicked:
        return Model(preview or res, failures)
    return _fetch_or_fit(choice, res, failures)


def cancel_fit() -> None:
    """This session gives up its pooled fit (the Cancel button's callback): the pool cancels
    it unless another session waits for the same fit; the model drawn before it stays, and
    the fit is not started again until Fit is pressed."""
    ss = st.session_state
    job = ss.pop(state.JOB, None)
    ss.pop(state.PREVIEW, None)
    if job:
        services.fit.release_job(job["key"])
        if job["kind"] == "fit" and not job["levy"]:
            ss[state.FAILURES][job["failure_key"]] = CANCELLED


def request_twin() -> None:
    """Queue the current model's MC-Dropout twin on the next run (a button's callback)."""
    st.session_state[state.PENDING_TWIN] = True


def twin_deferred(res: FitResult) -> bool:
    """This session's pooled job will bring the current model's twin (MC-Dropout waits for it)."""
    job = st.session_state.get(state.JOB)
    return bool(job) and job["settings"].train_twin and not res.has_twin and not res.opened_from


def open_uploaded_model() -> None:
    """Open a newly uploaded model zip (sidebar, 3 · Saved model) once. A refused one
    (tampered, foreign) leaves the model in use, fitted or opened, as it was; why it was
    refused stays in ``state.MODEL_ERROR`` until another zip is opened."""
    ss = st.session_state
    up = ss.get(state.MODEL_UPLOAD)
    if up is None:
        return
    file_id = getattr(up, "file_id", None) or f"{up.name}:{up.size}"
    if ss.get(state.MODEL_UPLOAD_SEEN) == file_id:
        return
    ss[state.MODEL_UPLOAD_SEEN] = file_id
    try:
        opened = services.fit.open_model(up.name, up.getvalue())
    except ValueError as exc:  # ModelLoadError: what is wrong with the zip
        ss[state.MODEL_ERROR] = str(exc)
        return
    except Exception as exc:  # noqa: BLE001 - never let an upload crash the app
        log.exception("unexpected error opening %s", up.name)
        ss[state.MODEL_ERROR] = f"Could not open {up.name!r} ({type(exc).__name__}); it is not a saved model zip"
        return
    ss.pop(state.MODEL_ERROR, None)
    ss[state.OPENED_MODEL] = opened
    ss.pop(state.OPENED_RESULT, None)
