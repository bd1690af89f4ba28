"""Reading observations from Parquet (pyarrow), with the checks a CSV gets.

A Parquet file is hostile input like any upload. Before a value is decoded the file's
footer is checked: it must be Parquet, have at most [`MAX_COLUMNS`][levy_core.data.MAX_COLUMNS] columns, only
columns of flat types (numbers, booleans, text, date-times; no lists, structs, maps or
raw bytes), a row count that is the sum of its row groups' and of every column chunk's
values, and row groups of at most `MAX_ROW_GROUP_BYTES` decoded (numbers: values ×
width, whatever their encoding). Text is read as dictionary references, and before a
string is decoded its length and the bytes the batch would decode to are checked from the
dictionary and the references: a cell longer than `MAX_TEXT_CHARS` (a series id or
channel name longer than `MAX_ID_CHARS`) or a row group decoding to more than
`MAX_ROW_GROUP_BYTES` is refused (a 33 MB file of one 9,999-character id repeated
would decode to 24 GB). So reading one batch costs bounded memory whatever the file
claims. Each batch, row group by row group, is then handed to
[`from_frame`][levy_core.data.from_frame], the decoder behind [`read_csv`][levy_core.data.read_csv]: the same
column aliases, value checks (``inf`` refused, ``NaN`` and nulls dropped as blanks, like
an empty CSV cell), time parsing and messages. Messages count rows as the lines of the
same table written as CSV (header = line 1), so the first row is line 2.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from levy_core.data.columns import CHANNEL_ALIASES, SERIES_ALIASES, ColumnMapping
from levy_core.data.errors import DataError
from levy_core.data.frame import MAX_ROWS, from_frame
from levy_core.data.messages import quote_list
from levy_core.data.observations import Observations
from levy_core.data.reading import MAX_COLUMNS

__all__ = ["MAX_ID_CHARS", "MAX_ROW_GROUP_BYTES", "MAX_TEXT_CHARS", "PARQUET_SUFFIXES", "check_parquet",
           "iter_parquet_tables", "is_parquet", "parquet_rows", "read_parquet"]

PARQUET_SUFFIXES: tuple[str, ...] = (".parquet", ".pq")
"""File name endings read as Parquet (anything else is read as CSV)."""
MAX_ROW_GROUP_BYTES: int = 512 * 2**20
"""Largest row group accepted (512 MiB), decoded: the footer's uncompressed size, numbers'
values × width, and text as its dictionary and references decode (checked before decoding)."""
MAX_TEXT_CHARS: int = 10_000
"""Longest text cell accepted in any column (a date-time, a note), in characters."""
MAX_ID_CHARS: int = 256
"""Longest series id or channel name accepted (in a column named as [`detect_mapping`][levy_core.data.detect_mapping]
recognises them), in characters."""
BATCH_ROWS: int = 256_000
"""Rows decoded from Parquet at a time."""
_MAGIC = b"PAR1"


def is_parquet(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a Parquet file (by its ending: `PARQUET_SUFFIXES`)."""
    return str(path).lower().endswith(PARQUET_SUFFIXES)


def _open(path: str | os.PathLike[str]):
    """The checked `pyarrow.parquet.ParquetFile` (import deferred: pyarrow is large)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = Path(path)
    if not p.is_file():
        raise DataError(f"{str(p)!r}: no such file; give the path of a Parquet (or CSV) file of observations.")
    with p.open("rb") as f:
        head = f.read(4)
    if head != _MAGIC:
        raise DataError(f"{p.name!r} is not a Parquet file (it does not start with PAR1). Write it with "
                        "pandas.DataFrame.to_parquet, or give a CSV file a .csv name.")
    try:
        file = pq.ParquetFile(p, pre_buffer=False)
        _check_schema(file.schema_arrow, p.name)
        _check_row_groups(file.metadata, file.schema_arrow, p.name)
        text = _text_columns(file.schema_arrow)
        if text:  # text as dictionary references: lengths checked before a string is decoded
            file = pq.ParquetFile(p, pre_buffer=False, read_dictionary=text)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{p.name!r} could not be read as Parquet ({exc}). Re-create the file.") from exc
    return file


def _text_columns(schema) -> list[str]:
    import pyarrow.types as t

    out = []
    for field in schema:
        typ = field.type.value_type if t.is_dictionary(field.type) else field.type
        if t.is_string(typ) or t.is_large_string(typ):
            out.append(field.name)
    return out


def _id_column(column: str) -> bool:
    """Whether a column is named as a series or channel column (its cells: ids, names)."""
    key = str(column).strip().lower()
    return key in {a.lower() for a in (*SERIES_ALIASES, *CHANNEL_ALIASES)}


def _check_schema(schema, name: str) -> None:
    """Refuse too many columns, and columns of types that are no table cell."""
    import pyarrow.types as t

    if len(schema) > MAX_COLUMNS:
        raise DataError(f"{name!r} has {len(schema):,} columns, more than the {MAX_COLUMNS:,} accepted. Keep the "
                        "columns you need, or use the long layout (series, time, channel, value).")
    bad = []
    for field in schema:
        typ = field.type.value_type if t.is_dictionary(field.type) else field.type
        flat = (t.is_integer(typ) or t.is_floating(typ) or t.is_boolean(typ) or t.is_string(typ)
                or t.is_large_string(typ) or t.is_timestamp(typ) or t.is_date(typ) or t.is_null(typ)
                or t.is_decimal(typ))
        if not flat:
            bad.append(f"{field.name} ({field.type})")
    if bad:
        raise DataError(f"{name!r} has columns of types that hold no single number, text or date-time: "
                        f"{quote_list(bad)}. Flatten or drop them (lists, structs, maps and raw bytes are "
                        "not read); store text as UTF-8 strings.")


def _too_large(name: str, group: int, size: float) -> DataError:
    return DataError(f"{name!r}: row group {group} would decode to {size / 2**20:,.0f} MiB, more than the "
                     f"{MAX_ROW_GROUP_BYTES / 2**20:,.0f} MiB read at once. Write the file with smaller row groups "
                     "(e.g. pyarrow.parquet.write_table(..., row_group_size=100_000)), and check that its text "
                     "columns hold what they should.")


def _most_bytes(rows: int, width: int, size: int) -> int:
    """The most bytes a column chunk of ``rows`` fixed-width values can hold: a dictionary and
    the values (at most two copies), definition levels, and page headers (≤ 1 KiB a page of
    1 MiB) with 4 KiB to spare."""
    return 2 * rows * width + rows // 4 + 1024 * (1 + size // 2**20) + 4096


def _check_row_groups(metadata, schema, name: str) -> None:
    """Refuse a footer whose row count is not the sum of its row groups' and of each column
    chunk's values, and a row group that would take more than `MAX_ROW_GROUP_BYTES` to
    decode: its uncompressed size, or its numbers' values × width (a dictionary or run-length
    encoding of one repeated number is small on disk, not in memory)."""
    import pyarrow.types as t

    widths = {}
    for field in schema:
        typ = field.type.value_type if t.is_dictionary(field.type) else field.type
        try:  # a variable-width or null type (an all-missing column) raises ValueError, not AttributeError
            bits = None if t.is_null(typ) or t.is_string(typ) or t.is_large_string(typ) else int(typ.bit_width)
        except (AttributeError, ValueError):
            bits = None
        widths[field.name] = 8 if bits is None else max(bits // 8, 1)
    text = set(_text_columns(schema))
    declared = int(metadata.num_rows)
    groups = [metadata.row_group(i) for i in range(metadata.num_row_groups)]
    total = sum(int(g.num_rows) for g in groups)
    if total != declared:
        raise DataError(f"{name!r}: its footer says {declared:,} rows, but its row groups hold {total:,}. The file "
                        "is damaged or was altered; re-create it.")
    for i, group in enumerate(groups):
        rows = int(group.num_rows)
        decoded = 0
        for j in range(group.num_columns):
            chunk = group.column(j)
            if int(chunk.num_values) != rows:
                raise DataError(f"{name!r}: row group {i} says {rows:,} rows, but its column "
                                f"{chunk.path_in_schema!r} holds {int(chunk.num_values):,} values. The file is "
                                "damaged or was altered; re-create it.")
            width = widths.get(chunk.path_in_schema, 8)
            size = int(chunk.total_uncompressed_size)
            if chunk.path_in_schema not in text and size > _most_bytes(rows, width, size):
                raise DataError(f"{name!r}: row group {i} says {rows:,} rows, but its column "
                                f"{chunk.path_in_schema!r} holds {size:,} bytes, more than {rows:,} values take. "
                                "The file is damaged or was altered (a footer that hides rows); re-create it.")
            decoded += max(size, rows * width)
        if max(decoded, int(group.total_byte_size)) > MAX_ROW_GROUP_BYTES:
            raise _too_large(name, i, max(decoded, int(group.total_byte_size)))


def parquet_rows(path: str | os.PathLike[str]) -> int:
    """The number of rows a Parquet file's footer declares (nothing decoded; the footer checked)."""
    return int(_open(path).metadata.num_rows)


class _TextBudget:
    """The text one row group decodes to, counted from dictionaries and references before
    anything is decoded; refuses long cells and row groups past `MAX_ROW_GROUP_BYTES`."""

    def __init__(self, metadata, name: str) -> None:
        self.metadata, self.name = metadata, name
        self.group, self.rows_left, self.spent = -1, 0, 0

    def start(self, group: int) -> None:
        self.group, self.rows_left = group, int(self.metadata.row_group(group).num_rows)
        # what the row group's other columns decode to (the footer's figures), text added below
        self.spent = 0

    def check(self, batch, first_line: int) -> None:
        import pyarrow.compute as pc
        import pyarrow.types as t

        for field, col in zip(batch.schema, batch.columns, strict=True):
            if not t.is_dictionary(col.type):
                continue
            chunks = col.chunks if hasattr(col, "chunks") else [col]
            limit = MAX_ID_CHARS if _id_column(field.name) else MAX_TEXT_CHARS
            for chunk in chunks:
                lengths = pc.utf8_length(chunk.dictionary) if len(chunk.dictionary) else None
                if lengths is None:
                    continue
                longest = pc.max(lengths).as_py()
                if longest is not None and longest > limit:
                    at = int(pc.index(lengths, longest).as_py())
                    rows = pc.index(chunk.indices, at).as_py()
                    line = f" (line {first_line + rows:,})" if rows is not None and rows >= 0 else ""
                    what = ("Series ids and channel names are short" if limit == MAX_ID_CHARS
                            else "Series ids, channel names and times are short")
                    raise DataError(f"{self.name!r}: column {field.name!r} has a text cell of {longest:,} "
                                    f"characters{line}, more than the {limit:,} accepted. {what}: check that the "
                                    "column holds what it should.")
                used = pc.sum(pc.take(pc.binary_length(chunk.dictionary), chunk.indices)).as_py() or 0
                self.spent += int(used)
        if self.spent > MAX_ROW_GROUP_BYTES:
            raise _too_large(self.name, self.group, self.spent)
        self.rows_left -= batch.num_rows
        if self.rows_left < 0:
            raise DataError(f"{self.name!r}: row group {self.group} holds more rows than its footer says. The file "
                            "is damaged or was altered; re-create it.")

    def finish(self) -> None:
        if self.group >= 0 and self.rows_left != 0:
            raise DataError(f"{self.name!r}: row group {self.group} holds "
                            f"{int(self.metadata.row_group(self.group).num_rows) - self.rows_left:,} rows, not the "
                            f"{int(self.metadata.row_group(self.group).num_rows):,} its footer says. The file is "
                            "damaged or was altered; re-create it.")


def _batches(file, name: str, batch_rows: int, columns: list[str] | None = None) -> Iterator[tuple[object, int]]:
    """``(record batch, line of its first row)`` row group by row group, each batch's text
    checked (`_TextBudget`) before it is decoded, the rows of each group counted."""
    budget = _TextBudget(file.metadata, name)
    line = 2
    for group in range(file.metadata.num_row_groups):
        budget.start(group)
        for batch in file.iter_batches(batch_size=batch_rows, row_groups=[group], columns=columns,
                                       use_threads=False):
            budget.check(batch, line)
            yield batch, line
            line += batch.num_rows
        budget.finish()


def check_parquet(path: str | os.PathLike[str]) -> int:
    """Check a whole Parquet file without decoding it: the footer, and every text column's
    cell lengths and decoded size (its dictionary references only); the rows it holds.

    Raises
    ------
    DataError
        What `iter_parquet_tables` would refuse on the way (times and values aside).
    """
    import pyarrow as pa

    file = _open(path)
    name = Path(path).name
    text = _text_columns(file.schema_arrow)
    rows = 0
    try:
        for batch, _ in _batches(file, name, BATCH_ROWS, columns=text or None):
            rows += batch.num_rows
    except pa.ArrowException as exc:
        raise DataError(f"{name!r} is damaged after line {rows + 2:,} ({exc}). Re-create the file.") from exc
    return rows


def _to_frame(batch, name: str, first_line: int) -> pd.DataFrame:
    """One record batch as a pandas table: dictionaries decoded, decimals as floats, text
    cells no longer than `MAX_TEXT_CHARS`."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.types as t

    columns = []
    for field, col in zip(batch.schema, batch.columns, strict=True):
        if t.is_dictionary(col.type):  # lengths and sizes checked by _TextBudget before this
            col = col.dictionary_decode()
        if t.is_decimal(col.type):
            col = pc.cast(col, pa.float64())
        if t.is_string(col.type) or t.is_large_string(col.type):
            lengths = pc.utf8_length(col)
            longest = pc.max(lengths).as_py()
            limit = MAX_ID_CHARS if _id_column(field.name) else MAX_TEXT_CHARS
            if longest is not None and longest > limit:
                row = int(pc.index(lengths, longest).as_py())
                raise DataError(f"{name!r}: column {field.name!r} has a text cell of {longest:,} characters (line "
                                f"{first_line + row:,}), more than the {limit:,} accepted. Series ids, "
                                "channel names and times are short: check that the column holds what it should.")
        columns.append(col)
    table = pa.Table.from_arrays(columns, names=[str(n) for n in batch.schema.names])
    try:
        frame = table.to_pandas(types_mapper=None, timestamp_as_object=False)
    except (pa.ArrowException, ValueError, OverflowError) as exc:
        raise DataError(f"{name!r}: rows from line {first_line:,} could not be converted ({exc}). Store times "
                        "as numbers or date-times between the years 1678 and 2261.") from exc
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def iter_parquet_tables(path: str | os.PathLike[str], *, batch_rows: int = BATCH_ROWS
                        ) -> Iterator[tuple[pd.DataFrame, int]]:
    """A Parquet file's rows as pandas tables of at most ``batch_rows`` rows, in file order.

    Parameters
    ----------
    path : str or path-like
        The Parquet file.
    batch_rows : int
        Most rows per table.

    Yields
    ------
    (pandas.DataFrame, int)
        The table (typed cells, column names stripped) and the line number of its first
        row as the same table written as CSV would have it.

    Raises
    ------
    DataError
        Not Parquet, a corrupt file, too many columns, nested or binary columns, a row
        count the row groups do not hold, too large a row group (decoded), a text cell over
        `MAX_TEXT_CHARS` (`MAX_ID_CHARS` for series ids and channel names), or
        times out of range.
    """
    import pyarrow as pa

    file = _open(path)
    name = Path(path).name
    line = 2
    try:
        for batch, line in _batches(file, name, batch_rows):
            yield _to_frame(batch, name, line), line
    except pa.ArrowException as exc:
        raise DataError(f"{name!r} is damaged after line {line:,} ({exc}). Re-create the file.") from exc


def read_parquet(path: str | os.PathLike[str], *, mapping: ColumnMapping | None = None,
                 time_unit: str = "hours", max_rows: int = MAX_ROWS, dayfirst: bool | None = None,
                 date_format: str | None = None) -> Observations:
    """Read a whole Parquet file into [`Observations`][levy_core.data.Observations] (as [`read_csv`][levy_core.data.read_csv] reads a CSV).

    Parameters
    ----------
    path : str or path-like
        A ``.parquet`` file, long or wide layout, columns named as in a CSV.
    mapping : ColumnMapping, optional
        Which column is which; detected with [`detect_mapping`][levy_core.data.detect_mapping] when omitted.
    time_unit : {"hours", "minutes", "seconds", "days"}
        Unit of a numeric time column. Ignored for date-times.
    max_rows : int
        Largest number of rows accepted (checked on the footer, before any row is read).
    dayfirst : bool, optional
        Dates written as numbers (``02/01/2024``): day first (True) or month first
        (False); None: inferred from the column, refused when it cannot tell.
    date_format : str, optional
        A strptime format every date-time must match (``%d/%m/%Y %H:%M``), instead.

    Returns
    -------
    Observations

    Raises
    ------
    DataError
        Everything `iter_parquet_tables` and [`from_frame`][levy_core.data.from_frame] refuse, and a file of
        more than ``max_rows`` rows (``levy rank`` and ``levy predict`` read such files in
        chunks of whole series instead).
    """
    n = parquet_rows(path)
    if n > max_rows:
        raise DataError(f"{Path(path).name!r} has {n:,} rows, more than the {max_rows:,} read at once. "
                        "Read it in chunks of whole series (levy rank / levy predict --chunk-series), or split it.")
    tables = [t for t, _ in iter_parquet_tables(path)]
    if not tables:
        raise DataError(f"{Path(path).name!r} has no rows. Add at least two observations.")
    table = pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
    return from_frame(table, mapping=mapping, time_unit=time_unit, max_rows=max_rows, dayfirst=dayfirst,
                      date_format=date_format)
