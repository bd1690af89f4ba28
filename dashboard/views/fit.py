"""Panel 2 · Fit: fitting with a live progress bar, and what the current model is."""

from __future__ import annotations

import dataclasses
import logging
import time

import pandas as pd
import streamlit as st

from dashboard import charts, services, state
from dashboard.markup import plain
from dashboard.views.sidebar import Choice
from levy_core.data import DataError
from levy_core.train import Progress

log = logging.getLogger(__name__)


class _ProgressUI:
    """Progress bar with the live loss and an ETA over the Lévy model and (optionally) its twin."""

    def __init__(self, settings: services.FitSettings, twin: bool, label: str) -> None:
        self.settings, self.twin = settings, twin
        self.bar = st.progress(0.0, text=f"Preparing {label} …")
        self.levy_seconds = 0.0
        self.t0 = time.perf_counter()

    def _model_fraction(self, p: Progress) -> float:
        if p.eta_seconds <= 0:
            return 1.0
        by_budget = p.seconds / self.settings.max_seconds if self.settings.max_seconds else 0.0
        return min(1.0, max(p.fraction, by_budget))

    def __call__(self, p: Progress) -> None:
        budget = self.settings.max_seconds or float("inf")
        eta = min(p.eta_seconds, max(0.0, budget - p.seconds))
        share = 1 / 3 if self.twin else 1.0  # the twin's epochs take about twice as long
        if p.model == "levy":
            self.levy_seconds = p.seconds
            frac = share * self._model_fraction(p)
            if self.twin:  # the twin is still to come
                eta += min(budget, 2 * (p.seconds + p.eta_seconds))
            name = "Lévy model"
        else:
            frac = share + (1 - share) * self._model_fraction(p)
            name = "MC-Dropout twin"
        text = (
            f"{name}: epoch {p.epoch}/{p.epochs} · training MSE {p.train_loss:.4f} · early-stopping "
            "MSE "
            f"{p.val_loss:.4f} (best {p.best_val_loss:.4f}) · ETA {eta:.0f} s"
        )
        self.bar.progress(min(max(frac, 0.0), 1.0), text=text)


def _show_failure(message: str) -> None:
    text = message.strip()
    if text and text[-1] not in ".!?":
        text += "."
    hint = " Fix it in the Data tab (column mapping)." if "mapping" in text.lower() else ""
    st.error(f"{plain(text)}{hint} The previous data and model are kept.", icon="🚫")


def _levy_first(settings: services.FitSettings) -> services.FitSettings:
    """The settings of the fit that draws the first band: the Lévy model alone (its twin is
    trained after the panels are drawn, ``finish_deferred_twin``)."""
    return dataclasses.replace(settings, train_twin=False)


def _keys_of(obs_hash: str, settings: services.FitSettings) -> tuple[str, ...]:
    """Every fit key that stands for ``settings`` on this data: fitted with the twin at once,
    or the Lévy model first and its twin added (``+twin``), or still waiting for it."""
    key, first = services.fit_key(obs_hash, settings), services.fit_key(obs_hash, _levy_first(settings))
    return (key, key + "+twin", first + "+twin", first) if settings.train_twin else (key, key + "+twin")


def _run_fit(choice: Choice) -> services.FitResult | None:
    assert choice.obs is not None and choice.obs_hash is not None and choice.source is not None
    label = choice.source.label
    settings = _levy_first(choice.settings)
    with st.status(f"Fitting on {label} …", expanded=True) as status:
        ui = _ProgressUI(settings, False, label)
        try:
            res = services.fit_model(
                choice.obs, choice.obs_hash, label, settings, progress=ui
            )
        except (DataError, ValueError, FloatingPointError, RuntimeError) as exc:
            status.update(label="Fit failed", state="error", expanded=False)
            st.session_state[state.FAILURES][services.fit_key(choice.obs_hash, choice.settings)] = (
                str(exc)
            )
            log.warning("fit failed: %s", exc)
            _show_failure(str(exc))
            return None
        ui.bar.progress(1.0, text=f"Fitted in {res.seconds:.1f} s")
        later = " (the MC-Dropout twin next)" if choice.settings.train_twin else ""
        status.update(
            label=f"Fitted on {label} in {res.seconds:.1f} s{later}", state="complete", expanded=False
        )
    st.session_state[state.DEFERRED_TWIN] = choice.settings.train_twin
    return res


def _run_twin(res: services.FitResult) -> services.FitResult:
    with st.status("Training the MC-Dropout twin …", expanded=True) as status:
        ui = _ProgressUI(dataclasses.replace(res.settings, train_twin=True), False, "the twin")
        out = services.add_twin(res, progress=ui)
        status.update(
            label=f"MC-Dropout twin trained ({out.fitted.training['softmax']['seconds']:.1f} s)",
            state="complete",
            expanded=False,
        )
    return out


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


def ensure_model(choice: Choice) -> services.FitResult | None:
    """Keep, fetch or fit the model for the sidebar's choice; returns the current model.

    New data is fitted automatically (so the first band appears with no clicks); changed
    settings wait for the Fit button. With a saved model open, the data is scored by it
    instead (no fit) until Fit is pressed or the model is closed. Any problem is shown as
    ``st.error`` and the previous data and model stay.
    """
    ss = st.session_state
    res = services.session_fit(ss[state.FIT_KEY], ss.get(state.FIT_PROVENANCE)) if ss.get(state.FIT_KEY) else None
    if ss.get(state.OPENED_MODEL) is not None:
        if not choice.fit_clicked:
            return _apply_saved_model(choice, res)
        state.close_saved_model()  # Fit: a new fit replaces the saved model
    if res is not None and ss.pop(state.PENDING_TWIN, False) and not res.has_twin:
        res = _adopt(_run_twin(res), new_data=False)
    if choice.error or choice.settings_error:
        _show_failure(choice.error or choice.settings_error or "")
        return res
    if choice.obs is None or choice.obs_hash is None:
        return res
    key = services.fit_key(choice.obs_hash, choice.settings)
    keys = _keys_of(choice.obs_hash, choice.settings)
    same_data = res is not None and res.obs_hash == choice.obs_hash
    if same_data and not choice.fit_clicked:
        if res.key not in keys:
            st.sidebar.info("The settings differ from the current model's: press **Fit** to refit.")
        return res
    if key in ss[state.FAILURES] and not choice.fit_clicked:
        _show_failure(ss[state.FAILURES][key])
        return res
    hit = next((h for k in keys if (h := services.cached_fit(k)) is not None), None)
    if hit is not None:  # another session may have fitted it: this session's file name only
        ss[state.DEFERRED_TWIN] = choice.settings.train_twin and not hit.has_twin
        return _adopt(services.for_this_session(hit, choice.source.label if choice.source else hit.data_label),
                      new_data=not same_data)
    new = _run_fit(choice)
    if new is None:
        return res
    ss[state.FAILURES].pop(key, None)
    return _adopt(new, new_data=not same_data)


def request_twin() -> None:
    st.session_state[state.PENDING_TWIN] = True


def twin_deferred(res: services.FitResult) -> bool:
    """The current model's twin is being trained after this run's panels (see below)."""
    return bool(st.session_state.get(state.DEFERRED_TWIN)) and not res.has_twin and not res.opened_from


def finish_deferred_twin(res: services.FitResult | None, slot) -> None:
    """After every panel is drawn: train the twin the fit left for later (its progress in
    ``slot``, an ``st.empty`` under the title), then redraw with it. The first band so
    appears without waiting for the twin's training and calibration."""
    ss = st.session_state
    if res is None or not twin_deferred(res):
        ss.pop(state.DEFERRED_TWIN, None)
        return
    try:
        with slot.container():
            new = _run_twin(res)
    except (DataError, ValueError, FloatingPointError, RuntimeError) as exc:  # keep the Lévy model, say why
        ss.pop(state.DEFERRED_TWIN, None)
        log.warning("twin failed: %s", exc)
        slot.warning(f"The MC-Dropout twin could not be trained: {plain(str(exc).strip().rstrip('.'))}. The Lévy model and its "
                     "panels are kept; the MC-Dropout tab offers to try again.", icon="⚠️")
        return
    ss.pop(state.DEFERRED_TWIN, None)
    _adopt(new, new_data=False)
    st.rerun()


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
