"""Helpers for the dashboard tests: the app path, test CSVs, figure JSON by chart key."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dashboard" / "app.py")
SAMPLE_DIR = ROOT / "sample_data"


def start() -> AppTest:
    """The app, run once in a fresh session (the bundled sample's default fit)."""
    # 300 s: the first run that submits a fit starts the app's spawned fit pool (a fresh
    # interpreter importing torch); on a fresh CI clone beside the other test worker that
    # once took past AppTest's 120 s ("too little to fit", 2026-12-03)
    at = AppTest.from_file(APP, default_timeout=300).run()
    assert not at.exception, at.exception
    return at


def session_model(at: AppTest):
    """The model ``at``'s session draws, as that session sees it: the fit store's entry with
    the session's own data label and fit time (``fits.session_fit``; the store's own
    ``data_label`` is the first session's to fit those bytes, on a shared server another's)."""
    from levy_dashboard import services

    return services.fit.session_fit(at.session_state["_fit_key"], at.session_state["_fit_provenance"])


def _page_hash(at: AppTest, panel: str) -> str:
    from levy_dashboard.session.state import PANEL_URLS

    url = PANEL_URLS[panel]
    hashes = [h for h, info in at._registered_pages.items() if info.get("url_pathname") == url]
    assert len(hashes) == 1, f"no page at /{url}: {at._registered_pages}"
    return hashes[0]


def open_url(panel: str) -> AppTest:
    """A new session opened at ``panel``'s URL (its first run draws that page, not the root's)."""
    at = AppTest.from_file(APP, default_timeout=300)
    at._page_hash = _page_hash(start(), panel)  # a page's hash is its URL's: the same in every session
    at.run()
    at._page_hash = ""
    assert not at.exception, at.exception
    assert at.session_state["_open_panel"] == panel
    return at


def show(at: AppTest, panel: str) -> AppTest:
    """``at`` rerun on ``panel``'s page, as a click on its link in the navigation bar does: the
    page's hash sent with every widget's state. (``AppTest.switch_page`` takes only pages made
    from files; the app's pages are callables, so the hash is looked up by the page's URL among
    the pages the last run registered: ``_registered_pages`` and ``_page_hash`` of the pinned
    streamlit's AppTest.)"""
    at._page_hash = _page_hash(at, panel)
    at.run()
    at._page_hash = ""  # later runs stay on the page this one finished on
    assert not at.exception, at.exception
    assert at.session_state["_open_panel"] == panel, "the app did not draw the page asked for"
    return at


def long_csv(n_series: int = 12) -> bytes:
    """A long-form CSV: the first ``n_series`` series of the synthetic sample."""
    df = pd.read_csv(SAMPLE_DIR / "synthetic_multichannel.csv", dtype={"series_id": str})
    keep = sorted(df["series_id"].unique())[:n_series]
    return (
        df[df["series_id"].isin(keep)]
        .rename(columns={"series_id": "patient_id"})
        .to_csv(index=False)
        .encode()
    )


def wide_csv(n_rows: int = 400) -> bytes:
    """A wide-form CSV (one column per channel, date-times, blanks unobserved)."""
    text = (SAMPLE_DIR / "single_series.csv").read_text()
    lines = text.splitlines()
    return ("\n".join(lines[: n_rows + 1]) + "\n").encode()


def figure(at, key: str) -> dict:
    """The plotly figure JSON of the chart with widget ``key`` (``proto.spec``)."""
    for chart in at.get("plotly_chart"):
        if chart.proto.id and key in chart.proto.id:
            return json.loads(chart.proto.spec)
    raise AssertionError(
        f"no plotly chart with key {key!r}; have {[c.proto.id for c in at.get('plotly_chart')]}"
    )


def figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def csv_frame(data: bytes) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(data))
