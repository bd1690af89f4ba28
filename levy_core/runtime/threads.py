"""How many threads a pass or a fit computes with, so concurrent work never oversubscribes the cores.

PyTorch computes each operator with an OpenMP team of intra-op threads (one per core by
default). Two processes that each use every core oversubscribe them, and with OpenMP's
default wait policy a thread that waits at the end of a parallel region *spins* on its
core, taking it from the other process: ``levy rank`` measured 5.6× slower beside one
``levy fit`` on 2 cores (``benchmarks/rank_load.py``). The policy here:

- **Waiting threads sleep** (``OMP_WAIT_POLICY=PASSIVE``), set by `prefer_passive_wait`
  before torch loads its OpenMP runtime; the ``levy`` command does so first thing.
- **A fixed thread count per job**, never read from the load: `thread_budget` gives
  ``--threads`` / ``LEVY_THREADS`` when set, else ``OMP_NUM_THREADS`` when set, else the
  cores this process may run on (its CPU affinity and cgroup quota) divided among the jobs
  that run at once (``workers``). A fit's weights depend, in their last bits, on its
  thread count (float sums split differently), so a count read from the load would make
  the same fit differ from run to run; with the same count, the same fit is bit-identical.
- `using_threads` applies a count around a block and restores the previous one.
- **Passes split by batch, not by operator**: ``levy rank`` scores `pass_workers`
  batches side by side, each on one intra-op thread (``levy_core.pipeline.ranking.score_series``):
  its operators are small, so one OpenMP team of 2 was no faster than 1 thread (1.79 vs
  1.69 s, ``benchmarks/studies/rank_threads.py``), while two batches at once took 1.18 s, and no
  thread ever waits on another.

``LEVY_THREADS=torch`` leaves PyTorch's own defaults (all cores, spinning waits): the
behaviour before this policy, kept for comparisons.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from pathlib import Path

__all__ = ["MAX_THREADS", "THREADS_ENV", "add_threads_option", "available_cores", "command_threads", "option_type",
           "parse_threads", "pass_workers", "prefer_passive_wait", "single_threaded_blas", "thread_budget", "torch_defaults",
           "using_threads"]

THREADS_ENV = "LEVY_THREADS"
"""Environment variable: intra-op threads per job (a whole number), or ``torch`` for PyTorch's defaults."""
MAX_THREADS = 1024
"""Largest thread count accepted (``--threads``, ``LEVY_THREADS``)."""
_CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def torch_defaults(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``LEVY_THREADS=torch`` asks to leave PyTorch's thread defaults alone."""
    env = os.environ if environ is None else environ
    return env.get(THREADS_ENV, "").strip().lower() == "torch"


def prefer_passive_wait(environ: MutableMapping[str, str] | None = None) -> bool:
    """Make OpenMP's waiting threads sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``).

    OpenMP reads its wait policy once, when its runtime loads (on ``import torch``), so
    this must run before that; a policy the user set (``OMP_WAIT_POLICY`` or
    ``GOMP_SPINCOUNT``) or ``LEVY_THREADS=torch`` is left as it is.

    Parameters
    ----------
    environ : mutable mapping, optional
        The environment to set it in (default ``os.environ``).

    Returns
    -------
    bool
        True when the passive policy is in ``environ`` and, for ``os.environ``, torch was
        not loaded yet (so the runtime will read it).
    """
    env = os.environ if environ is None else environ
    if torch_defaults(env):
        return False
    if "OMP_WAIT_POLICY" not in env and "GOMP_SPINCOUNT" not in env:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    passive = env.get("OMP_WAIT_POLICY", "").strip().lower() == "passive"
    return passive and (environ is not None or "torch" not in sys.modules)


def available_cores() -> int:
    """The cores this process may run on: its CPU affinity, capped by a cgroup CPU quota
    (a container limited to 1.5 CPUs counts 2), at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = _CGROUP_CPU_MAX.read_text().split()[:2]
        if quota != "max" and int(period) > 0:
            cores = min(cores, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def parse_threads(text: str | int) -> int:
    """A thread count from the command line or ``LEVY_THREADS``: a whole number from 1 to
    `MAX_THREADS`.

    Raises
    ------
    ValueError
        Not such a number; the message names the accepted range.
    """
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ValueError(f"threads: expected a whole number from 1 to {MAX_THREADS}, got {text!r}") from None
    if not 1 <= value <= MAX_THREADS:
        raise ValueError(f"threads: must be from 1 to {MAX_THREADS}, got {value}")
    return value


def thread_budget(requested: int | None = None, *, workers: int = 1,
                  environ: Mapping[str, str] | None = None) -> int:
    """Intra-op threads for each of ``workers`` jobs (fits, passes) that run at once.

    The first that is set: ``requested`` (``--threads``), ``LEVY_THREADS``,
    ``OMP_NUM_THREADS``; else `available_cores` ``// workers``, at least 1. Never
    read from the machine's load, so a job's results do not depend on it.

    Parameters
    ----------
    requested : int, optional
        A count asked for explicitly (1 to `MAX_THREADS`).
    workers : int
        Jobs that share the cores at once (a pool of fit workers), at least 1.
    environ : mapping, optional
        Where the variables are read (default ``os.environ``).

    Returns
    -------
    int
        Threads per job, at least 1.

    Raises
    ------
    ValueError
        ``requested``, ``workers`` or ``LEVY_THREADS`` out of range (``LEVY_THREADS=torch``
        counts as unset here: its count is PyTorch's own).
    """
    env = os.environ if environ is None else environ
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers: expected a whole number of at least 1, got {workers!r}")
    if requested is not None:
        return parse_threads(requested)
    levy = env.get(THREADS_ENV, "").strip()
    if levy and levy.lower() not in ("torch", "auto"):
        try:
            return parse_threads(levy)
        except ValueError as exc:
            raise ValueError(f"{THREADS_ENV}={levy!r}: {str(exc).removeprefix('threads: ')}; or 'torch' for "
                             "PyTorch's own defaults") from None
    omp = env.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if omp.isdigit() and int(omp) >= 1:
        return min(int(omp), MAX_THREADS)
    return max(1, available_cores() // workers)


def command_threads(requested: int | None = None, *, environ: Mapping[str, str] | None = None) -> int | None:
    """The thread count one ``levy`` command computes with: `thread_budget` (one
    job), or ``None`` (PyTorch's own) under ``LEVY_THREADS=torch`` when ``--threads`` is
    not given.

    Raises
    ------
    ValueError
        As `thread_budget`.
    """
    if requested is None and torch_defaults(environ):
        return None
    return thread_budget(requested, environ=environ)


def option_type(parse: Callable[[str], int], name: str) -> Callable[[str], int]:
    """``parse`` as an argparse ``type=`` named ``name``: its ValueError becomes the
    ``ArgumentTypeError`` argparse reports, the message without its ``"<name>: "`` prefix
    (argparse names the option itself)."""

    def convert(text: str) -> int:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{name}: ")) from None

    convert.__name__ = convert.__qualname__ = name
    return convert


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    """``--threads N`` on a ``levy`` command that runs passes or fits (None when not given)."""
    parser.add_argument("--threads", type=option_type(parse_threads, "threads"), default=None, metavar="N",
                        help=f"intra-op threads, 1 to {MAX_THREADS} (default: ${THREADS_ENV}, else $OMP_NUM_THREADS, "
                        "else the cores this process may use); the same count gives bit-identical fits")


def pass_workers(environ: Mapping[str, str] | None = None) -> int:
    """Batches a pass scores side by side: PyTorch's current thread count (the budget a
    command or `using_threads` set), each batch on one intra-op thread; 1 under
    ``LEVY_THREADS=torch`` (one batch at a time on PyTorch's own threads, as before).
    A batch is computed alike either way, so a pass's results do not depend on it."""
    import torch

    return 1 if torch_defaults(environ) else max(1, torch.get_num_threads())


@contextmanager
def using_threads(threads: int | None) -> Iterator[int]:
    """Compute with ``threads`` intra-op threads inside the block, then restore the count.

    ``None``: leave the count as it is. The count is PyTorch's, shared by the whole
    process: set it where one job runs at a time (a command, a worker process), or to
    the same `thread_budget` in every thread of a pool.

    Yields
    ------
    int
        The count in effect inside the block.
    """
    import torch

    before = torch.get_num_threads()
    if threads is None:
        yield before
        return
    torch.set_num_threads(parse_threads(threads))
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


_BLAS: list = []  # one threadpoolctl controller, made on first use (it lists the loaded libraries)


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run NumPy/SciPy's BLAS and LAPACK on one thread inside the block.

    A multi-threaded BLAS splits a Cholesky or a least-squares solve differently with the
    thread count, and the last bits of the result with it. The classical offsets
    (``levy_core.offsets.base_forecast``: Gaussian process, ridge and MAP fits, autoregressions)
    decide which candidate wins by small margins, so a fit would depend on how many cores
    the machine has; their matrices are small (a few hundred rows), where one thread is
    as fast. The limit is process-wide while the block runs (threadpoolctl)."""
    from threadpoolctl import ThreadpoolController

    if not _BLAS:
        _BLAS.append(ThreadpoolController())
    with _BLAS[0].limit(limits=1, user_api="blas"):
        yield
