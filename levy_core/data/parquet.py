"""Reading observations from Parquet (pyarrow), with the checks a CSV gets.

A Parquet file is hostile input like any upload. Before a value is decoded the file's
footer is checked: it must be Parquet, have at most :data:`MAX_COLUMNS` columns, only
columns of flat types (numbers, booleans, text, date-times; no lists, structs, maps or
raw bytes) and row groups of at most :data:`MAX_ROW_GROUP_BYTES` uncompressed, so that
reading one batch costs bounded memory whatever the file claims. Each batch of rows is
then checked for text cells longer than :data:`MAX_TEXT_CHARS` and handed to
:func:`~levy_core.data.frame.from_frame`, the decoder behind :func:`read_csv`: the same
column aliases, value checks (``inf`` refused, ``NaN`` and nulls dropped as blanks, like
an empty CSV cell), time parsing and messages. Messages count rows as the lines of the
same table written as CSV (header = line 1), so the first row is line 2.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from levy_core.data.columns import ColumnMapping
from levy_core.data.errors import DataError
from levy_core.data.frame import MAX_ROWS, from_frame
from levy_core.data.messages import quote_list
from levy_core.data.observations import Observations
from levy_core.data.reading import MAX_COLUMNS

__all__ = ["MAX_ROW_GROUP_BYTES", "MAX_TEXT_CHARS", "PARQUET_SUFFIXES", "iter_parquet_tables", "is_parquet",
           "parquet_rows", "read_parquet"]

PARQUET_SUFFIXES: tuple[str, ...] = (".parquet", ".pq")
"""File name endings read as Parquet (anything else is read as CSV)."""
MAX_ROW_GROUP_BYTES: int = 512 * 2**20
"""Largest uncompressed row group accepted (512 MiB): pyarrow decodes a row group's
column chunks whole, so this bounds the memory one batch can cost."""
MAX_TEXT_CHARS: int = 10_000
"""Longest text cell accepted (a series id, channel name or date-time), in characters."""
BATCH_ROWS: int = 256_000
"""Rows decoded from Parquet at a time."""
_MAGIC = b"PAR1"


def is_parquet(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a Parquet file (by its ending: :data:`PARQUET_SUFFIXES`)."""
    return str(path).lower().endswith(PARQUET_SUFFIXES)


def _open(path: str | os.PathLike[str]):
    """The checked :class:`pyarrow.parquet.ParquetFile` (import deferred: pyarrow is large)."""
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
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{p.name!r} could not be read as Parquet ({exc}). Re-create the file.") from exc
    _check_schema(file.schema_arrow, p.name)
    _check_row_groups(file.metadata, p.name)
    return file


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


def _check_row_groups(metadata, name: str) -> None:
    """Refuse a row group that would take more than :data:`MAX_ROW_GROUP_BYTES` to decode."""
    for i in range(metadata.num_row_groups):
        size = metadata.row_group(i).total_byte_size
        if size > MAX_ROW_GROUP_BYTES:
            raise DataError(f"{name!r}: row group {i} is {size / 2**20:,.0f} MiB uncompressed, more than the "
                            f"{MAX_ROW_GROUP_BYTES / 2**20:,.0f} MiB read at once. Write the file with smaller "
                            "row groups (e.g. pyarrow.parquet.write_table(..., row_group_size=100_000)).")


def parquet_rows(path: str | os.PathLike[str]) -> int:
    """The number of rows a Parquet file's footer declares (nothing decoded)."""
    return int(_open(path).metadata.num_rows)


def _to_frame(batch, name: str, first_line: int) -> pd.DataFrame:
    """One record batch as a pandas table: dictionaries decoded, decimals as floats, text
    cells no longer than :data:`MAX_TEXT_CHARS`."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.types as t

    columns = []
    for field, col in zip(batch.schema, batch.columns, strict=True):
        if t.is_dictionary(col.type):
            col = col.dictionary_decode()
        if t.is_decimal(col.type):
            col = pc.cast(col, pa.float64())
        if t.is_string(col.type) or t.is_large_string(col.type):
            lengths = pc.utf8_length(col)
            longest = pc.max(lengths).as_py()
            if longest is not None and longest > MAX_TEXT_CHARS:
                row = int(pc.index(lengths, longest).as_py())
                raise DataError(f"{name!r}: column {field.name!r} has a text cell of {longest:,} characters (line "
                                f"{first_line + row:,}), more than the {MAX_TEXT_CHARS:,} accepted. Series ids, "
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
        Not Parquet, a corrupt file, too many columns, nested or binary columns, too large
        a row group, a text cell over :data:`MAX_TEXT_CHARS`, or times out of range.
    """
    import pyarrow as pa

    file = _open(path)
    name = Path(path).name
    line = 2
    try:
        for batch in file.iter_batches(batch_size=batch_rows, use_threads=False):
            yield _to_frame(batch, name, line), line
            line += batch.num_rows
    except pa.ArrowException as exc:
        raise DataError(f"{name!r} is damaged after line {line:,} ({exc}). Re-create the file.") from exc


def read_parquet(path: str | os.PathLike[str], *, mapping: ColumnMapping | None = None,
                 time_unit: str = "hours", max_rows: int = MAX_ROWS, dayfirst: bool | None = None,
                 date_format: str | None = None) -> Observations:
    """Read a whole Parquet file into :class:`Observations` (as :func:`read_csv` reads a CSV).

    Parameters
    ----------
    path : str or path-like
        A ``.parquet`` file, long or wide layout, columns named as in a CSV.
    mapping : ColumnMapping, optional
        Which column is which; detected with :func:`detect_mapping` when omitted.
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
        Everything :func:`iter_parquet_tables` and :func:`from_frame` refuse, and a file of
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
