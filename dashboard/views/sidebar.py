"""Sidebar: where the data comes from and how to fit (panels 1 and 2's controls)."""

from __future__ import annotations

import streamlit as st
from levy_dashboard import services
from levy_dashboard.display.markup import plain
from levy_dashboard.services.data import DataSource
from levy_dashboard.services.fit import FitSettings
from levy_dashboard.session import controller, state
from levy_dashboard.session.controller import Choice

from levy_core.data import SAMPLES, TIME_UNITS, DataError, Observations, user_time_unit


def _on_upload() -> None:
    if st.session_state.get(state.UPLOAD) is not None:
        st.session_state[state.SOURCE] = state.SOURCE_UPLOAD


def _upload_source() -> DataSource | None:
    up = st.session_state.get(state.UPLOAD)
    if up is None:
        return None
    file_id = getattr(up, "file_id", None) or f"{up.name}:{up.size}"
    cached = st.session_state.get(state.UPLOAD_SOURCE)
    if cached is not None and cached[0] == file_id:
        return cached[1]
    services.data.check_upload_size(up.name, int(up.size))  # before the bytes are copied
    src = services.data.source_from_upload(up.name, up.getvalue())
    st.session_state[state.UPLOAD_SOURCE] = (file_id, src)
    return src


def _data_section() -> tuple[DataSource | None, str | None]:
    sb = st.sidebar
    sb.header("1 · Data")
    env_path = services.data.env_data_path()
    options = ([state.SOURCE_FILE] if env_path else []) + [state.SOURCE_SAMPLE, state.SOURCE_UPLOAD]
    if st.session_state.get(state.SOURCE) not in options:
        st.session_state[state.SOURCE] = options[0]
    kind = sb.radio(
        "Source",
        options,
        key=state.SOURCE,
        help="A bundled sample, a CSV you upload, or the file given to `levy dashboard DATA`.",
    )
    if kind == state.SOURCE_SAMPLE:
        if st.session_state.get(state.SAMPLE) not in SAMPLES:
            st.session_state[state.SAMPLE] = services.data.DEFAULT_SAMPLE
        sb.selectbox(
            "Sample",
            list(SAMPLES),
            key=state.SAMPLE,
            help="Synthetic multichannel fits in seconds; PhysioNet (300 ICU stays, 37 channels) "
            "takes a few minutes.",
        )
    sb.file_uploader(
        "Upload a CSV (long or wide form)",
        key=state.UPLOAD,
        on_change=_on_upload,
        help="Long: series_id (optional), time, channel (optional), value. Wide: a time column "
        "and one numeric column per channel, blanks unobserved. .csv or .csv.gz; comma, "
        f"semicolon or tab separated; up to {services.data.upload_limit_text()}.",
    )
    try:
        if kind == state.SOURCE_FILE and env_path:
            return services.data.path_source(env_path), None
        if kind == state.SOURCE_SAMPLE:
            return services.data.sample_source(st.session_state[state.SAMPLE]), None
        src = _upload_source()
        if src is None:
            sb.info("Drop a CSV above; the current data and model stay until it loads.")
        return src, None
    except DataError as exc:
        return None, str(exc)


_TASKS = ["forecast", "interpolate"]


def _task_radio(d: FitSettings, few: bool) -> str:
    """The task; with few series forecasting is the natural one (and the default), on its own
    key so each kind of data keeps its own choice."""
    return st.sidebar.radio(
        "Task",
        _TASKS,
        index=_TASKS.index("forecast" if few else d.task),
        key=state.FIT_TASK_FEW if few else state.FIT_TASK,
        horizontal=True,
        format_func={"forecast": "Forecast", "interpolate": "Interpolation"}.get,
        help="Forecast: predict what comes next (after a history cut-off; with fewer than 10 "
        "series, from rolling forecast origins along each series). Interpolation: predict a "
        "random share of held-out observations from the rest.",
    )


def _horizon_input(obs: Observations, obs_hash: str) -> tuple[float | None, str | None]:
    """Few series: the forecast horizon as a duration → (hours or None for the default, error)."""
    auto = services.origins.auto_horizon(obs_hash, obs)
    text = st.sidebar.text_input(
        "Forecast horizon",
        key=state.keyed(state.FIT_HORIZON, obs_hash[:12]),
        placeholder=f"auto: {services.origins.horizon_text(auto)}" if auto else "e.g. 36h, 2d, 2w",
        help="How far ahead each forecast reaches: a duration such as 36h, 2d, 2w or 1y (a "
        "bare number is in the data's time unit, not allowed for date-times). Empty: a tenth "
        "of the series' span. With fewer than 10 series the model learns from rolling "
        "forecast origins along each series' own past, so there is no cut-off to pick.",
    )
    if not text.strip():
        return None, None
    try:
        return services.origins.parse_horizon(obs, text), None
    except DataError as exc:
        return None, f"Forecast horizon {text!r}: {exc}"


def _cutoff_slider(
    obs: Observations | None, obs_hash: str | None, d: FitSettings
) -> float | None:
    """The forecast cut-off (None: no data yet, the data leave no range to choose, or each
    series its own: on a panel with different follow-ups, where one would leave series out)."""
    if obs is None or obs_hash is None:
        return None
    try:
        own = services.fit.own_cutoffs_by_default(obs_hash, obs, d.seed)
    except DataError:
        own = False
    if own and st.sidebar.checkbox(
        "Each series its own cut-off",
        value=True,
        key=state.keyed(state.FIT_OWN_CUTOFF, obs_hash[:12]),
        help="The series are followed for different lengths: one cut-off for all would leave out those that end "
        "before it or start after it. Each series' history ends at the midpoint of its own span instead.",
    ):
        return None
    lo = hi = default = 0.0
    try:
        lo, hi, default = services.fit.cutoff_range(obs_hash, obs, d.seed)
    except DataError:
        pass  # the fit will say what is wrong
    if not hi > lo:
        st.sidebar.caption(
            "History cut-off: half the median series span (the data leave no range to choose)."
        )
        return None
    unit, label = _cutoff_unit(obs)
    size = TIME_UNITS[unit]  # the slider runs in the data's unit; the fit takes hours
    lo, hi, default = lo / size, hi / size, default / size
    chosen = st.sidebar.slider(
        f"History cut-off ({label})",
        min_value=lo,
        max_value=hi,
        value=min(max(default, lo), hi),
        step=max(round((hi - lo) / 200, 3), 0.001),
        key=state.keyed(state.FIT_CUTOFF, obs_hash[:12]),
        help="Observations up to the cut-off are context; later ones are predicted.",
    )
    return float(chosen) * size


def _cutoff_unit(obs: Observations) -> tuple[str, str]:
    """The unit the cut-off slider runs in and its label: the data's own ("days"), days after
    each series' start for date-times (their clock starts there), hours for observations
    built by hand."""
    try:
        clock = user_time_unit(obs)
    except DataError:
        return "hours", "hours"
    if clock in TIME_UNITS:
        return clock, clock
    return "days", "days after each series' first observation"


def _holdout_slider(d: FitSettings) -> float:
    return st.sidebar.slider(
        "Held-out share",
        0.05,
        0.5,
        d.holdout_fraction,
        0.05,
        key=state.FIT_HOLDOUT,
        help="Share of each series' observations held out as queries.",
    )


def _model_controls(d: FitSettings) -> tuple[str, int, float, bool]:
    """(model size, max epochs, budget per model in s, train the twin)."""
    sb = st.sidebar
    limits = services.fit.session_limits()
    size = sb.select_slider(
        "Model size",
        options=services.fit.size_options(limits),
        value=d.size,
        key=state.FIT_SIZE,
        help=services.fit.size_help(),
    )
    c1, c2 = sb.columns(2)
    epochs = c1.number_input(
        "Epochs (max)",
        min_value=1,
        max_value=limits.max_epochs,
        value=min(d.epochs, limits.max_epochs),
        step=1,
        key=state.FIT_EPOCHS,
        help="Early stopping (on held-out training series) may end sooner.",
    )
    budget = c2.number_input(
        "Safety cap per model (s)",
        min_value=0.5,
        max_value=float(limits.max_seconds),
        value=min(float(d.max_seconds), float(limits.max_seconds)),
        step=1.0,
        key=state.FIT_BUDGET,
        help="Not a budget: training ends by early stopping or the epochs; a fit that reaches this cap stops "
        f"there and says it is under-trained (this server allows up to {limits.max_seconds:g} s).",
    )
    twin = sb.checkbox(
        "Train the MC-Dropout twin alongside",
        value=d.train_twin,
        key=state.FIT_TWIN,
        help="The softmax+dropout twin gives the MC-Dropout comparison; untick to fit only the "
        "Lévy model and train the twin later, on demand, on the MC-Dropout page.",
    )
    return size, int(epochs), float(budget), bool(twin)


def _transform_input(d: FitSettings) -> tuple[str, str | None]:
    """The value transform per channel (``levy fit --transform``) → (its text, error)."""
    text = st.sidebar.text_input(
        "Value transform",
        value=d.transform,
        key=state.FIT_TRANSFORM,
        help="auto: log for channels whose values are all > 0 and skewed (skewness > 1) or within 3 s.d. of 0, log1p for skewed "
        "non-negative ones with zeros; or none, log, log1p for every channel, or per channel, e.g. "
        "bili=log,albumin=none. The model is fitted and calibrated on the transformed values and the band "
        "mapped back: asymmetric, never below zero.",
    ).strip() or "auto"
    return text, services.fit.transform_error(text)


def _task_settings(
    obs: Observations | None, obs_hash: str | None, d: FitSettings
) -> tuple[dict, str | None]:
    """The task's settings (task, cutoff, horizon, holdout_fraction) and a setting's error."""
    few = obs is not None and services.data.few_series(obs)
    task = _task_radio(d, few)
    out = {"task": task, "cutoff": None, "horizon": None, "holdout_fraction": d.holdout_fraction}
    error = None
    if task == "forecast" and few and obs_hash is not None:
        out["horizon"], error = _horizon_input(obs, obs_hash)
    elif task == "forecast":
        cutoff = _cutoff_slider(obs, obs_hash, d)
        out["cutoff"] = None if cutoff is None else round(float(cutoff), 4)
    else:
        out["holdout_fraction"] = float(_holdout_slider(d))
    return out, error


def _fit_section(
    obs: Observations | None, obs_hash: str | None, has_model: bool = False
) -> tuple[FitSettings, bool, str | None]:
    st.sidebar.header("2 · Fit")
    d = services.fit.default_settings()
    task, error = _task_settings(obs, obs_hash, d)
    size, epochs, budget, twin = _model_controls(d)
    transform, transform_error = _transform_input(d)
    error = error or transform_error
    settings = services.fit.FitSettings(
        **task,
        size=size,
        epochs=epochs,
        max_seconds=budget,
        train_twin=twin,
        mc_passes=d.mc_passes,
        seed=d.seed,
        transform=transform,
    )
    clicked = st.sidebar.button(
        "Refit" if has_model else "Fit",
        type="primary",
        key=state.FIT_BUTTON,
        width="stretch",
        help="Fit with these settings in this server (queued when its fit workers are busy; cached: settings "
        "fitted before come back instantly). A bundled sample opens on its shipped model: Refit trains it here.",
    )
    return settings, clicked, error


def _model_section() -> None:
    sb = st.sidebar
    sb.header("3 · Saved model")
    sb.file_uploader(
        "Open a saved model (.zip)",
        type=["zip"],
        key=state.MODEL_UPLOAD,
        help="A zip from “Download the fitted model” (Fit page), or of a `levy fit --out DIR` folder: "
        "model.json and safetensors weights only (anything else is refused). The data in the sidebar "
        "is then scored with it, without refitting.",
    )
    controller.open_uploaded_model()
    error = state.get(state.MODEL_ERROR)
    if error:
        sb.error(f"Model zip refused: {plain(error)}. The current model is kept.", icon="🚫")
    opened = state.get(state.OPENED_MODEL)
    if opened is not None:
        sb.success(
            f"In use: the saved model {plain(opened.name)}. Data you load is scored with it, not "
            "refitted; **Fit** replaces it with a new fit."
            + (f" A file you have not mapped by hand is read as its data were: "
               f"{plain(opened.fitted.reading.describe())}." if opened.fitted.reading is not None else "")
        )
        sb.button("Close the saved model", key=state.CLOSE_MODEL, on_click=state.close_saved_model, width="stretch")


def _opened_reading(src: DataSource) -> tuple[str | None, str]:
    """A file the user has not mapped by hand is read as the opened saved model's data were
    (its columns and time unit, recorded in ``model.json``), as every later ``levy`` command
    reads it; without an opened model, or one saved without that record: found by name, hours."""
    opened = state.get(state.OPENED_MODEL)
    if opened is None:
        return None, "hours"
    try:
        columns = list(services.data.raw_table(src.digest, src.data, src.name).columns)
    except DataError:
        return None, "hours"  # the load below says what is wrong with the file
    recorded = services.fit.recorded_reading(opened, columns)
    if recorded is None:
        return None, "hours"
    return services.data.mapping_to_json(recorded[0]), recorded[1]


def render() -> Choice:
    src, error = _data_section()
    obs = obs_hash = mapping_json = None
    time_unit = "hours"
    if src is not None:
        mapping_json, time_unit = st.session_state[state.MAPPINGS].get(src.digest) or _opened_reading(src)
        loaded = services.data.load(src, mapping_json, time_unit)
        obs, obs_hash, error = loaded.obs, loaded.obs_hash, loaded.error
    has_model = bool(state.get(state.FIT_KEY)) or (
        src is not None and services.fit.shipped_model(src.digest) is not None)
    settings, clicked, settings_error = _fit_section(obs, obs_hash, has_model)
    _model_section()
    return Choice(src, obs, obs_hash, error, mapping_json, time_unit, settings, clicked, settings_error)
