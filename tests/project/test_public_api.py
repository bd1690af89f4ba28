"""One way in: the public API is `levy_core.PUBLIC_MODULES`, exactly the modules the API
reference documents (``docs/reference``, its internal pages aside), and the front ends — the
``levy`` command (``levy_core/cli``) and the dashboard (``dashboard/``) — import nothing of the
library below it. ``levy_core.pipeline`` is internal: no facade, no lazy names.

Every import of a front end is read from its source (``ast``), function-level and
``TYPE_CHECKING`` ones included: what a front end needs of a fitted model is a verb of
``LevyForecaster`` (``levy_core.forecast.verbs``), never a step of the pipeline."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import levy_core

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
INTERNAL_PAGES = ("pipeline.md", "predictive.md")  # titled "Internal": what the public pages point at
FRONT_ENDS = (ROOT / "levy_core" / "cli", ROOT / "dashboard")
OWN_PACKAGE = "levy_core.cli"  # the command's own modules (the dashboard's precompile names its entry)
MODULE_NAME = re.compile(r"levy_core(\.\w+)+")  # a module named in a string, imported by name


def _documented(pages: list[Path]) -> list[str]:
    """The modules ``::: module`` lines of ``pages`` document, in order."""
    return [m.group(1) for page in pages
            for m in re.finditer(r"^::: ([\w.]+)\s*$", page.read_text(encoding="utf-8"), re.M)]


def _module_of(node: ast.ImportFrom | ast.Import, alias: ast.alias) -> str:
    """The library module an import reaches: ``from levy_core.a import b`` is ``levy_core.a.b``
    where ``b`` is a module, else ``levy_core.a``."""
    if isinstance(node, ast.Import):
        return alias.name
    base = node.module or ""
    candidate = f"{base}.{alias.name}"
    return candidate if _exists(candidate) else base


def _exists(module: str) -> bool:
    """``module`` is a module or package of the repository (found on disk, nothing imported)."""
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _below_the_api(path: Path) -> list[tuple[int, str]]:
    """(line, module) for each import in ``path`` of a library module that is not public."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "levy_core":
            modules = {_module_of(node, alias) for alias in node.names}
        elif isinstance(node, ast.Import):
            modules = {_module_of(node, a) for a in node.names if a.name.split(".")[0] == "levy_core"}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.fullmatch(node.value):
            modules = {node.value} if _exists(node.value) else set()  # importlib.import_module("levy_core.…")
        else:
            continue
        found += [(node.lineno, m) for m in sorted(modules)
                  if m not in levy_core.PUBLIC_MODULES and not m.startswith(OWN_PACKAGE + ".") and m != OWN_PACKAGE]
    return sorted(found)


def _front_end_imports() -> dict[tuple[str, str], list[int]]:
    """(file relative to the repository, module) -> the lines importing it, below the API."""
    out: dict[tuple[str, str], list[int]] = {}
    for folder in FRONT_ENDS:
        for path in sorted(folder.rglob("*.py")):
            for line, module in _below_the_api(path):
                out.setdefault((path.relative_to(ROOT).as_posix(), module), []).append(line)
    return out


def test_the_public_api_is_what_the_reference_documents() -> None:
    public_pages = sorted(p for p in REFERENCE.glob("*.md") if p.name not in INTERNAL_PAGES)
    documented = _documented(public_pages)
    assert len(documented) == len(set(documented)), "a module is documented on two pages"
    assert set(documented) == set(levy_core.PUBLIC_MODULES), (
        f"documented, not in PUBLIC_MODULES: {sorted(set(documented) - set(levy_core.PUBLIC_MODULES))}; "
        f"in PUBLIC_MODULES, not documented: {sorted(set(levy_core.PUBLIC_MODULES) - set(documented))}")
    assert len(levy_core.PUBLIC_MODULES) == len(set(levy_core.PUBLIC_MODULES))
    for module in levy_core.PUBLIC_MODULES:
        assert _exists(module), f"PUBLIC_MODULES names {module}, which does not exist"


def test_the_internal_pages_say_so_and_document_only_the_pipeline() -> None:
    for name in INTERNAL_PAGES:
        page = REFERENCE / name
        assert page.read_text(encoding="utf-8").startswith("# Internal: "), f"{name} must be titled Internal"
        assert all(m.split(".")[:2] == ["levy_core", "pipeline"] for m in _documented([page])), name


def test_the_pipeline_is_internal_no_facade() -> None:
    import levy_core.pipeline as pipeline

    assert not hasattr(pipeline, "__getattr__"), "levy_core.pipeline re-exports its names lazily again"
    assert not hasattr(pipeline, "__all__"), "levy_core.pipeline lists public names again"
    assert not any(m.startswith("levy_core.pipeline") for m in levy_core.PUBLIC_MODULES)


def test_the_front_ends_import_nothing_below_the_public_api() -> None:
    found = _front_end_imports()
    assert not found, "front-end imports below the public API (levy_core.PUBLIC_MODULES; add a verb to " \
        "LevyForecaster instead):\n" + "\n".join(f"  {f}:{lines[0]}: {m}" for (f, m), lines in sorted(found.items()))


def test_both_front_ends_are_read() -> None:
    """The walk reaches the command and the dashboard's panels (a moved folder would pass silently)."""
    files = {p.relative_to(ROOT).as_posix() for folder in FRONT_ENDS for p in folder.rglob("*.py")}
    assert {"levy_core/cli/predict.py", "levy_core/cli/fit.py", "dashboard/services/band.py",
            "dashboard/fitting/fits.py"} <= files


def test_the_check_sees_an_import_below_the_api(tmp_path: Path) -> None:
    """The checker itself: a file importing an internal module, at the top, in a function, as
    ``from levy_core import pipeline`` or by name (a string), is caught; a public one is not."""
    source = tmp_path / "front.py"
    source.write_text("from levy_core.forecast.forecaster import LevyForecaster\n"
                      "from levy_core import pipeline\n"
                      "def f():\n    from levy_core.pipeline.recipe import fit\n"
                      "import levy_core.episodes.tasks\n"
                      "MODULES = ('levy_core.forecast.verbs', 'levy_core.pipeline.ranking')\n", encoding="utf-8")
    assert _below_the_api(source) == [(2, "levy_core.pipeline"), (4, "levy_core.pipeline.recipe"),
                                      (5, "levy_core.episodes.tasks"), (6, "levy_core.pipeline.ranking")]
