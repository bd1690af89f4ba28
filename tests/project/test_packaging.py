"""What the wheel installs: every package of the two folders, the dashboard under its own
name (``levy_dashboard``, not a generic ``dashboard`` in site-packages)."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_lists_every_package_under_its_import_name() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {"levy_core": "levy_core", **{name: folder for name, folder in config["package-dir"].items()}}
    on_disk = set()
    for name, folder in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            on_disk.add(".".join((name, *init.parent.relative_to(ROOT / folder).parts)))
    assert set(config["packages"]) == on_disk
    assert config["package-dir"] == {"levy_dashboard": "dashboard"}
    assert not any(p == "dashboard" or p.startswith("dashboard.") for p in config["packages"])
