"""Every panel's page at its own URL, opened directly in a real browser (Playwright driving
Debian's Chromium; never ``playwright install``).

One ``streamlit run`` (the ``server`` fixture of ``test_browser.py``: a free port, its own PID,
stopped at the end). The root URL opens the default panel's URL (``/band``); then, for each
panel, a fresh page load at ``http://HOST:PORT/<url path>`` (a new session):
the bundled sample's model is opened as on any first load, the page's own content is drawn
(its charts with traces and marks, or, for the Backtest page of a fit on many series, the
message that says why it has none), the top navigation marks that page, the sidebar is
there, no exception element, no page error; a screenshot of each page is saved as
``docs/screenshots/page_<url path>.png``. Last, on the ranking page, a picked series' link
opens the band's page on it.

Skipped when /usr/bin/chromium (or the playwright package) is missing, unless
``LEVY_REQUIRE_BROWSER=1`` (CI), then it fails.
"""

from __future__ import annotations

import pytest
from levy_dashboard.session import state
from test_browser import (
    ARGS,
    CHROMIUM,
    EXCEPTION,
    NAV,
    STATUS,
    WIDTH,
    _drawn_charts,
    _shot,
    need_browser,
    server,
)

pytestmark = pytest.mark.e2e

__all__ = ["server"]  # the fixture, shared with test_browser.py

# what each page draws on the bundled sample: its number of charts, or (0) the text it shows
# instead (a fit on many series walks no rolling origins)
PAGE_CONTENT: dict[str, int | str] = {
    state.PANEL_DATA: 3,
    state.PANEL_FIT: 1,
    state.PANEL_BAND: 2,
    state.PANEL_ADVISE: 1,
    state.PANEL_MC: 2,
    state.PANEL_CALIBRATION: 5,
    state.PANEL_BACKTEST: "The backtest is for forecasts on rolling origins",
    state.PANEL_RANKING: 1,
    state.PANEL_MONITORING: 1,
    state.PANEL_WATCH: 1,
    state.PANEL_IDENTITY: 1,
}
TRACED = """(n) => [...document.querySelectorAll('.js-plotly-plot')]
    .filter(gd => gd.data && gd.data.length).length >= n"""


def _page_drawn(page, content: int | str) -> None:
    """Until the page's own content is drawn and its script run is over."""
    if isinstance(content, str):
        page.locator('[data-testid="stMain"]').get_by_text(content, exact=False).first.wait_for(timeout=180_000)
    else:
        page.wait_for_function(TRACED, arg=content, timeout=180_000)
    page.wait_for_timeout(400)
    page.wait_for_selector(STATUS, state="detached", timeout=180_000)
    page.wait_for_timeout(800)  # plotly finishes laying out


def _ranking_links_to_the_band(context, server: str, errors: list[str]) -> None:
    """On /ranking, a series picked, its link opens /band on that series."""
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/{state.PANEL_URLS[state.PANEL_RANKING]}")
    _page_drawn(page, PAGE_CONTENT[state.PANEL_RANKING])
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Series for the band view").click()
    options = page.get_by_role("option")
    options.first.wait_for(timeout=60_000)
    # an option named, not "the last one": the dropdown's list renders lazily, so "last" can be
    # another element by the time it is clicked than when its text was read
    target = options.nth(1 if options.count() > 1 else 0).inner_text().strip()
    page.get_by_role("option", name=target, exact=True).click()
    link = page.get_by_role("link", name=f"Open series {target} on the band page")
    link.wait_for(timeout=120_000)
    page.wait_for_selector(STATUS, state="detached", timeout=60_000)
    link.click()
    page.wait_for_url(f"{server}/{state.PANEL_URLS[state.PANEL_BAND]}", timeout=60_000)
    _page_drawn(page, PAGE_CONTENT[state.PANEL_BAND])
    title = page.evaluate("() => document.querySelectorAll('.js-plotly-plot')[0].layout.title.text")
    assert f"series {target}," in title, (target, title)
    assert page.locator(EXCEPTION).count() == 0
    page.close()


def test_every_panel_opens_at_its_own_url(server):
    sync_playwright = need_browser()
    assert set(PAGE_CONTENT) == set(state.PANELS) == set(state.PANEL_URLS)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            context = browser.new_context(viewport={"width": WIDTH, "height": 1400})
            page = context.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server)
            _page_drawn(page, PAGE_CONTENT[state.DEFAULT_PANEL])
            assert page.url == f"{server}/{state.PANEL_URLS[state.DEFAULT_PANEL]}", page.url
            current = page.locator(NAV).locator('a[aria-current="page"]')
            assert current.count() == 1 and current.inner_text().strip() == state.DEFAULT_PANEL
            names = page.evaluate("() => document.querySelectorAll('.js-plotly-plot')[0]._fullData.map(t => t.name)")
            assert "Lévy mean" in names and "held-out observations" in names, names
            assert page.locator(EXCEPTION).count() == 0
            page.close()
            for panel, url_path in state.PANEL_URLS.items():
                page = context.new_page()  # a fresh load at the page's URL: a new session
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(f"{server}/{url_path}")
                content = PAGE_CONTENT[panel]
                _page_drawn(page, content)
                assert page.url == f"{server}/{url_path}", f"{panel}: moved to {page.url}"
                current = page.locator(NAV).locator('a[aria-current="page"]')
                assert current.count() == 1 and current.inner_text().strip() == panel, panel
                assert page.locator(EXCEPTION).count() == 0, page.locator(EXCEPTION).first.inner_text()
                assert page.get_by_text("on sample: Synthetic multichannel", exact=False).count() > 0, panel
                sidebar = page.locator('[data-testid="stSidebar"]')
                assert sidebar.get_by_text("1 · Data").count() == 1, f"{panel}: no sidebar"
                drawn = _drawn_charts(page)
                if isinstance(content, int):
                    assert drawn >= content, f"{panel}: {drawn} of {content} charts drawn"
                else:
                    assert drawn == 0, f"{panel}: charts of another page"
                page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
                _shot(page, f"page_{url_path}")
                page.close()
            _ranking_links_to_the_band(context, server, errors)
            assert not errors, errors
        finally:
            browser.close()
