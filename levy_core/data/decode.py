"""From a path, an open file or an upload's bytes to CSV text.

Users upload what their spreadsheet program wrote, so this is where a gzipped CSV is
unpacked, "Unicode text" (UTF-16) and Latin-1 files are decoded, and Excel workbooks and
other binary files are refused with a message saying how to export CSV instead.

A gzipped file is unpacked as a stream, `GZIP_CHUNK_BYTES` at a time, and refused
as soon as its unpacked text passes [`MAX_DECOMPRESSED_BYTES`][levy_core.data.MAX_DECOMPRESSED_BYTES]: a small upload that
expands to gigabytes ("gzip bomb") costs at most that much memory and a fraction of a
second, never the whole expansion.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from pathlib import Path
from typing import IO, Any

from levy_core.data.errors import DataError

_GZIP_MAGIC = b"\x1f\x8b"
_XLSX_MAGIC = b"PK\x03\x04"  # a zip archive, as .xlsx (and .ods) files are
_XLS_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # OLE2 compound file: pre-2007 .xls
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_BINARY_SNIFF_BYTES = 4096  # a NUL byte this early means binary, not 8-bit text

MAX_DECOMPRESSED_BYTES: int = 200_000_000
"""Most bytes a gzipped file may unpack to (200 MB). The largest table accepted
(`MAX_ROWS` rows of a long CSV with ids, ISO date-times
with offsets and values, about 65 bytes a row) is about 130 MB of text; a bigger
expansion is refused before any of it is parsed."""

GZIP_CHUNK_BYTES: int = 1 << 20
"""Unpacked bytes read from a gzip stream at a time (1 MiB)."""


def read_source(source: str | os.PathLike[str] | IO[Any]) -> tuple[bytes | str, str]:
    """The raw content of a path or file-like object, and a name for messages.

    Parameters
    ----------
    source : str, path-like or file-like
        A path, or an open file in text or binary mode (read from its start when it can
        seek, e.g. a Streamlit upload read before).

    Returns
    -------
    content : bytes or str
        What the file holds (str for a text-mode file).
    name : str
        The file name, or "uploaded file" for an unnamed stream.

    Raises
    ------
    DataError
        A missing file, a folder, an unreadable stream or an unsupported type.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise DataError(f"File not found: {str(path)!r}. Check the path.")
        if path.is_dir():
            raise DataError(f"{str(path)!r} is a folder, not a CSV file.")
        return path.read_bytes(), path.name
    if hasattr(source, "read"):
        if hasattr(source, "seek"):
            try:
                source.seek(0)
            except (OSError, ValueError):
                pass  # not seekable (a pipe): read what is left
        data = source.read()
        name = str(getattr(source, "name", "uploaded file"))
        if not isinstance(data, (bytes, bytearray, str)):
            raise DataError(f"Could not read {name!r}: expected text or bytes.")
        return (bytes(data) if isinstance(data, bytearray) else data), name
    raise DataError(f"Cannot read data from a {type(source).__name__}; pass a path or a file.")


def decode_text(data: bytes | str, name: str) -> str:
    """The text of a CSV file's content.

    Gzipped bytes are unpacked first. Text with a UTF-16 byte-order mark is read as
    UTF-16 (strictly); any other text as UTF-8 (BOM allowed), falling back to Latin-1,
    which reads every byte.

    Parameters
    ----------
    data : bytes or str
        The content (str is returned as it is).
    name : str
        File name, for messages.

    Returns
    -------
    str

    Raises
    ------
    DataError
        Broken gzip data, an Excel workbook, invalid UTF-16, or a binary file.
    """
    if isinstance(data, str):
        return data
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, name)
    if data[:4] == _XLSX_MAGIC or data[:8] == _XLS_MAGIC:
        raise DataError(
            f"{name!r} is a spreadsheet (Excel) file, not CSV text. In your "
            "spreadsheet program use 'Save as' → 'CSV UTF-8' and upload that."
        )
    if data[:2] in _UTF16_BOMS:  # "Unicode text" as spreadsheet programs call it
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{name!r} could not be decoded as UTF-16 text. Save it as "
                "'CSV UTF-8' and upload again."
            ) from exc
    if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
        raise DataError(f"{name!r} is not a text file. Upload a CSV (comma-separated text).")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _gunzip(data: bytes, name: str) -> bytes:
    """Unpack gzipped bytes as a stream, at most [`MAX_DECOMPRESSED_BYTES`][levy_core.data.MAX_DECOMPRESSED_BYTES] of them.

    Several gzip members one after the other are read as one file, as `gzip`
    reads them. DataError when the stream is truncated or corrupt (bad header, bad
    deflate data, bad CRC or length) or unpacks to more than the limit.
    """
    limit = MAX_DECOMPRESSED_BYTES  # read at each call, so that tests may lower it
    chunks: list[bytes] = []
    total = 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb") as stream:
            while chunk := stream.read(GZIP_CHUNK_BYTES):
                total += len(chunk)
                if total > limit:
                    raise DataError(
                        f"{name!r} unpacks to more than {limit / 1e6:,.0f} MB of text "
                        f"({len(data) / 1e6:,.1f} MB gzipped), the most accepted. Split the "
                        "data into smaller files, or keep only the columns and rows you need."
                    )
                chunks.append(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(
            f"{name!r} looks gzipped but could not be unpacked ({exc}). "
            "Re-create the .csv.gz file or upload the plain CSV."
        ) from exc
    return b"".join(chunks)


def sniff_separator(text: str) -> str:
    """The field separator: comma, unless the header line has more semicolons or tabs.

    Semicolons are what spreadsheet programs write where the decimal mark is a comma.
    The header line is the first line with something other than blanks.
    """
    start = re.search(r"\S", text)
    if start is None:
        return ","
    end = text.find("\n", start.start())
    header = text[start.start():end if end >= 0 else len(text)]
    counts = {",": header.count(","), ";": header.count(";"), "\t": header.count("\t")}
    sep = max(counts, key=lambda s: counts[s])
    return sep if counts[sep] > 0 else ","
