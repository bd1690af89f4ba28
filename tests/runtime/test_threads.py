"""levy_core.runtime.threads (the thread policy) and the ``levy`` commands' ``--threads``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from levy_core.cli.main import main
from levy_core.pipeline import ranking
from levy_core.runtime import threads
from levy_core.serving import chunked

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cores(monkeypatch: pytest.MonkeyPatch):
    """``available_cores`` pinned to a number the test chooses."""

    def pin(n: int) -> None:
        monkeypatch.setattr(threads, "available_cores", lambda: n)
    return pin


def test_the_budget_is_requested_then_levy_threads_then_omp_then_the_cores(cores) -> None:
    cores(8)
    assert threads.thread_budget(environ={}) == 8
    assert threads.thread_budget(workers=3, environ={}) == 2
    assert threads.thread_budget(workers=16, environ={}) == 1  # never 0
    assert threads.thread_budget(environ={"OMP_NUM_THREADS": "3"}) == 3
    assert threads.thread_budget(environ={"OMP_NUM_THREADS": "3", "LEVY_THREADS": "5"}) == 5
    assert threads.thread_budget(2, environ={"OMP_NUM_THREADS": "3", "LEVY_THREADS": "5"}) == 2
    # 'torch' and 'auto' leave the count to the rest of the rule
    assert threads.thread_budget(environ={"LEVY_THREADS": "torch"}) == 8
    assert threads.thread_budget(environ={"LEVY_THREADS": "auto", "OMP_NUM_THREADS": "1"}) == 1


def test_the_budget_never_reads_the_load(cores, monkeypatch: pytest.MonkeyPatch) -> None:
    cores(4)
    monkeypatch.setattr(os, "getloadavg", lambda: pytest.fail("the load was read"))
    assert threads.thread_budget(environ={}) == 4


@pytest.mark.parametrize("bad, named", [({"LEVY_THREADS": "abc"}, "LEVY_THREADS='abc'"),
                                         ({"LEVY_THREADS": "0"}, "LEVY_THREADS='0'"),
                                         ({"LEVY_THREADS": "5000"}, "1 to 1024")])
def test_a_bad_levy_threads_is_refused_by_name(bad: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named) as err:
        threads.thread_budget(environ=bad)
    assert "torch" in str(err.value)  # says what else it may be


@pytest.mark.parametrize("requested", [0, -1, 1025, "two"])
def test_a_bad_request_or_workers_is_refused(requested) -> None:
    with pytest.raises(ValueError, match="1 to 1024"):
        threads.thread_budget(requested, environ={})
    with pytest.raises(ValueError, match="workers"):
        threads.thread_budget(workers=0, environ={})


def test_the_cores_are_the_affinity_capped_by_a_cgroup_quota(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    quota = tmp_path / "cpu.max"
    monkeypatch.setattr(threads, "_CGROUP_CPU_MAX", quota)
    assert threads.available_cores() == 4  # no cgroup file
    quota.write_text("max 100000\n")
    assert threads.available_cores() == 4
    quota.write_text("150000 100000\n")  # 1.5 CPUs
    assert threads.available_cores() == 2
    quota.write_text("50000 100000\n")
    assert threads.available_cores() == 1


def test_passive_waiting_is_set_unless_the_user_chose() -> None:
    env: dict[str, str] = {}
    assert threads.prefer_passive_wait(env) and env["OMP_WAIT_POLICY"] == "PASSIVE"
    env = {"OMP_WAIT_POLICY": "active"}
    assert not threads.prefer_passive_wait(env) and env["OMP_WAIT_POLICY"] == "active"
    env = {"GOMP_SPINCOUNT": "10000"}
    assert not threads.prefer_passive_wait(env) and "OMP_WAIT_POLICY" not in env
    env = {"LEVY_THREADS": "torch"}
    assert not threads.prefer_passive_wait(env) and "OMP_WAIT_POLICY" not in env


@pytest.mark.integration
def test_the_levy_entry_sets_passive_waiting_before_torch_loads() -> None:
    # OpenMP reads the policy when torch loads it: the package and the entry must not load torch first
    code = ("import os, sys\n"
            "import levy_core, levy_core.runtime.threads\n"
            "from levy_core.__main__ import main\n"
            "assert 'torch' not in sys.modules, 'torch loaded before the entry ran'\n"
            "sys.argv = ['levy', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules, 'scipy' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "LEVY_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    # the policy is set by the entry; `levy --help` itself loads neither torch nor SciPy (the commands
    # import what they compute with when they run: levy_core.cli.main)
    assert out.stdout.strip().splitlines()[-1] == "PASSIVE False False"


def test_using_threads_sets_the_count_and_restores_it() -> None:
    before = torch.get_num_threads()
    other = 1 if before != 1 else 2
    with threads.using_threads(other) as n:
        assert n == other == torch.get_num_threads()
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), threads.using_threads(other):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before  # restored on error too
    with threads.using_threads(None) as n:
        assert n == before


def test_command_threads_keeps_torch_defaults_only_when_asked(cores) -> None:
    cores(6)
    assert threads.command_threads(environ={}) == 6
    assert threads.command_threads(environ={"LEVY_THREADS": "torch"}) is None
    assert threads.command_threads(2, environ={"LEVY_THREADS": "torch"}) == 2


@pytest.mark.parametrize("value", ["0", "1025", "x"])
def test_levy_threads_option_refuses_a_bad_count(value: str, fitted_dir: Path, fit_csv: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["rank", str(fitted_dir), str(fit_csv), "--out", str(tmp_path / "r.csv"), "--threads", value])
    assert exit_.value.code == 2
    assert "--threads" in capsys.readouterr().err


def test_levy_rank_scores_with_the_threads_asked_and_restores_them(
        fitted_dir: Path, fit_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real = chunked.rank_file  # imported by `levy rank` when it runs

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(chunked, "rank_file", spy)
    before = torch.get_num_threads()
    out = {}
    for n in (1, 2):
        out[n] = tmp_path / f"r{n}.csv"
        assert main(["rank", str(fitted_dir), str(fit_csv), "--out", str(out[n]), "--threads", str(n),
                     "--quiet"]) == 0
    assert seen == [1, 2]
    assert torch.get_num_threads() == before
    # a pass's scores do not depend on its thread count (measured; a fit's weights do)
    pd.testing.assert_frame_equal(pd.read_csv(out[1]), pd.read_csv(out[2]), check_exact=True)


def test_levy_threads_env_reaches_the_command(fitted_dir: Path, fit_csv: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        raise ValueError("stop here")

    monkeypatch.setattr(chunked, "rank_file", spy)
    monkeypatch.setenv("LEVY_THREADS", "1")
    assert main(["rank", str(fitted_dir), str(fit_csv), "--out", str(tmp_path / "r.csv"), "--quiet"]) == 2
    assert seen == [1]


def test_scores_are_the_same_with_one_or_two_threads(fitted, new_obs) -> None:
    with threads.using_threads(1):
        one, _ = ranking.score_series(fitted, new_obs)
    with threads.using_threads(2):
        two, _ = ranking.score_series(fitted, new_obs)
    pd.testing.assert_frame_equal(one, two, check_exact=True)


def test_a_pass_splits_by_batch_unless_torch_defaults_are_asked() -> None:
    with threads.using_threads(2):
        assert threads.pass_workers(environ={}) == 2
        assert threads.pass_workers(environ={"LEVY_THREADS": "torch"}) == 1
    with threads.using_threads(1):
        assert threads.pass_workers(environ={}) == 1


def test_single_threaded_blas_limits_numpys_blas_inside_the_block_and_restores_it() -> None:
    import numpy as np
    from threadpoolctl import threadpool_info

    from levy_core.runtime.threads import single_threaded_blas

    def blas_threads() -> list[int]:
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    np.linalg.cholesky(np.eye(3))  # BLAS loaded
    before = blas_threads()
    with single_threaded_blas():
        assert blas_threads() and all(n == 1 for n in blas_threads())
    assert blas_threads() == before
