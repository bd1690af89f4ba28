"""Shared fixtures: the synthetic sample, and ONE tiny fitted model reused by the
pipeline and CLI tests (fitting is the expensive part; keep it to a single fit).

Parallel runs (``make test``, ``make test-fast``: pytest-xdist, ``-n 2 --dist loadgroup``):
each worker computes on ONE intra-op thread, with waiting OpenMP threads asleep, so two
workers never oversubscribe the cores (a spinning team of 2 beside another process ran the
gradient checks up to 10× slower). Each test file runs on one worker (an ``xdist_group``
per file), the real-browser tests (servers, timed sampling, the screenshots) all on one, one
after the other, and the dashboard's tests all on one. Each test starts at the worker's own
priority (``_priority_kept``)."""

from __future__ import annotations

import contextlib
import multiprocessing.process
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from levy_core.data import Observations, load_sample, read_csv
from levy_core.runtime.priority import thread_niceness
from levy_core.runtime.threads import prefer_passive_wait

N_FIT_SERIES = 16  # series of the synthetic sample the shared model is fitted on
MC_PASSES = 5  # MC-Dropout passes recorded with the shared model (small: tests stay fast)
_ONE_THREAD = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# files (paths under tests/) whose tests share one group across files: the browser tests; the
# dashboard's (one worker pays the app's first run, the fit pool's spawned workers and its warm
# caches once, not each worker that draws a dashboard file: about 8 s a worker)
_SHARED_GROUPS = {"e2e/": "browser", "dashboard/": "dashboard"}
# files whose tests are each a group of its own (minutes each, no module-scoped fixture)
_EACH_ITS_OWN = ("project/test_sample_models.py",)
# the longest groups, longest first (measured: `pytest -n 2 --durations=0` of make test-fast, summed
# per group; 2026-12-03 12:15, load 1.6-2.1: dashboard/ 14.8 s, then 8.6 s down to 2.6 s; the browser
# tests and the shipped models' refits lead in make test), handed out in this order, the rest in
# collection order after them (pytest-xdist's own order, by test count, is switched off): so that
# the two workers finish together
_FIRST = (
    "e2e/", "project/test_sample_models.py::test_each_shipped_model_is_what_its_recorded_command_makes",
    "dashboard/", "docs/test_docs_blocks.py", "decisions/test_watch.py", "serving/test_chunked.py", "forecast/test_one_series.py",
    "model/test_model.py", "episodes/test_origins.py", "project/test_hostile_limits.py",
    "operator/test_attention_extensions.py", "project/test_architecture.py", "forecast/test_forecast_evaluate.py",
    "forecast/test_forecast_api.py", "data/test_drift.py", "decisions/test_advise.py",
    "project/test_hostile_files.py", "pipeline/test_recipe.py", "cli/test_cli_watch.py",
    "operator/test_attention.py", "data/test_decompression.py", "cli/test_dashboard_install.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """In the pytest-xdist controller: the groups handed out in ``_FIRST``'s order. In a
    worker: the groups carried in the node ids (``_GroupInNodeId``), one intra-op thread (set
    before torch loads, and on torch if something loaded it already) and passive OpenMP
    waits, for this process and the ``levy`` and ``streamlit`` processes its tests start."""
    if hasattr(config.option, "loadscopereorder"):  # the controller: groups in _FIRST's order
        config.option.loadscopereorder = False  # (pytest-xdist sorts them by test count otherwise)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if config.getvalue("dist") == "loadgroup" or getattr(config.option, "loadgroup", False):
        config.pluginmanager.register(_GroupInNodeId(), "levy-group-in-node-id")
    for var in _ONE_THREAD:
        os.environ[var] = "1"
    prefer_passive_wait()
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


class _GroupInNodeId:
    """pytest-xdist 3.8 tells the controller a test's group by appending ``@group`` to its node
    id through the attribute ``_nodeid``, which pytest 9.2 no longer reads (node ids are
    structured there, ``_id``): every group was silently ignored, each test dealt out on its
    own, a file's module-scoped fits made on both workers, the browser tests side by side
    (pytest-xdist issue #1386). Until a release fixes it, the id is set here, as pytest-xdist
    means to; where its own hook worked, the id already ends in the group and is left alone."""

    @pytest.hookimpl(trylast=True)  # after pytest-xdist's own hook
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        try:
            from _pytest.nodeid import NodeId
        except ImportError:  # a pytest before structured node ids: pytest-xdist's hook works
            return
        for item in items:
            names = {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                     for m in item.iter_markers("xdist_group")}
            suffix = "@" + "_".join(sorted(names))
            if names and hasattr(item, "_id") and not item.nodeid.endswith(suffix):
                item._id = NodeId.parse(item.nodeid + suffix)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test file is one ``xdist_group`` (its module-scoped fits are made once, on one
    worker, as in a serial run; a local Ray is started by one worker at a time), unless a
    test names its own; the browser tests, in three files, are one group, and the
    dashboard's; in a worker, the longest groups first."""
    tests = Path(__file__).resolve().parent

    files: dict[Path, str] = {}  # one resolve per test file, not per test

    def where(item: pytest.Item) -> str:
        if item.path not in files:
            try:
                files[item.path] = item.path.resolve().relative_to(tests).as_posix()
            except ValueError:
                files[item.path] = ""
        return files[item.path]

    for item in items:
        path = where(item)
        if not path or item.get_closest_marker("xdist_group") is not None:  # its own group
            continue
        group = next((g for prefix, g in _SHARED_GROUPS.items() if path.startswith(prefix)), path)
        if path in _EACH_ITS_OWN:
            group = f"{path}::{item.name}"
        item.add_marker(pytest.mark.xdist_group(group))
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the same order in every worker (a stable sort)
        # each item's path resolved once (resolving it per prefix was 2 s of each worker's start)
        paths = {id(item): f"{where(item)}::{item.name}" for item in items}
        items.sort(key=lambda item: next((r for r, prefix in enumerate(_FIRST)
                                          if paths[id(item)].startswith(prefix)), len(_FIRST)))


@pytest.fixture(autouse=True)
def _priority_kept() -> Iterator[None]:
    """The worker's priority as it was before each test. ``levy fit`` lowers the priority of
    every thread of its process for good (niceness 10, ``--nice``), and the tests run it in
    the worker's own process (``cli_helpers.run``): from the first such test on, the worker
    ran every later test at niceness 10, starved beside any other job on the machine. Put
    back where the system allows it (raising a priority needs the right to)."""
    if not hasattr(os, "getpriority"):
        yield
        return
    before = os.getpriority(os.PRIO_PROCESS, 0)
    yield
    if os.getpriority(os.PRIO_PROCESS, 0) > before:
        for tid, nice in thread_niceness().items():
            if nice > before:
                with contextlib.suppress(OSError):  # no right to raise it, or the thread ended
                    os.setpriority(os.PRIO_PROCESS, tid, before)


_WHOLE_PROGRAM_MARKS = ("integration", "slow", "e2e")  # the tiers `make test-fast` leaves out


@pytest.fixture(autouse=True)
def _whole_program_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that runs the dashboard's whole script (Streamlit's ``AppTest``) or starts another
    process (a ``levy`` or Python subprocess, a process pool) is an ``integration`` test; without
    that mark (or ``slow``, ``e2e``) it fails here, naming the mark, so that ``make test-fast``
    keeps to tests of one unit in this process (the 67 marked were 89 s of its 223 s of test
    time, 2026-12-03) and ``make test`` still runs every one of them."""
    if any(request.node.get_closest_marker(mark) for mark in _WHOLE_PROGRAM_MARKS):
        return

    def refuse(what: str):
        def refused(*args: object, **kwargs: object) -> None:
            raise AssertionError(f"this test {what}: mark it @pytest.mark.integration (a whole-program test, "
                                 "left out of make test-fast, run by make test)")
        return refused

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("starts a process"))
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse("starts a process"))
    app_test = sys.modules.get("streamlit.testing.v1.app_test")
    if app_test is not None:
        monkeypatch.setattr(app_test.AppTest, "_run", refuse("runs the dashboard's whole script (AppTest)"))


@pytest.fixture(autouse=True, scope="session")
def _one_timing_run() -> Iterator[None]:
    """Each method timed on one run: ``evaluate`` repeats a method's passes until they
    add up to ``TIMING_MIN_SECONDS`` (0.25 s, for a timing a user can read), 0.5 s or more of
    every evaluation, 8 s of the dashboard's tests alone (2026-12-03). No test compares a
    timing; the repeat itself is tested with its own ``min_total``
    (``tests/pipeline/test_pipeline.py``). The ``levy`` processes the tests start keep 0.25 s."""
    from levy_core.pipeline import evaluation

    before = evaluation.TIMING_MIN_SECONDS
    evaluation.TIMING_MIN_SECONDS = 0.0
    yield
    evaluation.TIMING_MIN_SECONDS = before


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
    from levy_core.pipeline.recipe import fit
    from levy_core.training.train import TrainConfig

    return fit(
        fit_obs, train=TrainConfig(epochs=3, seed=0), size="small", mc_passes=MC_PASSES
    )


@pytest.fixture(scope="session")
def fitted_dir(fitted, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``fitted`` saved to a directory. Read-only: copy it before corrupting anything."""
    return fitted.save(tmp_path_factory.mktemp("model") / "levy_model")
