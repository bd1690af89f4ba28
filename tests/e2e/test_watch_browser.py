"""The Watch panel in a real browser: Playwright driving Debian's Chromium (never ``playwright
install``), on its own server so that it does not depend on the steps of ``test_browser.py``.

Starts ``streamlit run dashboard/app.py`` on a free port (its own PID, stopped at the end),
waits for the bundled sample's first fit, opens the Watch page: the replay's chart has the
band issued before each observation, the flagged points and the nominal α; ▶ Play moves the
replay's clock on its own and ⏸ Pause stops it; no exception element, no page error.

Skipped when /usr/bin/chromium (or the playwright package) is missing, unless
``LEVY_REQUIRE_BROWSER=1`` (CI), then it fails.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from test_browser import CHROMIUM, need_browser, open_panel, wait_until_serving

from levy_core.cli.server import streamlit_command

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
STATUS = '[data-testid="stStatusWidget"]'
EXCEPTION = '[data-testid="stException"]'
WATCH_TRACES = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(gd =>
    (gd._fullData || []).map(t => t.name || ''))"""


@pytest.fixture
def app_url(tmp_path):
    """``streamlit run`` on a free port with the default fit; yields the URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if k not in ("LEVY_DASHBOARD_FAST", "LEVY_DASHBOARD_DATA")}
    log = open(tmp_path / "streamlit.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(streamlit_command(port), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(proc, url, tmp_path / "streamlit.log")
        yield url
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)  # ours alone
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        log.close()


def replay_clock(page) -> str:
    return page.get_by_text("Replay at", exact=False).first.inner_text()


def test_the_watch_panel_replays_and_plays(app_url):
    sync_playwright = need_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1400})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(app_url)
            page.wait_for_selector('[data-testid="stPlotlyChart"] .main-svg', timeout=300_000)
            page.wait_for_selector(STATUS, state="detached", timeout=300_000)
            open_panel(page, "Watch")
            page.wait_for_function(f"() => ({WATCH_TRACES})().some(n => n.startsWith('flagged'))", timeout=300_000)
            names = page.evaluate(WATCH_TRACES)
            assert any(n.startswith("Lévy 99 % band issued before each observation") for n in names), names
            assert "nominal α = 0.01" in names and "running flag rate, this series" in names
            before = replay_clock(page)
            page.get_by_role("button", name="▶ Play").click()
            page.wait_for_function("(old) => [...document.querySelectorAll('[data-testid=\"stMarkdown\"]')]"
                                   ".some(m => m.innerText.includes('Replay at') && !m.innerText.includes(old))",
                                   arg=before, timeout=60_000)
            page.get_by_role("button", name="⏸ Pause").click()
            page.wait_for_selector(STATUS, state="detached", timeout=60_000)
            page.wait_for_timeout(1500)
            paused = replay_clock(page)
            page.wait_for_timeout(2500)
            assert replay_clock(page) == paused, "the clock moved while paused"
            assert page.locator(EXCEPTION).count() == 0
            assert not errors, errors
        finally:
            browser.close()
