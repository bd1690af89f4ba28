"""Fits with an owner (dashboard/fitting/fit_pool.py, dashboard/fitting/fit_cancel.py): a fit whose session is
gone is cancelled within seconds, its worker freed for the next one; a session cancels its
own; shutdown ends the workers at once."""

from __future__ import annotations

import io
import time

import pytest
from dash_helpers import long_csv
from levy_dashboard.fitting import fit_pool
from levy_dashboard.fitting.fit_pool import FitPool

from levy_core.data import read_csv

pytestmark = pytest.mark.integration  # worker processes

TASK = {"kind": "interpolate", "cutoff": None, "horizon": None, "holdout_fraction": 0.2}


@pytest.fixture(scope="module")
def obs():
    return read_csv(io.BytesIO(long_csv(12)))


def _long_fit(p: FitPool, obs, key: str, owner: str | None):
    """A fit far longer than the test (500 epochs, patience beyond them): only a cancel ends it."""
    return p.submit_fit(key, obs, task=TASK, train={"epochs": 500, "seed": 1, "patience": 1000}, size="small",
                        train_twin=False, mc_passes=5, previews=False, owner=owner)


def _until(cond, timeout: float) -> float:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, f"not within {timeout} s"
        time.sleep(0.05)
    return time.monotonic() - t0


def _worker_cpu(p: FitPool) -> float:
    """CPU seconds used so far by the pool's worker processes (user + system)."""
    total = 0.0
    for proc in p._executor._processes.values():
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / 100.0
    return total


@pytest.mark.parametrize("how", ["session gone", "owner cancels"])
def test_a_fit_nobody_waits_for_is_cancelled_and_the_next_one_starts_within_seconds(obs, how) -> None:
    p = FitPool(1, nice=0)
    alive = {"a": True, "b": True}
    p.set_liveness(lambda owner: alive[owner])
    try:
        _long_fit(p, obs, "abandoned", "a")
        _until(lambda: p.view("abandoned").state == "running" and p.view("abandoned").progress, 120)
        queued_b = _long_fit(p, obs, "queued-of-a", "a")  # a's second job, still queued
        waiting = p.submit_fit("next", obs, task=TASK, train={"epochs": 2, "seed": 2}, size="small",
                               train_twin=False, mc_passes=5, previews=False, owner="b")
        assert p.view("next").state == "queued" and p.view("next").position == 2
        t0 = time.monotonic()
        if how == "session gone":
            alive["a"] = False  # the tab closed: the runtime no longer knows the session
        else:
            assert p.release("abandoned", "a") and p.release("queued-of-a", "a")
        limit = fit_pool.OWNER_GRACE_S + 3 * fit_pool.REAP_EVERY_S + 1
        _until(lambda: p.view("abandoned").state == p.view("queued-of-a").state == "failed", limit)  # both dropped
        assert "cancelled" in p.view("abandoned").error
        assert (p.view("abandoned").error == fit_pool.CANCELLED_GONE) == (how == "session gone")
        started = _until(lambda: p.view("next").state != "queued", 10)
        assert time.monotonic() - t0 < 10, "the next session's fit starts within 10 s of the session going"
        assert p.wait("next", timeout=120).state == "done", "the worker survived the cancel and fits the next"
        assert queued_b.state == "failed" and waiting.state == "done" and started < 10
        cpu = _worker_cpu(p)
        time.sleep(1.0)
        assert _worker_cpu(p) - cpu < 0.3, "the cancelled fit no longer uses the worker's CPU"
    finally:
        p.shutdown()


def test_a_job_with_a_live_owner_or_no_owner_is_never_reaped_and_a_shared_job_needs_every_owner_gone(obs) -> None:
    p = FitPool(1, nice=0)
    alive = {"a": True, "b": True}
    p.set_liveness(lambda owner: alive[owner])
    try:
        _long_fit(p, obs, "shared", "a")
        _long_fit(p, obs, "shared", "b")  # another session joins the same fit
        p.submit_fit("nobody's", obs, task=TASK, train={"epochs": 2, "seed": 3}, size="small", train_twin=False,
                     mc_passes=5, previews=False)
        assert not p.release("shared", "a"), "b still waits for it"
        alive["a"] = False
        time.sleep(fit_pool.OWNER_GRACE_S + 2 * fit_pool.REAP_EVERY_S)
        assert p.view("shared").state in ("queued", "running") and p.view("nobody's").state == "queued"
        alive["b"] = False
        _until(lambda: p.view("shared").state == "failed", fit_pool.OWNER_GRACE_S + 3 * fit_pool.REAP_EVERY_S + 1)
        assert p.wait("nobody's", timeout=120).state == "done", "a job without an owner runs to its end"
    finally:
        p.shutdown()


def test_shutdown_cancels_every_job_and_ends_the_workers_within_seconds(obs) -> None:
    p = FitPool(1, nice=0)
    _long_fit(p, obs, "running", "a")
    _long_fit(p, obs, "queued", "a")
    _until(lambda: p.view("running").state == "running", 120)
    procs = list(p._executor._processes.values())
    t0 = time.monotonic()
    p.shutdown()
    assert time.monotonic() - t0 < fit_pool.WORKER_EXIT_S + 2
    assert not any(proc.is_alive() for proc in procs), "no worker outlives the pool"
    assert {p.view(k).error for k in ("running", "queued")} == {fit_pool.CANCELLED_SHUTDOWN}
