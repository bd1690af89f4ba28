"""The documentation site in a real browser, offline: a page with display math (the measure-next
guide's two ``$$`` blocks) opened from the built site (``docs_site.built_site``) in Debian's
Chromium through Playwright (never ``playwright install``), every request that is not a local
file aborted. The bundled KaTeX renders each formula (``.katex`` elements, the display blocks as
``.katex-display``, no raw LaTeX left), and the page asked for nothing off the machine.

Skipped when /usr/bin/chromium (or the playwright package) is missing, unless
``LEVY_REQUIRE_BROWSER=1`` (CI), then it fails."""

from __future__ import annotations

import pytest
from docs_site import built_site
from test_browser import CHROMIUM, need_browser

pytestmark = pytest.mark.e2e

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def test_the_docs_render_math_offline() -> None:
    sync_playwright = need_browser()
    page_file = built_site() / "guides" / "advise" / "index.html"
    blocked: list[str] = []

    def only_files(route) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            context = browser.new_context()
            context.route("**/*", only_files)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(page_file.as_uri())
            page.wait_for_selector(".arithmatex .katex-display", timeout=15_000)
            formulas = page.locator(".arithmatex").count()
            rendered = page.locator(".arithmatex .katex-display .katex-html").count()
            raw = page.evaluate("""() => [...document.querySelectorAll('.arithmatex')]
                .filter(el => !el.querySelector('.katex')).map(el => el.textContent)""")
            fonts = page.evaluate("""async () => { await document.fonts.ready;
                return [...document.fonts].filter(f => f.family.includes('KaTeX') && f.status === 'loaded').length; }""")
        finally:
            browser.close()
    assert formulas == 2 and rendered == 2, (formulas, rendered)
    assert raw == [], f"formulas left as raw LaTeX: {raw}"
    assert fonts >= 1, "no KaTeX font loaded from the bundle"
    # Material's search loads its index in a worker, which Chromium refuses from file:// (it
    # works when the site is served); any other error is the page's
    assert [e for e in errors if "search/search_index" not in e] == [] and blocked == [], (errors, blocked)
