"""MkDocs hooks for the documentation site (named in ``mkdocs.yml``; not a page).

Two markers, each alone on a line of a page:

* ``<!-- levy-cli-reference -->`` becomes ``levy --help`` and every subcommand's ``--help``,
  generated from the command line's own parser, so the CLI reference cannot fall behind it.
* ``<!-- include: PATH -->`` (``PATH`` from the repository root) becomes that Markdown file
  without its first heading, its links re-pointed at the page: a link into ``docs/`` is
  made relative to the page, any other link becomes plain text (the site holds only
  ``docs/``), so one text serves both the repository and the site.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CLI_MARKER = "<!-- levy-cli-reference -->"
INCLUDE = re.compile(r"^<!-- include: (?P<path>[\w./-]+) -->$", re.MULTILINE)
LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise RuntimeError("the levy parser has no subcommands: the CLI reference cannot be generated")


def cli_reference() -> str:
    """``levy --help`` and each subcommand's help as Markdown, one section per subcommand."""
    from levy_core.cli.main import build_parser

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"  # argparse wraps to the terminal's width; 80 fits the page
    try:
        parser = build_parser()
        parts = ["### `levy`", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, sub in _subcommands(parser).items():
            parts += [f"### `levy {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return "\n".join(parts)


def _repoint(markdown: str, source: Path, page_dir: Path) -> str:
    def fix(match: re.Match[str]) -> str:
        target = match["target"]
        if re.match(r"^[a-z]+:|^#", target):
            return match[0]
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve()
        if resolved.is_relative_to(DOCS):
            rel = posixpath.relpath(resolved.as_posix(), page_dir.as_posix())
            return f"{match['bang']}[{match['text']}]({rel}{'#' + anchor if anchor else ''})"
        return match["text"] if not match["bang"] else f"`{resolved.relative_to(ROOT)}`"

    return LINK.sub(fix, markdown)


def _demote(markdown: str) -> str:
    """Every heading one level down (``##`` → ``###``), code blocks left alone."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        out.append("#" + line if not fenced and re.match(r"#{1,5} ", line) else line)
    return "\n".join(out)


def include(path: str, page_dir: Path) -> str:
    """The file at ``path`` (from the repository root) without its first heading, the other
    headings one level down (the including page's ``##`` section holds them)."""
    source = ROOT / path
    text = source.read_text(encoding="utf-8")
    text = re.sub(r"\A# [^\n]*\n+", "", text)
    return _repoint(_demote(text), source, page_dir)


def on_page_markdown(markdown: str, page, config, files) -> str:
    page_dir = (DOCS / page.file.src_uri).parent
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return INCLUDE.sub(lambda m: include(m["path"], page_dir), markdown)
