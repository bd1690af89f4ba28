"""CPU priority of background work: a fit runs behind interactive work on the same cores.

A fit is a batch job that may run for minutes or hours; a pass (``levy rank``, a
dashboard's re-render) is what someone waits for. On a machine with no core to spare the
scheduler shares the cores between them by *niceness*: at equal niceness a ``levy rank``
beside a ``levy fit`` on 2 cores gets half the cores (measured ×2.4 slower,
``benchmarks/rank_load.py``); with the fit at niceness 10 it gets nearly all it asks for.
Niceness decides only who runs first, never what is computed: a fit's result is the same
bit for bit at any niceness, and on idle cores a niced fit runs as fast as before.

- ``levy fit`` lowers its priority to `FIT_NICE` (``--nice N``, 0 to 19; 0 keeps the
  shell's); the dashboard's fit workers to 19 (``dashboard/fitting/fit_pool.py``).
- `lower_priority` raises the niceness of every thread of the process (which needs no
  privilege; lowering it again would). On Linux niceness is per thread and a new thread
  inherits its creator's, so called before torch starts its OpenMP and inter-op threads,
  every thread of the fit runs at it; `thread_niceness` reads them back from
  ``/proc/self/task``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from levy_core.runtime.threads import option_type

__all__ = ["FIT_NICE", "MAX_NICE", "add_nice_option", "lower_priority", "parse_nice", "thread_niceness"]

FIT_NICE = 10
"""The niceness ``levy fit`` runs at by default (a background job)."""
MAX_NICE = 19
"""The lowest priority there is (Linux, macOS)."""


def parse_nice(text: str | int) -> int:
    """A niceness from 0 to `MAX_NICE`; ValueError saying what is accepted otherwise."""
    try:
        n = int(str(text).strip())
    except ValueError:
        n = -1
    if not 0 <= n <= MAX_NICE:
        raise ValueError(f"nice: give a whole number from 0 (this shell's priority) to {MAX_NICE} (the lowest), "
                         f"got {text!r}")
    return n


def thread_niceness() -> dict[int, int]:
    """The niceness of every thread of this process (``/proc/self/task``), by thread id; on
    a system without ``/proc``, the process's own (key 0; empty where there is none).

    Returns
    -------
    dict of int to int
        Thread id → niceness (-20 … 19).
    """
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return {0: os.getpriority(os.PRIO_PROCESS, 0)} if hasattr(os, "getpriority") else {}
    out = {}
    for task in tasks.iterdir():
        try:  # stat's field 19 is the niceness; the command name (field 2) may hold spaces: split after its ")"
            out[int(task.name)] = int((task / "stat").read_text().rsplit(")", 1)[1].split()[16])
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            continue
    return out


def lower_priority(nice: int) -> int:
    """Every thread of this process at niceness ``nice`` at least (one already nicer keeps
    its own); threads started afterwards inherit it. ``nice`` ≤ 0: nothing changes.

    Returns
    -------
    int
        The calling thread's niceness afterwards (``nice``, or more; 0 where the system has
        no priorities or refuses: the work then runs at the priority it had).
    """
    if not hasattr(os, "setpriority"):
        return 0
    if nice > 0:
        for tid in thread_niceness() or {0: 0}:
            try:
                if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                    os.setpriority(os.PRIO_PROCESS, tid, min(nice, MAX_NICE))
            except OSError:  # the thread ended, or the system refuses
                continue
    try:
        return os.getpriority(os.PRIO_PROCESS, 0)
    except OSError:  # pragma: no cover - getpriority of oneself does not fail
        return 0


def add_nice_option(parser: argparse.ArgumentParser, default: int = FIT_NICE) -> None:
    """``--nice N`` (0 to `MAX_NICE`, default ``default``) on a command that fits."""
    parser.add_argument("--nice", type=option_type(parse_nice, "nice"), default=default, metavar="N",
                        help=f"CPU priority of the fit: niceness 0 (this shell's) to {MAX_NICE} (the lowest), default "
                        f"{default}: passes and other interactive work on the same cores run first; the fit is the "
                        "same at any niceness")
