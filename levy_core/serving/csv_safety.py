"""CSV files that a spreadsheet opens as data, never as formulas.

A spreadsheet (Excel, LibreOffice Calc, Google Sheets) evaluates a CSV cell that starts with
``=``, ``+``, ``-`` or ``@`` as a formula, and also one that starts with a tab or a carriage
return followed by one. A series id such as ``=HYPERLINK("http://x","y")`` or
``+cmd|' /C calc'!A0`` in an uploaded file would run in the spreadsheet of whoever opens the
predictions. Following OWASP's CSV-injection guidance, every text cell (and every column or
index label) that starts with one of those characters is prefixed with a single quote ``'``,
which the spreadsheet shows as text. Plain numbers written as text (``-1.5``, ``+3``,
``-2e-3``) are left as they are, and numeric, boolean and date-time columns are never
touched, so every number reads back unchanged.

Quoting and escaping of delimiters, double quotes and line breaks inside a cell stay with the
CSV writer, so ``neutralise`` changes only the first character of a cell. One gap of that
writer is closed in ``to_safe_csv``: with its default ``\n`` line ending, Python's csv module
(3.11) leaves a field holding a bare carriage return unquoted, which splits the row for every
reader; such a file is written with RFC 4180's ``\r\n`` line ending instead, which makes the
writer quote the field.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import IO, Any

import pandas as pd

__all__ = ["DANGEROUS_PREFIXES", "is_plain_number", "neutralise", "neutralise_cell", "to_safe_csv"]

DANGEROUS_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP)."""

_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def is_plain_number(text: str) -> bool:
    """Whether ``text`` is a plain decimal number (``-1.5``, ``+3``, ``.5``, ``-2e-3``).

    Nothing else counts: not ``inf`` or ``nan``, not thousands separators, underscores,
    surrounding spaces or non-ASCII digits, so ``-inf`` or ``-1 `` are neutralised."""
    return _PLAIN_NUMBER.fullmatch(text) is not None


def neutralise_cell(value: Any) -> Any:
    """``value`` with a leading ``'`` when it is text starting with a dangerous character
    and is not a plain number; anything else (numbers, missing values, other text) as is."""
    if isinstance(value, str) and value.startswith(DANGEROUS_PREFIXES) and not is_plain_number(value):
        return "'" + value
    return value


def _holds_text(dtype: Any) -> bool:
    """Object, string or categorical columns may hold text; numbers, booleans and
    date-times never do."""
    return (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
            or isinstance(dtype, pd.CategoricalDtype))


def _neutralise_labels(index: pd.Index) -> pd.Index:
    """Column or index labels neutralised (each level of a MultiIndex), names included."""
    if isinstance(index, pd.MultiIndex):
        tuples = [tuple(neutralise_cell(x) for x in t) for t in index]
        return pd.MultiIndex.from_tuples(tuples, names=[neutralise_cell(n) for n in index.names])
    if not _holds_text(index.dtype):
        return index.rename(neutralise_cell(index.name))
    dtype = index.dtype if pd.api.types.is_string_dtype(index.dtype) else object  # categories would not fit
    return pd.Index([neutralise_cell(x) for x in index], dtype=dtype, name=neutralise_cell(index.name))


def neutralise(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` safe to open in a spreadsheet once written as CSV.

    Every text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
    gets a leading single quote ``'``, unless it is a plain number written as text
    (``-1.5``, ``+3``; see ``is_plain_number``). Column names, index labels and their names
    are treated the same way. Numeric, boolean and date-time columns are returned as they
    are; text columns keep their cells' other characters, and a cell that already starts
    with ``'`` is left alone, so neutralising twice changes nothing more. ``frame`` itself
    is not modified; its ``attrs`` are kept.
    """
    out = frame.copy()
    for i in range(out.shape[1]):
        col = out.iloc[:, i]
        if _holds_text(col.dtype):
            values = col.astype(object) if isinstance(col.dtype, pd.CategoricalDtype) else col
            out.isetitem(i, values.map(neutralise_cell, na_action="ignore"))
    out.columns = _neutralise_labels(out.columns)
    out.index = _neutralise_labels(out.index)
    return out


def to_safe_csv(frame: pd.DataFrame, path_or_buffer: str | Hashable | IO[str] | None = None,
                **to_csv_kwargs: Any) -> str | None:
    """``frame.to_csv(path_or_buffer, **to_csv_kwargs)`` after ``neutralise(frame)``.

    Returns the CSV text when ``path_or_buffer`` is None (as ``DataFrame.to_csv`` does),
    None otherwise. Every CSV that levy writes for a person to open goes through here.
    """
    safe = neutralise(frame)
    if "lineterminator" not in to_csv_kwargs and _holds_carriage_return(safe):
        to_csv_kwargs["lineterminator"] = "\r\n"  # so that the writer quotes fields holding "\r"
    return safe.to_csv(path_or_buffer, **to_csv_kwargs)


def _holds_carriage_return(frame: pd.DataFrame) -> bool:
    """Whether any text cell, column label or index label contains ``\r``."""
    def has_cr(values: Any) -> bool:
        return any(isinstance(v, str) and "\r" in v for v in values)

    labels = [*frame.columns.to_flat_index(), *frame.index.to_flat_index(), *frame.columns.names, *frame.index.names]
    flat = [x for label in labels for x in (label if isinstance(label, tuple) else (label,))]
    return has_cr(flat) or any(has_cr(frame.iloc[:, i]) for i in range(frame.shape[1])
                               if _holds_text(frame.iloc[:, i].dtype))
