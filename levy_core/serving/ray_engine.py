"""``levy rank --engine ray``: the same trust scores as a Ray Data pipeline.

The pipeline::

    read_parquet(DATA) → map_batches(bucket of each row's series) → groupby(bucket)
      → map_groups(RankScorer: decode + score whole series; an actor per worker)
      → sort(trust_score, series_id) → streamed to the driver, written with ranks

Why buckets: a series' score needs all its rows, but Parquet row groups (Ray's read
blocks) may split a series anywhere, and one group per series would score one series per
forward pass. So each row is given a bucket, a stable hash of its series id modulo
``n_buckets`` (about [`BUCKET_ROWS`][levy_core.serving.ray_engine.BUCKET_ROWS] rows each), and the shuffle of ``groupby``
brings every bucket, whole series only, to one actor, which decodes it with
[`from_frame`][levy_core.data.from_frame] and scores it with
`score_series` in batches, exactly as the in-process path scores a
chunk. Any row order works (the in-process path needs each series' rows together).

What a worker needs: ``levy-core`` installed (``pip install 'levy-core[ray]'``) and read
access to DATA at the same path (a shared file system). The
model is not read from disk by workers: its ``model.json`` and ``levy.safetensors`` travel
as bytes in the actor's constructor, and each actor loads them once through
[`load_model`][levy_core.pipeline.modelfile.load_model] (the same checks: JSON and safetensors only).
"""

from __future__ import annotations

import math
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from levy_core.data import ColumnMapping, ColumnNames, DataError, detect_mapping, from_frame
from levy_core.data.parquet import check_parquet, is_parquet, iter_parquet_tables
from levy_core.pipeline.modelfile import load_model
from levy_core.pipeline.ranking import SCORE_COLUMNS, score_series, warm_up
from levy_core.serving.table_writer import TableWriter

__all__ = ["BUCKET_COLUMN", "BUCKET_ROWS", "CONNECT_TIMEOUT_S", "MODEL_FILES", "RankScorer", "check_address",
           "local_cores", "model_bytes", "rank_with_ray", "require_ray"]

BUCKET_ROWS = 500_000
"""Rows per bucket, on average: the memory one actor's call holds (tens of MB decoded)."""
BUCKET_COLUMN = "__levy_bucket"
MODEL_FILES = ("model.json", "levy.safetensors")
"""What an actor needs of a model directory to score (the MC-Dropout twin is not used)."""
OUT_BATCH_ROWS = 10_000
CONNECT_TIMEOUT_S = 15.0
"""How long ``--address`` may take to answer (a TCP connection to the head's port) before
the run is refused; also Ray's own limit on reaching the cluster's GCS."""
LOOPBACK = "127.0.0.1"
# the HTTP/2 client preface and an empty SETTINGS frame: what a gRPC client sends first
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def require_ray() -> Any:
    """The ``ray`` module, or a ValueError saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401  (the Data library is the part needed)
    except ImportError as exc:
        raise ValueError("--engine ray needs Ray Data, an optional extra: pip install 'levy-core[ray]' "
                         f"(or leave out --engine to rank in this process) [{exc}]") from exc
    return ray


def model_bytes(directory: str | os.PathLike[str]) -> dict[str, bytes]:
    """The files of [`MODEL_FILES`][levy_core.serving.ray_engine.MODEL_FILES] of a model directory, checked by loading it here."""
    load_model(directory)  # refuses anything that is not a model, before a cluster sees it
    return {name: (Path(directory) / name).read_bytes() for name in MODEL_FILES}


def add_bucket(batch: pd.DataFrame, column: str, n_buckets: int) -> pd.DataFrame:
    """``batch`` with `BUCKET_COLUMN`: a hash of the stripped series id (the same on
    every worker and run, not Python's salted ``hash``) modulo ``n_buckets``."""
    ids = batch[column].astype(str).str.strip().to_numpy(dtype=object)
    return batch.assign(**{BUCKET_COLUMN: (pd.util.hash_array(ids) % np.uint64(n_buckets)).astype(np.int64)})


class RankScorer:
    """The actor of ``map_groups``: loads the model once (from bytes), then decodes and
    scores one bucket of whole series per call.

    Parameters
    ----------
    files : dict of str to bytes
        [`model_bytes`][levy_core.serving.ray_engine.model_bytes] of the model directory.
    mapping : ColumnMapping
        The column mapping detected once on the driver (every bucket decoded alike).
    time_unit : str
        Unit of a numeric time column.
    """

    def __init__(self, files: dict[str, bytes], mapping: ColumnMapping, time_unit: str) -> None:
        import torch

        torch.set_num_threads(1)  # one CPU per actor: Ray places them
        with tempfile.TemporaryDirectory(prefix="levy-model-") as tmp:
            for name, data in files.items():
                if name not in MODEL_FILES:
                    raise ValueError(f"unexpected model file {name!r}")
                (Path(tmp) / name).write_bytes(data)
            self.fitted = load_model(tmp)
        self.mapping, self.time_unit = mapping, time_unit
        warm_up(self.fitted)

    def __call__(self, rows: pd.DataFrame) -> pd.DataFrame:
        """One bucket's rows (whole series, any order) → one score row per series."""
        table = rows.drop(columns=[BUCKET_COLUMN]).reset_index(drop=True)
        obs = from_frame(table, mapping=self.mapping, time_unit=self.time_unit, max_rows=max(len(table), 2))
        scores, _ = score_series(self.fitted, obs)
        return scores[SCORE_COLUMNS]


def _mapping(path: str, columns: ColumnNames | None = None) -> ColumnMapping:
    table, _ = next(iter(iter_parquet_tables(path, batch_rows=10_000)), (None, 0))
    if table is None or table.empty:
        raise DataError(f"{Path(path).name!r} has no rows. Add at least two observations.")
    mapping = detect_mapping(table.loc[:, ~table.columns.duplicated()], columns)
    if mapping.series is None:
        raise DataError(f"{Path(path).name!r} has no series column: --engine ray spreads series over workers; "
                        "rank one series without it")
    return mapping


def local_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - macOS / Windows
        return os.cpu_count() or 1


def _check_workers(workers: int, cores: float, where: str) -> None:
    if workers > cores:
        raise ValueError(f"--workers {workers} is more than the {cores:g} cores of {where} (each scoring actor "
                         f"takes one); give --workers {max(int(cores), 1)} or fewer")


def _head(address: str) -> tuple[str, int] | None:
    """The host and port of a ``HOST:PORT`` or ``ray://HOST:PORT`` address (None: ``auto``,
    or no port to check)."""
    text = address.strip()
    if text.lower() in ("auto", "local", ""):
        return None
    if "://" in text:
        text = text.split("://", 1)[1]
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or LOOPBACK, int(port)


def check_address(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """ValueError unless something answers at ``address``'s host and port within ``timeout``
    seconds (Ray itself retries an unreachable head for minutes)."""
    head = _head(address)
    if head is None:
        return
    try:
        with socket.create_connection(head, timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(_HTTP2_PREFACE)
            answer = conn.recv(9)
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ValueError(f"--address {address}: no Ray cluster reachable there within {timeout:g} s ({reason}); "
                         "check the head's address and port (`ray status` on the head prints it), or leave out "
                         "--address to start a local Ray") from None
    if len(answer) < 9 or answer[3] != 0x4:  # a gRPC server answers the preface with its SETTINGS frame
        raise ValueError(f"--address {address}: something answers there, but not a Ray cluster (no gRPC server); "
                         "give the head's GCS port (6379 by default; `ray status` on the head prints it), or "
                         "leave out --address to start a local Ray")


def _short_temp_root() -> str | None:
    """Where the private Ray folder goes: the temporary folder, or /tmp when that path is too
    long for Ray's Unix sockets (at most 107 bytes, about 85 of them Ray's own)."""
    root = tempfile.gettempdir()
    if len(root) > 20 and os.path.isdir("/tmp"):
        return "/tmp"
    return root


@contextmanager
def _loopback_only(ray: Any) -> Iterator[None]:
    """While a local Ray starts: its node address is 127.0.0.1, so the GCS, the raylet, the
    workers and the driver listen on the loopback interface only. (Ray ≥ 2.5x replaces a
    ``_node_ip_address`` of 127.0.0.1 by the machine's reachable address unless clusters
    are switched off, as they are on macOS and Windows; its servers bind 127.0.0.1 only when
    the node's address is 127.0.0.1.)"""
    from ray._private import ray_constants

    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved


def _start(ray: Any, address: str | None, workers: int, temp_dir: str | None) -> bool:
    """Connect to ``address`` or start a local Ray of ``workers`` CPUs on the loopback
    interface, with no dashboard, its files under ``temp_dir``; whether we started it."""
    if address is not None:
        check_address(address)
    if ray.is_initialized():  # this process is connected already: its cluster's CPUs
        _check_workers(workers, float(ray.cluster_resources().get("CPU", 0)), "the Ray this process runs")
        return False
    if address is None:  # a new local Ray (not a cluster this machine may run): a CPU per actor, one for the rest
        _check_workers(workers, local_cores(), "this machine")
        with _loopback_only(ray):
            ray.init(address="local", num_cpus=workers + 1, include_dashboard=False, log_to_driver=False,
                     logging_level="ERROR", configure_logging=True, _node_ip_address=LOOPBACK, _temp_dir=temp_dir)
        return True
    try:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    except (ConnectionError, TimeoutError) as exc:
        raise ValueError(f"--address {address}: could not connect to a Ray cluster there ({exc}); check the "
                         "address, or leave out --address to start a local Ray") from None
    try:
        _check_workers(workers, float(ray.cluster_resources().get("CPU", 0)), f"the cluster at {address}")
    except ValueError:
        ray.shutdown()
        raise
    return True


def rank_with_ray(model: str | os.PathLike[str], data: str | os.PathLike[str], out: str | os.PathLike[str], *,
                  workers: int = 2, address: str | None = None, time_unit: str = "hours",
                  columns: ColumnNames | None = None) -> tuple[int, float]:
    """Rank the series of a Parquet file by trust on Ray; the same output as ``levy rank``.

    Parameters
    ----------
    model : str or path-like
        A model directory (``levy fit``); read here and shipped to the actors as bytes.
    data : str or path-like
        A Parquet file every worker can read at this path, long or wide layout.
    out : str or path-like
        The ranking to write on the driver (``.parquet`` → Parquet, CSV otherwise):
        ``rank`` and `SCORE_COLUMNS`.
    workers : int
        Scoring actors (one CPU each); also the CPUs of a local Ray.
    address : str, optional
        An existing cluster (``HEAD:6379``, ``auto``); None starts a local Ray.
    time_unit : str
        Unit of a numeric time column.
    columns : ColumnNames, optional
        Columns named by the user (the others found by name, as ever).

    Returns
    -------
    (int, float)
        Series ranked, and the pipeline's wall seconds (read, shuffle, score, sort, write;
        without Ray's start-up).

    Raises
    ------
    ValueError
        Ray is not installed, or ``workers`` < 1.
    DataError
        What the in-process path refuses (checked on the driver for the file's layout and
        in the actors for each bucket), or a file without a series column.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    ray = require_ray()
    if not is_parquet(data):
        raise DataError(f"--engine ray reads Parquet; {Path(data).name!r} is not a .parquet file "
                        "(convert it: pandas.read_csv(...).to_parquet(...), or rank it without --engine)")
    n_rows = check_parquet(data)  # the footer, and text lengths and decoded sizes, before a worker reads it
    mapping, files = _mapping(str(data), columns), model_bytes(model)
    # a local Ray's sockets, logs and spilled objects: in a folder of this user only (Ray makes its
    # own folders world-writable; this one, above them, is 0700), removed when the run ends
    private = tempfile.mkdtemp(prefix="levy-ray-", dir=_short_temp_root()) if address is None else None
    try:
        started = _start(ray, address, workers, None if private is None else os.path.join(private, "ray"))
    except BaseException:
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)
        raise
    try:
        t0 = time.perf_counter()
        n = _run(ray, str(data), out, files, mapping, time_unit, workers, max(workers, math.ceil(n_rows / BUCKET_ROWS)))
        return n, time.perf_counter() - t0
    except ray.exceptions.RayTaskError as exc:  # a DataError inside an actor: its message, no traceback
        cause = getattr(exc, "cause", None)
        if isinstance(cause, (DataError, ValueError)):
            raise DataError(str(cause)) from None
        raise
    finally:
        if started:
            ray.shutdown()
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)


def _run(ray: Any, data: str, out: str | os.PathLike[str], files: dict[str, bytes], mapping: ColumnMapping,
         time_unit: str, workers: int, n_buckets: int) -> int:
    ctx = ray.data.DataContext.get_current()
    # the sort-based shuffle runs as tasks; the hash shuffle's aggregator actors (200 by
    # default) would hold CPUs the scoring actors wait for
    ctx.shuffle_strategy = ray.data.context.ShuffleStrategy.SORT_SHUFFLE_PULL_BASED
    ds = ray.data.read_parquet(data, override_num_blocks=n_buckets)  # blocks to spread over the actors
    ds = ds.map_batches(add_bucket, batch_format="pandas", fn_kwargs={"column": mapping.series,
                                                                       "n_buckets": n_buckets})
    scored = ds.groupby(BUCKET_COLUMN, num_partitions=n_buckets).map_groups(
        RankScorer, batch_format="pandas", fn_constructor_kwargs={"files": files, "mapping": mapping,
                                                                   "time_unit": time_unit},
        concurrency=workers, num_cpus=1)
    ranked = scored.sort(["trust_score", "series_id"])
    with TableWriter(out, ["rank", *SCORE_COLUMNS]) as w:
        for batch in ranked.iter_batches(batch_format="pandas", batch_size=OUT_BATCH_ROWS):
            batch = batch[SCORE_COLUMNS].reset_index(drop=True)
            batch.insert(0, "rank", np.arange(w.rows + 1, w.rows + 1 + len(batch)))
            w.write(batch)
        return w.rows
