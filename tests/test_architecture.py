"""The shape of the code, checked: small files and functions, no private name crossing a
module, layers that import one way (docs/architecture.md), no page outside the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("levy_core", "dashboard")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 100


def sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def own_module(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


@pytest.mark.parametrize("path", sources(*PACKAGES), ids=lambda p: str(p.relative_to(ROOT)))
def test_files_and_functions_are_small(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_FILE_LINES, f"{lines} lines: split the module"
    long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree(path))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == [], "functions over the limit: name them steps"


def private_uses(path: Path) -> list[str]:
    """``from <own module> import _x`` and ``<own module alias>._x`` in one file."""
    module_names: set[str] = set()
    found = []
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.ImportFrom) and (node.level or own_module(node.module or "")):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"from {node.module} import {alias.name}")
                module_names.add(alias.asname or alias.name)  # may be a module (from levy_core import pipeline)
        elif isinstance(node, ast.Import):
            module_names.update(a.asname or a.name.split(".")[0] for a in node.names if own_module(a.name))
    for node in ast.walk(tree(path)):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in module_names
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("folder", [*PACKAGES, "benchmarks", "tests"])
def test_no_private_name_crosses_a_module(folder: str) -> None:
    bad = {str(p.relative_to(ROOT)): uses for p in sources(folder) if (uses := private_uses(p))}
    assert bad == {}


def imported_modules(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_the_library_never_imports_the_dashboard_or_streamlit() -> None:
    for path in sources("levy_core"):
        bad = {m for m in imported_modules(path) if m.split(".")[0] in ("dashboard", "streamlit", "plotly")}
        assert bad == set(), path


def test_views_reach_the_library_through_services_only() -> None:
    # views may name the library's types (DataError, ColumnMapping, Progress) but call nothing in it
    allowed = {"levy_core.data", "levy_core.train"}
    for path in sources("dashboard/views"):
        bad = {m for m in imported_modules(path) if m.startswith("levy_core") and m not in allowed}
        assert bad == set(), path
        assert "torch" not in imported_modules(path)


def test_charts_tables_and_report_compute_from_what_they_are_given() -> None:
    # figure and table builders import neither the library nor the services (figure in, figure out)
    for path in [*sources("dashboard/charts"), ROOT / "dashboard/tables.py", ROOT / "dashboard/report.py"]:
        bad = {m for m in imported_modules(path) if m.startswith(("levy_core", "dashboard.services", "streamlit"))}
        assert bad == set(), path


RELATIVE_PATH = re.compile(r"(?<![\w./])(?:\.\./)+[\w./-]+")


def test_no_pointer_to_a_page_outside_the_repository() -> None:
    """Every relative path that climbs up (``../…``) in the code, tests, README and docs
    lands inside the repository: a user's clone has nothing beside it."""
    texts = [*sources(*PACKAGES, "benchmarks", "tests"), ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
             *(ROOT / "dashboard").glob("*.md")]
    outside = []
    for path in texts:
        for hit in RELATIVE_PATH.findall(path.read_text(encoding="utf-8")):
            target = (path.parent / hit).resolve()
            if not target.is_relative_to(ROOT):
                outside.append(f"{path.relative_to(ROOT)}: {hit}")
    assert outside == []
