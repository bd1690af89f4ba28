"""Shared fixtures: the synthetic sample, and ONE tiny fitted model reused by the
pipeline and CLI tests (fitting is the expensive part; keep it to a single fit).

Parallel runs (``make test``, ``make test-fast``: pytest-xdist, ``-n 2 --dist loadgroup``):
each worker computes on ONE intra-op thread, with waiting OpenMP threads asleep, so two
workers never oversubscribe the cores (a spinning team of 2 beside another process ran the
gradient checks up to 10× slower). Each test file runs on one worker (an ``xdist_group``
per file), and the real-browser tests (servers, timed sampling, the screenshots) all on
one, one after the other."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from levy_core.data import Observations, load_sample, read_csv
from levy_core.runtime.threads import prefer_passive_wait

N_FIT_SERIES = 16  # series of the synthetic sample the shared model is fitted on
MC_PASSES = 5  # MC-Dropout passes recorded with the shared model (small: tests stay fast)
_ONE_THREAD = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# files (paths under tests/) whose tests share one group across files: the browser tests
_SHARED_GROUPS = {"e2e/": "browser"}
# files whose tests are each a group of its own (minutes each, no module-scoped fixture)
_EACH_ITS_OWN = ("project/test_sample_models.py",)
# the groups that take minutes, handed out first (xdist hands groups to the workers in
# the order they are collected): so that the two workers finish together
_FIRST = ("e2e/", "project/test_sample_models.py::test_each_shipped_model_is_what_its_recorded_command_makes")


def pytest_configure(config: pytest.Config) -> None:
    """In a pytest-xdist worker: one intra-op thread (set before torch loads, and on torch
    if something loaded it already) and passive OpenMP waits, for this process and the
    ``levy`` and ``streamlit`` processes its tests start."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for var in _ONE_THREAD:
        os.environ[var] = "1"
    prefer_passive_wait()
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test file is one ``xdist_group`` (its module-scoped fits are made once, on one
    worker, as in a serial run; a local Ray is started by one worker at a time), unless a
    test names its own; the browser tests, in three files, are one group; in a worker, the
    longest groups first."""
    tests = Path(__file__).resolve().parent

    def where(item: pytest.Item) -> str:
        try:
            return item.path.resolve().relative_to(tests).as_posix()
        except ValueError:
            return ""

    for item in items:
        path = where(item)
        if not path or item.get_closest_marker("xdist_group") is not None:  # its own group
            continue
        group = next((g for prefix, g in _SHARED_GROUPS.items() if path.startswith(prefix)), path)
        if path in _EACH_ITS_OWN:
            group = f"{path}::{item.name}"
        item.add_marker(pytest.mark.xdist_group(group))
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the same order in every worker (a stable sort)
        rank = {prefix: i for i, prefix in enumerate(_FIRST)}
        items.sort(key=lambda item: next((r for prefix, r in rank.items()
                                          if f"{where(item)}::{item.name}".startswith(prefix)), len(rank)))


@pytest.fixture(scope="session")
def synthetic_obs() -> Observations:
    """The bundled "Synthetic multichannel" sample (40 series, 3 channels, 0-48 h)."""
    return load_sample("Synthetic multichannel")


@pytest.fixture(scope="session")
def fit_csv(synthetic_obs: Observations, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first ``N_FIT_SERIES`` series written as a long CSV (what a user would pass)."""
    path = tmp_path_factory.mktemp("data") / "fit.csv"
    synthetic_obs.subset(synthetic_obs.series_ids[:N_FIT_SERIES]).frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def fit_obs(fit_csv: Path) -> Observations:
    """The fitted data exactly as the CLI reads it back (so its content hash matches)."""
    return read_csv(fit_csv)


@pytest.fixture(scope="session")
def new_obs(synthetic_obs: Observations) -> Observations:
    """Series the shared model never saw (a "new file")."""
    return synthetic_obs.subset(synthetic_obs.series_ids[N_FIT_SERIES + 4 : N_FIT_SERIES + 12])


@pytest.fixture(scope="session")
def fitted(fit_obs: Observations):
    """One tiny forecast model (Lévy + twin, 3 epochs, size "small"), in memory.
    Shared by many tests: do not modify it."""
    from levy_core import pipeline
    from levy_core.training.train import TrainConfig

    return pipeline.fit(
        fit_obs, train=TrainConfig(epochs=3, seed=0), size="small", mc_passes=MC_PASSES
    )


@pytest.fixture(scope="session")
def fitted_dir(fitted, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``fitted`` saved to a directory. Read-only: copy it before corrupting anything."""
    return fitted.save(tmp_path_factory.mktemp("model") / "levy_model")
