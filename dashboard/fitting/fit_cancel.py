"""Cancelling a fit inside its worker process, without losing the worker.

The server marks a job cancelled on a :class:`CancelBoard` (a small ring of job ids in
shared memory, handed to every worker when it starts). In the worker, each job runs under
:func:`run_cancellable`: a job already on the board never starts, and a watchdog thread
(every :data:`WATCH_EVERY_S` s) raises :class:`FitCancelled` in the worker's main thread
while it trains (``PyThreadState_SetAsyncExc``: delivered at the next Python bytecode
boundary, i.e. between two torch operations of a batch, so the worker's CPU is free within
a fraction of a second). The worker process survives, ready for the next job: the pool's
other queued and running jobs are not touched (killing the process would break the whole
``ProcessPoolExecutor``).

No Streamlit here; used by ``fit_pool``.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["CANCEL_SLOTS", "PARENT_POLL_S", "WATCH_EVERY_S", "CancelBoard", "FitCancelled", "exit_with_parent", "run_cancellable",
           "watch"]

CANCEL_SLOTS = 256  # the most recent cancelled job ids kept on the board (a ring)
WATCH_EVERY_S = 0.1  # how often a worker's watchdog reads the board


class FitCancelled(BaseException):
    """Raised in a worker's main thread when its job is cancelled. A ``BaseException``, so
    that no ``except Exception`` of the training code swallows it."""

    def __str__(self) -> str:
        return "cancelled"


class CancelBoard:
    """The cancelled job ids, shared with the workers (create it before they start)."""

    def __init__(self, ctx: Any) -> None:
        self.ids = ctx.Array("q", CANCEL_SLOTS, lock=True)
        self._next = 0

    def cancel(self, job_id: int) -> None:
        """Mark ``job_id`` cancelled (server side)."""
        with self.ids.get_lock():
            self.ids[self._next % CANCEL_SLOTS] = job_id
            self._next += 1

    def cancelled(self, job_id: int) -> bool:
        """Whether ``job_id`` is marked cancelled (either side)."""
        with self.ids.get_lock():
            return job_id in self.ids[:]


# ----------------------------------------------------------------------------- in the worker process

_guard = threading.Lock()
_now: dict[str, Any] = {"job": None, "thread": None, "signalled": None}
_board: CancelBoard | None = None


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in the thread ``thread_id`` at its next bytecode (None: drop one not yet raised)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


def _watch() -> None:
    while True:
        time.sleep(WATCH_EVERY_S)
        with _guard:
            job = _now["job"]
            if job is not None and job != _now["signalled"] and _board is not None and _board.cancelled(job):
                _now["signalled"] = job  # once per job
                _raise_in(_now["thread"], FitCancelled)


def watch(board: CancelBoard | None) -> None:
    """Worker start: read ``board`` from a daemon watchdog thread."""
    global _board
    _board = board
    if board is not None:
        threading.Thread(target=_watch, name="fit-cancel-watchdog", daemon=True).start()


PARENT_POLL_S = 1.0  # how often a worker checks that the process that started it is still there


def exit_with_parent(parent: int, every: float = PARENT_POLL_S) -> None:
    """Worker start: end this worker, from a daemon thread, once ``parent`` (the pid that
    spawned it) is gone. A server killed without running its exit handlers (SIGKILL, the OOM
    killer) would otherwise leave its idle fit workers behind for good, holding memory."""
    def poll() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(0)

    threading.Thread(target=poll, name="fit-parent-watchdog", daemon=True).start()


def _leave() -> None:
    """The job is over: the watchdog no longer targets it, and a cancellation raised too late
    (after the job returned) is dropped before it can reach the pool's own worker loop."""
    while True:
        try:
            with _guard:
                _now["job"] = None
                _raise_in(threading.get_ident(), None)
            return
        except FitCancelled:  # delivered inside this very block: go round once more
            continue


def run_cancellable(fn: Callable[..., Any], job_id: int, *args: Any) -> Any:
    """``fn(job_id, *args)`` in a worker, cancellable through the board (``FitCancelled``)."""
    with _guard:
        _now.update(job=job_id, thread=threading.get_ident())
    try:
        if _board is not None and _board.cancelled(job_id):
            raise FitCancelled()
        return fn(job_id, *args)
    finally:
        _leave()
