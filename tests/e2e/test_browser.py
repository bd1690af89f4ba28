"""The real app in a real browser: Playwright driving Debian's Chromium (never ``playwright
install``).

Starts ``streamlit run dashboard/app.py`` on a free port (its own PID, stopped at the end),
waits for the first band on the bundled sample, uploads a long-form CSV, waits for the
refit and the charts, selects a held-out query by clicking it on the band chart and one on
the evidence scatter, downloads the HTML report and opens it with the network blocked,
asserts no exception element anywhere, and saves a screenshot of each panel (opened from the top navigation) into
``docs/screenshots/`` (the README shows them), and a close-up of the calibration page's band per
query (coverage by quintile with error bars, risk–coverage with the per-channel constant). It downloads the fitted model as a zip and, in
a fresh session, sees tampered zips (a pickle inside, a path out of the folder, a huge
model.json) refused with a message, opens the real one and applies it to a new upload
without refitting: the band, the trust ranking and the Monitoring verdicts
(``saved_model_band.png``, ``monitoring.png``). Then it opens the bundled one-series sample:
a forecast on rolling origins, whose band runs past the last observation and widens
(``future_band.png``), and whose Backtest panel shows both methods' coverage over time
(``backtest.png``); no page text names a model pseudo-series.

Skipped when /usr/bin/chromium (or the playwright package) is missing, unless
``LEVY_REQUIRE_BROWSER=1`` (CI), then it fails.
"""

from __future__ import annotations

import os
import pickle
import re
import signal
import socket
import subprocess
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from server_health import wait_until_serving  # the other browser tests import it from here too

from levy_core.cli.server import streamlit_command
from levy_core.pipeline.model_loading import MAX_MODEL_JSON_BYTES

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(os.environ.get("LEVY_SCREENSHOT_DIR", ROOT / "docs" / "screenshots"))
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHART = '[data-testid="stPlotlyChart"] .main-svg'
STATUS = '[data-testid="stStatusWidget"]'
EXCEPTION = '[data-testid="stException"]'
NAV = '[data-testid="stTopNav"]'  # the panels' pages (st.navigation at the top)
WIDTH = 1440
# index of the scatter point (a query of another series) farthest from every other point, so
# that a click on it cannot pick a neighbour ("closest" hover picks the nearest point)
ISOLATED_POINT = """(sid) => {
    const gd = document.querySelectorAll('.js-plotly-plot')[1];
    const cd = gd._fullData[0].customdata;
    const pts = [...gd.querySelectorAll('.scatterlayer .trace')].flatMap(t =>
        [...t.querySelectorAll('path.point')].map(p => p.getBoundingClientRect()));
    const mine = [...gd.querySelectorAll('.scatterlayer .trace')[0].querySelectorAll('path.point')]
        .map(p => p.getBoundingClientRect());
    let best = -1, bestGap = -1;
    mine.forEach((r, i) => {
        if (String(cd[i][0]) === sid) return;
        let gap = Infinity;
        for (const q of pts) {
            if (q === r) continue;
            const d = Math.hypot(q.x - r.x, q.y - r.y);
            if (d > 0.5 && d < gap) gap = d;
        }
        if (gap > bestGap) { bestGap = gap; best = i; }
    });
    return best; }"""


def need_browser():
    """Playwright's ``sync_playwright`` with Debian's Chromium, or a skip (a failure under
    ``LEVY_REQUIRE_BROWSER=1``, as in CI); every browser test starts with it."""
    required = os.environ.get("LEVY_REQUIRE_BROWSER") == "1"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - depends on the machine
        if required:
            pytest.fail("LEVY_REQUIRE_BROWSER=1 but the playwright package is not installed")
        pytest.skip("playwright is not installed")
    if not CHROMIUM.exists():
        if required:
            pytest.fail(
                f"LEVY_REQUIRE_BROWSER=1 but {CHROMIUM} is missing (apt-get install chromium)"
            )
        pytest.skip(f"{CHROMIUM} is missing")
    return sync_playwright


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path):
    """``streamlit run`` on a free port with the default (short) fit; yields the URL."""
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LEVY_DASHBOARD_FAST", "LEVY_DASHBOARD_DATA")
    }
    log = open(tmp_path / "streamlit.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        streamlit_command(port),
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    pid = proc.pid  # ours alone: only this PID is stopped
    url = f"http://127.0.0.1:{port}"
    try:
        log.flush()
        wait_until_serving(proc, url, tmp_path / "streamlit.log")
        yield url
    finally:
        if proc.poll() is None:
            os.kill(pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(pid, signal.SIGKILL)
                proc.wait(timeout=5)
        log.close()


def _idle(page, timeout_s: float = 120) -> None:
    """Wait until the script run is over (the status widget is gone) and a chart is drawn."""
    page.wait_for_timeout(400)
    page.wait_for_selector(STATUS, state="detached", timeout=timeout_s * 1000)
    page.wait_for_selector(CHART, timeout=timeout_s * 1000)
    page.wait_for_timeout(600)  # plotly finishes laying out
    assert page.locator(EXCEPTION).count() == 0, page.locator(EXCEPTION).first.inner_text()


def _drawn_charts(page) -> int:
    """Charts whose figure has traces and whose SVG has drawn marks (not a blank frame)."""
    return page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].filter(gd =>
        gd.data && gd.data.length > 0 &&
        gd.querySelectorAll('.main-svg path, .main-svg rect.bg, .main-svg text').length > 10
        ).length""")


def _shot(page, name: str) -> Path:
    """Screenshot with a viewport as tall as the panel's content."""
    height = page.evaluate("""() => {
        const m = document.querySelector('[data-testid="stMain"]') || document.body;
        const inner = m.querySelector('[data-testid="stMainBlockContainer"]') || m;
        return Math.ceil(inner.getBoundingClientRect().height + 140); }""")
    page.set_viewport_size({"width": WIDTH, "height": int(min(max(height, 900), 4200))})
    page.wait_for_timeout(900)  # plotly re-lays out on resize
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size > 20_000, f"{path} looks blank"
    return path


def open_panel(page, label: str) -> None:
    """Click panel ``label``'s link in the top navigation (each panel is a page at its own URL)."""
    page.locator(NAV).get_by_role("link", name=label, exact=True).click()


def _tab(page, label: str, min_charts: int) -> None:
    open_panel(page, label)
    _idle(page)
    page.wait_for_function(
        f"""() => [...document.querySelectorAll('.js-plotly-plot')]
        .filter(gd => gd.data && gd.data.length).length >= {min_charts}""",
        timeout=120_000,
    )
    assert _drawn_charts(page) >= min_charts, f"{label}: fewer than {min_charts} drawn charts"


PER_QUERY = """() => {
    const figs = [...document.querySelectorAll('.js-plotly-plot')].filter(gd => gd._fullData);
    const named = (gd, prefix) => gd._fullData.some(d => String(d.name || '').startsWith(prefix));
    const quint = figs.find(gd => named(gd, 'nominal level'));  // the quintile panels' level line
    const risk = figs.find(gd => named(gd, 'oracle (sorted by actual error)'));
    if (!quint || !risk) return null;
    const heads = [...document.querySelectorAll('h1, h2, h3')];
    const top = heads.find(h => h.innerText.includes('Does the band hold per query'));
    const end = heads.find(h => h.innerText.includes('Does the conformal band hold its level?'));
    const t = top.getBoundingClientRect(), e = end.getBoundingClientRect();
    return {errorbars: quint.querySelectorAll('g.errorbar path').length,
            points: quint._fullData.filter(d => d.mode === 'markers').length,
            reference: risk._fullData.some(d => d.name.startsWith('per-channel constant')),
            clip: {x: 0, y: Math.max(t.top - 12, 0), width: window.innerWidth, height: e.top - t.top}}; }"""


def _per_query_views(page) -> None:
    """The calibration page's band per query: both methods' quintile points with their error bars
    drawn in three panels, the per-channel constant's line on the risk–coverage plot; a close-up
    screenshot of the section (``calibration_per_query.png``)."""
    found = page.evaluate(PER_QUERY)
    assert found, "the calibration page has no quintile panels or no risk–coverage plot"
    assert found["points"] == 6 and found["errorbars"] >= 20, found  # 2 methods × 3 panels, 5 bars each
    assert found["reference"], "no per-channel constant line on the risk–coverage plot"
    assert found["clip"]["height"] > 700, found["clip"]
    path = SHOTS / "calibration_per_query.png"
    page.screenshot(path=str(path), clip=found["clip"])
    assert path.stat().st_size > 20_000, f"{path} looks blank"


def _click_heldout_point(page) -> None:
    """Click the held-out diamond farthest from the mean line on the band chart."""
    uid = page.evaluate("""() => {
        const gd = document.querySelectorAll('.js-plotly-plot')[0];
        const t = gd._fullData.find(t => t.name === 'held-out observations');
        return t ? t.uid : null; }""")
    assert uid, "the band chart has no held-out observations trace"
    points = page.locator(f"g.trace{uid} path.point")
    n = points.count()
    assert n > 0, "no held-out point drawn"
    best, best_gap = 0, -1.0
    mean_uid = page.evaluate("""() => document.querySelectorAll('.js-plotly-plot')[0]
        ._fullData.find(t => t.name === 'Lévy mean').uid""")
    mean_path = page.locator(f"g.trace{mean_uid} path.js-line").first.bounding_box()
    for i in range(0, n, max(1, n // 25)):
        box = points.nth(i).bounding_box()
        if box is None:
            continue
        gap = abs(box["y"] - (mean_path["y"] + mean_path["height"] / 2))
        if gap > best_gap:
            best, best_gap = i, gap
    points.nth(best).scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    box = points.nth(best).bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def _selected_text(page) -> str:
    """The "Selected query: series …, channel …, t = …" line."""
    return page.locator('[data-testid="stMarkdown"]', has_text="Selected query").first.inner_text()


def _data_uploader(page):
    return page.locator('[data-testid="stFileUploader"]').filter(has_text="Upload a CSV").locator(
        'input[type="file"]'
    )


def _model_uploader(page):
    return page.locator('[data-testid="stFileUploader"]').filter(has_text="Open a saved model").locator(
        'input[type="file"]'
    )


def _long_csv(path: Path, n_series: int = 16, *, first: bool = False) -> Path:
    df = pd.read_csv(ROOT / "sample_data" / "synthetic_multichannel.csv", dtype={"series_id": str})
    ids = sorted(df["series_id"].unique())
    keep = ids[:n_series] if first else ids[-n_series:]
    df = df[df["series_id"].isin(keep)].rename(
        columns={"series_id": "patient_id", "channel": "variable"}
    )
    df.to_csv(path, index=False)
    return path


def test_dashboard_in_chromium(server, tmp_path):
    sync_playwright = need_browser()

    csv = _long_csv(tmp_path / "my_sensors.csv")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            context = browser.new_context(
                viewport={"width": WIDTH, "height": 1400}, accept_downloads=True
            )
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))

            # 1. first band on the bundled sample, no clicks
            page.goto(server)
            page.wait_for_selector(CHART, timeout=120_000)
            _idle(page)
            assert page.get_by_text("on sample: Synthetic multichannel").count() > 0

            # 2. upload a CSV; the app refits on it and redraws
            _data_uploader(page).set_input_files(str(csv))
            # the live progress bar while it fits (the fit takes seconds: it must be seen)
            page.get_by_text("early-stopping MSE", exact=False).first.wait_for(timeout=120_000)  # a fit worker starts first
            page.wait_for_timeout(300)
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "fitting.png"))
            # the final model (previews of the Lévy model come first, then it, then its twin)
            page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
                .some(e => e.innerText.includes('twin fitted') && e.innerText.includes('on upload: my_sensors.csv'))""",
                                   timeout=300_000)
            _idle(page)
            assert _drawn_charts(page) >= 2

            # 3. select a held-out query on the band chart: the observations it drew on appear
            _click_heldout_point(page)
            page.get_by_text("Selected query", exact=False).first.wait_for(timeout=60_000)
            _idle(page)
            drawn = page.evaluate("""() => document.querySelectorAll('.js-plotly-plot')[0]
                ._fullData.filter(t => t.name && t.name.startsWith('drawn on by the query'))
                .length""")
            assert drawn == 1
            # ... and one on the evidence scatter: a query of another series, which it opens
            before = _selected_text(page)
            series_now = before.split("series ", 1)[1].split(",", 1)[0]
            index = page.evaluate(ISOLATED_POINT, series_now)
            assert index >= 0, "no held-out query of another series on the scatter"
            point = (
                (page.locator(".js-plotly-plot").nth(1).locator(".scatterlayer .trace").first)
                .locator("path.point")
                .nth(index)
            )
            point.scroll_into_view_if_needed()
            page.wait_for_timeout(300)
            box = point.bounding_box()
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.wait_for_function(
                """(old) => [...document.querySelectorAll('[data-testid="stMarkdown"]')]
                    .some(m => m.innerText.includes('Selected query')
                               && !m.innerText.includes(old))""",
                arg=before,
                timeout=60_000,
            )
            _idle(page)
            after = _selected_text(page)
            assert after != before and f"series {series_now}," not in after
            assert page.get_by_text("Attention weight by channel", exact=False).count() > 0
            page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
            _shot(page, "band")

            # 4. every other panel, one screenshot each
            for label, name, charts in [
                ("Data", "data", 3),
                ("Fit", "fit", 1),
                ("MC-Dropout", "mc_dropout", 2),
                ("Calibration", "calibration", 5),
                ("Trust ranking", "ranking", 1),
                ("Check the identity", "identity", 1),
                ("Watch", "watch", 1),  # the replay of the test series, flags marked
                ("Measure next", "advise", 1),  # the ranked measurements, the band with the first
            ]:
                _tab(page, label, charts)
                _shot(page, name)
                if name == "calibration":  # the band per query, close up, while the page is tall
                    _per_query_views(page)
                page.set_viewport_size({"width": WIDTH, "height": 1400})

            # 5. the stakeholder report downloads and opens with the network blocked
            _tab(page, "Calibration", 5)
            assert page.get_by_text("Does the conformal band hold its level?").count() == 1
            with page.expect_download(timeout=120_000) as dl:
                page.get_by_role("button", name="Download the report (HTML)").click()
            report = tmp_path / "report.html"
            dl.value.save_as(report)
            text = report.read_text(encoding="utf-8")
            assert re.search(r"<script[^>]*\bsrc\s*=", text, re.IGNORECASE) is None
            assert "Does the conformal band hold its level?" in text
            assert "Coverage by quintile of width, evidence and lead" in text
            assert "Risk–coverage against the per-channel constant" in text
            offline = browser.new_context(viewport={"width": 1200, "height": 1000})
            offline.route(
                "**/*",
                lambda route: (
                    route.continue_() if route.request.url.startswith("file:") else route.abort()
                ),
            )
            rp = offline.new_page()
            rp.goto(report.as_uri())
            rp.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 5",
                timeout=60_000,
            )
            offline.close()

            # 6. the fitted model downloads as a zip; a fresh session refuses tampered zips, opens
            # the real one and scores a new upload with it, without refitting
            _tab(page, "Fit", 1)
            with page.expect_download(timeout=120_000) as dl:
                page.get_by_role("button", name="Download the fitted model (zip)").click()
            model_zip = tmp_path / "levy_model.zip"
            dl.value.save_as(model_zip)
            _saved_model(browser, server, model_zip, tmp_path, errors)

            # 7. one series: a forecast on rolling origins, the band past the end, the backtest
            _one_series(page)

            assert page.locator(EXCEPTION).count() == 0
            assert not errors, errors
        finally:
            browser.close()


PSEUDO = re.compile(r"\w@\d+|@end")  # a model-space pseudo-series id (never shown)
FUTURE_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')].some(gd => gd._fullData &&
    gd._fullData.some(t => t.name === 'observations the forecast draws on'))"""
FUTURE_BAND = """() => {
    const gd = document.querySelectorAll('.js-plotly-plot')[0];
    const band = gd._fullData.find(t => t.name && t.name.startsWith('Lévy ') && t.name.includes('band'));
    const obs = gd._fullData.find(t => t.name === 'observations the forecast draws on');
    if (!band || !obs) return null;
    const n = band.x.length / 2, t = x => new Date(x).getTime();
    return {name: band.name, first: t(band.x[0]), end: t(band.x[n - 1]),
            last_obs: Math.max(...obs.x.map(t)),
            width_first: band.y[0] - band.y[2 * n - 1], width_last: band.y[n - 1] - band.y[n]}; }"""


def _one_series(page) -> None:
    """Open the bundled one-series sample: it is fitted as a forecast on rolling origins; the
    band panel shows the band past the last observation, widening, and the Backtest panel
    both methods' coverage over time; no view names a pseudo-series."""
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Bundled sample", exact=True).click()
    _idle(page)
    sidebar.locator('[data-testid="stSelectbox"]').filter(has_text="Sample").click()
    page.get_by_role("option", name="Single sensor series").click()
    page.get_by_text("on sample: Single sensor series", exact=False).first.wait_for(timeout=180_000)
    open_panel(page, "Predictive band")
    _idle(page)
    page.wait_for_function(FUTURE_DRAWN, timeout=120_000)
    band = page.evaluate(FUTURE_BAND)
    assert band and "adaptive conformal" in band["name"], band
    assert band["first"] > band["last_obs"], band  # past the last observation
    assert band["width_last"] > band["width_first"], band  # widening with the horizon
    assert page.get_by_text("Gibbs & Candès", exact=False).count() > 0
    assert not PSEUDO.search(page.locator('[data-testid="stMain"]').inner_text())
    page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
    _shot(page, "future_band")
    page.set_viewport_size({"width": WIDTH, "height": 1400})
    _tab(page, "Backtest", 2)
    assert page.get_by_text("Guarantee in use", exact=False).count() > 0
    names = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .flatMap(gd => gd._fullData.map(t => t.name))""")
    assert {"Lévy — adaptive", "Lévy — split conformal", "adaptive conformal 90 % band"} <= set(names)
    assert not PSEUDO.search(page.locator('[data-testid="stMain"]').inner_text())
    _shot(page, "backtest")
    page.set_viewport_size({"width": WIDTH, "height": 1400})


def _tampered_zips(model_zip: Path, folder: Path) -> list[tuple[Path, str]]:
    """(zip, the message it is refused with): a pickle inside, a path that escapes the folder,
    a model.json that would unpack to more than 64 MiB."""
    with zipfile.ZipFile(model_zip) as z:
        files = {name: z.read(name) for name in z.namelist()}
    cases = [
        ("pickled.zip", {**files, "weights.pkl": pickle.dumps({"w": [1.0]})}, "pickled files"),
        ("escaping.zip", {**files, "../../etc/model.json": files["model.json"]}, "escapes the model"),
        ("huge.zip", {**files, "model.json": b" " * (MAX_MODEL_JSON_BYTES + 1)}, "would unpack to"),
    ]
    out = []
    for name, members, message in cases:
        with zipfile.ZipFile(folder / name, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for member, data in members.items():
                z.writestr(member, data)
        out.append((folder / name, message))
    return out


def _saved_model(browser, server: str, model_zip: Path, tmp_path: Path, errors: list[str]) -> None:
    """A fresh session (its own browser context): tampered zips are refused with a message and
    the current model kept; the saved model opens and scores a new upload with no fit (no
    progress bar): its band, the trust ranking of the new series and the Monitoring verdicts."""
    context = browser.new_context(viewport={"width": WIDTH, "height": 1400})
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(server)
        page.wait_for_selector(CHART, timeout=120_000)
        _idle(page)
        sidebar = page.locator('[data-testid="stSidebar"]')
        for path, message in _tampered_zips(model_zip, tmp_path):
            _model_uploader(page).set_input_files(str(path))
            sidebar.get_by_text(message, exact=False).first.wait_for(timeout=60_000)
            _idle(page)
            assert sidebar.get_by_text("The current model is kept", exact=False).count() > 0
            assert page.get_by_text("on sample: Synthetic multichannel").count() > 0, "the model is kept"
        _model_uploader(page).set_input_files(str(model_zip))
        sidebar.get_by_text("In use: the saved model levy_model.zip", exact=False).wait_for(timeout=60_000)
        _idle(page)
        assert sidebar.locator('[data-testid="stAlertContentError"]').count() == 0
        _data_uploader(page).set_input_files(str(_long_csv(tmp_path / "new_ward.csv", 12, first=True)))
        page.get_by_text("applied without refitting to upload: new_ward.csv", exact=False).first.wait_for(
            timeout=120_000
        )
        _idle(page)
        assert page.get_by_text("early-stopping MSE", exact=False).count() == 0, "no fit ran"
        assert _drawn_charts(page) >= 2, "the band and evidence vs disagreement"
        names = page.evaluate("""() => document.querySelectorAll('.js-plotly-plot')[0]
            ._fullData.map(t => t.name)""")
        assert "Lévy mean" in names and "held-out observations" in names, names
        page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
        _shot(page, "saved_model_band")
        page.set_viewport_size({"width": WIDTH, "height": 1400})
        _tab(page, "Trust ranking", 1)
        assert page.get_by_text("12 series ranked by trust", exact=False).count() == 1
        _tab(page, "Monitoring", 1)
        main = page.locator('[data-testid="stMain"]')
        assert main.get_by_text("Monitoring: does the band still hold", exact=False).count() == 1
        assert main.get_by_text("The band still holds", exact=False).count() + main.get_by_text(
            "The band does not hold everywhere", exact=False).count() == 1
        verdicts = main.locator('[data-testid="stDataFrame"]')
        assert verdicts.count() == 2, "per level and per channel"
        line = main.locator('[data-testid="stMarkdown"]', has_text="prints them").first.inner_text()
        assert len(re.findall(r"\d+ % [01]\.\d{3} (?:holds|OUTSIDE) \[(?:holds|outside)\]", line)) == 4, line
        _shot(page, "monitoring")
    finally:
        context.close()
