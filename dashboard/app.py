"""Lévy uncertainty dashboard: ``streamlit run dashboard/app.py`` (or ``levy dashboard [DATA]``).

Thin entry: page config, one ``st.navigation`` page per panel (each at its own URL,
``state.PANEL_URLS``), the sidebar (data + fit) and the model this run draws (``controller``),
which every page shares through the session; then the open page. Nothing is computed here:
``services`` calls ``levy_core``, ``charts`` draws, ``views`` lay out.

Streamlit (and ``AppTest``) runs this file as ``__main__``; the fit pool's spawned workers
import it again as ``__mp_main__``, where nothing may run (hence ``main()`` under the guard).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

# this folder is the installed package levy_dashboard (pyproject's package-dir): `make install`
# or `pip install -e ".[dashboard]"` first, then `levy dashboard` or `streamlit run dashboard/app.py`
import streamlit as st
from levy_dashboard import services
from levy_dashboard.display import widgets
from levy_dashboard.display.markup import plain
from levy_dashboard.services.fit import FitResult
from levy_dashboard.session import controller, state
from levy_dashboard.session.controller import Choice
from levy_dashboard.views import advise as advise_view
from levy_dashboard.views import (
    backtest,
    band,
    calibration,
    data,
    evidence,
    fit,
    future,
    identity,
    mc_dropout,
    monitoring,
    ranking,
    sidebar,
    watch,
)


def _band_panel(res: FitResult) -> None:
    """The band (on rolling origins: the forecast past the end of the data), evidence under it."""
    evidence.render(res, future.render(res) if res.on_origins else band.render(res))


# panels that need a fitted model; the Data panel also works without one
MODEL_PANELS = {
    state.PANEL_FIT: fit.render,
    state.PANEL_BAND: _band_panel,
    state.PANEL_ADVISE: advise_view.render,
    state.PANEL_MC: mc_dropout.render,
    state.PANEL_CALIBRATION: calibration.render,
    state.PANEL_BACKTEST: backtest.render,
    state.PANEL_MONITORING: monitoring.render,
    state.PANEL_WATCH: watch.render,
    state.PANEL_IDENTITY: identity.render,
}
assert set(MODEL_PANELS) | {state.PANEL_DATA, state.PANEL_RANKING} == set(state.PANELS) == set(state.PANEL_URLS)


@dataclass
class Frame:
    """What every page draws on, set by the frame before the open page runs."""

    choice: Choice | None = None  # the sidebar's data and fit settings
    res: FitResult | None = None  # the model this run draws (None: no model yet)
    pages: dict[str, st.Page] = field(default_factory=dict)  # panel name -> its page


def _panel(name: str, frame: Frame) -> None:
    """Panel ``name``'s page: run by ``current.run()`` after the frame has drawn the sidebar
    and picked this run's data and model (the same on every page)."""
    if name == state.PANEL_DATA:
        data.render(frame.choice, frame.res)
    elif frame.res is None:
        st.info("No model yet: load data in the sidebar (a bundled sample works) and press **Fit**.")
    elif name == state.PANEL_RANKING:  # its rows link to the band's page
        ranking.render(frame.res, frame.pages[state.PANEL_BAND])
    else:
        MODEL_PANELS[name](frame.res)


def _open_page(frame: Frame) -> st.Page:
    """The page this run draws: one page per panel, each at its own URL (http://HOST:PORT/band,
    /calibration, …), and the root URL, a hidden page that draws the default panel. A new
    session at the root is sent to the default panel's URL (its navigation link marked) before
    anything is drawn; never later: a switch made by the server reruns with no widget state,
    and the sidebar's widgets, the upload among them, would lose theirs."""
    pages = frame.pages
    for name in state.PANELS:
        pages[name] = st.Page(partial(_panel, name, frame), title=name, url_path=state.PANEL_URLS[name])
    root = st.Page(partial(_panel, state.DEFAULT_PANEL, frame), title="Lévy uncertainty", url_path="home",
                   default=True, visibility="hidden")
    current = st.navigation([root, *pages.values()], position="top")
    if current is root and state.OPEN_PANEL not in st.session_state:  # the session's first run
        st.switch_page(pages[state.DEFAULT_PANEL])  # stops this run, reruns on that page
    st.session_state[state.OPEN_PANEL] = state.DEFAULT_PANEL if current is root else current.title
    return current


def main() -> None:
    st.set_page_config(page_title="Lévy uncertainty", page_icon="📈", layout="wide")
    state.init(
        {
            state.LEVEL: 0.9,
            state.BAND_KIND: "Scaled Gaussian",
            state.MC_OVERLAY: True,
            state.MC_T: services.fit.default_mc_passes(),
            state.N_DRAWS: 500 if services.fit.fast() else 2000,
            state.QUERY: None,
            state.WATCH_ALPHA: 0.01,
        }
    )
    frame = Frame()
    current = _open_page(frame)

    st.title("Lévy uncertainty explorer")
    st.caption(
        "Predictions with a single-pass band on irregular time series: why a band is wide (evidence vs "
        "disagreement), how it compares with MC-Dropout, and whether it is calibrated."
    )
    # fixed places (every run draws the same elements in the same order, so nothing below them
    # is replaced by something else while a rerun is under way: a drawn band never blanks)
    describe_slot = st.empty()  # what the current model is
    job_slot = st.empty()  # this session's fit: its place in the queue, then its epochs (fit.follow_job)
    cancel_slot = st.empty()  # its Cancel button
    frame.choice = sidebar.render()
    model = controller.ensure_model(frame.choice)
    for failure in model.failures:  # each a red message; the previous data and model stay
        widgets.show_failure(failure)
    if model.note:
        st.sidebar.info(model.note)
    frame.res = model.res
    if frame.res is not None:
        describe_slot.caption(plain(frame.res.describe()))
    fit.show_job(job_slot, cancel_slot)

    current.run()  # the open panel (only it runs), below the frame every page shares
    fit.follow_job(job_slot)


if __name__ == "__main__":
    main()
