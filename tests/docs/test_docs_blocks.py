"""Every Python and shell block of the README and of ``docs/`` runs (``docs_blocks`` says how):
one test per page, its blocks in order in one session. A page with a block marked
``<!-- slow: … -->`` is a ``slow`` test; every page test is an ``integration`` test (it runs
``levy`` commands and fits as a user would), so ``make test`` runs them and ``make test-fast``
leaves them out, apart from the checks of the markers themselves."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_blocks import (
    ROOT,
    Block,
    benchmark_check,
    command_lines,
    pages,
    parse,
    run_page,
    runnable,
    shape,
    split_comment,
    working_directory,
)


def _param(path: Path) -> pytest.param:
    blocks = runnable(path)
    marks = [pytest.mark.integration]
    if any(b.directive == "slow" for b in blocks):
        marks.append(pytest.mark.slow)
    return pytest.param(path, marks=marks, id=path.relative_to(ROOT).as_posix())


PAGES = [p for p in pages() if runnable(p)]


@pytest.mark.parametrize("path", [_param(p) for p in PAGES])
def test_the_page_blocks_run(path: Path, tmp_path: Path) -> None:
    blocks = runnable(path)
    skipped = run_page(blocks, working_directory(tmp_path))
    if len(skipped) == len(blocks):
        pytest.skip("every block of the page is marked skip: " + "; ".join(skipped))


def test_every_skip_and_slow_marker_says_why() -> None:
    """A marker without a reason, or one that marks no runnable block (a typo'd fence), fails."""
    bad = [b.where for p in pages() for b in parse(p) if b.directive and (not b.reason or b.kind == "other")]
    assert bad == []


def test_the_pages_include_what_the_site_includes() -> None:
    assert ROOT / "sample_data" / "README.md" in pages()  # docs/guides/data-formats.md includes it


def test_the_runner_reads_blocks_and_directives(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# T\n\n<!-- skip: a server -->\n```bash\nmake dashboard\n```\n\n```python\nx = 1\n```\n\n"
                    "<!-- slow: a long fit -->\n\n```console\n$ levy fit a.csv \\\n  --out m\nwrote m\n```\n"
                    "```text\nnot run\n```\n", encoding="utf-8")
    blocks = parse(page)
    assert [(b.kind, b.directive, b.reason) for b in blocks] == [
        ("shell", "skip", "a server"), ("python", None, ""), ("console", "slow", "a long fit"), ("other", None, "")]
    assert [b.line for b in blocks] == [4, 8, 14, 19]
    assert command_lines(blocks[2]) == [("levy fit a.csv    --out m", "wrote m\n")]
    assert split_comment('levy x --a "#b" # error: no') == ('levy x --a "#b"', "error: no")


def test_a_failing_block_fails_the_page(tmp_path: Path) -> None:
    """The runner is not a test that cannot fail: an undefined name, a command that exits 2
    without ``# error``, and an option a benchmark script does not define are each caught."""
    work = working_directory(tmp_path)
    page = Path(ROOT / "docs" / "x.md")
    with pytest.raises(NameError, match="new_df"):
        run_page([Block(page, 1, "python", "print(new_df)\n")], work)
    with pytest.raises(AssertionError, match="exited 2"):
        run_page([Block(page, 1, "shell", "levy predict no_model missing.csv --out p.csv\n")], work)
    run_page([Block(page, 1, "shell", "levy predict no_model missing.csv --out p.csv  # error: no model\n")], work)
    with pytest.raises(AssertionError, match="not run from a test"):
        run_page([Block(page, 1, "shell", "make test\n")], work)
    run_page([Block(page, 1, "console", "$ levy --help\nusage: levy [-h]\n")], work)
    with pytest.raises(AssertionError, match="did not print"):
        run_page([Block(page, 1, "console", "$ levy --help\nusage: levy [--verbose]\n")], work)
    assert shape("scored 40 series in 1.25 s") == shape("scored  12 series in 0.5 s") != shape("scored 40 rows")
    assert benchmark_check(["python", "benchmarks/operator.py", "--no-such-option"]) is not None
    assert benchmark_check(["python", "benchmarks/operator.py", "--device", "cuda"]) is None
