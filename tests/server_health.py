"""Waiting for a started dashboard server: one loop for the browser tests and the quick-start test."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path

import pytest


def wait_until_serving(proc: subprocess.Popen, url: str, log_path: Path, seconds: float = 90,
                       what: str = "streamlit") -> None:
    """Return once the server at ``url`` answers ``ok`` on ``/_stcore/health``; fail with its
    log's tail when its process ``proc`` exits first or ``seconds`` pass (``what``: the
    command the failure names)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what} did not serve /_stcore/health (exit {proc.poll()}):\n{log_path.read_text()[-3000:]}")
        time.sleep(0.3)
