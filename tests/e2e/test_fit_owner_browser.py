"""The real server in Chromium (Debian's; never ``playwright install``): uploads with hostile
names make no link and no request beyond the app; a closed session's fit is cancelled and
the next session's fit starts within 10 s; SIGTERM ends the server and its fit workers
within 10 s while a fit runs.

Skipped when /usr/bin/chromium (or the playwright package) is missing, unless
``LEVY_REQUIRE_BROWSER=1`` (CI), then it fails.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from levy_dashboard.session.state import PANEL_URLS
from test_browser import (
    ARGS,
    CHROMIUM,
    _data_uploader,
    _free_port,
    _idle,
    need_browser,
    open_panel,
    wait_until_serving,
)

from levy_core.cli.server import streamlit_command

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data" / "synthetic_multichannel.csv"
CHANNELS = {"coupled": "![t](http://127.0.0.1:8765/track.png)", "smooth": "[Log in again](https://phish.example/login)",
            "noisy": "www.phish.example a@phish.example"}
FILE = "www.phish.example a@phish.example.csv"
PANELS = ["Data", "Fit", "Predictive band", "Measure next", "Trust ranking", "Watch"]
STARTED = "Training the|Preparing "


def _csv(copies: int, hostile: bool = False) -> bytes:
    """The synthetic sample, ``copies`` times over (other series ids, a little noise)."""
    df = pd.read_csv(SAMPLE, dtype={"series_id": str})
    rng = np.random.default_rng(0)
    parts = [df.assign(series_id=df["series_id"] + f"-{k}", value=df["value"] + rng.normal(0, 0.01, len(df)))
             for k in range(copies)]
    out = pd.concat(parts)
    if hostile:
        out["channel"] = out["channel"].map(CHANNELS)
        out.loc[out["series_id"] == out["series_id"].iloc[0], "series_id"] = "[s](http://evil.example/s)"
    buf = io.StringIO()
    out.to_csv(buf, index=False)
    return buf.getvalue().encode()


def _start(tmp_path: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("LEVY_DASHBOARD_FAST", "LEVY_DASHBOARD_DATA")}
    env["LEVY_DASHBOARD_FIT_WORKERS"] = "1"
    log = open(tmp_path / "streamlit.log", "w")  # noqa: SIM115 - the process holds it
    proc = subprocess.Popen(streamlit_command(port), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_until_serving(proc, url, tmp_path / "streamlit.log", seconds=120)
    return proc, url


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)  # ours alone: only this PID
        proc.wait(timeout=10)


def _descendants(pid: int) -> set[int]:
    """Every live process under ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat[0] != "Z":
                parents[int(entry.name)] = int(stat[1])
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out.update(kids)
        todo += kids
    return out


def _alive(pids: set[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie counts as gone)."""
    out = []
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(p)
    return out


def _upload(page, name: str, data: bytes) -> None:
    _data_uploader(page).set_input_files({"name": name, "mimeType": "text/csv", "buffer": data})


def test_hostile_names_make_no_link_and_no_request_beyond_the_app(tmp_path) -> None:
    sync_playwright = need_browser()
    proc, url = _start(tmp_path)
    requests: list[str] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url)
            _idle(page)
            anchors0 = set(page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"))
            _upload(page, FILE, _csv(1, hostile=True))
            page.wait_for_function("() => document.body.innerText.replaceAll('\\u2060', '')"
                                   ".includes('phish.example a@phish.example.csv')",
                                   timeout=300_000)
            seen = set()
            for panel in PANELS:
                open_panel(page, panel)
                _idle(page, 300)
                seen |= set(page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"))
                text = page.inner_text("body").replace("\u2060", "")
                assert panel != "Measure next" or "[Log in again](https://phish.example/login)" in text, \
                    "the channel name is shown, as written"
            browser.close()
    finally:
        _stop(proc)
    # Streamlit's own heading anchors stay in the page (on the app's pages: /#…, /data#…, /band#…)
    pages = {f"{url}/", *(f"{url}/{path}" for path in PANEL_URLS.values())}
    new = {a for a in seen - anchors0 if not ("#" in a and a.split("#", 1)[0] in pages)}
    assert not [a for a in new if "phish" in a or "evil" in a or "8765" in a or a.startswith("mailto:")], new
    foreign = [r for r in requests if not r.startswith((url, url.replace("http", "ws"), "data:", "blob:", "about:"))]
    assert not foreign, f"requests beyond the app: {foreign[:5]}"


def test_a_closed_sessions_fit_is_cancelled_and_sigterm_ends_the_server_and_its_workers(tmp_path) -> None:
    sync_playwright = need_browser()
    proc, url = _start(tmp_path)
    big = _csv(12)  # 480 series: its fit runs for minutes on one worker
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            first = browser.new_context().new_page()
            first.goto(url)
            _idle(first)
            _upload(first, "big.csv", big)
            first.get_by_text("Training the", exact=False).first.wait_for(timeout=300_000)
            first.context.close()  # the tab closed: nobody waits for that fit
            closed = time.monotonic()
            second = browser.new_context().new_page()
            second.goto(url)
            second.wait_for_selector('[data-testid="stFileUploader"]', timeout=60_000)
            _upload(second, "big-too.csv", _csv(12)[:-1] + b"\n")
            second.get_by_text("Preparing ", exact=False).or_(second.get_by_text("Training the", exact=False)) \
                .first.wait_for(timeout=60_000)
            started = time.monotonic() - closed
            print(f"closed session -> next session's fit started: {started:.1f} s")
            assert started < 10, f"the next session's fit started {started:.1f} s after the first tab closed"
            assert second.get_by_text("Queued:", exact=False).count() == 0
            tree = _descendants(proc.pid)
            assert tree, "the fit worker runs under the server"
            t0 = time.monotonic()
            os.kill(proc.pid, signal.SIGTERM)
            # every process of the tree as it was, orphans included (a child that outlives the
            # server is reparented away from it: its descendants no longer list it)
            while (_alive(tree) or proc.poll() is None) and time.monotonic() - t0 < 30:
                time.sleep(0.1)
            gone = time.monotonic() - t0
            print(f"SIGTERM -> server and {len(tree)} children gone: {gone:.1f} s")
            alive = _alive(tree)
            assert proc.poll() is not None and not alive and gone < 10, (gone, alive)
            browser.close()
    finally:
        _stop(proc)
