"""The documentation site built once for the tests that read it (``tests/docs/test_site.py``,
``tests/e2e/test_docs_browser.py``): ``mkdocs build --strict`` into a folder of the system's
temporary directory named by a hash of everything the site is made from (``mkdocs.yml``,
``docs/``, the included READMEs, the docstrings of ``levy_core``), under a file lock, so the
tests of both files (on one pytest-xdist worker or two) share one build of the same sources;
a build of other sources left unused for a day is removed when a new one is made.

Imported as ``from docs_site import built_site`` (tests/ is on ``sys.path``: tests/conftest.py is there)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("mkdocs.yml", "docs", "levy_core", "dashboard/README.md", "sample_data/README.md")


def _digest() -> str:
    h = hashlib.sha256()
    for name in SOURCES:
        path = ROOT / name
        files = sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts) \
            if path.is_dir() else [path]
        for file in files:
            h.update(file.relative_to(ROOT).as_posix().encode())
            h.update(file.read_bytes())
    return h.hexdigest()[:16]


STALE_SECONDS = 24 * 3600  # an earlier build of other sources, unused this long, is removed


def _remove_stale(keep: Path) -> None:
    now = time.time()
    for old in keep.parent.glob("levy-docs-site-*"):
        if old != keep and old.is_dir() and now - old.stat().st_mtime > STALE_SECONDS:
            shutil.rmtree(old, ignore_errors=True)


def built_site() -> Path:
    """The ``site/`` folder of a strict build of this checkout's sources; the build's log is
    ``build.log`` beside it. Raises ``AssertionError`` with the log when the build fails."""
    home = Path(tempfile.gettempdir()) / f"levy-docs-site-{_digest()}"
    home.mkdir(exist_ok=True)
    site = home / "site"
    with open(home / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not site.is_dir():
            partial = home / "site.partial"
            shutil.rmtree(partial, ignore_errors=True)
            mkdocs = Path(sys.executable).with_name("mkdocs")
            done = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(partial)], cwd=ROOT,
                                  capture_output=True, text=True, timeout=600,
                                  env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
            (home / "build.log").write_text(done.stdout + done.stderr, encoding="utf-8")
            assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-4000:]}"
            partial.rename(site)
            _remove_stale(home)
    os.utime(home)  # in use: not stale
    return site
