"""The code blocks of the README and of ``docs/``, read and run as a reader would run them.

A page is one session: its blocks run in order, in one temporary working directory (where
``sample_data``, ``benchmarks`` and ``.venv/bin/{levy,python}`` resolve as in the repository
root), the Python blocks in one namespace, so a block may use what an earlier block of the
same page defined or wrote.

What a block is, from its fence and the HTML comment on the line(s) right above it:

* ```` ```python ```` — executed (``exec``) in the page's namespace.
* ```` ```bash ````, ```` ```sh ```` — each command line run (a ``\\`` continues a line):
  ``levy …`` / ``.venv/bin/levy …`` (after ``NAME=value`` assignments) in this process, through
  ``levy_core.cli.main.main``; any other line through ``bash`` in the working directory. A
  line whose trailing comment starts ``# error`` must exit 2 (an ``error: …`` message); every
  other line must exit 0. A ``python benchmarks/X.py …`` line is not run (a benchmark takes
  minutes to hours, some on data that are not shipped): the script must exist and define
  every option the line passes.
* ```` ```console ```` — the ``$ `` lines are the commands, as above; the other lines are what
  they print, and each must appear, blanks and the digits of numbers aside, in what the
  commands printed.
* ``<!-- skip: reason -->`` above a block: not run (a server, an install, the test suite
  itself, a command on the reader's own files); the reason is required.
* ``<!-- slow: reason -->`` above a block: run, but the page's test is marked ``slow``.

``make``, ``pip``, ``git``, ``npm`` and ``streamlit`` lines are refused unless the block is
skipped: they would install, serve or run the suite from inside a test.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = {"python": "python", "py": "python", "bash": "shell", "sh": "shell", "console": "console"}
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n`]*)$")
DIRECTIVE = re.compile(r"^<!--\s*(?P<kind>skip|slow)\s*:\s*(?P<reason>.*?)\s*-->$")
REFUSED = ("make", "pip", "pip3", "git", "npm", "streamlit", "sudo", "apt-get")
LINKED = ("sample_data", "benchmarks")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it starts (1-based line of the fence), its kind, its text,
    and its directive (``skip``/``slow`` with the reason, or ``None``)."""

    path: Path
    line: int
    kind: str
    code: str
    directive: str | None = None
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


INCLUDE = re.compile(r"^<!-- include: (?P<path>[\w./-]+) -->$", re.MULTILINE)  # docs/_hooks/levy_docs.py's


def pages() -> list[Path]:
    """The README, every page under ``docs/`` (the hooks' folder aside) and every file a page
    includes (``<!-- include: PATH -->``: its blocks are on the site too), in a stable order."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)
    included = sorted({ROOT / m["path"] for page in docs for m in INCLUDE.finditer(page.read_text(encoding="utf-8"))})
    return [ROOT / "README.md", *docs, *(p for p in included if p not in docs)]


def parse(path: Path) -> list[Block]:
    """Every fenced block of ``path`` (all languages: the caller keeps the runnable ones)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, info = len(fence["indent"]), fence["info"].strip().split()
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = "\n".join(line[indent:] for line in lines[i + 1 : end])
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        directive = DIRECTIVE.match(lines[j].strip()) if j >= 0 else None
        kind = LANGUAGES.get(info[0], "other") if info else "other"
        blocks.append(Block(path, i + 1, kind, body + "\n", directive["kind"] if directive else None,
                            directive["reason"] if directive else ""))
        i = end + 1
    return blocks


def runnable(path: Path) -> list[Block]:
    return [b for b in parse(path) if b.kind != "other"]


# --- shell lines -------------------------------------------------------------------------------


def command_lines(block: Block) -> list[tuple[str, str | None]]:
    """``(command, expected output or None)`` per command of a shell or console block; for a
    console block the output lines that follow a ``$`` line are its expected output."""
    raw = block.code.replace("\\\n", " ").split("\n")
    out: list[tuple[str, str | None]] = []
    if block.kind == "console":
        for line in raw:
            if line.startswith("$ "):
                out.append((line[2:].strip(), ""))
            elif line.strip() and out:
                out[-1] = (out[-1][0], f"{out[-1][1]}{line.strip()}\n")
        return out
    return [(line.strip(), None) for line in raw if line.strip() and not line.strip().startswith("#")]


def split_comment(line: str) -> tuple[str, str]:
    """The command and its trailing comment (``#`` preceded by a blank, outside quotes)."""
    quote = None
    for k, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1].isspace()):
            return line[:k].rstrip(), line[k + 1 :].strip()
    return line, ""


def benchmark_check(argv: list[str]) -> str | None:
    """Why ``python benchmarks/X.py …`` is wrong (the script is missing, or an option it passes
    is not one the script defines), or ``None``."""
    script = ROOT / argv[1]
    if not script.is_file():
        return f"{argv[1]} does not exist"
    source = script.read_text(encoding="utf-8")
    for helper in re.findall(r"^from benchmarks\.(\w+) import", source, flags=re.MULTILINE):
        path = ROOT / "benchmarks" / f"{helper}.py"
        source += path.read_text(encoding="utf-8") if path.is_file() else ""
    unknown = [a.split("=")[0] for a in argv[2:]
               if a.startswith("--") and f'"{a.split("=")[0]}"' not in source]
    return f"{argv[1]} defines no option {unknown}" if unknown else None


@contextlib.contextmanager
def environment(assignments: list[str]) -> Iterator[None]:
    saved = {}
    for item in assignments:
        name, value = item.split("=", 1)
        saved[name] = os.environ.get(name)
        os.environ[name] = value
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_levy(argv: list[str]) -> tuple[int, str]:
    """``levy ARGV`` in this process: (exit code, what it printed on stdout and stderr)."""
    from levy_core.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue() + err.getvalue()


def run_command(command: str, work: Path, timeout: float = 600.0) -> tuple[int, str]:
    """One shell line in ``work``: (exit code, output)."""
    words = shlex.split(command)
    env_words = []
    while words and ASSIGNMENT.match(words[0]):
        env_words.append(words.pop(0))
    plain = not re.search(r"[|&;<>()$`]", command)
    if plain and words and words[0] in ("levy", ".venv/bin/levy"):
        with environment(env_words):
            return run_levy(words[1:])
    if words and words[0] in REFUSED:
        raise AssertionError(f"`{command}` is not run from a test: mark the block <!-- skip: reason -->")
    env = {**os.environ, "PATH": f"{work / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def run_shell(block: Block, work: Path) -> None:
    for line, expected in command_lines(block):
        command, comment = split_comment(line)
        words = shlex.split(command)
        while words and ASSIGNMENT.match(words[0]):
            words.pop(0)
        if len(words) > 1 and words[0] in ("python", ".venv/bin/python") and words[1].startswith("benchmarks/"):
            problem = benchmark_check(words)
            assert problem is None, f"{block.where}: `{command}`: {problem}"
            continue
        code, output = run_command(command, work)
        wanted = 2 if comment.startswith("error") else 0
        assert code == wanted, f"{block.where}: `{command}` exited {code} (expected {wanted}):\n{output[-3000:]}"
        if wanted == 2:
            assert "error: " in output and "Traceback" not in output, f"{block.where}: `{command}`:\n{output}"
        for text in (expected or "").splitlines():
            assert shape(text) in shape(output), (
                f"{block.where}: `{command}` did not print {text!r}; it printed:\n{output[-3000:]}")


def shape(text: str) -> str:
    """``text`` with blanks collapsed and every number read as ``#``: a console block's output
    must match in its words; its figures are the docs' run's (a fit's digits may differ with
    the machine's floating point)."""
    return re.sub(r"\d+(?:[.,]\d+)*", "#", " ".join(text.split()))


# --- a page as one session ---------------------------------------------------------------------


def working_directory(tmp: Path) -> Path:
    """``tmp`` made to look like the repository root for the blocks' relative paths."""
    for name in LINKED:
        (tmp / name).symlink_to(ROOT / name, target_is_directory=True)
    bin_dir = tmp / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, body in (("levy", f'exec "{sys.executable}" -m levy_core "$@"'),
                       ("python", f'exec "{sys.executable}" "$@"')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    return tmp


def run_page(blocks: list[Block], work: Path) -> list[str]:
    """Every block of one page, in order, in ``work``; returns the skipped blocks' reasons."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    skipped = []
    cwd = Path.cwd()
    os.chdir(work)
    try:
        for block in blocks:
            if block.directive == "skip":
                assert block.reason, f"{block.where}: a skip needs a reason (<!-- skip: why -->)"
                skipped.append(f"{block.where}: {block.reason}")
            elif block.kind == "python":
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(block.code, block.where, "exec"), namespace)  # noqa: S102 - the docs' own code
            else:
                run_shell(block, work)
    finally:
        os.chdir(cwd)
    return skipped
