"""Decimal commas: numbers such as ``3,5`` in the CSV a European spreadsheet writes.

Where the decimal mark is a comma, spreadsheet programs separate fields with semicolons
(or tabs) and write ``0,5;1,25``. In such a file (separator ``;`` or tab) the numeric
columns whose numbers use commas consistently are read with decimal points
(`read_decimal_commas`); thousands separators in the same style (``1.234,5``) are
understood. When the same file also holds numbers with a decimal point (``1.5``), a
point could be a decimal mark or a thousands separator, so the file is refused by name
instead of guessed at. In a comma-separated file a comma can only be part of a number
when the cell is quoted; such cells are refused with a message naming decimal commas
(`decimal_comma_mask`), never read as dates.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from levy_core.data.cells import missing_mask
from levy_core.data.errors import DataError
from levy_core.data.messages import count, csv_lines, describe_lines

DECIMAL_COMMA_RE = r"^[+-]?(?:\d+|\d{1,3}(?:\.\d{3})+),\d+(?:[eE][+-]?\d+)?$"
"""A number written with a decimal comma: ``3,5``, ``-0,25``, ``1.234,5``, ``1,5E+03``."""
DECIMAL_POINT_RE = r"^[+-]?(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?$"
"""A number written with a decimal point (or a thousands point): ``1.5``, ``.5``, ``1.234``."""
INTEGER_RE = r"^[+-]?\d+(?:[eE][+-]?\d+)?$"
"""A number without a decimal mark, read the same either way: ``12``, ``-3``, ``1E+05``."""
DECIMAL_COMMA_SEPARATORS = (";", "\t")
"""Separators with which commas in numbers are decimal marks."""


def decimal_comma_mask(col: pd.Series) -> np.ndarray:
    """Which cells hold a number written with a decimal comma (text cells only).

    Parameters
    ----------
    col : pandas.Series
        Cells of any type; only text is looked at.

    Returns
    -------
    numpy.ndarray
        bool, one per cell.
    """
    if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
        return np.zeros(len(col), dtype=bool)
    text = col.astype(str).str.strip()
    return text.str.match(DECIMAL_COMMA_RE).to_numpy(dtype=bool, na_value=False)


def refuse_decimal_commas(
    col: pd.Series, where: np.ndarray, name: str, role: str, lines: np.ndarray
) -> None:
    """Refuse numbers with decimal commas (0,5) where numbers or date-times are expected.

    Some would otherwise be read as dates ('1,25' as 25 January of year 1).

    Parameters
    ----------
    col : pandas.Series
        The cells.
    where : numpy.ndarray
        bool, one per cell: the cells to look at (e.g. the non-empty ones).
    name : str
        Column name.
    role : str
        What the column holds ("time", "the queries"), for the message.
    lines : numpy.ndarray
        CSV line number of each cell.

    Raises
    ------
    DataError
        Naming the first lines and what to do.
    """
    commas = np.flatnonzero(decimal_comma_mask(col) & where)
    if commas.size:
        raise DataError(
            f"Column {name!r} ({role}) has {count(commas.size, 'number')} with a decimal "
            f"comma: {describe_lines(lines[commas], col.iloc[commas].tolist())}. Numbers such "
            "as 0,5 are read only from a file separated by semicolons, with decimal commas "
            "throughout; otherwise write them with decimal points (0.5), or export the file "
            "with semicolons as the separator."
        )


def read_decimal_commas(
    df: pd.DataFrame, sep: str, skip: Collection[str] = ()
) -> tuple[pd.DataFrame, list[str]]:
    """Numbers with decimal commas rewritten with decimal points, where that is safe.

    Only files separated by ``;`` or tab are rewritten, and in them only the columns
    whose non-empty cells are mostly numbers (decimal-comma numbers or integers).
    Columns in ``skip`` (series ids, channel names) keep their text.

    Parameters
    ----------
    df : pandas.DataFrame
        The table as read from the CSV, every cell text.
    sep : str
        The file's field separator.
    skip : collection of str
        Columns never rewritten.

    Returns
    -------
    table : pandas.DataFrame
        ``df`` itself when nothing was rewritten, otherwise a copy with the rewritten
        columns.
    notes : list of str
        One note per rewritten column, for the [`LoadReport`][levy_core.data.LoadReport].

    Raises
    ------
    DataError
        When some numeric columns use decimal commas and others (or the same one) hold
        numbers with a decimal point: which mark is meant cannot be told.
    """
    if sep not in DECIMAL_COMMA_SEPARATORS:
        return df, []
    candidates = [i for i in range(df.shape[1]) if str(df.columns[i]) not in skip]
    if not any(_has_comma(df.iloc[:, i]) for i in candidates):
        return df, []  # the usual case, decided by a plain search
    found = {i: _marks(df.iloc[:, i]) for i in candidates}
    commas = {i: f for i, f in found.items() if f is not None and f[0].any()}
    if not commas:
        return df, []
    points = [(i, f[1]) for i, f in found.items() if f is not None and f[1].any()]
    if points:
        _refuse_mixed(df, next(iter(commas.items())), points[0])
    out = df.copy()
    notes = []
    for i, (comma, _) in commas.items():
        col = out.iloc[:, i]
        fixed = col[comma].str.strip().str.replace(".", "", regex=False).str.replace(",", ".")
        out.iloc[np.flatnonzero(comma), i] = fixed.to_numpy()
        first = np.flatnonzero(comma)[0]
        notes.append(
            f"column {str(df.columns[i])!r}: {count(int(comma.sum()), 'number')} with a "
            f"decimal comma read as decimals ({str(col.iloc[first]).strip()!r} = {fixed.iloc[0]})"
        )
    return out, notes


def _has_comma(col: pd.Series) -> bool:
    """Whether any text cell of ``col`` contains a comma."""
    if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
        return False
    return bool(col.astype(str).str.contains(",", regex=False).any())


def _marks(col: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """(decimal-comma cells, decimal-point cells) of a column that holds numbers; None
    for a column of text (at most half of its non-empty cells are numbers)."""
    if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
        return None
    text = col.astype(str).str.strip()
    comma = text.str.match(DECIMAL_COMMA_RE).to_numpy(dtype=bool, na_value=False)
    point = text.str.match(DECIMAL_POINT_RE).to_numpy(dtype=bool, na_value=False)
    if not (comma.any() or point.any()):
        return None
    integer = text.str.match(INTEGER_RE).to_numpy(dtype=bool, na_value=False)
    n_present = int((~missing_mask(col)).sum())
    if int((comma | point | integer).sum()) * 2 <= n_present:
        return None
    return comma, point


def _refuse_mixed(
    df: pd.DataFrame,
    comma: tuple[int, tuple[np.ndarray, np.ndarray]],
    point: tuple[int, np.ndarray],
) -> None:
    """Refuse a file with numbers in both decimal marks."""
    lines = csv_lines(len(df))
    i, (comma_cells, _) = comma
    j, point_cells = point
    where_comma = _where(df.iloc[:, i], comma_cells, lines)
    where_point = _where(df.iloc[:, j], point_cells, lines)
    other = "it also has" if i == j else f"column {str(df.columns[j])!r} has"
    raise DataError(
        f"Decimal commas and decimal points mixed: the file is separated by semicolons (or "
        f"tabs) and column {str(df.columns[i])!r} has numbers with decimal commas "
        f"({where_comma}), but {other} numbers with a decimal point ({where_point}): a point "
        "could be a decimal mark or a thousands separator, so the numbers cannot be read "
        "safely. Save the file again with one decimal mark throughout (in the spreadsheet, "
        "format the numbers without thousands separators), or export it with commas as the "
        "separator and decimal points."
    )


def _where(col: pd.Series, cells: np.ndarray, lines: np.ndarray) -> str:
    """The first few lines of ``cells`` with their text, e.g. ``line 2 ('1,5')``."""
    idx = np.flatnonzero(cells)[:3]
    return describe_lines(lines[idx], col.iloc[idx].tolist())
