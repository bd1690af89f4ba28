"""Panel 2 · Fit: what the current model is, and this session's fit as it runs (its place in
the queue, then its epochs) in a fixed slot under the title.

Which model a session draws is ``session/controller.py``'s; this module only lays it out.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st
from levy_dashboard import charts, services
from levy_dashboard.display.markup import plain
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import controller, state

FOLLOW_EVERY_S = 0.5  # how often a waiting session looks at its job


def show_job(slot: Any, cancel_slot: Any) -> None:
    """This session's pooled job, as it stands, in ``slot`` at once (``follow_job`` keeps it
    up to date after the panels): the status never blinks out while the panels redraw; a
    Cancel button under it in ``cancel_slot``."""
    job = st.session_state.get(state.JOB)
    view = services.fit.job_view(job["key"]) if job else None
    if view is not None and view.state in ("queued", "running"):
        frac, text = services.fit.status_text(view, job["label"])
        slot.progress(min(max(frac, 0.0), 1.0), text=plain(text))
        cancel_slot.button("Cancel fit", key=state.CANCEL_FIT, on_click=controller.cancel_fit,
                           help="Stop this fit (queued or training) and keep the model drawn now. Another "
                           "session waiting for the same fit keeps it running.")


def follow_job(slot: Any) -> None:
    """After every panel is drawn: while this session's pooled job is queued or training, its
    place in the queue or its epoch and early-stopping loss in ``slot`` (an ``st.empty`` at a
    fixed place under the title, so nothing else on the page moves); the page is redrawn
    when a better preview, the Lévy model or the final model arrives, and the panels keep
    the last model drawn until then."""
    ss = st.session_state
    failure = ss.pop(state.TWIN_FAILURE, None)
    if failure:
        slot.warning(f"The MC-Dropout twin could not be trained: {plain(str(failure).strip().rstrip('.'))}. The Lévy "
                     "model and its panels are kept; the MC-Dropout page offers to try again.", icon="⚠️")
        return
    job = ss.get(state.JOB)
    if not job:
        return
    while True:
        view = services.fit.job_view(job["key"])
        if view is None or view.state in ("done", "failed") or (view.has_levy and not job["levy"]) or (
                not job["levy"] and view.preview_seq > job["seq"]):
            st.rerun()
        frac, text = services.fit.status_text(view, job["label"])
        slot.progress(min(max(frac, 0.0), 1.0), text=plain(text))
        time.sleep(FOLLOW_EVERY_S)


def _download_section(res: FitResult) -> None:
    """The model as one zip, to open later in the sidebar (3 · Saved model) or with the CLI."""
    st.download_button(
        "Download the fitted model (zip)",
        data=lambda: services.fit.model_zip(res.key, res),
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
        "futures, the Monitoring page."
    )


def render(res: FitResult) -> None:
    st.subheader("The current model")
    st.markdown(plain(res.describe()))
    left_out = res.fitted.left_out_note()  # series the forecast cut-off kept out of every role (ids: user text)
    if left_out:
        st.info(plain(left_out))
    st.dataframe(services.fit.training_table(res), width="stretch")
    if res.history:
        st.plotly_chart(charts.training_figure(res.history), key=state.TRAINING_CHART)
        st.caption(
            "How to read: loss per epoch on the normalised scale; the solid line is a sixth of "
            "the training series held out for early stopping (the best epoch's weights are "
            "kept; the calibration split is never looked at, so its conformal scores stay "
            "untouched), dotted is training."
        )
    if not res.has_twin and not res.opened_from:
        st.button("Train the MC-Dropout twin now", on_click=controller.request_twin, key=state.TWIN_BUTTON_FIT)
    _download_section(res)
    with st.expander("Settings and split (in words on your clock first; the raw task in hours)"):
        st.json(services.fit.settings_summary(res))
