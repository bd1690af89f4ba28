"""The library's docstrings are Markdown for mkdocstrings: a cross-reference is written
``[`name`][levy_core.full.path]`` (a link in the API reference) or plain code where the target
is not documented, never a reST role (``:func:`…```, ``:meth:`…```, ``:class:`…```,
``:mod:`…```, ``:attr:`…```), which the site would show as literal text. The built site is
checked too (``test_site.py``, slow); this reads the sources, in a second."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROLE = re.compile(r":(?:py:)?(?:meth|mod|class|func|attr|data|obj|exc|const):`[^`]*`")


def roles_in_docstrings(text: str, name: str) -> list[str]:
    """``name:line: role`` for each reST role inside a docstring (any string statement) of the
    Python source ``text``."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for offset, line in enumerate(node.value.value.split("\n")):
                found += [f"{name}:{node.lineno + offset}: {m}" for m in ROLE.findall(line)]
    return found


def test_no_rest_role_in_the_librarys_docstrings() -> None:
    found = [hit for path in sorted((ROOT / "levy_core").rglob("*.py"))
             for hit in roles_in_docstrings(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert found == [], ("write [`name`][levy_core.path.to.name] (or `name` where it is not in the API "
                         "reference) instead of:\n" + "\n".join(found[:40]))


def test_the_check_finds_a_role_in_a_docstring_only() -> None:
    text = '"""See :func:`levy_core.data.read_csv`."""\n# :func:`a comment` is not rendered\nx = ":mod:`a value`"\n'
    assert roles_in_docstrings(text, "x.py") == ["x.py:1: :func:`levy_core.data.read_csv`"]
