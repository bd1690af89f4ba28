"""The shape of the code, checked: small files and functions, no private name crossing a
module, packages that import one way and no import cycle (docs/architecture.md), a light
``import levy_core``, no page outside the repository."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("levy_core", "dashboard")  # folders
IMPORT_NAMES = ("levy_core", "levy_dashboard")  # what they are imported as (pyproject: package-dir)
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 100


def sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def own_module(name: str) -> bool:
    return name.split(".")[0] in IMPORT_NAMES


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
        bad = {m for m in imported_modules(path) if m.split(".")[0] in ("dashboard", "levy_dashboard", "streamlit", "plotly")}
        assert bad == set(), path


def test_views_reach_the_library_through_services_only() -> None:
    # views may name the library's types (DataError, ColumnMapping, Progress) but call nothing in it
    allowed = {"levy_core.data", "levy_core.training.train"}
    for path in sources("dashboard/views"):
        bad = {m for m in imported_modules(path) if m.startswith("levy_core") and m not in allowed}
        assert bad == set(), path
        assert "torch" not in imported_modules(path)


def test_charts_tables_and_report_compute_from_what_they_are_given() -> None:
    # figure and table builders import neither the library nor the services (figure in, figure out)
    for path in [*sources("dashboard/charts"), ROOT / "dashboard/tables.py", ROOT / "dashboard/report.py"]:
        bad = {m for m in imported_modules(path) if m.startswith(("levy_core", "levy_dashboard.services", "streamlit"))}
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


# levy_core's packages, bottom to top: a module may import its own package and those below it
LAYERS = ("runtime", "data", "metrics", "operator", "model", "offsets", "episodes", "training",
          "calibration", "pipeline", "serving", "decisions", "forecast", "cli")
LIBRARY = ROOT / "levy_core"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str) -> bool:
    rel = Path(*dotted.split("."))
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def library_imports(path: Path) -> set[str]:
    """The library modules ``path`` imports anywhere in it (``TYPE_CHECKING`` and function
    bodies included): ``from A import b`` names the module ``A.b`` when there is one, else ``A``."""
    out = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "levy_core":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.add(sub if is_module(sub) else node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "levy_core")
    return out


def layer(module: str) -> int:
    """The index of ``module``'s package in :data:`LAYERS`; the top-level ``levy_core`` and its
    ``__main__`` sit above every package."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return len(LAYERS)
    assert parts[1] in LAYERS, f"{module}: a package not in LAYERS (add it where it belongs)"
    return LAYERS.index(parts[1])


def against_the_direction(path: Path) -> list[str]:
    here = module_name(path)
    return [f"{here} imports {m} ({LAYERS[layer(m)] if layer(m) < len(LAYERS) else 'levy_core'} is above "
            f"{LAYERS[layer(here)] if layer(here) < len(LAYERS) else 'levy_core'})"
            for m in sorted(library_imports(path)) if layer(m) > layer(here)]


def test_every_library_module_lives_in_a_package_of_the_stack() -> None:
    loose = [p.name for p in LIBRARY.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert loose == [], "a module of levy_core belongs in one of its packages"
    assert {p.name for p in LIBRARY.iterdir() if (p / "__init__.py").is_file()} == set(LAYERS)


def test_packages_import_only_their_own_and_those_below() -> None:
    bad = [line for path in sources("levy_core") for line in against_the_direction(path)]
    assert bad == []


def test_an_import_against_the_direction_is_caught(tmp_path: Path) -> None:
    # the check itself: a data module that imports the pipeline is reported
    path = LIBRARY / "data" / "_probe_for_the_architecture_test.py"
    try:
        path.write_text("from levy_core.pipeline.modelfile import FittedModel\n", encoding="utf-8")
        assert against_the_direction(path) == [
            "levy_core.data._probe_for_the_architecture_test imports levy_core.pipeline.modelfile (pipeline is above data)"]
    finally:
        path.unlink()


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module, or a module importing itself."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's algorithm (the graph is a few hundred edges)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_not_even_for_annotations() -> None:
    graph = {module_name(p): library_imports(p) - {module_name(p)} for p in sources("levy_core")}
    assert cycles(graph) == []
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the check finds one


def test_import_levy_core_is_light() -> None:
    """``import levy_core`` (and the ``levy`` entry point) loads neither torch's heavy
    neighbours scipy and pyarrow, nor streamlit or ray: the public names load on first use."""
    code = ("import sys, levy_core, levy_core.__main__, levy_core.pipeline\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'pyarrow', 'streamlit', 'ray', 'torch', 'plotly'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
