"""A file of observations as chunks of whole series, in bounded memory.

`iter_series_chunks` reads a CSV (plain or gzipped, as a stream) or a Parquet file a
batch of rows at a time and hands out [`Observations`][levy_core.data.Observations] of ``chunk_series`` whole
series each, decoded by [`from_frame`][levy_core.data.from_frame] exactly as
[`read_csv`][levy_core.data.read_csv] decodes a whole file (messages name the lines of the whole file). Memory
holds one chunk and one batch, whatever the file's length.

This needs the rows of each series together (any order of the series, any order within
one): the trailing series of a batch is carried into the next. A series that reappears
after other series is refused with a message saying to sort the file by series id. To
tell, the reader keeps an 8-byte hash of every series already handed out (0.8 MB per
100,000 series): the one thing that grows with the number of series.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from levy_core.data.cells import blank_mask
from levy_core.data.columns import ColumnMapping, detect_mapping
from levy_core.data.dates import DayOrder
from levy_core.data.decimals import read_decimal_commas
from levy_core.data.decode import decode_text, sniff_separator
from levy_core.data.errors import DataError
from levy_core.data.frame import MAX_ROWS, from_frame
from levy_core.data.observations import Observations
from levy_core.data.parquet import BATCH_ROWS, is_parquet, iter_parquet_tables, read_parquet
from levy_core.data.reading import MAX_COLUMNS, MAX_LINE_CHARS, read_csv, restore_duplicate_names

__all__ = ["DEFAULT_CHUNK_SERIES", "ChunkTotals", "UngroupedSeriesError", "head_table", "iter_csv_tables",
           "iter_series_chunks",
           "read_observations"]

DEFAULT_CHUNK_SERIES: int = 2000
"""Series per chunk: a few hundred thousand PhysioNet rows, tens of MB decoded."""
_SNIFF_BYTES = 1 << 16


class UngroupedSeriesError(DataError):
    """A series reappears after other series: the file cannot be read in chunks of whole
    series as it is (a file small enough is read whole instead, see ``levy_core.serving.chunked``)."""


def read_observations(path: str | os.PathLike[str], *, mapping: ColumnMapping | None = None,
                      time_unit: str = "hours", dayfirst: bool | None = None,
                      date_format: str | None = None) -> Observations:
    """A whole CSV or Parquet file (by its name's ending) as [`Observations`][levy_core.data.Observations], within
    the limits of [`read_csv`][levy_core.data.read_csv] / `read_parquet` (``dayfirst``, ``date_format``:
    how dates written as numbers are read, as there)."""
    if is_parquet(path):
        return read_parquet(path, mapping=mapping, time_unit=time_unit, dayfirst=dayfirst, date_format=date_format)
    return read_csv(path, mapping=mapping, time_unit=time_unit, dayfirst=dayfirst, date_format=date_format)


@dataclass
class ChunkTotals:
    """What the reading of all chunks so far amounted to (updated as chunks are handed out)."""

    rows_read: int = 0
    observations: int = 0
    series: int = 0
    chunks: int = 0
    dropped: int = 0
    merged: int = 0

    def add(self, obs: Observations) -> None:
        """Count one chunk."""
        self.rows_read += obs.report.n_rows_read
        self.observations += obs.n_obs
        self.series += obs.n_series
        self.chunks += 1
        self.dropped += obs.report.n_nan_dropped
        self.merged += obs.report.n_duplicates_merged

    def describe(self) -> str:
        """One line for a person: rows, series, chunks, what was dropped and merged."""
        return (f"read {self.rows_read:,} rows in {self.chunks:,} chunks: {self.observations:,} observations of "
                f"{self.series:,} series ({self.dropped:,} blank dropped, {self.merged:,} duplicates averaged)")


class _BoundedLines(io.TextIOBase):
    """A text stream read in pieces, refused as soon as a line exceeds [`MAX_LINE_CHARS`][levy_core.data.MAX_LINE_CHARS]
    (so that a file without line breaks costs bounded memory, not its length)."""

    def __init__(self, stream: io.TextIOBase, name: str) -> None:
        self._stream, self._name, self._run = stream, name, 0

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        """Close the file underneath too."""
        self._stream.close()
        super().close()

    def read(self, size: int | None = -1) -> str:
        """Up to ``size`` characters (a bounded piece when ``size`` is negative)."""
        piece = self._stream.read(size if size is not None and size >= 0 else 1 << 20)
        first = piece.find("\n")
        if first < 0:
            self._run += len(piece)
        else:
            too_long = self._run + first > MAX_LINE_CHARS or _has_long_line(piece, first + 1)
            self._run = len(piece) - piece.rfind("\n") - 1
        if self._run > MAX_LINE_CHARS or (first >= 0 and too_long):
            raise DataError(f"{self._name!r} has a line of more than {MAX_LINE_CHARS:,} characters, the longest "
                            "accepted. Check that the file is a CSV table with one observation per line.")
        return piece


def _has_long_line(text: str, pos: int) -> bool:
    """Whether a line of ``text`` from ``pos`` on (the last one excepted: it may go on) is
    longer than [`MAX_LINE_CHARS`][levy_core.data.MAX_LINE_CHARS]: about ``len(text) / MAX_LINE_CHARS`` jumps."""
    end = text.rfind("\n") + 1
    while end - pos > MAX_LINE_CHARS:
        last = text.rfind("\n", pos, pos + MAX_LINE_CHARS + 1)
        if last < 0:
            return True
        pos = last + 1
    return False


def _open_text(path: Path) -> tuple[io.TextIOBase, str, list[str]]:
    """The file as a text stream (gzip unpacked on the fly), its separator and header
    fields (as written; empty if the header is longer than the sniffed bytes); the first
    bytes are decoded as `decode_text` decodes a whole file, so Excel and binary
    files are refused the same way."""
    with path.open("rb") as f:
        head = f.read(_SNIFF_BYTES)
    gzipped = head[:2] == b"\x1f\x8b"
    if gzipped:
        try:
            with gzip.open(path, "rb") as g:
                head = g.read(_SNIFF_BYTES)
        except (OSError, EOFError) as exc:
            raise DataError(f"{path.name!r} looks gzipped but could not be unpacked ({exc}). Re-create the "
                            ".csv.gz file or give the plain CSV.") from exc
    prefix = decode_text(head, path.name)  # refuses spreadsheets, binary files, broken UTF-16
    encoding = "utf-16" if head[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    try:
        head.decode(encoding)
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of the sniffed bytes
            encoding = "latin-1"  # as decode_text falls back for a whole file
    raw = gzip.open(path, "rb") if gzipped else path.open("rb")
    sep = sniff_separator(prefix)
    lines = [ln for ln in prefix.splitlines() if ln.strip()]
    whole_line = len(lines) > 1 or len(head) < _SNIFF_BYTES
    header = next(csv.reader([lines[0]], delimiter=sep), []) if lines and whole_line else []
    return _BoundedLines(io.TextIOWrapper(raw, encoding=encoding, newline=""), path.name), sep, header


def _header_fields(table: pd.DataFrame, name: str) -> None:
    if table.shape[1] > MAX_COLUMNS:
        raise DataError(f"{name!r} has {table.shape[1]:,} columns, more than the {MAX_COLUMNS:,} accepted. Keep "
                        "the columns you need, or use the long layout (series, time, channel, value).")


def iter_csv_tables(path: str | os.PathLike[str], *, batch_rows: int = BATCH_ROWS
                    ) -> Iterator[tuple[pd.DataFrame, int, str]]:
    """A CSV (or ``.csv.gz``) as tables of at most ``batch_rows`` text rows, streamed.

    Yields
    ------
    (pandas.DataFrame, int, str)
        The table (every cell text, column names stripped), the CSV line of its first row
        (for messages; blank lines are not counted) and the separator.

    Raises
    ------
    DataError
        A spreadsheet or binary file, a line over [`MAX_LINE_CHARS`][levy_core.data.MAX_LINE_CHARS], too many
        columns, or malformed CSV.
    """
    p = Path(path)
    stream, sep, header = _open_text(p)
    line = 2
    try:
        with stream:
            reader = pd.read_csv(stream, sep=sep, dtype=str, keep_default_na=False, na_filter=False,
                                 skip_blank_lines=True, chunksize=batch_rows)
            for table in reader:
                _header_fields(table, p.name)
                table.columns = [str(c).strip() for c in table.columns]
                yield restore_duplicate_names(table, header), line, sep
                line += len(table)
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"{p.name!r} is empty. Give a CSV with a header line and data rows.") from exc
    except pd.errors.ParserError as exc:
        raise DataError(f"{p.name!r} is not a well-formed CSV after line {line:,}: {str(exc).strip()}. Every "
                        "row needs as many fields as the header; quote text that contains the separator.") from exc
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"{p.name!r} could not be read after line {line:,} ({exc}). Re-create the file, "
                        "or save it as CSV UTF-8.") from exc


def head_table(path: str | os.PathLike[str], rows: int = 2_000) -> pd.DataFrame:
    """The first rows of a CSV or Parquet file as text cells (for finding its columns).

    Raises
    ------
    DataError
        No such file, no rows, or whatever `iter_csv_tables` refuses.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{str(p)!r}: no such file; give the path of a CSV or Parquet file of observations.")
    for table, _, _ in _raw_tables(p, rows):
        if not table.empty:
            return table
    raise DataError(f"{p.name!r} has no rows. Add at least two observations.")


def _raw_tables(path: Path, batch_rows: int) -> Iterator[tuple[pd.DataFrame, int, str | None]]:
    if is_parquet(path):
        for table, line in iter_parquet_tables(path, batch_rows=batch_rows):
            yield table, line, None
    else:
        yield from iter_csv_tables(path, batch_rows=batch_rows)


def _run_starts(keys: np.ndarray) -> np.ndarray:
    """Positions where a new run of equal keys starts (0 included)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([[0], np.flatnonzero(keys[1:] != keys[:-1]) + 1])


class _Grouper:
    """Rows in, chunks of whole series out (at most ``chunk_series`` series and ``max_rows``
    rows each); refuses a series that comes back after others."""

    def __init__(self, name: str, series_column: str, chunk_series: int, max_rows: int) -> None:
        self.name, self.column = name, series_column
        self.chunk_series, self.max_rows = chunk_series, max_rows
        self.seen = np.zeros(0, dtype=np.uint64)  # sorted hashes of the series handed out
        self.buffer = pd.DataFrame()
        self.first_line = 2

    def add(self, table: pd.DataFrame, line: int) -> Iterator[tuple[pd.DataFrame, int]]:
        """Take a table; yield every chunk now complete (rows, line of the first row)."""
        if table.empty:
            return
        blank = blank_mask(table[self.column])
        if blank.any():  # before the runs are cut: a missing id would split its series in two
            rows = np.flatnonzero(blank)
            shown = ", ".join(f"row {line - 1 + int(r):,} (line {line + int(r):,})" for r in rows[:5])
            more = f" and {rows.size - 5:,} more" if rows.size > 5 else ""
            raise DataError(f"{self.name!r}: the series id (column {self.column!r}) is missing on "
                            f"{rows.size:,} row{'s' * (rows.size > 1)}: {shown}{more}, counting data rows from 1 "
                            "(a CSV's line numbers in brackets). Fill in the series id or delete those rows.")
        if self.buffer.empty:
            self.buffer, self.first_line = table.reset_index(drop=True), line
        else:
            self.buffer = pd.concat([self.buffer, table], ignore_index=True)
        yield from self._cut(final=False)

    def finish(self) -> Iterator[tuple[pd.DataFrame, int]]:
        """The rest, once the file has ended."""
        if not self.buffer.empty:
            yield from self._cut(final=True)

    def _cut(self, final: bool) -> Iterator[tuple[pd.DataFrame, int]]:
        keys = self.buffer[self.column].astype(str).str.strip().to_numpy(dtype=object)
        starts = _run_starts(keys)
        ends = np.append(starts[1:], len(keys))
        self._refuse_returning(keys, starts)
        complete = len(starts) if final else len(starts) - 1  # the last series may go on
        done = 0
        while done < complete:
            limit = min(done + self.chunk_series, complete)
            rows = ends[done:limit] - starts[done]  # rows of the chunk ending at each series
            fit = int(np.searchsorted(rows, self.max_rows, side="right"))
            if fit == 0:
                self._refuse_long(keys[starts[done]], int(rows[0]))
            if not final and fit == limit - done < self.chunk_series:
                break  # neither full nor at the row budget yet: wait for more rows
            self._mark_seen(keys[starts[done:done + fit]])
            lo, hi = starts[done], ends[done + fit - 1]
            yield self.buffer.iloc[lo:hi].reset_index(drop=True), self.first_line + lo
            done += fit
        if not final and len(keys) - starts[-1] > self.max_rows:
            self._refuse_long(keys[starts[-1]], len(keys) - int(starts[-1]))
        if done:
            cut = int(ends[done - 1])
            self.buffer = self.buffer.iloc[cut:].reset_index(drop=True)
            self.first_line += cut

    def _refuse_long(self, key: str, n_rows: int) -> None:
        raise DataError(f"{self.name!r}: series {str(key)!r} has more than {min(n_rows, self.max_rows):,} rows, the "
                        "most read at once. Subsample it or split it into several series.")

    def _refuse_returning(self, keys: np.ndarray, starts: np.ndarray) -> None:
        run_keys = keys[starts]
        hashes = pd.util.hash_array(run_keys)
        again = pd.Series(run_keys).duplicated().to_numpy().copy()
        if self.seen.size:
            pos = np.clip(np.searchsorted(self.seen, hashes), 0, self.seen.size - 1)
            again |= self.seen[pos] == hashes
        if again.any():
            i = int(np.flatnonzero(again)[0])
            raise UngroupedSeriesError(
                f"{self.name!r}: series {str(run_keys[i])!r} reappears at line {self.first_line + starts[i]:,} after "
                f"other series. Reading in chunks needs the rows of each series together: sort the file by "
                f"column {self.column!r} (e.g. df.sort_values({self.column!r}, kind='stable')) and try again.")

    def _mark_seen(self, keys: np.ndarray) -> None:
        self.seen = np.union1d(self.seen, pd.util.hash_array(keys))


def iter_series_chunks(path: str | os.PathLike[str], *, chunk_series: int = DEFAULT_CHUNK_SERIES,
                       mapping: ColumnMapping | None = None, time_unit: str = "hours",
                       max_rows: int = MAX_ROWS, batch_rows: int = BATCH_ROWS,
                       totals: ChunkTotals | None = None, dayfirst: bool | None = None,
                       date_format: str | None = None) -> Iterator[Observations]:
    """The observations of a CSV or Parquet file, ``chunk_series`` whole series at a time.

    Parameters
    ----------
    path : str or path-like
        A ``.parquet``/``.pq`` file, or a CSV (``.csv``, ``.csv.gz``), long or wide; the
        rows of each series together (sorted by series id, or grouped any other way).
    chunk_series : int
        Series per chunk (the last chunk may hold fewer), at least 1.
    mapping : ColumnMapping, optional
        Which column is which; detected on the first batch of rows when omitted.
    time_unit : {"hours", "minutes", "seconds", "days"}
        Unit of a numeric time column.
    max_rows : int
        Most rows of one chunk (a single series longer than this is refused).
    batch_rows : int
        Rows read from the file at a time.
    totals : ChunkTotals, optional
        Updated with each chunk handed out (rows, series, what was dropped).
    dayfirst, date_format
        How dates written as numbers are read (as [`read_csv`][levy_core.data.read_csv]); when neither is
        given, the order of day and month a chunk shows holds for the chunks after it
        (a chunk showing the other order is refused).

    Yields
    ------
    Observations
        One chunk: whole series, decoded as [`read_csv`][levy_core.data.read_csv] decodes a file.

    Raises
    ------
    DataError
        Whatever [`read_csv`][levy_core.data.read_csv] / `read_parquet` refuse, a series that reappears
        after other series, an empty file, or a ``chunk_series`` under 1.
    """
    if chunk_series < 1:
        raise DataError(f"chunk_series must be at least 1, got {chunk_series}")
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{str(p)!r}: no such file; give the path of a CSV or Parquet file of observations.")
    grouper: _Grouper | None = None
    chosen, sep, whole, n_chunks = mapping, None, [], 0
    dates = _DateReading(dayfirst, date_format)
    for table, line, sep in _raw_tables(p, batch_rows):
        if table.empty:
            continue
        if chosen is None:
            chosen = detect_mapping(table.loc[:, ~table.columns.duplicated()])
        if chosen.series is None:  # one series: the whole file is one chunk, bounded by max_rows
            whole.append(table)
            if sum(len(t) for t in whole) > max_rows:
                raise DataError(f"{p.name!r} holds one series of more than {max_rows:,} rows, the most read at "
                                "once. Add a series column, or subsample it.")
            continue
        if chosen.series not in table.columns:
            raise DataError(f"{p.name!r} has no column {chosen.series!r} (series ids) named in the mapping.")
        cells_per_row = len(chosen.wide_channels) if chosen.layout == "wide" else 1  # max_rows counts cells
        grouper = grouper or _Grouper(p.name, chosen.series, chunk_series, max(1, max_rows // cells_per_row))
        for rows, first in grouper.add(table, line):
            n_chunks += 1
            yield _decode(rows, first, chosen, sep, time_unit, max_rows, totals, dates)
    rest = [(pd.concat(whole, ignore_index=True), 2)] if whole else list(grouper.finish()) if grouper else []
    if not rest and not n_chunks:
        raise DataError(f"{p.name!r} has no data rows. Give a file with a header and at least two observations.")
    for rows, first in rest:
        yield _decode(rows, first, chosen, sep, time_unit, max_rows, totals, dates)


@dataclass
class _DateReading:
    """How the chunks' dates are read: as the caller says, or in the order of day and
    month that an earlier chunk showed."""

    dayfirst: bool | None
    date_format: str | None
    known: DayOrder | None = None


def _decode(rows: pd.DataFrame, first_line: int, mapping: ColumnMapping, sep: str | None, time_unit: str,
            max_rows: int, totals: ChunkTotals | None, dates: _DateReading) -> Observations:
    notes: list[str] = []
    if sep is not None:  # CSV text: decimal commas as read_csv reads them
        skip = {c for c in (mapping.series, mapping.channel) if c is not None}
        rows, notes = read_decimal_commas(rows, sep, skip=skip)
    obs = from_frame(rows, mapping=mapping, time_unit=time_unit, max_rows=max_rows, first_line=first_line,
                     dayfirst=dates.dayfirst, date_format=dates.date_format, known_day_order=dates.known)
    if dates.known is None:
        dates.known = obs.report.day_order
    obs.report.messages[1:1] = notes
    if totals is not None:
        totals.add(obs)
    return obs
