"""Reading single cells: which are empty, which are numbers, and ids as text.

Cells arrive either as text (a CSV read with ``dtype=str``) or already typed (a
DataFrame built in code); every function here accepts both.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

MISSING_TOKENS = frozenset(
    {"", "nan", "na", "n/a", "#n/a", "null", "none", "-", "--", "?", "<na>", "nat", "missing"}
)
"""Cell texts read as "no value" (compared after stripping and lower-casing)."""


class ParsedNumbers(NamedTuple):
    """A column read as numbers."""

    values: np.ndarray
    """float64; NaN where the cell is empty or bad."""
    missing: np.ndarray
    """bool; empty cells (not an error: they are dropped and counted)."""
    bad: np.ndarray
    """bool; cells with text that is not a finite number (an error)."""


def missing_mask(col: pd.Series) -> np.ndarray:
    """True where a value cell is empty: NaN/None or a token of `MISSING_TOKENS`."""
    isna = col.isna().to_numpy()
    if (
        pd.api.types.is_numeric_dtype(col)
        or pd.api.types.is_bool_dtype(col)
        or pd.api.types.is_datetime64_any_dtype(col)
    ):
        return isna
    out = isna.copy()
    idx = np.flatnonzero(~isna)
    if idx.size:
        text = col.iloc[idx].astype(str).str.strip().str.lower()
        out[idx] = text.isin(MISSING_TOKENS).to_numpy()
    return out


def blank_mask(col: pd.Series) -> np.ndarray:
    """True where an id cell is empty: NaN/None or blank text.

    Unlike `missing_mask`, tokens such as ``"NA"`` count as names here (sodium).
    """
    isna = col.isna().to_numpy()
    if pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col):
        isna = isna | (col.astype(str).str.strip() == "").to_numpy()
    return isna


def parse_numbers(col: pd.Series) -> ParsedNumbers:
    """Read a column as numbers, telling empty cells from bad ones.

    Parameters
    ----------
    col : pandas.Series
        Text or typed cells.

    Returns
    -------
    ParsedNumbers
        Values, empty cells and bad cells.
    """
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        values = col.to_numpy(dtype="float64", na_value=np.nan)
        return ParsedNumbers(values, np.isnan(values), np.isinf(values))
    if pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col):
        return _parse_text_numbers(col)
    # dates, categories of non-numbers, ...: everything non-empty is bad
    missing = missing_mask(col)
    return ParsedNumbers(np.full(len(col), np.nan), missing, ~missing)


def _to_numeric_rounds_correctly() -> bool:
    """Whether ``pd.to_numeric`` reads decimal text to the nearest double. pandas 2's fast
    parser can land one unit in the last place away ("23.956799999999998" reads as
    23.9568, the double next to it); pandas 3's is correctly rounded."""
    probe = "23.956799999999998"
    return bool(pd.to_numeric(pd.Series([probe], dtype=object)).iloc[0] == float(probe))


TO_NUMERIC_EXACT = _to_numeric_rounds_correctly()


def _read_exactly(col: pd.Series, values: np.ndarray) -> None:
    """Re-read in place, with Python's correctly rounded ``float``, the cells that
    ``pd.to_numeric`` read as finite numbers, so that a value written to a CSV and read back
    is the same double. (pandas 2's fast parser gathers the digits in a double: beyond 15
    significant digits it can land a unit in the last place away, ``8811179250151975.0``
    reading ``…974``.) ``astype`` parses as ``float`` does, at about ``to_numeric``'s speed."""
    idx = np.flatnonzero(np.isfinite(values))
    if not idx.size:
        return
    cells = col.iloc[idx]
    try:
        values[idx] = cells.astype(np.float64).to_numpy()
        return
    except (TypeError, ValueError):  # a form to_numeric reads and float does not: cell by cell
        pass
    for i, cell in zip(idx, cells.astype(str).str.strip().to_numpy(dtype=object), strict=True):
        try:
            values[i] = float(cell)
        except ValueError:  # keep to_numeric's reading
            pass


def _parse_text_numbers(col: pd.Series) -> ParsedNumbers:
    """`parse_numbers` for a column of text (or mixed objects)."""
    parsed = pd.to_numeric(col, errors="coerce")
    values = np.array(parsed.to_numpy(dtype="float64", na_value=np.nan))  # writable copy
    nan = np.isnan(values)
    if nan.any():
        # to_numeric may reject padded text such as ' 5 ': retry those stripped.
        idx = np.flatnonzero(nan & ~col.isna().to_numpy())
        if idx.size:
            retry = pd.to_numeric(col.iloc[idx].astype(str).str.strip(), errors="coerce")
            values[idx] = retry.to_numpy(dtype="float64", na_value=np.nan)
            nan = np.isnan(values)
    if not TO_NUMERIC_EXACT:
        _read_exactly(col, values)
    missing = np.zeros(len(values), dtype=bool)
    idx = np.flatnonzero(nan)
    if idx.size:
        missing[idx] = missing_mask(col.iloc[idx])
    bad = (nan & ~missing) | np.isinf(values)
    return ParsedNumbers(values, missing, bad)


def id_strings(col: pd.Series) -> np.ndarray:
    """Series ids or channel names as str objects, stripped.

    A float column of whole numbers (ids read by pandas as floats because of a blank
    cell) is written without '.0', so id 7 stays "7"; blank cells become "".
    """
    if pd.api.types.is_float_dtype(col):
        v = col.to_numpy(dtype="float64", na_value=np.nan)
        finite = v[np.isfinite(v)]
        if finite.size and np.all(finite == np.round(finite)):
            return np.array([("" if np.isnan(x) else str(int(x))) for x in v], dtype=object)
    return col.astype(str).str.strip().to_numpy(dtype=object)
