"""Screenshots of the dashboard on PBC read in days (``docs/screenshots/band_days.png``,
``gaps_days.png``), taken by hand, not collected by pytest::

    .venv/bin/python tests/e2e/days_screenshots.py OUT_DIR

Upload 120 PBC patients (``patient_id, day, channel, value``), set the unit to days in the
Data panel's mapping form, let the dashboard refit, and shoot the gap histogram and the band
(Chromium at /usr/bin/chromium, as the browser test).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the tests' shared helpers
from server_health import wait_until_serving  # noqa: E402

from levy_core.cli.server import streamlit_command

ROOT = Path(__file__).resolve().parents[2]
STATUS = '[data-testid="stStatusWidget"]'
CHART = '[data-testid="stPlotlyChart"]'
NAV = '[data-testid="stTopNav"]'  # the panels' pages (st.navigation at the top)


def idle(page, timeout_s: float = 600) -> None:
    """Until the script run is over, and plotly has laid out."""
    page.wait_for_timeout(500)
    page.wait_for_selector(STATUS, state="detached", timeout=timeout_s * 1000)
    page.wait_for_timeout(1500)


def visible_chart(page, title: str):
    """The first chart on screen whose text holds ``title``."""
    charts = page.locator(CHART)
    for i in range(charts.count()):
        if charts.nth(i).is_visible() and title in charts.nth(i).inner_text():
            return charts.nth(i)
    raise AssertionError(f"no chart titled {title!r} on screen")


def pbc_in_days(out: Path) -> Path:
    frame = pd.read_csv(ROOT / "benchmarks" / "data" / "pbc2_labs.csv.gz", dtype={"patient_id": str})
    keep = sorted(frame["patient_id"].unique(), key=int)[:120]
    path = out / "pbc_days.csv"
    frame[frame["patient_id"].isin(keep)].rename(columns={"time_days": "day"}).to_csv(path, index=False)
    return path


def shoot(url: str, csv: Path, out: Path) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-dev-shm-usage"])
        page = browser.new_context(viewport={"width": 1440, "height": 1400}).new_page()
        page.goto(url)
        page.wait_for_selector(CHART, timeout=600_000)
        idle(page)
        uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Upload a CSV")
        uploader.locator('input[type="file"]').set_input_files(str(csv))
        idle(page)
        page.locator(NAV).get_by_role("link", name="Data", exact=True).click()
        idle(page)
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Unit of a numeric time column").click()
        page.get_by_role("option", name="days", exact=True).click()
        page.get_by_role("button", name="Apply mapping").click()
        idle(page)
        visible_chart(page, "Gaps between").screenshot(path=str(out / "gaps_days.png"))
        page.locator(NAV).get_by_role("link", name="Predictive band", exact=True).click()
        idle(page)
        visible_chart(page, "Predictive band for").screenshot(path=str(out / "band_days.png"))
        browser.close()


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if k not in ("LEVY_DASHBOARD_FAST", "LEVY_DASHBOARD_DATA")}
    with open(out / "streamlit.log", "w") as log:
        proc = subprocess.Popen(streamlit_command(port), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_serving(proc, url, out / "streamlit.log", seconds=120)  # fails, with the log, if it never serves
            shoot(url, pbc_in_days(out), out)
        finally:
            proc.terminate()
            proc.wait(20)


if __name__ == "__main__":
    main()
