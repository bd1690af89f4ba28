"""The test groups hold under pytest-xdist (tests/conftest.py): a file's tests run on one
worker, so its module-scoped fits are made once. pytest-xdist 3.8 under pytest 9.2 dropped
the groups without a word (pytest-xdist #1386); this catches that happening again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # two pytest workers start and collect (seconds)
def test_a_files_tests_run_on_one_worker_under_its_group() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-v",
         "tests/data/test_durations.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    ).stdout
    ran = re.findall(r"^\[(gw\d)\] .*?PASSED (.+?) *$", out, flags=re.MULTILINE)
    assert len(ran) >= 10, out[-2000:]
    assert {worker for worker, _ in ran} == {ran[0][0]}, "one file, one worker"
    assert all(nodeid.endswith("@data/test_durations.py") for _, nodeid in ran), ran[:3]
