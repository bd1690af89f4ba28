"""The server's fit workers: a bounded pool of processes, a FIFO queue, progress and previews.

Every fit of a dashboard server runs here, never in a session's script thread:

* **Bounded**: at most ``workers()`` fits at once (``LEVY_DASHBOARD_FIT_WORKERS``, set by
  ``levy dashboard --fit-workers N``; default ``max(1, cores // 2)``: the other half of the
  cores answers the sessions' views while fits run). More are queued, first in first out,
  and each waiting job knows its place (``JobView.position``).
* **No oversubscription, reproducible**: each worker is a process of its own running torch
  with :data:`FIT_THREADS` (1) intra-op thread, so ``workers × threads ≤ cores``; a fit's
  result does not depend on the pool size, the load or the other fits (processes share no
  torch random state; a fit is bit-for-bit reproducible at a fixed thread count, and
  ``make sample-models`` fits with one thread too).
* **Behind the views**: each worker runs at a low CPU priority (niceness :data:`FIT_NICE`,
  ``LEVY_DASHBOARD_FIT_NICE``; ``levy_core.runtime.priority``), set before torch starts any thread,
  so every thread of a fit inherits it: when the cores are busy, a session's re-render (the
  server process) runs before a fit's next step. A fit's result does not depend on it (it
  only decides who runs first); on an idle machine the fits use the cores as before.
* **Deduplicated**: a job is keyed by the fit key (data hash + settings); a session asking
  for a fit already queued or running joins it.
* **Owned, cancellable**: a job remembers the sessions waiting for it (``owner``); one
  whose owners are all gone (``set_liveness``: the server's check that a session is still
  connected, read every :data:`REAP_EVERY_S` s, an owner dropped after :data:`OWNER_GRACE_S`
  s gone) is cancelled, queued or running, and a session can give up its own
  (``release``); a running job stops within a fraction of a second (``fit_cancel``: its
  worker survives for the next job). ``shutdown`` cancels every job and ends the workers.
* **Progress and previews**: a worker reports each epoch and, as the early-stopping loss
  improves (at most every :data:`PREVIEW_EVERY_S` s), the Lévy model as it stands (a
  calibrated preview, ``levy_core.pipeline.recipe.preview_model``), then the Lévy model alone as
  soon as it is trained (its twin is trained next). Models cross the process boundary as
  the project's saved-model zip (``levy_core.serving.modelzip``), never pickled modules.

No Streamlit here: the pool is a process-wide object (``pool()``), tested on its own.
"""

from __future__ import annotations

import atexit
import itertools
import multiprocessing as mp
import os
import queue
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from levy_dashboard.fitting.fit_cancel import CancelBoard, exit_with_parent, run_cancellable, watch

from levy_core.runtime.priority import MAX_NICE, lower_priority, parse_nice
from levy_core.runtime.threads import available_cores, prefer_passive_wait

__all__ = ["ENV_NICE", "ENV_WORKERS", "FIT_NICE", "FIT_THREADS", "PREVIEW_EVERY_S", "FitPool", "Job", "JobView",
           "cores", "default_workers", "fit_niceness", "pool", "workers"]

ENV_WORKERS = "LEVY_DASHBOARD_FIT_WORKERS"
ENV_NICE = "LEVY_DASHBOARD_FIT_NICE"
FIT_NICE = MAX_NICE  # the fit workers' niceness, the lowest priority: the views' script runs first
FIT_THREADS = 1  # torch intra-op threads per fit (fixed: a fit is reproducible at a fixed thread count)
PREVIEW_EVERY_S = 5.0  # a worker sends a preview at most this often (the first one after epoch 1): each one redraws its session
END_EVENT_GRACE_S = 10.0  # how long a resolved job waits for its worker's last event before it ends anyway
REAP_EVERY_S = 1.0  # how often the pool looks for jobs whose owners are all gone
OWNER_GRACE_S = 2.0  # an owner not connected for this long is gone (a reconnect within it keeps the fit)
WORKER_EXIT_S = 3.0  # shutdown: how long a terminated worker has before it is killed
CANCELLED_GONE = "cancelled: nobody is waiting for it any more (its browser session closed)"
CANCELLED_OWNER = "cancelled by its session"
CANCELLED_SHUTDOWN = "cancelled (the server is shutting down)"


def cores() -> int:
    """CPU cores this process may run on (its affinity and cgroup quota: ``levy_core.runtime.threads``)."""
    return available_cores()


def default_workers() -> int:
    """Half the cores (at least one): fits never take the cores the views need."""
    return max(1, cores() // 2)


def workers() -> int:
    """The pool size: ``LEVY_DASHBOARD_FIT_WORKERS`` (1 … cores) or :func:`default_workers`.
    ValueError naming the variable for anything else."""
    raw = os.environ.get(ENV_WORKERS, "").strip()
    if not raw:
        return default_workers()
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if not 1 <= n <= cores():
        raise ValueError(f"{ENV_WORKERS}={raw!r}: give a whole number of fit workers from 1 to {cores()} (the "
                         f"cores here: each fit uses {FIT_THREADS} thread); unset, it is {default_workers()}")
    return n


def fit_niceness() -> int:
    """The fit workers' niceness: ``LEVY_DASHBOARD_FIT_NICE`` (0 … 19; 0 leaves them at the
    server's priority) or :data:`FIT_NICE`. ValueError naming the variable for anything else."""
    raw = os.environ.get(ENV_NICE, "").strip()
    if not raw:
        return FIT_NICE
    try:
        return parse_nice(raw)
    except ValueError:
        raise ValueError(f"{ENV_NICE}={raw!r}: give the fit workers' niceness, a whole number from 0 (the server's "
                         f"priority) to {MAX_NICE} (the lowest); unset, it is {FIT_NICE}") from None


# ----------------------------------------------------------------------------- in the worker process

_events: Any = None  # the worker's end of the event queue (set by _init)


def _init(events: Any, threads: int, nice: int = 0, board: CancelBoard | None = None,
          parent: int | None = None) -> None:
    """Worker start: a low priority (``nice``, before any other thread starts), one torch
    thread count for every fit it runs, the event queue, the cancel board's watchdog and one
    that ends the worker with ``parent`` (the server's pid, passed in: read here, it could
    already be init's, were the server killed while this worker started)."""
    global _events
    lower_priority(nice)
    watch(board)
    exit_with_parent(os.getppid() if parent is None else parent)
    prefer_passive_wait()  # waiting OpenMP threads sleep (before torch loads its runtime)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import torch

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    _events = events
    from levy_core.forecast.verbs import FittedVerbs

    FittedVerbs.preload()  # what a fit imports on first use, now: not inside the first job a user waits for


def _ready() -> None:
    """A job that does nothing: submitted to start a worker (its ``_init`` runs first)."""


def _post(job_id: int, kind: str, payload: Any = None) -> None:
    _events.put((job_id, kind, payload, time.time()))


def _epoch_event(p: Any) -> dict[str, Any]:
    return {"model": p.model, "epoch": p.epoch, "epochs": p.epochs, "train_loss": p.train_loss,
            "val_loss": p.val_loss, "best_val_loss": p.best_val_loss, "best_epoch": p.best_epoch,
            "seconds": p.seconds, "eta_seconds": p.eta_seconds, "stopped_by": p.stopped_by}


def _fit_job(job_id: int, obs: Any, task: dict[str, Any], train: dict[str, Any], size: str, train_twin: bool,
             mc_passes: int, previews: bool, transform: Any = "auto") -> bytes:
    """In a worker: the Lévy model (previews as it trains, then the model alone), then its twin.
    Returns the final model as zip bytes."""
    _post(job_id, "started")
    try:
        return _fit_job_body(job_id, obs, task, train, size, train_twin, mc_passes, previews, transform)
    finally:
        _post(job_id, "end")  # after every other event of the job (one queue, one process: in order)


def _fit_job_body(job_id: int, obs: Any, task: dict[str, Any], train: dict[str, Any], size: str,
                  train_twin: bool, mc_passes: int, previews: bool, transform: Any = "auto") -> bytes:
    from levy_core.forecast.verbs import FittedVerbs

    last = {"at": -1e9, "best": 0}  # a preview once an epoch beat the untrained model (epoch 0: the offset alone)

    def preview(p: Any, build: Any) -> None:
        now = time.monotonic()
        if p.best_epoch > last["best"] and (p.epoch == 1 or now - last["at"] >= PREVIEW_EVERY_S):
            last.update(at=now, best=p.best_epoch)
            try:
                _post(job_id, "preview", (_checked_zip(build()), _epoch_event(p)))  # after the first better epoch
            except ValueError:  # a preview its checks refuse is skipped: the fit goes on
                pass

    fitted = FittedVerbs.fitted_on(obs, task=task, train=train, size=size, twin=False, mc_passes=mc_passes,
                                   progress=lambda p: _post(job_id, "epoch", _epoch_event(p)),
                                   preview=preview if previews else None, transform=transform).fitted
    if not train_twin:
        return _checked_zip(fitted)
    _post(job_id, "levy", _checked_zip(fitted))
    return _checked_zip(FittedVerbs(fitted).with_twin(obs, mc_passes=mc_passes,
                                                      progress=lambda p: _post(job_id, "epoch", _epoch_event(p))))


def _checked_zip(fitted: Any) -> bytes:
    """The model as zip bytes, opened once here as the server will open it: a model its own
    checks refuse (``ModelLoadError``, e.g. a calibration scale beyond ``model_limits``) fails
    the job in the worker, with that message, instead of reaching a session."""
    from levy_core.serving.modelzip import load_model_zip, model_zip_bytes

    data = model_zip_bytes(fitted)
    load_model_zip(data, name="the fitted model")
    return data


def _twin_job(job_id: int, model_zip: bytes, obs: Any, mc_passes: int) -> bytes:
    """In a worker: the MC-Dropout twin of a model fitted without it."""
    from levy_core.forecast.verbs import FittedVerbs
    from levy_core.serving.modelzip import load_model_zip

    _post(job_id, "started")
    try:
        fitted = load_model_zip(model_zip, name="the fitted model")
        return _checked_zip(FittedVerbs(fitted).with_twin(obs, mc_passes=mc_passes,
                                                          progress=lambda p: _post(job_id, "epoch", _epoch_event(p))))
    finally:
        _post(job_id, "end")


# ----------------------------------------------------------------------------- in the server


@dataclass
class JobView:
    """What a session shows of a job, copied under the pool's lock."""

    key: str
    state: str  # "queued", "running", "done" or "failed"
    position: int  # queued: 1 = next to start; 0 otherwise
    running: int  # jobs running now (all sessions)
    progress: dict[str, Any] | None  # the last epoch event
    history: list[dict[str, Any]]
    preview_seq: int  # how many previews have come (a new one: redraw)
    has_levy: bool  # the Lévy model alone is ready (the twin still training)
    error: str | None
    seconds: float  # since the job started (0 while queued)


@dataclass
class Job:
    """One fit (or twin) in the pool; read through :meth:`FitPool.view` (a copy under the lock)."""

    id: int
    key: str
    kind: str  # "fit" or "twin"
    state: str = "queued"
    submitted: float = field(default_factory=time.time)
    started: float = 0.0
    finished: float = 0.0
    progress: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    preview: bytes | None = None  # the latest preview model (zip bytes)
    preview_progress: dict[str, Any] | None = None
    preview_seq: int = 0
    levy: bytes | None = None  # the Lévy model alone (zip bytes), before its twin
    result: bytes | None = None  # the final model (zip bytes)
    error: str | None = None
    future: Future | None = field(default=None, repr=False)
    # The future and the events travel apart (a pipe, a queue and two threads): the job shows
    # done or failed only once both are in, so its history is whole when a session sees it end.
    outcome: tuple[str, bytes | None, str | None] | None = field(default=None, repr=False)
    ended: bool = False  # the worker's "end" event came: no event of this job is still on its way
    owners: dict[str, float] = field(default_factory=dict)  # owner -> when last seen connected
    owned: bool = False  # some owner ever asked for it (a job nobody owns is never reaped)


class FitPool:
    """``size`` worker processes (spawned; :data:`FIT_THREADS` torch threads each, at
    niceness ``nice``: default :func:`fit_niceness`) and a FIFO queue of jobs keyed by fit
    key. Thread-safe."""

    def __init__(self, size: int, *, threads: int = FIT_THREADS, nice: int | None = None, keep: int = 64) -> None:
        if size < 1:
            raise ValueError(f"a fit pool needs at least one worker, got {size}")
        ctx = mp.get_context("spawn")
        self.size, self.threads, self._keep = size, threads, keep
        self.nice = fit_niceness() if nice is None else nice
        self._events = ctx.Queue()
        self._board = CancelBoard(ctx)
        self._executor = ProcessPoolExecutor(size, mp_context=ctx, initializer=_init,
                                             initargs=(self._events, threads, self.nice, self._board, os.getpid()))
        self._alive: Any = lambda owner: True  # set_liveness
        self._lock = threading.RLock()  # re-entered: a future cancelled under it runs its done callback at once
        self._settled = threading.Condition(self._lock)  # notified when a job becomes done or failed
        self._jobs: dict[str, Job] = {}  # key -> job (finished ones kept, newest last, up to ``keep``)
        self._by_id: dict[int, Job] = {}
        self._ids = itertools.count(1)
        self._closed = False
        self._listener = threading.Thread(target=self._listen, name="fit-pool-events", daemon=True)
        self._listener.start()
        self._reaper = threading.Thread(target=self._reap_loop, name="fit-pool-reaper", daemon=True)
        self._reaper.start()

    # -- submitting
    def submit_fit(self, key: str, obs: Any, *, task: dict[str, Any], train: dict[str, Any], size: str,
                   train_twin: bool, mc_passes: int, previews: bool = True, transform: Any = "auto",
                   owner: str | None = None) -> Job:
        """Queue a fit (or join the queued or running job of ``key``; a failed one is retried);
        ``transform``: each channel's value transform (``recipe.fit``'s); ``owner``: who waits
        for it (a session id; None: nobody in particular, never reaped)."""
        return self._submit(key, "fit", owner, _fit_job, obs, task, train, size, train_twin, mc_passes, previews,
                            transform)

    def submit_twin(self, key: str, model_zip: bytes, obs: Any, mc_passes: int, owner: str | None = None) -> Job:
        """Queue the twin of a model fitted without it (``key``: the twin's fit key)."""
        return self._submit(key, "twin", owner, _twin_job, model_zip, obs, mc_passes)

    def _submit(self, key: str, kind: str, owner: str | None, fn: Any, *args: Any) -> Job:
        with self._lock:
            old = self._jobs.get(key)
            if old is not None and old.state in ("queued", "running", "done"):
                if owner is not None and old.state != "done":
                    old.owners[owner], old.owned = time.monotonic(), True
                return old
            job = Job(next(self._ids), key, kind)
            if owner is not None:
                job.owners[owner], job.owned = time.monotonic(), True
            self._jobs.pop(key, None)
            self._jobs[key] = job
            self._by_id[job.id] = job
            job.future = self._executor.submit(run_cancellable, fn, job.id, *args)
        job.future.add_done_callback(lambda f, job=job: self._finish(job, f))
        self._trim()
        return job

    def _finish(self, job: Job, fut: Future) -> None:
        with self._lock:
            job.finished = time.time()
            if fut.cancelled():  # never ran: no event will come
                job.outcome, job.ended = ("failed", None, CANCELLED_SHUTDOWN), True
            elif (exc := fut.exception()) is None:
                job.outcome = ("done", fut.result(), None)
            else:
                job.outcome = ("failed", None, _message(exc))
            self._settle(job)
            if job.state not in ("done", "failed"):
                # normally the "end" event is milliseconds behind; a worker that died, or a job
                # that never started (its arguments failed to pickle), sends none
                timer = threading.Timer(END_EVENT_GRACE_S, self._give_up_waiting, (job,))
                timer.daemon = True
                timer.start()

    # -- owners and cancelling
    def set_liveness(self, alive: Any) -> None:
        """``alive(owner) -> bool``: whether an owner (a session) is still connected; read by the
        reaper every :data:`REAP_EVERY_S` s (thread-safe, fast: it runs under the pool's lock)."""
        self._alive = alive

    def release(self, key: str, owner: str) -> bool:
        """``owner`` no longer waits for the job of ``key`` (its Cancel button, other data
        chosen): the job is cancelled when no other owner waits for it. True: cancelled."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None or job.state not in ("queued", "running"):
                return False
            job.owners.pop(owner, None)
            if job.owners:
                return False
            self._cancel(job, CANCELLED_OWNER)
            return True

    def cancel(self, key: str, reason: str = CANCELLED_OWNER) -> bool:
        """Cancel the job of ``key`` whoever waits for it (True: it was queued or running)."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None or job.state not in ("queued", "running"):
                return False
            self._cancel(job, reason)
            return True

    def _cancel(self, job: Job, reason: str) -> None:
        """(Under the lock.) The job ends now as failed with ``reason``; a queued one never
        starts, a running one stops in its worker (``fit_cancel``)."""
        self._board.cancel(job.id)
        if job.future is not None:
            job.future.cancel()  # still in the executor's own queue: it never reaches a worker
        job.state, job.error, job.preview, job.finished = "failed", reason, None, time.time()
        job.ended, job.owners = True, {}
        self._settled.notify_all()

    def reap(self) -> list[str]:
        """Cancel every queued or running job whose owners are all gone; their keys."""
        now, gone = time.monotonic(), []
        with self._lock:
            for job in list(self._jobs.values()):
                if not job.owned or job.state not in ("queued", "running"):
                    continue
                for owner in list(job.owners):
                    if self._alive(owner):
                        job.owners[owner] = now
                    elif now - job.owners[owner] > OWNER_GRACE_S:
                        del job.owners[owner]
                if not job.owners:
                    self._cancel(job, CANCELLED_GONE)
                    gone.append(job.key)
        return gone

    def _reap_loop(self) -> None:
        while not self._closed:
            time.sleep(REAP_EVERY_S)
            try:
                self.reap()
            except Exception:  # noqa: BLE001 - a liveness check that fails must not stop the reaper
                continue

    def _give_up_waiting(self, job: Job) -> None:
        with self._lock:
            job.ended = True
            self._settle(job)

    def _settle(self, job: Job) -> None:
        """(Under the lock.) The job ends once its future resolved and its last event came."""
        if job.outcome is None or not job.ended or job.state in ("done", "failed"):
            return
        job.state, job.result, job.error = job.outcome
        job.preview = None  # the final model replaces it
        self._settled.notify_all()

    def _listen(self) -> None:
        while True:
            try:
                item = self._events.get(timeout=0.5)
            except queue.Empty:
                if self._closed:
                    return
                continue
            except (EOFError, OSError):
                return
            self._apply(item)

    def _apply(self, item: tuple[int, str, Any, float]) -> None:
        """Record one event of a worker. Events cross a queue and a thread, so they can arrive
        after the job's future resolved: a late "started" must not turn a finished job back to
        running (a fit that fails at once would otherwise spin for ever)."""
        job_id, kind, payload, at = item
        with self._lock:
            job = self._by_id.get(job_id)
            if job is None or job.state in ("done", "failed"):
                return
            if kind == "end":
                job.ended = True
                self._settle(job)
            elif kind == "started":
                job.state, job.started = "running", at
            elif kind == "epoch":
                job.progress = payload
                job.history.append(payload)
            elif kind == "preview" and job.state == "running":
                job.preview, job.preview_progress = payload
                job.preview_seq += 1
            elif kind == "levy":
                job.levy = payload

    def _trim(self) -> None:
        with self._lock:
            done = [k for k, j in self._jobs.items() if j.state in ("done", "failed")]
            for key in done[:max(0, len(done) - self._keep)]:
                self._by_id.pop(self._jobs.pop(key).id, None)

    # -- reading
    def job(self, key: str) -> Job | None:
        with self._lock:
            return self._jobs.get(key)

    def view(self, key: str) -> JobView | None:
        """A copy of the job of ``key`` as a session shows it (None: no such job)."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return None
            waiting = [j for j in self._jobs.values() if j.state == "queued"]
            waiting.sort(key=lambda j: j.id)
            position = next((i + 1 for i, j in enumerate(waiting) if j is job), 0)
            running = sum(j.state == "running" for j in self._jobs.values())
            return JobView(key, job.state, position, running, dict(job.progress) if job.progress else None,
                           list(job.history), job.preview_seq, job.levy is not None, job.error,
                           time.time() - job.started if job.started else 0.0)

    def models(self, key: str) -> tuple[bytes | None, dict[str, Any] | None, bytes | None, bytes | None]:
        """(preview zip, its epoch event, Lévy-alone zip, final zip) of the job of ``key``."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return None, None, None, None
            return job.preview, job.preview_progress, job.levy, job.result

    def running(self) -> int:
        with self._lock:
            return sum(j.state == "running" for j in self._jobs.values())

    def queued(self) -> int:
        with self._lock:
            return sum(j.state == "queued" for j in self._jobs.values())

    def wait(self, key: str, timeout: float | None = None) -> JobView | None:
        """Block until the job of ``key`` is done or failed (or ``timeout`` s); its view."""
        job = self.job(key)
        if job is not None:
            with self._settled:
                self._settled.wait_for(lambda: job.state in ("done", "failed"), timeout)
        return self.view(key)

    def start_workers(self) -> None:
        """Start every worker process now rather than at the first fit: each imports torch and
        what a fit needs (about 5 s on 2 cores, at the workers' low priority), which the first
        fit a user asks for would otherwise wait for. Returns at once."""
        for _ in range(self.size):  # with no idle worker, each submit starts one more process
            self._executor.submit(_ready)

    def shutdown(self) -> None:
        """Cancel every job and end the workers (terminated, killed after :data:`WORKER_EXIT_S`
        s): a running fit does not hold the server's exit."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            for job in self._jobs.values():
                if job.state in ("queued", "running"):
                    self._cancel(job, CANCELLED_SHUTDOWN)
        procs = list((getattr(self._executor, "_processes", None) or {}).values())
        self._executor.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()
        deadline = time.monotonic() + WORKER_EXIT_S
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(1.0)


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if type(exc).__name__ == "BrokenProcessPool":
        return ("the fit worker stopped unexpectedly (out of memory?); try a smaller model or fewer epochs, "
                "or fit on the command line (`levy fit`)")
    return text


_pool: FitPool | None = None
_pool_lock = threading.Lock()


def pool() -> FitPool:
    """The process-wide pool, started on first use with :func:`workers` processes."""
    global _pool
    with _pool_lock:
        if _pool is not None and getattr(_pool._executor, "_broken", False):  # a worker died: start again
            _pool.shutdown()
        if _pool is None or _pool._closed:
            _pool = FitPool(workers())
            atexit.register(_pool.shutdown)
        return _pool
