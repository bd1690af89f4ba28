"""Build hook, beside the declarative ``pyproject.toml``: the data packages install their
data and no code.

``levy_core.sample_data`` (the repository's ``sample_data/``) and its ``models`` are data
packages; setuptools would still put every ``*.py`` file of their folders into the wheel,
and no ``pyproject.toml`` setting leaves a module out. Those files are the developers'
scripts that make the samples and the shipped models (``make_samples.py``,
``make_models.py``: ``make sample-models`` runs them from the checkout); nothing installed
imports them. ``tests/project/test_packaging.py`` checks that the wheel holds none.
"""

from __future__ import annotations

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_PACKAGES = ("levy_core.sample_data",)
"""Packages (and their subpackages) of data only: no module of theirs is installed."""


def is_data_package(package: str) -> bool:
    return any(package == p or package.startswith(f"{p}.") for p in DATA_PACKAGES)


class BuildPyWithoutDataPackageModules(build_py):
    """``build_py`` that installs no module of a data package (their data files still go)."""

    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        modules = super().find_package_modules(package, package_dir)
        return [] if is_data_package(package) else modules


setup(cmdclass={"build_py": BuildPyWithoutDataPackageModules})
