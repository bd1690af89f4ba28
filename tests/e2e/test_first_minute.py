"""The first minute in a real browser, sampled every 0.5 s: a band, once drawn, never disappears.

Opens the app (the bundled sample's shipped model: no fit), samples the page every 0.5 s
from opening until it is idle, then presses **Refit** and samples again until the refit is
over: at every sample after the first band, the band chart must be drawn (traces and marks
in its SVG). Meanwhile a second session uploads a file while the first one's fit holds the
server's only fit worker, and must see its place in the queue. Screenshots
(``docs/screenshots/``): ``first_minute_opened.png`` (the shipped model's band),
``first_minute_training.png`` (after Refit: the band of the best epoch so far, the epoch and
the early-stopping loss above it), ``first_minute_trained.png`` and ``queued_session.png``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from test_browser import (
    ARGS,
    CHROMIUM,
    EXCEPTION,
    ROOT,
    SHOTS,
    STATUS,
    _free_port,
    _long_csv,
    need_browser,
    wait_until_serving,
)

from levy_core.cli.server import streamlit_command

pytestmark = pytest.mark.e2e

BAND_DRAWN = """() => { const gd = document.querySelector('.js-plotly-plot');
    return !!(gd && gd._fullData && gd._fullData.some(t => t.name === 'Lévy mean')
              && gd.querySelector('.main-svg .scatterlayer path')); }"""


@pytest.fixture
def one_worker_server(tmp_path):
    """``streamlit run`` with one fit worker (so a second fit queues); yields the URL."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("LEVY_DASHBOARD_FAST", "LEVY_DASHBOARD_DATA")}
    env["LEVY_DASHBOARD_FIT_WORKERS"] = "1"
    log = open(tmp_path / "streamlit.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(streamlit_command(port), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(proc, url, tmp_path / "streamlit.log", seconds=120)
        yield url
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        log.close()


def _sample_until_idle(page, samples: list[tuple[float, bool]], t0: float, timeout_s: float, *,
                       also=None) -> None:
    """Every 0.5 s: is the band drawn? Until the script run is over (twice in a row: a
    rerun may follow at once) and at least 2 s have passed; ``also(page)`` at each sample."""
    idle_in_a_row = 0
    while time.perf_counter() - t0 < timeout_s:
        drawn = bool(page.evaluate(BAND_DRAWN))
        samples.append((time.perf_counter() - t0, drawn))
        if also is not None:
            also(page)
        idle = page.locator(STATUS).count() == 0
        idle_in_a_row = idle_in_a_row + 1 if idle and drawn else 0
        if idle_in_a_row >= 3 and time.perf_counter() - t0 > 2:
            return
        page.wait_for_timeout(500)
    pytest.fail(f"not idle within {timeout_s} s: {samples[-5:]}")


def _model_caption(page) -> str:
    """The caption that says which model the panels draw (the first that names a Lévy model)."""
    captions = page.locator('[data-testid="stCaptionContainer"]').all_inner_texts()
    return next((c for c in captions if "Lévy model" in c), f"no model caption among {len(captions)}")[:400]


def _alerts(page) -> list[str]:
    return [t[:300] for t in page.locator('[data-testid="stAlert"]').all_inner_texts()]


def _idle_page(page) -> None:
    page.wait_for_timeout(400)
    page.wait_for_selector(STATUS, state="detached", timeout=300_000)


def _never_disappears(samples: list[tuple[float, bool]], what: str) -> None:
    first = next((i for i, (_, d) in enumerate(samples) if d), None)
    assert first is not None, f"{what}: no band was ever drawn ({len(samples)} samples)"
    gone = [round(t, 1) for t, d in samples[first:] if not d]
    assert not gone, f"{what}: the band, drawn at {samples[first][0]:.1f} s, was gone at {gone} s"


def test_first_minute_the_band_never_disappears_and_a_queued_session_sees_its_place(one_worker_server, tmp_path):
    sync_playwright = need_browser()
    SHOTS.mkdir(parents=True, exist_ok=True)
    csv = _long_csv(tmp_path / "colleague.csv", n_series=14)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_context(viewport={"width": 1440, "height": 1300}).new_page()
            samples: list[tuple[float, bool]] = []
            t0 = time.perf_counter()
            page.goto(one_worker_server)
            _sample_until_idle(page, samples, t0, 300)
            _never_disappears(samples, "opening")
            first = next(t for t, d in samples if d)
            assert page.get_by_text("and shipped with it", exact=False).count() > 0, "the shipped model, no fit"
            assert page.locator(EXCEPTION).count() == 0
            page.screenshot(path=str(SHOTS / "first_minute_opened.png"))

            # a colleague's session, open on the same server before the Refit
            other = browser.new_context(viewport={"width": 1440, "height": 1300}).new_page()
            other.goto(one_worker_server)
            other.wait_for_function(BAND_DRAWN, timeout=300_000)
            _idle_page(other)

            # Refit: the band stays (the shipped model's, then the best epoch so far) while it trains;
            # as soon as the first preview is drawn, the colleague uploads a file: it waits in the queue
            shots = {"training": False, "uploaded": False, "queued": False}

            def step(pg) -> None:
                if not shots["training"] and pg.get_by_text("the Lévy model as it stands", exact=False).count():
                    pg.mouse.move(1265, 30)  # no tooltip over the page, no hover on a navigation link
                    pg.get_by_text("early-stopping MSE", exact=False).first.wait_for(timeout=30_000)
                    pg.screenshot(path=str(SHOTS / "first_minute_training.png"))
                    shots["training"] = True
                    other.locator('[data-testid="stFileUploader"]').filter(has_text="Upload a CSV").locator(
                        'input[type="file"]').set_input_files(str(csv))
                    shots["uploaded"] = True
                if shots["uploaded"] and not shots["queued"] and other.get_by_text("Queued: 1st in line",
                                                                                   exact=False).count():
                    other.wait_for_timeout(300)
                    other.screenshot(path=str(SHOTS / "queued_session.png"))
                    shots["queued"] = True

            page.get_by_role("button", name="Refit").click()
            page.mouse.move(1265, 30)
            refit: list[tuple[float, bool]] = [(0.0, True)]
            t1 = time.perf_counter()
            # sampled until the page is idle with the final model (the Lévy model and its twin):
            # an idle page before that (once in CI, stop 36, with no record of what it showed)
            # is sampled on, and said, rather than taken for the end
            early: list[str] = []
            while True:
                _sample_until_idle(page, refit, t1, 600, also=step)
                if page.get_by_text("and its MC-Dropout twin fitted", exact=False).count() or _alerts(page) or \
                        time.perf_counter() - t1 > 600:  # (an alert: a failure said, reported at once below)
                    break
                early.append(f"{time.perf_counter() - t1:.1f} s: {_model_caption(page)}")
                page.wait_for_timeout(1000)
            _never_disappears(refit, "refit")
            assert shots["training"], "a preview band was drawn while the model trained"
            assert shots["queued"], "the colleague saw its place in the queue"
            assert page.get_by_text("and its MC-Dropout twin fitted", exact=False).count() > 0, (
                f"the final model never came: {_model_caption(page)}; alerts: {_alerts(page)}; idle before: {early}")
            if early:
                print(f"idle before the final model: {early}")
            page.mouse.move(1265, 30)
            page.wait_for_timeout(500)
            page.screenshot(path=str(SHOTS / "first_minute_trained.png"))
            other.get_by_text("on upload: colleague.csv", exact=False).first.wait_for(timeout=600_000)
            assert page.locator(EXCEPTION).count() == 0 and other.locator(EXCEPTION).count() == 0
            print(f"first band {first:.1f} s after opening; {len(samples)} + {len(refit)} samples")
        finally:
            browser.close()
