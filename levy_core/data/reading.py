"""The entry points that start from a file: :func:`read_csv`, :func:`preview_table` and
the bundled samples (:func:`load_sample`)."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import IO, Any

import pandas as pd

from levy_core.data.columns import ColumnMapping
from levy_core.data.decode import decode_text, read_source, sniff_separator
from levy_core.data.errors import DataError
from levy_core.data.frame import MAX_ROWS, from_frame
from levy_core.data.messages import quote_list
from levy_core.data.observations import Observations

SAMPLE_DIR: Path = Path(__file__).resolve().parent.parent.parent / "sample_data"
"""Folder of the bundled sample data sets."""

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
) -> Observations:
    """Read a CSV file into :class:`Observations`.

    Parameters
    ----------
    source : str, path-like or file-like
        A ``.csv`` or ``.csv.gz`` path, or an open file (text or bytes, e.g. Streamlit's
        ``UploadedFile``; gzipped bytes are recognised). Comma, semicolon or tab separated.
    mapping : ColumnMapping, optional
        Which column is which; detected with :func:`detect_mapping` when omitted.
    time_unit : {"hours", "minutes", "seconds", "days"}
        Unit of a numeric time column; converted to hours. Ignored for date-times.
    max_rows : int
        Largest number of data rows accepted (default :data:`MAX_ROWS`).

    Returns
    -------
    Observations

    Raises
    ------
    DataError
        For any problem with the file or its content (see :func:`from_frame`).
    """
    data, name = read_source(source)
    # one row more than allowed, so that from_frame can tell the file is too long
    table = parse_csv_text(decode_text(data, name), name, nrows=max_rows + 1)
    return from_frame(table, mapping=mapping, time_unit=time_unit, max_rows=max_rows)


def preview_table(data: bytes, name: str, nrows: int = 500) -> pd.DataFrame:
    """Read the first rows of an upload for a preview.

    The bytes are decoded exactly as :func:`read_csv` decodes them (gzip, UTF-8 / UTF-16
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
        The same problems :func:`read_csv` refuses: broken gzip data, a spreadsheet or
        binary file, invalid UTF-16, an empty or malformed CSV.
    ValueError
        A negative ``nrows``.
    """
    if nrows < 0:
        raise ValueError(f"nrows must be 0 or more, got {nrows}.")
    return parse_csv_text(decode_text(data, name), name, nrows=nrows)


def parse_csv_text(text: str, name: str, nrows: int) -> pd.DataFrame:
    """The first ``nrows`` data rows of CSV text, every cell kept as str.

    Cells stay text (no NA guessing): from_frame decides what is blank, per role. The
    separator is sniffed (:func:`~levy_core.data.decode.sniff_separator`), blank lines
    are skipped, column names are stripped of surrounding blanks.

    Parameters
    ----------
    text : str
        The CSV text (header line first).
    name : str
        The file's name, for messages.
    nrows : int
        Most data rows read.

    Returns
    -------
    pandas.DataFrame
        One str column per header field.

    Raises
    ------
    DataError
        Empty or malformed CSV text.
    """
    if not text.strip():
        raise DataError(f"{name!r} is empty. Upload a CSV with a header line and data rows.")
    try:
        df = pd.read_csv(
            io.StringIO(text),
            sep=sniff_separator(text),
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
            "contains commas."
        ) from exc
    df.columns = [str(c).strip() for c in df.columns]
    return df


def load_sample(name: str) -> Observations:
    """Load one of the bundled sample data sets.

    Parameters
    ----------
    name : str
        A key of :data:`SAMPLES`.

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
