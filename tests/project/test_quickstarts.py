"""A new user's path, read from the README: every command of its three quick starts runs.

The commands are taken FROM ``README.md`` (the first code block under each ``## Quick start:``
heading), so the README cannot drift from what is tested:

- **the command line**: the bash block's commands, verbatim, through a shell in a temporary
  working directory where ``sample_data`` and ``.venv`` are links to the repository's (the
  paths relative to the repository root work; each ``--out`` lands in the temporary directory);
- **Python**: the block executed as a script by this interpreter, in such a directory
  (``model_dir`` lands there);
- **the dashboard**: each ``make dashboard …`` line in the repository root with a free
  ``PORT=`` (``path/to/your.csv`` replaced by a bundled CSV), until
  ``http://localhost:PORT/_stcore/health`` answers ``ok``; then its process group is stopped.

The runs are slow (a fit each, or a server start): ``make test`` runs them, ``make test-fast``
only the check that the blocks are found.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from server_health import wait_until_serving

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
VENV = ROOT / ".venv"
STAMP = VENV / ".installed-stamp"
LINKED = ("sample_data", ".venv")  # what the quick starts' relative paths need from the repository root
USER_CSV = "path/to/your.csv"  # the README's placeholder for the user's file
SAMPLE_CSV = "sample_data/synthetic_gaps.csv"  # the real CSV the test gives in its place
HEALTH_TIMEOUT_S = 120


def quick_start(title: str) -> tuple[str, str]:
    """The language and the text of the first fenced block under ``## Quick start: <title>``."""
    text = README.read_text(encoding="utf-8")
    section = re.search(rf"^## Quick start: {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert section, f"README.md has no '## Quick start: {title}' section"
    block = re.search(r"^```(\w+)\n(.*?)^```", section[1], flags=re.M | re.S)
    assert block, f"the README's quick start '{title}' has no code block"
    return block[1], block[2]


def commands(block: str) -> list[str]:
    """The commands of a bash block: one a line, comments and blank lines dropped."""
    out = []
    for line in block.splitlines():
        command = line.split(" #")[0].strip() if not line.lstrip().startswith("#") else ""
        if command:
            out.append(command)
    return out


def user_dir(tmp_path: Path) -> Path:
    """A working directory where the README's repository-relative paths resolve."""
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp_path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(argv: list[str] | str, cwd: Path, timeout: float, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)
    assert done.returncode == 0, f"{argv!r} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed() -> None:
    """The quick starts run after ``make install``: the README's ``.venv`` exists and is current."""
    if not (VENV / "bin" / "levy").exists():
        pytest.skip("no .venv with the levy command: run `make install` first")


def test_the_blocks_are_found_and_say_what_the_test_runs() -> None:
    """The parser reads the three blocks this module runs (a renamed heading fails here)."""
    assert commands(quick_start("the dashboard")[1])[0] == "make dashboard"
    language, cli = quick_start("the command line")
    assert language == "bash" and [c.split()[:2] for c in commands(cli)] == [[".venv/bin/levy", "fit"],
                                                                            [".venv/bin/levy", "predict"]]
    language, code = quick_start("Python")
    assert language == "python" and "LevyForecaster" in code
    assert all(USER_CSV in c or c == "make dashboard" for c in commands(quick_start("the dashboard")[1]))


def test_getting_started_shows_the_readmes_commands() -> None:
    """docs/getting-started.md repeats the command-line quick start: the same commands."""
    page = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    section = re.search(r"^## Your first band, from the command line\n.*?^```bash\n(.*?)^```", page, flags=re.M | re.S)
    assert section, "docs/getting-started.md has no command-line block"
    assert commands(section[1]) == commands(quick_start("the command line")[1])


@pytest.mark.slow
def test_the_command_line_quick_start(installed: None, tmp_path: Path) -> None:
    """``levy fit`` then ``levy predict``, verbatim: the model directory and the predictions
    are written where the README says, with the documented columns."""
    work = user_dir(tmp_path)
    written = {}
    for command in commands(quick_start("the command line")[1]):
        run(command, work, timeout=600, shell=True, executable="/bin/bash")
        argv = shlex.split(command)
        written[argv[1]] = work / argv[argv.index("--out") + 1]
    assert (written["fit"] / "model.json").is_file()
    pred = pd.read_csv(written["predict"])
    expected = ["series_id", "channel", "time", "mean", "sigma", "lower", "upper", "log_evidence", "disagreement",
                "n_eff"]
    assert list(pred.columns) == expected
    assert len(pred) > 0 and (pred["lower"] <= pred["upper"]).all()


@pytest.mark.slow
def test_the_python_quick_start(installed: None, tmp_path: Path) -> None:
    """The block as a script: it fits, predicts, prints the evaluation and saves the model."""
    work = user_dir(tmp_path)
    script = work / "quick_start.py"
    script.write_text(quick_start("Python")[1], encoding="utf-8")
    done = run([sys.executable, str(script)], work, timeout=900)
    assert "Evaluation on the" in done.stdout and "coverage_90" in done.stdout
    assert (work / "model_dir" / "model.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("line", range(2), ids=["sample", "DATA"])
def test_the_dashboard_quick_start(installed: None, line: int, tmp_path: Path) -> None:
    """``make dashboard`` (and its ``DATA=`` form on a bundled CSV) in the repository root
    serves the app: its health endpoint answers ``ok``; then the server is stopped."""
    lines = commands(quick_start("the dashboard")[1])
    assert len(lines) == 2
    command = lines[line].replace(USER_CSV, SAMPLE_CSV)
    assert (ROOT / SAMPLE_CSV).is_file()
    port = free_port()
    # the README's command with a free port; `-o` keeps make from reinstalling the environment
    # the tests run in when pyproject.toml was touched after it was made (a user's make would)
    argv = [*shlex.split(command)[:1], "-o", str(STAMP.relative_to(ROOT)), *shlex.split(command)[1:], f"PORT={port}"]
    log = (tmp_path / "dashboard.log").open("w")
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until_serving(proc, f"http://localhost:{port}", tmp_path / "dashboard.log", HEALTH_TIMEOUT_S,
                           what=" ".join(argv))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        log.close()
    text = (tmp_path / "dashboard.log").read_text()
    assert f"starting the dashboard on http://localhost:{port}" in text
