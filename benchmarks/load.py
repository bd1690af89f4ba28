"""A shared dashboard server under load: N browser sessions at once, each fitting its own file.

For each N (default 1, 2, 4, 8) a fresh server is started (``streamlit run dashboard/app.py``,
the default pool: ``LEVY_DASHBOARD_FIT_WORKERS`` unset, or ``--fit-workers``), and N
Playwright contexts of one Chromium (Debian's ``/usr/bin/chromium``; never ``playwright
install``) open it at once. Each session:

1. waits for the first band (the bundled sample's shipped model);
2. uploads its own CSV (12 series of the synthetic sample, a different window of series
   per session, so every session's fit is its own) and waits for the band of its own data —
   **first own band** (the first preview drawn while the Lévy model trains, or the model);
3. waits for its model to be final (the twin trained; the page idle) — **fitted**;
4. flips the band level (the slider's range input, by keyboard: 0.89, 0.90, …) ``--flips`` times and times each
   re-render until the page is idle and the band's title shows the new level — **cached
   re-renders**; those made while other sessions' fits were still queued or running are
   counted as "while others fit";
5. downloads its fitted model (Fit page) — then compared with the **single-user run**: the
   same file fitted in this process with the dashboard's default settings and the fit
   workers' one thread (``levy_dashboard.fitting.fits.fit_model``); predictions on a grid must be equal
   bit for bit.

The server's peak memory is sampled from /proc every 0.2 s: the server process alone and
with its fit workers (children). Usage::

    python benchmarks/load.py [--sessions 1 2 4 8] [--flips 4] [--fit-workers N] [--fit-nice N] [--out FILE]

``--fit-nice`` sets the fit workers' niceness (``LEVY_DASHBOARD_FIT_NICE``; default the
pool's, 19; 0: the server's priority, as before the workers were niced).

Prints (and with ``--out`` appends to FILE) one table row per N and a summary line per N.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from levy_core.cli.server import streamlit_command  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
STATUS = '[data-testid="stStatusWidget"]'
BAND_TITLE = """() => { const gd = document.querySelector('.js-plotly-plot');
    return gd && gd.layout && gd.layout.title ? (gd.layout.title.text || '') : ''; }"""
CAPTION_HAS = """(text) => [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .some(e => e.innerText.includes(text))"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = [int(c) for t in Path(f"/proc/{p}/task").iterdir()
                    for c in (t / "children").read_text().split()]
        except OSError:
            kids = []
        out += kids
        todo += kids
    return out


class Memory(threading.Thread):
    """Peak RSS (MiB) of a process alone and with its descendants, sampled every 0.2 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak_server, self.peak_total, self.stop = pid, 0, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            server = _rss_kib(self.pid)
            total = server + sum(_rss_kib(c) for c in _children(self.pid))
            self.peak_server, self.peak_total = max(self.peak_server, server), max(self.peak_total, total)
            time.sleep(0.2)


def session_csv(i: int, folder: Path) -> Path:
    """Session ``i``'s own file: 12 series of the synthetic sample, a window starting at 3·i."""
    df = pd.read_csv(ROOT / "sample_data" / "synthetic_multichannel.csv", dtype={"series_id": str})
    ids = sorted(df["series_id"].unique())
    keep = [ids[(3 * i + k) % len(ids)] for k in range(12)]
    path = folder / f"session_{i}.csv"
    df[df["series_id"].isin(keep)].to_csv(path, index=False)
    return path


async def _idle(page, timeout_s: float = 900) -> None:
    await page.wait_for_timeout(250)
    await page.wait_for_selector(STATUS, state="detached", timeout=timeout_s * 1000)


async def one_session(browser, url: str, i: int, csv: Path, flips: int, state: dict) -> dict:
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1200}, accept_downloads=True)
    page = await ctx.new_page()
    out: dict = {"session": i, "flips": [], "flips_while_fitting": []}
    t_open = time.perf_counter()
    await page.goto(url)
    await page.wait_for_function(CAPTION_HAS, arg="sample: Synthetic multichannel", timeout=600_000)
    out["first_band_s"] = time.perf_counter() - t_open
    await _idle(page)
    up = page.locator('[data-testid="stFileUploader"]').filter(has_text="Upload a CSV").locator('input[type="file"]')
    t0 = time.perf_counter()
    await up.set_input_files(str(csv))
    await page.wait_for_function(CAPTION_HAS, arg=f"upload: {csv.name}", timeout=900_000)
    out["own_band_s"] = time.perf_counter() - t0
    await page.wait_for_function("() => document.body.innerText.includes('MC-Dropout twin fitted') || "
                                 "document.body.innerText.includes('twin could not be trained')", timeout=900_000)
    await _idle(page)
    out["fitted_s"] = time.perf_counter() - t0
    out["twin_failed"] = "twin could not be trained" in await page.evaluate("() => document.body.innerText")
    state["done"] += 1
    slider = page.locator('input[type="range"][aria-label="Band level"]')
    for k in range(flips):
        fitting = state["done"] < state["n"]
        before = await page.evaluate(BAND_TITLE)
        await slider.focus()
        t1 = time.perf_counter()
        await page.keyboard.press("ArrowLeft" if k % 2 == 0 else "ArrowRight")
        await page.wait_for_function("(b) => { const gd = document.querySelector('.js-plotly-plot');"
                                     " return gd && gd.layout.title.text !== b; }", arg=before, timeout=600_000)
        await page.wait_for_selector(STATUS, state="detached", timeout=600_000)  # the run is over
        seconds = time.perf_counter() - t1
        await _idle(page)
        out["flips"].append(seconds)
        if fitting:
            out["flips_while_fitting"].append(seconds)
    await page.locator('[data-testid="stTopNav"]').get_by_role("link", name="Fit", exact=True).click()  # the Fit page
    await _idle(page)
    out["zip"] = None
    for _ in range(3):  # a download the browser cancels (it happens under load) is asked again
        try:
            async with page.expect_download(timeout=300_000) as info:
                await page.get_by_role("button", name="Download the fitted model (zip)").click()
            download = await info.value
            out["zip"] = Path(await download.path()).read_bytes()
            break
        except Exception:  # noqa: BLE001 - playwright's Error: canceled
            await page.wait_for_timeout(1000)
    await ctx.close()
    return out


async def run_sessions(url: str, csvs: list[Path], flips: int) -> list[dict]:
    from playwright.async_api import async_playwright

    state = {"done": 0, "n": len(csvs)}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            return await asyncio.gather(*[one_session(browser, url, i, c, flips, state) for i, c in enumerate(csvs)])
        finally:
            await browser.close()


def single_user_predictions(csv: Path, cache: dict) -> np.ndarray:
    """The file fitted alone, in this process, as the dashboard fits it (default settings, one thread)."""
    if csv.name not in cache:
        from levy_dashboard.fitting import fits

        from levy_core.data import read_csv
        from levy_core.runtime.threads import using_threads

        obs = read_csv(csv)
        with using_threads(1):
            res = fits.fit_model(obs, obs.content_hash(), "single", fits.FitSettings())
        cache[csv.name] = (obs, res.verbs.predict_grid(obs, n_points=20)[["mean", "sigma"]].to_numpy())
    return cache[csv.name]


def server_predictions(zip_bytes: bytes, obs) -> np.ndarray:
    from levy_core.forecast.verbs import FittedVerbs
    from levy_core.serving.modelzip import load_model_zip

    return FittedVerbs(load_model_zip(zip_bytes)).predict_grid(obs, n_points=20)[["mean", "sigma"]].to_numpy()


def run_n(n: int, flips: int, workers: int | None, folder: Path, cache: dict, nice: int | None = None) -> dict:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("LEVY_DASHBOARD_FAST", "LEVY_DASHBOARD_DATA")}
    if workers:
        env["LEVY_DASHBOARD_FIT_WORKERS"] = str(workers)
    if nice is not None:
        env["LEVY_DASHBOARD_FIT_NICE"] = str(nice)
    proc = subprocess.Popen(streamlit_command(port), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(folder / f"server_{n}.log", "w"))  # noqa: SIM115
    mem = Memory(proc.pid)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                time.sleep(0.2)
        mem.start()
        csvs = [session_csv(i, folder) for i in range(n)]
        t0 = time.perf_counter()
        results = asyncio.run(run_sessions(url, csvs, flips))
        wall = time.perf_counter() - t0
    finally:
        mem.stop.set()
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    same = []
    for r, csv in zip(results, csvs, strict=True):
        obs, expected = single_user_predictions(csv, cache)
        zip_bytes = r.pop("zip")
        if zip_bytes is not None:  # None: the download failed three times (not compared)
            same.append(bool(np.array_equal(server_predictions(zip_bytes, obs), expected)))
    flips_all = [s for r in results for s in r["flips"]]
    during = [s for r in results for s in r["flips_while_fitting"]]
    return {"n": n, "wall": wall, "first_band": [r["first_band_s"] for r in results],
            "own_band": [r["own_band_s"] for r in results], "fitted": [r["fitted_s"] for r in results],
            "flips": flips_all, "during": during, "same": same, "twin_failed": sum(r["twin_failed"] for r in results),
            "peak_server_mib": mem.peak_server / 1024, "peak_total_mib": mem.peak_total / 1024}


def _fmt(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{statistics.median(values):.1f} [{min(values):.1f}–{max(values):.1f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--flips", type=int, default=4)
    parser.add_argument("--fit-workers", type=int, default=None)
    parser.add_argument("--fit-nice", type=int, default=None, help="the fit workers' niceness (default: the pool's)")
    parser.add_argument("--out", default=None, help="append the table to this file too")
    args = parser.parse_args(argv)
    buf = io.StringIO()

    def say(line: str) -> None:
        print(line, flush=True)
        buf.write(line + "\n")

    from levy_dashboard.fitting.fit_pool import cores, default_workers, fit_niceness

    say(f"# benchmarks/load.py {' '.join(argv or sys.argv[1:])} — {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, "
        f"{cores()} cores, fit workers {args.fit_workers or default_workers()}, fit niceness "
        f"{fit_niceness() if args.fit_nice is None else args.fit_nice}, this process's {os.nice(0)}, load average before "
        f"{os.getloadavg()[0]:.2f}")
    say("medians [min–max] in seconds; first band: page opened → the sample's band; own band: upload → its first "
        "band (a preview or the model); fitted: upload → final model, page idle; re-render: band level flipped → "
        "new band drawn, page idle")
    say(f"{'N':>2} {'first band':>16} {'own band':>18} {'fitted':>18} {'re-render (all)':>18} "
        f"{'while others fit':>18} {'same as alone':>13} {'peak MiB srv/+workers':>22}")
    cache: dict = {}
    with tempfile.TemporaryDirectory(prefix="levy-load-") as tmp:
        for n in args.sessions:
            r = run_n(n, args.flips, args.fit_workers, Path(tmp), cache, args.fit_nice)
            say(f"{n:>2} {_fmt(r['first_band']):>16} {_fmt(r['own_band']):>18} {_fmt(r['fitted']):>18} "
                f"{_fmt(r['flips']):>18} {_fmt(r['during']):>18} {sum(r['same'])}/{len(r['same']):<11} "
                f"{r['peak_server_mib']:>9.0f}/{r['peak_total_mib']:<12.0f}"
                + (f" (twin refused in {r['twin_failed']} session(s))" if r["twin_failed"] else ""))
            if args.out:  # each N as it comes (a later one may fail)
                with open(args.out, "a") as f:
                    f.write(buf.getvalue())
                buf.seek(0)
                buf.truncate()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
