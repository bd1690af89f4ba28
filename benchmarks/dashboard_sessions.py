"""The dashboard server's memory with N sessions, each holding an upload near the size limit.

Starts ``levy dashboard`` (``streamlit run``, one fit worker) as the shared-server guide
describes, opens N browser sessions (Debian's Chromium through Playwright, one context each:
N independent Streamlit sessions), and in each uploads its own CSV of about ``--mb`` MB (the
bundled synthetic sample repeated with new series ids; the dashboard reads up to 50 MiB). After
each session's data is read and its fit is queued or running, the resident memory of the
server and every process under it (its fit workers) is read from /proc; then every session
is closed and the memory read again. Prints one row per N.

Usage::

    python benchmarks/dashboard_sessions.py [--sessions 4] [--mb 40]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from test_browser import ARGS, CHROMIUM, _data_uploader  # noqa: E402
from test_fit_owner_browser import _descendants, _start, _stop  # noqa: E402

SAMPLE = ROOT / "sample_data" / "synthetic_multichannel.csv"


def upload_bytes(mb: float, tag: int) -> bytes:
    """A long CSV of about ``mb`` MB: the synthetic sample repeated, series ids tagged per copy."""
    df = pd.read_csv(SAMPLE, dtype={"series_id": str})
    copies = max(1, int(mb * 1e6 / SAMPLE.stat().st_size))
    rng = np.random.default_rng(tag)
    out = pd.concat([df.assign(series_id=df["series_id"] + f"-{tag}-{k}",
                               value=df["value"] + rng.normal(0, 0.01, len(df))) for k in range(copies)])
    buf = io.StringIO()
    out.to_csv(buf, index=False)
    return buf.getvalue().encode()


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and every process under it, MiB."""
    total = 0
    for p in {pid, *_descendants(pid)}:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--mb", type=float, default=40.0)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    proc, url = _start(Path(tempfile.mkdtemp(prefix="levy-sessions-")))  # one fit worker, as the e2e tests
    try:
        print(f"server up: {rss_mib(proc.pid):.0f} MiB (server and its fit workers)")
        files = [upload_bytes(args.mb, k) for k in range(args.sessions)]
        print(f"uploads: {len(files[0]) / 1e6:.1f} MB each")
        print("| sessions | RSS, MiB (server + workers) | peak while reading, MiB |")
        print("|---|---|---|")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            contexts = []
            peak = 0.0
            for n, data in enumerate(files, start=1):
                context = browser.new_context(viewport={"width": 1440, "height": 1000})
                page = context.new_page()
                page.goto(url)
                page.wait_for_selector('[data-testid="stFileUploader"]', timeout=120_000)
                page.get_by_text("Upload a CSV", exact=True).first.click()
                _data_uploader(page).set_input_files({"name": f"big{n}.csv", "mimeType": "text/csv", "buffer": data})
                t0 = time.time()
                while time.time() - t0 < 180:  # until the page says its data is read (or a fit has started)
                    peak = max(peak, rss_mib(proc.pid))
                    text = page.inner_text("body")
                    if "Training the" in text or "Queued" in text or "Preparing" in text or "observations of" in text:
                        break
                    time.sleep(0.5)
                time.sleep(3)
                contexts.append(context)
                print(f"| {n} | {rss_mib(proc.pid):.0f} | {peak:.0f} |", flush=True)
            for context in contexts:
                context.close()
            time.sleep(10)  # the pool drops the closed sessions' fits within seconds
            print(f"every session closed, 10 s later: {rss_mib(proc.pid):.0f} MiB")
            browser.close()
    finally:
        _stop(proc)


if __name__ == "__main__":
    main()
