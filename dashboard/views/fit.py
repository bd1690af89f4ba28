"""Panel 2 · Fit: fitting with a live progress bar, and what the current model is."""

from __future__ import annotations

import dataclasses
import logging
import time

import pandas as pd
import streamlit as st
from levy_dashboard import charts, services, state
from levy_dashboard.markup import plain
from levy_dashboard.views.sidebar import Choice

from levy_core.data import DataError

log = logging.getLogger(__name__)
FOLLOW_EVERY_S = 0.5  # how often a waiting session looks at its job


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def status_text(view: services.JobView, label: str) -> tuple[float, str]:
    """(progress fraction, words) of a pooled job, for the status slot."""
    if view.state == "queued":
        return 0.0, (f"Queued: {_ordinal(view.position)} in line for a fit worker ({view.running} fit"
                     f"{'s' if view.running != 1 else ''} running; this server fits {services.fit_workers()} at a "
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


def _show_failure(message: str) -> None:
    text = message.strip()
    if text and text[-1] not in ".!?":
        text += "."
    hint = " Fix it in the Data tab (column mapping)." if "mapping" in text.lower() else ""
    st.error(f"{plain(text)}{hint} The previous data and model are kept.", icon="🚫")


def _levy_first(settings: services.FitSettings) -> services.FitSettings:
    """The settings of the Lévy model alone (a pooled fit delivers it first, its twin next)."""
    return dataclasses.replace(settings, train_twin=False)


def _keys_of(obs_hash: str, settings: services.FitSettings) -> tuple[str, ...]:
    """Every fit key that stands for ``settings`` on this data: fitted with the twin at once,
    or the Lévy model first and its twin added (``+twin``), or still waiting for it."""
    key, first = services.fit_key(obs_hash, settings), services.fit_key(obs_hash, _levy_first(settings))
    return (key, key + "+twin", first + "+twin", first) if settings.train_twin else (key, key + "+twin")


def _submit(choice: Choice, *, new_data: bool) -> bool:
    """Queue the sidebar's fit in the server's pool; this session follows it (``state.JOB``)."""
    assert choice.obs is not None and choice.obs_hash is not None and choice.source is not None
    try:
        key = services.submit_fit(choice.obs, choice.obs_hash, choice.settings)
    except ValueError as exc:  # beyond this server's limits
        _show_failure(str(exc))
        return False
    st.session_state[state.JOB] = {
        "key": key, "kind": "fit", "obs": choice.obs, "obs_hash": choice.obs_hash, "label": choice.source.label,
        "settings": choice.settings, "new_data": new_data, "levy": False, "seq": 0,
        "final": services.final_key(choice.obs_hash, choice.settings),
        "levy_key": services.levy_key(choice.obs_hash, choice.settings),
        "failure_key": services.fit_key(choice.obs_hash, choice.settings)}
    st.session_state.pop(state.PREVIEW, None)
    return True


def _submit_twin(res: services.FitResult) -> None:
    key = services.submit_twin(res)
    st.session_state[state.JOB] = {
        "key": key, "kind": "twin", "obs": res.obs, "obs_hash": res.obs_hash, "label": res.data_label,
        "settings": dataclasses.replace(res.settings, train_twin=True), "new_data": False, "levy": True, "seq": 0,
        "final": key, "levy_key": res.key, "failure_key": key}


def _collect() -> services.FitResult | None:
    """This session's pooled job: adopt what it has delivered (the Lévy model alone, then the
    final model), show a failure once; returns the latest preview while the Lévy model trains."""
    ss = st.session_state
    job = ss.get(state.JOB)
    if not job:
        return None
    view = services.job_view(job["key"])
    if view is None:  # the server forgot it (restarted pool): nothing to follow
        ss.pop(state.JOB, None)
        return None
    preview_zip, preview_progress, levy_zip, final_zip = services.job_models(job["key"])
    args = (job["obs"], job["obs_hash"], job["settings"], job["label"], view.history)
    if view.state == "failed":
        ss.pop(state.JOB, None)
        ss.pop(state.PREVIEW, None)
        if levy_zip is not None and not job["levy"]:  # the Lévy model was trained: keep it
            _adopt(services.job_result(job["levy_key"], levy_zip, *args),
                   new_data=job["new_data"] and not job.get("views_reset"))
            job["levy"] = True
        if job["kind"] == "twin" or job["levy"]:
            ss[state.TWIN_FAILURE] = view.error or "the twin's fit failed"
        else:
            ss[state.FAILURES][job["failure_key"]] = view.error or "the fit failed"
            _show_failure(view.error or "the fit failed")
        log.warning("pooled fit failed: %s", view.error)
        return None
    if view.state == "done" and final_zip is not None:
        try:
            res = services.job_result(job["final"], final_zip, *args)
        except ValueError as exc:  # a model the checks refuse (the worker checks first: a safety net)
            ss.pop(state.JOB, None)
            ss[state.FAILURES][job["failure_key"]] = str(exc)
            _show_failure(str(exc))
            return None
        ss.pop(state.JOB, None)
        ss.pop(state.PREVIEW, None)
        ss[state.FAILURES].pop(job["failure_key"], None)
        _adopt(res, new_data=job["new_data"] and not job["levy"] and not job.get("views_reset"))
        return None
    if levy_zip is not None and not job["levy"]:
        res = services.job_result(job["levy_key"], levy_zip, *args)
        _adopt(res, new_data=job["new_data"] and not job.get("views_reset"))
        job["levy"] = True
        ss.pop(state.PREVIEW, None)
        return None
    if job["levy"] or preview_zip is None or preview_progress is None:
        return None
    held = ss.get(state.PREVIEW)
    if held is not None and held[0] == view.preview_seq:
        return held[1]
    preview = services.preview_result(f"{job['key']}~preview{view.preview_seq}", preview_zip,
                                      job["obs"], job["obs_hash"], job["settings"], job["label"], preview_progress,
                                      view.history)
    if job["new_data"] and not job.get("views_reset"):  # the first preview of new data: its first series
        _reset_views(None, preview, new_data=True)
        job["views_reset"] = True
    ss[state.PREVIEW] = (view.preview_seq, preview)
    job["seq"] = view.preview_seq
    return preview


def _reset_views(before: services.FitResult | None, res: services.FitResult, *, new_data: bool) -> None:
    ss = st.session_state
    state.clear_query()
    if new_data:  # the band view starts again on the new data's first series
        for key in (state.SERIES, state.CHANNEL, state.IDENTITY_QUERY, state.BACKTEST_ORIGIN):
            ss.pop(key, None)
    if before is None or before.on_origins != res.on_origins:  # each kind of fit has its default band
        ss.pop(state.BAND_KIND, None)


def _adopt(res: services.FitResult, *, new_data: bool) -> services.FitResult:
    ss = st.session_state
    before = services.cached_fit(ss[state.FIT_KEY]) if ss.get(state.FIT_KEY) else None
    ss[state.FIT_KEY] = res.key
    ss[state.FIT_PROVENANCE] = (res.data_label, res.fitted_at)
    _reset_views(before, res, new_data=new_data)
    return res


def _apply_saved_model(choice: Choice, fitted: services.FitResult | None) -> services.FitResult | None:
    """The opened model on the sidebar's data, without refitting (the data's first
    application prepares it; later runs reuse it). A data set it cannot score is refused
    with a message, and the model stays open on the data it had."""
    ss = st.session_state
    opened: services.OpenedModel = ss[state.OPENED_MODEL]
    current: services.FitResult | None = ss.get(state.OPENED_RESULT)
    if choice.error:
        _show_failure(choice.error)
        return current
    if choice.obs is None or choice.obs_hash is None or choice.source is None:
        return current
    label = choice.source.label
    if current is not None and current.key == services.opened_key(opened, choice.obs_hash):
        if current.data_label != label:  # the same bytes under another name
            current = ss[state.OPENED_RESULT] = dataclasses.replace(current, data_label=label)
        return current
    try:
        res = services.apply_model(opened, choice.obs, choice.obs_hash, label)
    except (DataError, ValueError) as exc:
        log.warning("saved model refused the data: %s", exc)
        _show_failure(f"The saved model {opened.name} cannot score {label}: {str(exc).rstrip('.')}. Load data with "
                      "its channels, or close the saved model (sidebar, 3 · Saved model)")
        return current
    _reset_views(current or fitted, res, new_data=True)
    ss[state.OPENED_RESULT] = res
    return res


def _same_settings(res: services.FitResult, settings: services.FitSettings) -> bool:
    """A shipped model stands for the sidebar's settings when they are its recorded ones (the
    cut-off and horizon it resolved count as the sidebar's "auto"; the time cap, which it
    was trained without, changes nothing a fit reaches its end within)."""
    auto = dataclasses.replace(settings, cutoff=settings.cutoff if settings.cutoff is not None else res.settings.cutoff,
                               horizon=settings.horizon if settings.horizon is not None else res.settings.horizon,
                               max_seconds=res.settings.max_seconds)
    return auto == res.settings


def ensure_model(choice: Choice) -> services.FitResult | None:
    """Keep, fetch or fit the model for the sidebar's choice; returns the model the panels draw.

    A bundled sample opens on its shipped model (no fit). Other new data is fitted
    automatically; changed settings wait for the Fit (Refit) button. Fits run in the server's
    pool (``fit_pool``): this returns at once, with the current model — or, while the Lévy
    model trains, its latest preview — and ``follow_job`` (after the panels) shows the queue
    and the training, and redraws as previews and models arrive. With a saved model open, the
    data is scored by it instead (no fit) until Fit is pressed or the model is closed. Any
    problem is shown as ``st.error`` and the previous data and model stay.
    """
    ss = st.session_state
    job = ss.get(state.JOB)
    if job and choice.obs_hash is not None and job["obs_hash"] != choice.obs_hash and job["kind"] == "fit":
        ss.pop(state.JOB, None)  # other data chosen meanwhile: stop following that fit (it finishes for the store)
        ss.pop(state.PREVIEW, None)
    preview = _collect()
    res = services.session_fit(ss[state.FIT_KEY], ss.get(state.FIT_PROVENANCE)) if ss.get(state.FIT_KEY) else None
    if ss.get(state.OPENED_MODEL) is not None:
        if not choice.fit_clicked:
            return _apply_saved_model(choice, res)
        state.close_saved_model()  # Fit: a new fit replaces the saved model
    if res is not None and ss.pop(state.PENDING_TWIN, False) and not res.has_twin and not ss.get(state.JOB):
        _submit_twin(res)
    if choice.error or choice.settings_error:
        _show_failure(choice.error or choice.settings_error or "")
        return preview or res
    if choice.obs is None or choice.obs_hash is None or choice.source is None:
        return preview or res
    if ss.get(state.JOB) and not choice.fit_clicked:
        return preview or res
    key = services.fit_key(choice.obs_hash, choice.settings)
    keys = _keys_of(choice.obs_hash, choice.settings)
    same_data = res is not None and res.obs_hash == choice.obs_hash
    if same_data and not choice.fit_clicked:
        if res.key not in keys and not (res.shipped and _same_settings(res, choice.settings)):
            st.sidebar.info("The settings differ from the current model's: press **Refit** to fit them.")
        return res
    if key in ss[state.FAILURES] and not choice.fit_clicked:
        _show_failure(ss[state.FAILURES][key])
        return res
    if not choice.fit_clicked:
        shipped = services.shipped_fit(choice.source, choice.obs, choice.obs_hash)
        if shipped is not None:  # a bundled sample: its shipped model, no fit
            return _adopt(shipped, new_data=True)
    hit = next((h for k in keys if (h := services.cached_fit(k)) is not None), None)
    if hit is not None:  # another session may have fitted it: this session's file name only
        adopted = _adopt(services.for_this_session(hit, choice.source.label), new_data=not same_data)
        if choice.settings.train_twin and not hit.has_twin:
            _submit_twin(adopted)
        return adopted
    _submit(choice, new_data=not same_data)
    return res


def request_twin() -> None:
    st.session_state[state.PENDING_TWIN] = True


def twin_deferred(res: services.FitResult) -> bool:
    """This session's pooled job will bring the current model's twin (MC-Dropout waits for it)."""
    job = st.session_state.get(state.JOB)
    return bool(job) and job["settings"].train_twin and not res.has_twin and not res.opened_from


def show_job(slot) -> None:
    """This session's pooled job, as it stands, in ``slot`` at once (``follow_job`` keeps it
    up to date after the panels): the status never blinks out while the panels redraw."""
    job = st.session_state.get(state.JOB)
    view = services.job_view(job["key"]) if job else None
    if view is not None and view.state in ("queued", "running"):
        frac, text = status_text(view, job["label"])
        slot.progress(min(max(frac, 0.0), 1.0), text=plain(text))


def follow_job(slot) -> None:
    """After every panel is drawn: while this session's pooled job is queued or training, its
    place in the queue or its epoch and early-stopping loss in ``slot`` (an ``st.empty`` at a
    fixed place under the title, so nothing else on the page moves); the page is redrawn
    when a better preview, the Lévy model or the final model arrives, and the panels keep
    the last model drawn until then."""
    ss = st.session_state
    failure = ss.pop(state.TWIN_FAILURE, None)
    if failure:
        slot.warning(f"The MC-Dropout twin could not be trained: {plain(str(failure).strip().rstrip('.'))}. The Lévy "
                     "model and its panels are kept; the MC-Dropout tab offers to try again.", icon="⚠️")
        return
    job = ss.get(state.JOB)
    if not job:
        return
    while True:
        view = services.job_view(job["key"])
        if view is None or view.state in ("done", "failed") or (view.has_levy and not job["levy"]) or (
                not job["levy"] and view.preview_seq > job["seq"]):
            st.rerun()
        frac, text = status_text(view, job["label"])
        slot.progress(min(max(frac, 0.0), 1.0), text=plain(text))
        time.sleep(FOLLOW_EVERY_S)


def _download_section(res: services.FitResult) -> None:
    """The model as one zip, to open later in the sidebar (3 · Saved model) or with the CLI."""
    st.download_button(
        "Download the fitted model (zip)",
        data=lambda: services.model_zip(res.key, res),
        file_name="levy_model.zip",
        mime="application/zip",
        key=state.MODEL_DOWNLOAD,
        on_click="ignore",
        help="model.json (configs, split, scaler, calibration) and safetensors weights — no pickle. Open it "
        "in the sidebar (3 · Saved model) to score new data without refitting, or unzip it and run "
        "`levy predict DIR DATA` / `levy rank DIR DATA`.",
    )
    st.caption(
        "Open the zip later (sidebar, 3 · Saved model) to apply this model to new data without refitting: "
        "its band, evidence vs disagreement, trust ranking and, where the new data has observed "
        "futures, the Monitoring tab."
    )


def render(res: services.FitResult) -> None:
    st.subheader("The current model")
    st.markdown(plain(res.describe()))
    tr = res.fitted.training
    rows = {"Lévy": tr["levy"]}
    if tr.get("softmax"):
        rows["MC-Dropout twin"] = tr["softmax"]
    table = pd.DataFrame(rows).T.rename(
        columns={
            "best_epoch": "best epoch",
            "epochs_run": "epochs run",
            "seconds": "seconds",
            "best_val_mse": "best early-stopping MSE",
        }
    )
    st.dataframe(table, width="stretch")
    if res.history:
        st.plotly_chart(charts.training_figure(res.history), key=state.TRAINING_CHART)
        st.caption(
            "How to read: loss per epoch on the normalised scale; the solid line is a sixth of "
            "the training series held out for early stopping (the best epoch's weights are "
            "kept; the calibration split is never looked at, so its conformal scores stay "
            "untouched), dotted is training."
        )
    if not res.has_twin and not res.opened_from:
        st.button("Train the MC-Dropout twin now", on_click=request_twin, key=state.TWIN_BUTTON_FIT)
    _download_section(res)
    with st.expander("Settings and split"):
        st.json(
            {
                "settings": dataclasses.asdict(res.settings),
                "task": res.fitted.task.to_dict(),
                "model": res.fitted.model_config.to_dict(),
                "split mode": res.fitted.split.mode,
                "window hours": res.fitted.split.window_hours,
                "calibration scale c": res.fitted.levy_calibration.scale_,
                "fit key": res.key,
            }
        )
