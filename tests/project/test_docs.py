"""The README and the documentation site: the README stays short and keeps the two set-up
commands, every page the site's nav names exists (and every page is in the nav), links
land on files, the CLI reference is generated from the parser, and the site builds with
``mkdocs build --strict`` (slow: CI builds it in ``.ci/run`` too)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
MAX_README_LINES = 250
SETUP_COMMANDS = ("make dashboard", "make test")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _hooks():
    spec = importlib.util.spec_from_file_location("levy_docs_hooks", DOCS / "_hooks" / "levy_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mkdocs() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    raise TypeError(f"unexpected nav entry {node!r}")


def _local_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z]+:|^#", t)]


def test_the_readme_is_short() -> None:
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines; keep it to {MAX_README_LINES} and move reference to docs/"


def test_the_readme_keeps_the_two_setup_commands() -> None:
    """The first code block is the two commands a new user runs; both are Makefile targets,
    and CI runs the second."""
    text = README.read_text(encoding="utf-8")
    first_block = re.search(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    assert first_block, "README.md has no bash block"
    commands = [line.split("#")[0].strip() for line in first_block[1].splitlines()]
    assert commands == list(SETUP_COMMANDS)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for command in SETUP_COMMANDS:
        assert re.search(rf"^{command.split()[1]}:", makefile, flags=re.MULTILINE), command
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(encoding="utf-8"), flags=re.MULTILINE)


def test_every_nav_page_exists_and_every_page_is_in_the_nav() -> None:
    config = _mkdocs()
    nav = _nav_pages(config["nav"])
    missing = [page for page in nav if not (DOCS / page).is_file()]
    assert missing == [], f"pages named in mkdocs.yml's nav but absent from docs/: {missing}"
    assert len(nav) == len(set(nav)), "a page appears twice in the nav"
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_hooks" not in p.parts}
    orphans = sorted(pages - set(nav))
    assert orphans == [], f"pages under docs/ that mkdocs.yml's nav does not list (add them): {orphans}"


def test_readme_and_pages_link_to_files_that_exist() -> None:
    broken = []
    for path in [README, *(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)]:
        for target in _local_links(path):
            file = target.split("#")[0]
            if file and not (path.parent / file).exists():
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_the_docs_target_builds_strictly() -> None:
    """``--quiet`` would hide the warnings that make ``--strict`` fail (mkdocs 1.6 then
    exits 0), so the target must not pass it; CI runs the target after the tests."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^docs:.*\n((?:\t.*\n)+)", makefile, flags=re.MULTILINE)
    assert recipe, "no docs target in the Makefile"
    assert "mkdocs build --strict" in recipe[1] and "--quiet" not in recipe[1] and " -q" not in recipe[1]
    assert "make -s docs" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_every_benchmark_page_names_a_command_that_exists() -> None:
    for page in sorted((DOCS / "benchmarks").glob("*.md")):
        if page.name == "index.md":
            continue
        scripts = re.findall(r"python (benchmarks/\w+\.py)", page.read_text(encoding="utf-8"))
        assert scripts, f"{page.name} shows no `python benchmarks/….py` command"
        assert all((ROOT / s).is_file() for s in scripts), (page.name, scripts)


def test_the_cli_reference_lists_every_subcommand_and_option() -> None:
    from levy_core.cli.main import build_parser

    reference = _hooks().cli_reference()
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subparsers.choices) >= {"fit", "predict", "evaluate", "rank", "dashboard"}
    for name, sub in subparsers.choices.items():
        assert f"### `levy {name}`" in reference
        for action in sub._actions:
            for option in action.option_strings:
                assert option in reference, f"levy {name} {option}"
    assert "<!-- levy-cli-reference -->" in (DOCS / "guides" / "cli.md").read_text(encoding="utf-8")


def test_an_included_readme_has_its_links_repointed_at_the_page() -> None:
    hooks = _hooks()
    page_dir = DOCS / "guides"
    text = hooks.include("dashboard/README.md", page_dir)
    assert not text.startswith("# "), "the included file's title stays out"
    targets = [t for t in LINK.findall(text) if not re.match(r"^[a-z]+:|^#", t)]
    assert targets, "dashboard/README.md's links into docs/ should come through"
    for target in targets:
        assert (page_dir / target.split("#")[0]).resolve().is_relative_to(DOCS), target
        assert (page_dir / target.split("#")[0]).exists(), target
    # a heading inside a code block is not a heading
    assert hooks._demote("## A\n```\n# comment\n```\n") == "### A\n```\n# comment\n```\n"


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("CI") == "true", reason=".ci/run builds the site itself (make docs) after the suite")
def test_the_site_builds_with_no_warning(tmp_path: Path) -> None:
    """What ``make docs`` checks, for a local ``make test`` (about 30 s on 2 cores)."""
    mkdocs = Path(sys.executable).with_name("mkdocs")
    result = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "site" / "guides" / "cli" / "index.html").read_text(encoding="utf-8").count("usage: levy") >= 6
