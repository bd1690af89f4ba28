"""The server's fit pool (dashboard/fitting/fit_pool.py): bounded, FIFO, deterministic under load."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from dash_helpers import ROOT, long_csv
from levy_dashboard.fitting import fit_pool, fits
from levy_dashboard.fitting.fit_pool import FitPool, JobView
from levy_dashboard.services.fit import status_text

from levy_core.data import read_csv
from levy_core.pipeline.predict import predict_grid
from levy_core.runtime.priority import thread_niceness
from levy_core.runtime.threads import using_threads
from levy_core.serving.modelzip import load_model_zip

TASK = {"kind": "interpolate", "cutoff": None, "horizon": None, "holdout_fraction": 0.2}


@pytest.fixture(scope="module")
def obs():
    import io

    return read_csv(io.BytesIO(long_csv(12)))


def _submit(p: FitPool, obs, seed: int, epochs: int = 2, key: str | None = None, previews: bool = False):
    return p.submit_fit(key or f"k{seed}-{epochs}", obs, task=TASK, train={"epochs": epochs, "seed": seed},
                        size="small", train_twin=False, mc_passes=5, previews=previews)


def _predictions(zip_bytes: bytes, obs) -> np.ndarray:
    fitted = load_model_zip(zip_bytes)
    grid = predict_grid(fitted, obs, n_points=5)
    return grid[["mean", "sigma", "log_evidence", "disagreement"]].to_numpy()


@pytest.mark.slow  # three fits one after the other
def test_one_worker_runs_one_fit_at_a_time_first_in_first_out(obs) -> None:
    p = FitPool(1)
    try:
        jobs = [_submit(p, obs, seed) for seed in range(3)]
        views = [p.view(j.key) for j in jobs]
        waiting = [v.position for v in views if v.state == "queued"]
        assert waiting == list(range(1, len(waiting) + 1)) and len(waiting) >= 2, "FIFO places 1, 2, … in order"
        assert p.submit_fit(jobs[1].key, obs, task=TASK, train={"epochs": 2, "seed": 1}, size="small",
                            train_twin=False, mc_passes=5) is jobs[1], "the same fit joins the queued job"
        for j in jobs:
            assert p.wait(j.key, timeout=300).state == "done"
        spans = sorted((j.started, j.finished) for j in jobs)
        assert [j.id for j in sorted(jobs, key=lambda j: j.started)] == [j.id for j in jobs], "started in order"
        for (_, e0), (s1, _) in zip(spans, spans[1:], strict=False):
            assert s1 >= e0 - 0.05, "never two fits at once with one worker"
    finally:
        p.shutdown()


@pytest.fixture(scope="module")
def pool2():
    # at the tests' own priority (nice=0): at the default, the lowest, a pooled fit waited for every
    # other job on the machine (23 s instead of 4 under a load of 3); the priority is tested below
    p = FitPool(2, nice=0)
    yield p
    p.shutdown()


@pytest.mark.slow  # four fits, two beside CPU hogs
def test_the_same_fit_alone_and_beside_other_fits_under_load_is_bit_identical(obs, pool2) -> None:
    job = _submit(pool2, obs, 7, epochs=4, previews=True)
    # a second job at once, so that the pool starts its second process now: a process is
    # spawned only when a job finds no idle one, and one started below, beside the fits,
    # can take longer to import torch than the other fit takes to run (a busy machine)
    warm = _submit(pool2, obs, 9, epochs=1)
    assert pool2.wait(job.key, timeout=300).state == "done"
    assert pool2.wait(warm.key, timeout=300).state == "done"
    stop = threading.Event()

    def burn() -> None:  # CPU hogs beside the fits: their clock runs slower
        x = 0
        while not stop.is_set():
            x += 1

    hogs = [threading.Thread(target=burn, daemon=True) for _ in range(2)]
    for h in hogs:
        h.start()
    try:
        # another fit at the same time, in the other worker; long enough that the second worker,
        # niced below the hogs, wakes while it runs (at 4 epochs it once finished in 0.5 s, before
        # the starved worker took `again`, and the first worker ran both in turn)
        other = _submit(pool2, obs, 8, epochs=20)
        again = _submit(pool2, obs, 7, epochs=4, key="again", previews=False)
        assert pool2.wait(again.key, timeout=300).state == "done"
        assert pool2.wait(other.key, timeout=300).state == "done"
        assert other.started < again.finished and again.started < other.finished, "they ran at the same time"
    finally:
        stop.set()
    np.testing.assert_array_equal(_predictions(job.result, obs), _predictions(again.result, obs))
    a, b = load_model_zip(job.result), load_model_zip(again.result)
    for x, y in zip(a.levy.state_dict().values(), b.levy.state_dict().values(), strict=True):
        assert bool((x == y).all())
    assert a.levy_calibration.scale_ == b.levy_calibration.scale_


@pytest.mark.integration
def test_a_pooled_fit_equals_the_in_process_fit_and_sends_previews(obs) -> None:
    # in the app's own pool (fit_pool.pool(): at the tests' priority, the dashboard conftest), whose
    # worker test_app.py's fits started already in this process, where a pool of its own spawned
    # a fresh interpreter importing torch for this one fit
    pool = fit_pool.pool()
    settings = fits.FitSettings(epochs=3, train_twin=False, mc_passes=5)
    with using_threads(1):  # the workers' thread count
        local = fits.fit_model(obs, obs.content_hash(), "test", settings)
    task, train = fits.fit_configs(settings)
    key = "pooled-equals-in-process"
    job = pool.submit_fit(key, obs, task=task, train=train, size="small", train_twin=False, mc_passes=5)
    view = pool.wait(key, timeout=300)
    assert view.state == "done" and len(view.history) == 3
    assert [h["epoch"] for h in view.history] == [1, 2, 3]
    # a preview as soon as an epoch beats the untrained model (epoch 0), none before
    assert (view.preview_seq >= 1) == any(h["best_epoch"] >= 1 for h in view.history)
    pooled = load_model_zip(job.result)
    for x, y in zip(local.fitted.levy.state_dict().values(), pooled.levy.state_dict().values(), strict=True):
        assert bool((x == y).all())


def test_pool_size_comes_from_the_environment_within_the_cores(monkeypatch) -> None:
    monkeypatch.delenv(fit_pool.ENV_WORKERS, raising=False)
    assert fit_pool.workers() == max(1, fit_pool.cores() // 2)
    monkeypatch.setenv(fit_pool.ENV_WORKERS, "1")
    assert fit_pool.workers() == 1
    for bad in ("0", "lots", str(fit_pool.cores() + 1)):
        monkeypatch.setenv(fit_pool.ENV_WORKERS, bad)
        with pytest.raises(ValueError, match="LEVY_DASHBOARD_FIT_WORKERS"):
            fit_pool.workers()


def test_a_queued_session_reads_its_place_and_a_training_one_its_epoch() -> None:
    queued = JobView("k", "queued", 2, 1, None, [], 0, False, None, 0.0)
    _, text = status_text(queued, "upload: a.csv")
    assert "2nd in line" in text and "1 fit running" in text
    epoch = {"model": "levy", "epoch": 5, "epochs": 40, "val_loss": 0.01, "best_val_loss": 0.009, "best_epoch": 4,
             "train_loss": 0.02, "seconds": 3.0}
    frac, text = status_text(JobView("k", "running", 0, 1, epoch, [epoch], 2, False, None, 3.0), "upload: a.csv")
    assert "epoch 5 of at most 40" in text and "0.0090" in text and "best epoch so far" in text
    assert 0 < frac < 1 / 3
    assert "11th" in status_text(JobView("k", "queued", 11, 1, None, [], 0, False, None, 0.0), "x")[1]


@pytest.mark.slow  # fits in the pool
def test_a_failed_fit_says_why_and_can_be_retried(obs, pool2) -> None:
    bad = pool2.submit_fit("bad", obs, task={**TASK, "holdout_fraction": 2.0}, train={"epochs": 1}, size="small",
                           train_twin=False, mc_passes=5)
    view = pool2.wait(bad.key, timeout=300)
    assert view.state == "failed" and "holdout_fraction" in view.error
    again = pool2.submit_fit("bad", obs, task=TASK, train={"epochs": 1}, size="small", train_twin=False, mc_passes=5)
    assert again is not bad and pool2.wait("bad", timeout=300).state == "done"


def _job_in(p: FitPool, key: str) -> fit_pool.Job:
    """A job registered in the pool as ``_submit`` registers one, with a future the test resolves."""
    from concurrent.futures import Future

    job = fit_pool.Job(900 + len(p._by_id), key, "fit", future=Future())
    p._jobs[key], p._by_id[job.id] = job, job
    job.future.add_done_callback(lambda f: p._finish(job, f))
    return job


def _event(job: fit_pool.Job, kind: str, payload=None) -> tuple:
    return (job.id, kind, payload, time.time())


def test_a_job_ends_only_once_its_late_events_are_in_and_a_late_start_does_not_revive_it() -> None:
    # the stop-35 CI failure: a fit that fails at once had its "started" event read after the
    # future resolved, and showed "running" for ever
    p = FitPool(1)
    try:
        failed = _job_in(p, "fails-at-once")
        failed.future.set_exception(ValueError("holdout_fraction must lie in (0, 1)"))
        assert p.view("fails-at-once").state == "queued", "not ended before the worker's last event"
        p._apply(_event(failed, "started"))
        assert p.view("fails-at-once").state == "running"
        p._apply(_event(failed, "end"))
        view = p.view("fails-at-once")
        assert view.state == "failed" and "holdout_fraction" in view.error
        p._apply(_event(failed, "started"))  # a stray event after the end changes nothing
        assert p.view("fails-at-once").state == "failed"

        done = _job_in(p, "done")
        p._apply(_event(done, "started"))
        done.future.set_result(b"model")
        for epoch in (1, 2):  # epochs read after the future resolved still reach the history
            p._apply(_event(done, "epoch", {"epoch": epoch}))
        assert p.view("done").state == "running"
        p._apply(_event(done, "end"))
        view = p.view("done")
        assert view.state == "done" and [h["epoch"] for h in view.history] == [1, 2]
        assert p.models("done")[3] == b"model"

        first = _job_in(p, "end-first")  # the usual order: the last event, then the result
        p._apply(_event(first, "end"))
        assert p.view("end-first").state == "queued"
        first.future.set_result(b"m")
        assert p.view("end-first").state == "done"
    finally:
        p.shutdown()


def test_wait_returns_when_the_job_ends_and_a_job_without_its_last_event_ends_after_a_grace(monkeypatch) -> None:
    monkeypatch.setattr(fit_pool, "END_EVENT_GRACE_S", 0.2)
    p = FitPool(1)
    try:
        job = _job_in(p, "waited")
        threading.Timer(0.1, lambda: (job.future.set_result(b"m"), p._apply(_event(job, "end")))).start()
        t0 = time.monotonic()
        assert p.wait("waited", timeout=30).state == "done"
        assert time.monotonic() - t0 < 10, "woken by the end, not by the timeout"
        assert p.wait("waited", timeout=0).state == "done"

        silent = _job_in(p, "no-end-event")  # a worker that died sends no "end"
        silent.future.set_exception(RuntimeError("the worker died"))
        assert p.view("no-end-event").state == "queued"
        view = p.wait("no-end-event", timeout=30)
        assert view.state == "failed" and view.error == "the worker died"

        never = _job_in(p, "unresolved")
        t0 = time.monotonic()
        assert p.wait("unresolved", timeout=0.2).state == "queued", "the timeout returns the job as it is"
        assert time.monotonic() - t0 < 10
        never.future.cancel()
        assert p.view("unresolved").state == "failed", "a cancelled job never ran: no event to wait for"
    finally:
        p.shutdown()


@pytest.mark.slow  # a fit with previews
def test_previews_arrive_while_the_levy_model_trains_and_draw_a_band(obs, pool2) -> None:
    settings = fits.FitSettings(epochs=15, train_twin=False, mc_passes=5)
    task, train = fits.fit_configs(settings)
    pool2.submit_fit("previewed", obs, task=task, train=train, size="small", train_twin=False, mc_passes=5)
    preview = None
    while preview is None:
        zip_bytes, progress, _, final = pool2.models("previewed")
        if zip_bytes is not None:
            preview = fits.preview_result("previewed~1", zip_bytes, obs, obs.content_hash(), settings, "upload: x.csv",
                                          progress, [])
        assert final is None or preview is not None or pool2.view("previewed").preview_seq >= 1
        if final is not None:
            break
        time.sleep(0.05)
    assert preview is not None, "a preview came before the fit ended"
    assert preview.preview.startswith("epoch ") and "Training on upload: x.csv" in preview.describe()
    assert progress["best_epoch"] >= 1, "a preview is a model better than the untrained one"
    grid = predict_grid(preview.fitted, obs, n_points=5)
    assert np.isfinite(grid["sigma"]).all() and (grid["sigma"] > 0).all()
    assert pool2.wait("previewed", timeout=300).state == "done"
    assert pool2.models("previewed")[0] is None, "the final model replaces the preview"


@pytest.mark.integration
def test_a_bad_pool_size_stops_the_server_with_a_message() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, fit_pool.ENV_WORKERS: "lots"}
    out = subprocess.run([sys.executable, "-m", "levy_dashboard.server.serve", "run", "dashboard/app.py", "--server.headless",
                          "true"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 2 and out.stderr.startswith("error: LEVY_DASHBOARD_FIT_WORKERS='lots'"), out.stderr


def _preloaded() -> bool:
    """In a worker: has it imported what a fit needs (levy_core.pipeline.preload) already?"""
    import sys

    from levy_core.pipeline.preload import FIT_MODULES

    return all(name in sys.modules for name in FIT_MODULES)


@pytest.mark.integration
def test_started_workers_are_up_with_what_a_fit_imports_before_the_first_fit() -> None:
    p = FitPool(2)
    try:
        p.start_workers()
        assert len(p._executor._processes) == 2, "every worker started at once, none waits for a fit"
        assert [p._executor.submit(_preloaded).result(timeout=300) for _ in range(2)] == [True, True]
        assert p.view("anything") is None and p.running() == p.queued() == 0, "the start is no job of anyone's"
    finally:
        p.shutdown()


_SERVE_WITHOUT_STREAMLIT = """
import sys
import streamlit.web.cli

def streamlit_main(prog_name):  # what the server finds when Streamlit would start
    from levy_dashboard.fitting import fit_pool
    print(len(fit_pool._pool._executor._processes), fit_pool._pool.size)
    fit_pool._pool.shutdown()

streamlit.web.cli.main = streamlit_main
sys.argv = ["serve", "run", "dashboard/app.py"]
from levy_dashboard.server.serve import main
main()
"""


@pytest.mark.integration
def test_the_server_starts_its_fit_workers_before_streamlit(monkeypatch) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, fit_pool.ENV_WORKERS: "2"}
    out = subprocess.run([sys.executable, "-c", _SERVE_WITHOUT_STREAMLIT], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["2", "2"], out.stdout


def _worker_threads() -> dict[int, int]:
    """In a worker: a parallel torch operator (its OpenMP team started), then the niceness
    of every thread of the worker."""
    import torch

    x = torch.rand(512, 512)
    for _ in range(3):
        x = torch.tanh(x @ x) + x.sum(0)
    return thread_niceness()


@pytest.mark.integration
def test_fit_workers_run_every_thread_at_low_priority_and_fit_alike(obs, monkeypatch) -> None:
    monkeypatch.setenv(fit_pool.ENV_NICE, "12")
    p = FitPool(1, threads=2)  # two intra-op threads: the worker starts an OpenMP team
    try:
        assert p.nice == 12
        tasks = p._executor.submit(_worker_threads).result(timeout=300)
        assert len(tasks) >= 2, f"the team's threads: {tasks}"
        assert set(tasks.values()) == {max(12, thread_niceness()[threading.get_native_id()])}, tasks
    finally:
        p.shutdown()
    for bad in ("-5", "20", "low"):
        monkeypatch.setenv(fit_pool.ENV_NICE, bad)
        with pytest.raises(ValueError, match="LEVY_DASHBOARD_FIT_NICE"):
            fit_pool.fit_niceness()
    monkeypatch.delenv(fit_pool.ENV_NICE)
    assert fit_pool.fit_niceness() == fit_pool.FIT_NICE == 19


_POOL_THEN_WAIT = """
import sys, time
from levy_dashboard.fitting.fit_pool import FitPool
p = FitPool(2)
p.start_workers()
while len(p._executor._processes) < 2:
    time.sleep(0.05)
print(*p._executor._processes, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """``pid`` runs and is no zombie (an orphan's zombie is reaped by init, not by us)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.integration
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_fit_workers_end_when_their_server_is_killed_outright() -> None:
    """SIGKILL (or the OOM killer) runs no exit handler: the workers' own watchdog ends them
    within seconds instead of leaving idle fit processes behind."""
    server = subprocess.Popen([sys.executable, "-c", _POOL_THEN_WAIT], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(x) for x in server.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(pid) for pid in pids)
    finally:
        server.kill()
        server.wait(30)
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = {pid: open(f"/proc/{pid}/stat", encoding="utf-8").read()[:80] for pid in pids if _alive(pid)}
    assert left == {}, f"a fit worker outlived its killed server: {left}"
