"""Pieces of the data layer's error messages and report notes.

Every message quotes at most `MAX_QUOTED` names or CSV lines, so that a file with
thousands of bad rows still gives a readable message; the rest are counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

MAX_QUOTED = 5
"""Names or bad lines quoted in one message; any further ones are only counted."""

HEADER_LINES: int = 1
"""A CSV's header is line 1, so data row ``i`` (from 0) is line ``i + 1 + HEADER_LINES``."""


def csv_lines(n_rows: int) -> np.ndarray:
    """The CSV line number of each of ``n_rows`` data rows (header = line 1): 2, 3, ..."""
    return np.arange(n_rows, dtype=np.int64) + 1 + HEADER_LINES


def count(n: int, noun: str) -> str:
    """``n`` and the noun, plural unless ``n == 1``: '1 row', '2 rows', '1,234 rows'."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def quote_list(items: Sequence[Any], limit: int = MAX_QUOTED) -> str:
    """The first ``limit`` items quoted, e.g. ``'a', 'b' (and 3 more)``."""
    shown = ", ".join(repr(str(x)) for x in items[:limit])
    more = len(items) - limit
    return shown + (f" (and {more} more)" if more > 0 else "")


def describe_lines(lines: np.ndarray, texts: Sequence[Any] | None = None) -> str:
    """The first few CSV lines in line order, e.g. ``line 5 ('abc'), line 9 ('x') (and 3 more)``.

    Parameters
    ----------
    lines : numpy.ndarray
        CSV line numbers (header = line 1), in any order.
    texts : sequence, optional
        The offending cell of each line, quoted after its line number when given.

    Returns
    -------
    str
    """
    lines = np.asarray(lines)
    order = np.argsort(lines, kind="stable")
    parts = []
    for i in order[:MAX_QUOTED]:
        part = f"line {int(lines[i])}"
        if texts is not None:
            part += f" ({str(texts[i])!r})"
        parts.append(part)
    more = len(lines) - MAX_QUOTED
    return ", ".join(parts) + (f" (and {more} more)" if more > 0 else "")
