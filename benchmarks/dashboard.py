"""How fast the dashboard answers: first band after start-up, and cached re-renders.

(a) **First band in a browser**: a fresh ``streamlit run dashboard/app.py`` (what ``make
    dashboard`` starts: empty caches), then the page opened in Chromium on the default
    sample (Synthetic multichannel), with no click: seconds from the page being opened
    until the predictive band is drawn — from the sample's shipped model, no fit (the
    requirement: ≤ 5 s on a quiet machine). Also reported: when the server answered
    ``/_stcore/health`` and the band's time from the server's start. Chromium (Debian's,
    driven by Playwright) is started before the clock.
(b) **Re-render after a change** (``streamlit.testing.v1.AppTest``, no browser): the
    script-run time after changing the series, the channel or the band level, once the
    model is fitted. "first visit" computes that series/channel's grid (one model pass, with
    MC-Dropout's T passes for the overlay); "cached" comes back to a series/channel already
    seen, which is what the caches are for. The browser then only redraws the figure.

Usage::

    python benchmarks/dashboard.py [--runs 3] [--changes 6]

Needs ``/usr/bin/chromium`` and the ``playwright`` package for (a); (b) runs anywhere.
Prints one table per part. Numbers depend on the machine and its load: run it idle.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import socket
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path

from levy_core.cli.server import streamlit_command

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "dashboard" / "app.py"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
BAND_DRAWN = """() => { const gd = document.querySelector('.js-plotly-plot');
    return !!(gd && gd._fullData && gd._fullData.some(t => t.name === 'Lévy mean')
              && gd.querySelector('.main-svg .scatterlayer path')); }"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def first_band(runs: int) -> list[tuple[float, float, float]]:
    """[(seconds to health, to the first band drawn, from the page opened to that band)] per fresh server."""
    from playwright.sync_api import sync_playwright

    out = []
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LEVY_DASHBOARD_FAST", "LEVY_DASHBOARD_DATA")
    }
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for _ in range(runs):
            port = _free_port()
            url = f"http://127.0.0.1:{port}"
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                streamlit_command(port),
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                while True:
                    try:
                        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                            if r.read().strip() == b"ok":
                                break
                    except OSError:
                        time.sleep(0.05)
                    if proc.poll() is not None:
                        raise RuntimeError("streamlit exited")
                t_health = time.perf_counter() - t0
                t_open = time.perf_counter()
                page.goto(url)
                page.wait_for_function(BAND_DRAWN, timeout=300_000, polling=100)
                now = time.perf_counter()
                out.append((t_health, now - t0, now - t_open))
            finally:
                page.close()
                os.kill(proc.pid, signal.SIGTERM)
                proc.wait(timeout=20)
        browser.close()
    return out


def rerender(changes: int) -> dict[str, dict[str, list[float]]]:
    """AppTest script-run seconds per kind of change and visit:
    ``{"series": {"first visit": [...], "cached": [...]}, ...}``."""
    from streamlit.testing.v1 import AppTest

    os.environ.pop("LEVY_DASHBOARD_FAST", None)
    os.environ.pop("LEVY_DASHBOARD_DATA", None)
    at = AppTest.from_file(str(APP), default_timeout=600).run()
    assert not at.exception, at.exception
    times: dict[str, dict[str, list[float]]] = {
        k: {"first visit": [], "cached": []} for k in ("series", "channel", "level")
    }

    def timed(widget, value, kind: str, visit: str) -> None:
        widget.set_value(value)
        t = time.perf_counter()
        at.run()
        times[kind][visit].append(time.perf_counter() - t)
        assert not at.exception, at.exception

    series = [o.split(" · ")[0] for o in at.selectbox(key="series").options][: max(2, changes)]
    for visit in ("first visit", "cached"):
        for sid in series[1:] + series[:1]:
            timed(at.selectbox(key="series"), sid, "series", visit)
    for visit in ("first visit", "cached"):
        for ch in at.selectbox(key="channel").options[1:] + at.selectbox(key="channel").options[:1]:
            timed(at.selectbox(key="channel"), ch, "channel", visit)
    levels = [0.5, 0.6, 0.7, 0.8, 0.95, 0.9][:changes]
    for visit in (
        "first visit",
        "cached",
    ):  # bands are recomputed from cached predictions either way
        for lvl in levels:
            timed(at.slider(key="level"), lvl, "level", visit)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh servers for (a)")
    ap.add_argument("--changes", type=int, default=6, help="changes of each kind for (b)")
    ap.add_argument("--skip-browser", action="store_true", help="only (b)")
    args = ap.parse_args()
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPU cores, Python "
        f"{platform.python_version()}"
    )

    if not args.skip_browser:
        if not Path(CHROMIUM).exists():
            print(f"(a) skipped: {CHROMIUM} missing")
        else:
            res = first_band(args.runs)
            print("\n(a) first band on the default sample (its shipped model, no fit), load average "
                  f"{os.getloadavg()[0]:.2f} before")
            print(f"{'run':>4} {'server healthy (s)':>19} {'band drawn (s)':>15} {'page opened → band (s)':>23}")
            for i, (h, b, o) in enumerate(res, 1):
                print(f"{i:>4} {h:>19.1f} {b:>15.1f} {o:>23.1f}")
            print(
                f"{'median':>4} {statistics.median(r[0] for r in res):>19.1f} "
                f"{statistics.median(r[1] for r in res):>15.1f} {statistics.median(r[2] for r in res):>23.1f}"
            )

    times = rerender(args.changes)
    print("\n(b) AppTest script-run time after a change (s)")
    print(f"{'change':>8} {'visit':>12} {'n':>3} {'median':>8} {'max':>8}")
    for kind, by_visit in times.items():
        for visit, ts in by_visit.items():
            print(
                f"{kind:>8} {visit:>12} {len(ts):>3} {statistics.median(ts):>8.3f} {max(ts):>8.3f}"
            )


if __name__ == "__main__":
    main()
