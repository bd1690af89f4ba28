"""The built site (``docs_site.built_site``: ``mkdocs build --strict``) shows the API
reference's cross-references as links: no reST role (``:meth:`…```, ``:mod:`…```, …) is left
as literal text on any page, and the reference pages link to the objects they name."""

from __future__ import annotations

import re

import pytest
from docs_site import built_site

ROLE = re.compile(r":(?:py:)?(?:meth|mod|class|func|attr|data|obj|exc|const):`")

pytestmark = pytest.mark.slow  # one strict build of the site (15-40 s), shared with the browser test


def test_no_rest_role_is_left_as_text_in_the_site() -> None:
    site = built_site()
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 40
    found = {p.relative_to(site).as_posix(): len(ROLE.findall(p.read_text(encoding="utf-8"))) for p in pages}
    assert {page: n for page, n in found.items() if n} == {}


def test_the_reference_links_what_it_names() -> None:
    """The forecast page's docstrings name ``LevyForecaster.load`` and ``.predict``: links to
    their anchors on the page, as mkdocstrings' cross-references render."""
    page = (built_site() / "reference" / "forecast" / "index.html").read_text(encoding="utf-8")
    for anchor in ("levy_core.forecast.forecaster.LevyForecaster.load",
                   "levy_core.forecast.forecaster.LevyForecaster.predict"):
        assert f'id="{anchor}"' in page
        assert re.search(rf'<a [^>]*href="[^"]*#{re.escape(anchor)}"', page), anchor


def test_the_role_pattern_finds_a_literal_role() -> None:
    assert ROLE.search("A thin layer over :mod:`levy_core.pipeline` and") is not None
    assert ROLE.search('<a href="#levy_core.pipeline"><code>levy_core.pipeline</code></a>') is None
