"""A bench users can run and trust, and pages that say what is: every top-level benchmark has
its page under ``docs/benchmarks/`` (which names its command) and a log in
``benchmarks/results/`` that the page cites; tests import the benchmarks as a package; every
docs page is at most 200 lines, a benchmark page has no dated section (the dated runs are in
``benchmarks/results/NOTES.md``), and every cell of the README's tables is short."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"
PAGES = ROOT / "docs" / "benchmarks"
MAX_PAGE_LINES = 200
MAX_README_CELL = 250
CITED_LOG = re.compile(r"benchmarks/results/([\w.-]+\.(?:txt|md))|`([\w.-]+_20\d\d-\d\d-\d\d[\w.-]*\.txt)`")
DATED_HEADING = re.compile(r"^#{2,6} .*20\d\d-", re.MULTILINE)


def _top_level_benchmarks() -> list[str]:
    return sorted(p.stem for p in BENCH.glob("*.py") if p.name != "__init__.py")


def _page_logs(text: str) -> set[str]:
    return {a or b for a, b in CITED_LOG.findall(text)}


def test_every_top_level_benchmark_has_its_page_and_its_log() -> None:
    pages = {p.name: p.read_text(encoding="utf-8") for p in PAGES.glob("*.md") if p.name != "index.md"}
    missing = []
    for name in _top_level_benchmarks():
        command = f"python benchmarks/{name}.py"
        naming = [page for page, text in pages.items() if command in text]
        if not naming:
            missing.append(f"{name}: no page in docs/benchmarks/ shows `{command}`")
            continue
        logs = set().union(*(_page_logs(pages[page]) for page in naming))
        if not any((RESULTS / log).is_file() for log in logs):
            missing.append(f"{name}: its page ({', '.join(naming)}) cites no log that is in benchmarks/results/")
    assert missing == []


def test_every_log_a_benchmark_page_cites_is_there() -> None:
    absent = [f"{page.name}: {log}" for page in sorted(PAGES.glob("*.md"))
              for log in sorted(_page_logs(page.read_text(encoding="utf-8"))) if not (RESULTS / log).is_file()]
    assert absent == []


def test_each_study_has_its_conclusion_in_the_notes_and_shared_code_has_no_command() -> None:
    """A study is run from benchmarks/studies/ and its conclusion is one line of NOTES.md; the
    code several benchmarks share (benchmarks/common/) is imported, never run."""
    notes = (RESULTS / "NOTES.md").read_text(encoding="utf-8")
    studies = sorted(p.stem for p in (BENCH / "studies").glob("*.py") if p.name != "__init__.py")
    assert studies, "benchmarks/studies/ holds the studies"
    assert [s for s in studies if f"- `{s}.py` — " not in notes] == []
    shared = [p for p in (BENCH / "common").glob("*.py") if p.name != "__init__.py"]
    assert shared and [p.name for p in shared if "__main__" in p.read_text(encoding="utf-8")] == []


def test_tests_import_the_benchmarks_as_a_package() -> None:
    loading = re.compile(r"spec_from_file_location\([^)]*benchmarks|sys\.path\.insert\([^)]*[\"']benchmarks[\"']")
    offenders = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").rglob("*.py"))
                 if p.name != Path(__file__).name and loading.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
    assert (BENCH / "__init__.py").is_file() and (BENCH / "studies" / "__init__.py").is_file()


def test_every_docs_page_is_at_most_200_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / "docs").rglob("*.md"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_PAGE_LINES}
    assert long == {}, f"split these by topic (at most {MAX_PAGE_LINES} lines a page): {long}"


def test_no_benchmark_page_has_a_dated_section() -> None:
    dated = {p.name: DATED_HEADING.findall(p.read_text(encoding="utf-8")) for p in sorted(PAGES.glob("*.md"))}
    assert {name: found for name, found in dated.items() if found} == {}, "dated runs go to benchmarks/results/NOTES.md"


def _table_cells(markdown: str) -> list[str]:
    cells, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("|"):
            cells += [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
    return cells


def test_every_readme_table_cell_is_short() -> None:
    cells = _table_cells((ROOT / "README.md").read_text(encoding="utf-8"))
    assert cells, "the README has its headline table"
    long = [f"{len(c)} characters: {c[:80]}…" for c in cells if len(c) > MAX_README_CELL]
    assert long == [], f"one short sentence a cell (at most {MAX_README_CELL} characters), linking to the page"


def test_the_cell_reader_splits_on_pipes_outside_code_blocks() -> None:
    text = "| a | b |\n|---|---|\n| x | `y` |\n```\n| not | a table |\n```\n"
    assert _table_cells(text) == ["a", "b", "---", "---", "x", "`y`"]
