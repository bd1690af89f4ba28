"""The entry points that start from a file: [`read_csv`][levy_core.data.read_csv], [`preview_table`][levy_core.data.preview_table] and
the bundled samples ([`load_sample`][levy_core.data.load_sample]).

Before the text is parsed, its shape is bounded (`check_text_shape`): at most
[`MAX_COLUMNS`][levy_core.data.MAX_COLUMNS] header fields, no line longer than [`MAX_LINE_CHARS`][levy_core.data.MAX_LINE_CHARS], and at
most [`MAX_CELLS`][levy_core.data.MAX_CELLS] cells (data rows × header fields) parsed, so that the memory a
file costs stays proportional to what can be accepted, whatever its shape.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import IO, Any

import pandas as pd

from levy_core.data.columns import CHANNEL_ALIASES, SERIES_ALIASES, ColumnMapping, find_alias
from levy_core.data.decimals import read_decimal_commas
from levy_core.data.decode import decode_text, read_source, sniff_separator
from levy_core.data.errors import DataError
from levy_core.data.frame import MAX_ROWS, from_frame
from levy_core.data.messages import count, quote_list
from levy_core.data.observations import Observations

MAX_COLUMNS: int = 10_000
"""Most fields in a CSV's header line."""
MAX_LINE_CHARS: int = 1_000_000
"""Longest line accepted, in characters (10,000 fields of 100 characters each)."""
MAX_CELLS: int = 10 * MAX_ROWS
"""Most text cells (data rows × header fields) parsed from one CSV: 20 million, so that
a long table of [`MAX_ROWS`][levy_core.data.MAX_ROWS] rows may carry up to ten columns. Parsed text costs
about 17 bytes a cell, so this bounds parsing at a few hundred MB."""

def _sample_dir() -> Path:
    """``levy_core/sample_data`` in an installed wheel (pyproject.toml maps the repository's
    ``sample_data/`` there), else the checkout's ``sample_data/`` next to ``levy_core/``."""
    package = Path(__file__).resolve().parent.parent
    installed = package / "sample_data"
    return installed if installed.is_dir() else package.parent / "sample_data"


SAMPLE_DIR: Path = _sample_dir()
"""Folder of the bundled sample data sets (and of their shipped models, ``models/``): the
checkout's ``sample_data/``, or ``levy_core/sample_data`` where a wheel installed them."""

SAMPLES: dict[str, Path] = {
    "PhysioNet 2012 ICU (300 patients)": SAMPLE_DIR / "physionet2012_sample.csv.gz",
    "Synthetic multichannel": SAMPLE_DIR / "synthetic_multichannel.csv",
    "Single sensor series": SAMPLE_DIR / "single_series.csv",
}
"""Friendly name -> bundled CSV file (see ``sample_data/README.md``)."""


def read_csv(
    source: str | os.PathLike[str] | IO[Any],
    *,
    mapping: ColumnMapping | None = None,
    time_unit: str = "hours",
    max_rows: int = MAX_ROWS,
    dayfirst: bool | None = None,
    date_format: str | None = None,
) -> Observations:
    """Read a CSV file into [`Observations`][levy_core.data.Observations].

    Parameters
    ----------
    source : str, path-like or file-like
        A ``.csv`` or ``.csv.gz`` path, or an open file (text or bytes, e.g. Streamlit's
        ``UploadedFile``; gzipped bytes are recognised). Comma, semicolon or tab separated.
    mapping : ColumnMapping, optional
        Which column is which; detected with [`detect_mapping`][levy_core.data.detect_mapping] when omitted.
    time_unit : {"hours", "minutes", "seconds", "days"}
        Unit of a numeric time column; converted to hours. Ignored for date-times.
    max_rows : int
        Largest number of data rows accepted (default [`MAX_ROWS`][levy_core.data.MAX_ROWS]).
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
        For any problem with the file or its content (see [`from_frame`][levy_core.data.from_frame]).
    """
    data, name = read_source(source)
    text = decode_text(data, name)
    del data  # the text is all that is needed from here on
    sep = sniff_separator(text)
    header = check_text_shape(text, name, sep)
    rows_allowed = min(max_rows, max(1, MAX_CELLS // max(1, len(header))))
    # one row more than allowed, so that too long a file can be told from a full one
    table = parse_csv_text(text, name, nrows=rows_allowed + 1, sep=sep)
    del text
    if rows_allowed < max_rows and len(table) > rows_allowed:
        raise DataError(
            f"{name!r} has more than {rows_allowed:,} data rows of {count(len(header), 'field')} "
            f"each, more than the {MAX_CELLS:,} cells accepted. Delete the columns you do not "
            "need, or split the file into several smaller files."
        )
    table = restore_duplicate_names(table, header)
    table, notes = read_decimal_commas(table, sep, skip=_id_columns(table, mapping))
    obs = from_frame(table, mapping=mapping, time_unit=time_unit, max_rows=max_rows, dayfirst=dayfirst,
                     date_format=date_format)
    obs.report.messages[1:1] = notes  # after "read N rows (mapping)"
    return obs


def preview_table(data: bytes, name: str, nrows: int = 500) -> pd.DataFrame:
    """Read the first rows of an upload for a preview.

    The bytes are decoded exactly as [`read_csv`][levy_core.data.read_csv] decodes them (gzip, UTF-8 / UTF-16
    / Latin-1, Excel and binary files refused, separator sniffed), but the cells are
    left as they are, so that a column mapping can be chosen before anything is parsed.

    Parameters
    ----------
    data : bytes
        The file's content (plain or gzipped CSV text).
    name : str
        The file's name, for messages.
    nrows : int
        Most data rows returned (the header is not counted).

    Returns
    -------
    pandas.DataFrame
        The first ``nrows`` data rows, every cell a str (blank cells are ""), column
        names stripped of surrounding blanks.

    Raises
    ------
    DataError
        The same problems [`read_csv`][levy_core.data.read_csv] refuses: broken gzip data, a spreadsheet or
        binary file, invalid UTF-16, an empty or malformed CSV.
    ValueError
        A negative ``nrows``.
    """
    if nrows < 0:
        raise ValueError(f"nrows must be 0 or more, got {nrows}.")
    text = decode_text(data, name)
    sep = sniff_separator(text)
    header = check_text_shape(text, name, sep)
    nrows = min(nrows, max(1, MAX_CELLS // max(1, len(header))))
    return parse_csv_text(text, name, nrows=nrows, sep=sep)


def parse_csv_text(text: str, name: str, nrows: int, sep: str | None = None) -> pd.DataFrame:
    """The first ``nrows`` data rows of CSV text, every cell kept as str.

    Cells stay text (no NA guessing): from_frame decides what is blank, per role. The
    separator is sniffed (`sniff_separator`), blank lines
    are skipped, column names are stripped of surrounding blanks.

    Parameters
    ----------
    text : str
        The CSV text (header line first).
    name : str
        The file's name, for messages.
    nrows : int
        Most data rows read.
    sep : str, optional
        The field separator; sniffed when omitted.

    Returns
    -------
    pandas.DataFrame
        One str column per header field.

    Raises
    ------
    DataError
        Empty or malformed CSV text, including rows with more fields than the header
        (with a hint at decimal commas when the separator is a comma).
    """
    if not text.strip():
        raise DataError(f"{name!r} is empty. Upload a CSV with a header line and data rows.")
    sep = sniff_separator(text) if sep is None else sep
    try:
        df = pd.read_csv(
            _TextSource(text),  # io.StringIO would copy the text at 4 bytes a character
            sep=sep,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            nrows=nrows,
            skip_blank_lines=True,
        )
    except pd.errors.EmptyDataError as exc:
        raise DataError(
            f"{name!r} is empty. Upload a CSV with a header line and data rows."
        ) from exc
    except pd.errors.ParserError as exc:
        raise DataError(
            f"{name!r} is not a well-formed CSV: {str(exc).strip()}. Every row needs the "
            "same number of comma-separated fields as the header; quote text that "
            "contains commas." + _decimal_comma_hint(sep)
        ) from exc
    if not isinstance(df.index, pd.RangeIndex):  # pandas made the extra fields an index
        raise DataError(
            f"{name!r} is not a well-formed CSV: line 2 (the first data row) has "
            f"{df.index.nlevels + df.shape[1]:,} fields but the header has {df.shape[1]:,}. "
            "Give every row as many fields as the header." + _decimal_comma_hint(sep)
        )
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _decimal_comma_hint(sep: str) -> str:
    """What to do when decimal commas may have split numbers in a comma-separated file."""
    if sep != ",":
        return ""
    return (
        " If the numbers use decimal commas (3,5), the commas split each number into "
        "two fields: export the file with semicolons as the separator (the CSV a "
        "spreadsheet writes where the decimal mark is a comma), or write the numbers "
        "with decimal points (3.5)."
    )


class _TextSource(io.TextIOBase):
    """A str read in pieces, for `pandas.read_csv`, without copying it whole."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        """Up to ``size`` characters (all that are left when ``size`` is negative)."""
        end = len(self._text) if size is None or size < 0 else self._pos + size
        piece = self._text[self._pos:end]
        self._pos += len(piece)
        return piece


def check_text_shape(text: str, name: str, sep: str) -> list[str]:
    """The header's fields, after refusing text whose shape would cost too much to parse.

    Parameters
    ----------
    text : str
        The CSV text.
    name : str
        The file's name, for messages.
    sep : str
        The field separator.

    Returns
    -------
    list of str
        The header line's fields as written (quotes removed, blanks kept); empty for
        text without a header.

    Raises
    ------
    DataError
        More than [`MAX_COLUMNS`][levy_core.data.MAX_COLUMNS] header fields, or a line longer than
        [`MAX_LINE_CHARS`][levy_core.data.MAX_LINE_CHARS] characters.
    """
    if _has_long_line(text, MAX_LINE_CHARS):
        raise DataError(
            f"{name!r} has a line of more than {MAX_LINE_CHARS:,} characters, the longest "
            "accepted. Check that the file is a CSV table with one observation (or time "
            "stamp) per line."
        )
    start = re.search(r"\S", text)
    if start is None:
        return []
    end = text.find("\n", start.start())
    line = text[start.start():end if end >= 0 else len(text)]
    fields = next(csv.reader([line.rstrip("\r\n")], delimiter=sep), [])
    if len(fields) > MAX_COLUMNS:
        raise DataError(
            f"{name!r} has {len(fields):,} columns, more than the {MAX_COLUMNS:,} accepted. "
            "Keep the columns you need, or use the long layout (series, time, channel, "
            "value), one observation per row."
        )
    return fields


def _has_long_line(text: str, limit: int) -> bool:
    """Whether a line of ``text`` is longer than ``limit`` characters.

    Each step jumps to the last line break within ``limit + 1`` characters of the
    current line's start: the lines before it are short enough, and a line without a
    break in that window is too long. About ``len(text) / limit`` steps.
    """
    pos = 0
    while len(text) - pos > limit:
        last = text.rfind("\n", pos, pos + limit + 1)
        if last < 0:
            return True
        pos = last + 1
    return False


def restore_duplicate_names(table: pd.DataFrame, header: list[str]) -> pd.DataFrame:
    """Give repeated header names back to the columns pandas renamed ``value.1``, ...

    So that [`from_frame`][levy_core.data.from_frame] sees, and refuses when the mapping
    uses it, a column that the header names twice.

    Parameters
    ----------
    table : pandas.DataFrame
        The table as parsed (column names stripped).
    header : list of str
        The header's fields as written (`check_text_shape`).

    Returns
    -------
    pandas.DataFrame
        ``table``, renamed in place where the header repeats a name.
    """
    names = [h.strip() for h in header]
    if len(names) != table.shape[1]:
        return table  # a header pandas read otherwise (quoted line breaks): keep its names
    repeated = {n for n, k in Counter(names).items() if n and k > 1}
    if repeated:
        table.columns = [n if n in repeated else c for n, c in zip(names, table.columns, strict=True)]
    return table


def _id_columns(table: pd.DataFrame, mapping: ColumnMapping | None) -> Collection[str]:
    """Columns holding series ids or channel names: text, never read as numbers."""
    if mapping is not None:
        return {c for c in (mapping.series, mapping.channel) if c is not None}
    columns = [str(c) for c in table.columns]
    found = (find_alias(columns, SERIES_ALIASES), find_alias(columns, CHANNEL_ALIASES))
    return {c for c in found if c is not None}


def load_sample(name: str) -> Observations:
    """Load one of the bundled sample data sets.

    Parameters
    ----------
    name : str
        A key of [`SAMPLES`][levy_core.data.SAMPLES].

    Returns
    -------
    Observations

    Raises
    ------
    DataError
        Unknown name, or the file is missing (regenerate with
        ``python sample_data/make_samples.py``).
    """
    if name not in SAMPLES:
        raise DataError(f"Unknown sample {name!r}; choose one of {quote_list(list(SAMPLES))}.")
    path = SAMPLES[name]
    if not path.exists():
        raise DataError(
            f"Sample file {str(path)!r} is missing; regenerate it with "
            "'python sample_data/make_samples.py'."
        )
    return read_csv(path)
