"""Ranking and predicting a file bigger than memory, in chunks of whole series.

A series' trust score and predictions depend on that series alone (and the model), so a
file read ``chunk_series`` whole series at a time
(`iter_series_chunks`) is scored exactly as the
whole would be. The ranking, which needs every score, is an external merge sort: each
chunk's scores are sorted and written to a temporary Parquet run, and the runs are merged
(`heapq.merge`, a batch of rows per run in memory) straight into the output file,
rank by rank. Peak memory is one chunk plus one batch per run, whatever the number of
series (the 8-byte-per-series hashes that catch a series out of place aside).
"""

from __future__ import annotations

import heapq
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from levy_core.data import ColumnMapping, DataError, Observations
from levy_core.data.drift import DriftTally
from levy_core.data.series_chunks import (
    DEFAULT_CHUNK_SERIES,
    ChunkTotals,
    UngroupedSeriesError,
    iter_series_chunks,
    read_observations,
)
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.ranking import SCORE_COLUMNS, order_by_trust, score_series, warm_up
from levy_core.serving.table_writer import TableWriter

__all__ = ["MERGE_FAN_IN", "RankSummary", "merge_ranked", "predict_file", "rank_file", "trust_key"]

MERGE_FAN_IN = 64
"""Most sorted runs merged at once (open files); more runs are merged in rounds."""
RUN_BATCH_ROWS = 1024  # rows of each run in memory during a merge (times MERGE_FAN_IN runs)
OUT_BATCH_ROWS = 10_000  # ranked rows written at a time

Progress = Callable[[int], None]
"""Called with the number of series in each chunk once it is done."""


@dataclass(frozen=True)
class RankSummary:
    """What [`rank_file`][levy_core.serving.chunked.rank_file] did: series ranked, scoring seconds, rows read."""

    n_series: int
    seconds: float
    totals: ChunkTotals


def trust_key(score: float, series_id: str) -> tuple[int, float, str]:
    """The sort key of `order_by_trust` for one row: score (NaN
    last, as pandas sorts), then series id."""
    return (1, 0.0, series_id) if math.isnan(score) else (0, score, series_id)


def _write_run(frame: pd.DataFrame, path: Path) -> None:
    frame.to_parquet(path, index=False)


def _rows(path: Path) -> Iterator[tuple]:
    """A run's rows as tuples (``SCORE_COLUMNS`` order), a batch at a time."""
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=RUN_BATCH_ROWS):
        yield from batch.to_pandas()[SCORE_COLUMNS].itertuples(index=False, name=None)


def _merged(runs: list[Path]) -> Iterator[tuple]:
    return heapq.merge(*(_rows(r) for r in runs), key=lambda row: trust_key(row[1], row[0]))


def _batched(rows: Iterable[tuple], size: int) -> Iterator[pd.DataFrame]:
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield pd.DataFrame(batch, columns=SCORE_COLUMNS)
            batch = []
    if batch:
        yield pd.DataFrame(batch, columns=SCORE_COLUMNS)


def merge_ranked(runs: list[Path], out: str | os.PathLike[str], workdir: Path) -> int:
    """Merge sorted runs of scores (Parquet files of `SCORE_COLUMNS`, each sorted by
    [`trust_key`][levy_core.serving.chunked.trust_key]) into ``out`` (CSV or Parquet) with a ``rank`` column; returns the
    number of rows written. More than [`MERGE_FAN_IN`][levy_core.serving.chunked.MERGE_FAN_IN] runs are merged in rounds."""
    runs = list(runs)
    round_ = 0
    while len(runs) > MERGE_FAN_IN:
        merged = workdir / f"merge-{round_}.parquet"
        with TableWriter(merged, SCORE_COLUMNS) as w:
            for frame in _batched(_merged(runs[:MERGE_FAN_IN]), OUT_BATCH_ROWS):
                w.write(frame)
        for r in runs[:MERGE_FAN_IN]:
            r.unlink()
        runs, round_ = [*runs[MERGE_FAN_IN:], merged], round_ + 1
    with TableWriter(out, ["rank", *SCORE_COLUMNS]) as w:
        for frame in _batched(_merged(runs), OUT_BATCH_ROWS):
            frame.insert(0, "rank", range(w.rows + 1, w.rows + 1 + len(frame)))
            w.write(frame)
        return w.rows


def rank_file(fitted: FittedModel, path: str | os.PathLike[str], out: str | os.PathLike[str], *,
              chunk_series: int = DEFAULT_CHUNK_SERIES, mapping: ColumnMapping | None = None,
              time_unit: str = "hours", progress: Progress | None = None,
              drift: DriftTally | None = None, dayfirst: bool | None = None,
              date_format: str | None = None) -> RankSummary:
    """Rank every series of a CSV or Parquet file by trust, in bounded memory.

    The same scores and order as [`levy_core.pipeline.ranking.rank`][levy_core.pipeline.ranking.rank] on the whole file, written
    to ``out`` (``.parquet`` → Parquet, CSV otherwise) with the columns ``rank`` and
    `SCORE_COLUMNS`.

    Parameters
    ----------
    fitted : FittedModel
    path : str or path-like
        Observations, rows of each series together (see ``iter_series_chunks``).
    out : str or path-like
        The ranking to write.
    chunk_series : int
        Series read and scored at a time.
    mapping, time_unit
        As for [`read_csv`][levy_core.data.read_csv].
    progress : callable, optional
        Called with the number of series of each chunk once scored.
    drift : DriftTally, optional
        Given each chunk (the drift report of the whole file, in bounded memory).
    dayfirst, date_format
        How dates written as numbers are read (as [`read_csv`][levy_core.data.read_csv]).

    Returns
    -------
    RankSummary
        Series ranked, scoring seconds (episodes and forward passes, as ``rank`` reports
        them; no reading or writing) and the reading totals.

    Raises
    ------
    DataError
        What reading the file in chunks refuses (see ``iter_series_chunks``).
    """
    warm_up(fitted)
    totals = ChunkTotals()
    dates: dict[str, bool | str | None] = {"dayfirst": dayfirst, "date_format": date_format}
    chunks = iter_series_chunks(path, chunk_series=chunk_series, mapping=mapping, time_unit=time_unit,
                                totals=totals, **dates)
    with tempfile.TemporaryDirectory(prefix="levy-rank-") as tmp:
        try:
            runs, seconds = _scored_runs(fitted, chunks, Path(tmp), progress, drift)
        except UngroupedSeriesError as ungrouped:  # series out of place: a file within read_csv's limits is read whole
            totals = ChunkTotals()
            whole = _whole(path, mapping, time_unit, totals, ungrouped, drift, dates)
            runs, seconds = _scored_runs(fitted, [whole], Path(tmp), progress, drift)
        n = merge_ranked(runs, out, Path(tmp))
    return RankSummary(n, seconds, totals)


def _scored_runs(fitted: FittedModel, chunks: Iterable[Observations], tmp: Path,
                 progress: Progress | None, drift: DriftTally | None) -> tuple[list[Path], float]:
    """Each chunk scored and written, sorted, as a run; the runs and the scoring seconds."""
    runs, seconds = [], 0.0
    for k, obs in enumerate(chunks):
        if drift is not None:
            drift.add(obs)
        scores, spent = score_series(fitted, obs)
        seconds += spent
        runs.append(tmp / f"run-{k}.parquet")
        _write_run(order_by_trust(scores).drop(columns="rank"), runs[-1])
        if progress is not None:
            progress(obs.n_series)
    return runs, seconds


def _whole(path: str | os.PathLike[str], mapping: ColumnMapping | None, time_unit: str, totals: ChunkTotals,
           ungrouped: UngroupedSeriesError, drift: DriftTally | None,
           dates: dict[str, bool | str | None]) -> Observations:
    """The whole file as one chunk, for a file whose series are not grouped; when it is too
    big to be read whole, ``ungrouped`` (its message says to sort the file by series).
    ``drift`` forgets the chunks it was given before."""
    try:
        obs = read_observations(path, mapping=mapping, time_unit=time_unit, **dates)
    except DataError:
        raise ungrouped from None
    totals.add(obs)
    if drift is not None:
        drift.clear()
    return obs


def predict_file(path: str | os.PathLike[str], out: str | os.PathLike[str],
                 predict: Callable[[Observations], pd.DataFrame], *, chunk_series: int = DEFAULT_CHUNK_SERIES,
                 mapping: ColumnMapping | None = None, time_unit: str = "hours",
                 progress: Progress | None = None, drift: DriftTally | None = None, dayfirst: bool | None = None,
                 date_format: str | None = None) -> tuple[int, ChunkTotals]:
    """Apply ``predict`` (observations of whole series → a frame of rows to write) to a CSV
    or Parquet file chunk by chunk, appending its frames to ``out`` (CSV or Parquet) as
    they come; returns the rows written and the reading totals. ``drift`` is given each
    chunk; ``dayfirst``, ``date_format``: how dates written as numbers are read. ``out``
    is renamed into place once complete: an error partway leaves no partial file (and an
    existing ``out`` as it was)."""
    totals = ChunkTotals()
    dates: dict[str, bool | str | None] = {"dayfirst": dayfirst, "date_format": date_format}
    try:
        with TableWriter(out) as w:
            for obs in iter_series_chunks(path, chunk_series=chunk_series, mapping=mapping, time_unit=time_unit,
                                          totals=totals, **dates):
                if drift is not None:
                    drift.add(obs)
                w.write(predict(obs))
                if progress is not None:
                    progress(obs.n_series)
    except UngroupedSeriesError as ungrouped:  # series out of place: a file within read_csv's limits is read whole
        totals = ChunkTotals()
        obs = _whole(path, mapping, time_unit, totals, ungrouped, drift, dates)
        if drift is not None:
            drift.add(obs)
        with TableWriter(out) as w:
            w.write(predict(obs))
    return w.rows, totals
