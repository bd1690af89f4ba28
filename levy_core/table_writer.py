"""Writing a table piece by piece, as CSV or Parquet, so that no result is held whole."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

import pandas as pd

from levy_core.csv_safety import to_safe_csv
from levy_core.data.parquet import is_parquet

__all__ = ["TableWriter"]


class TableWriter:
    """Append pandas frames of the same columns to one file: Parquet when the name ends in
    ``.parquet``/``.pq`` (one row group per frame), CSV otherwise (through
    :func:`~levy_core.csv_safety.to_safe_csv`, header once). Use as a context manager;
    a file with no frame written gets the header of ``columns`` (CSV) or no rows (Parquet).

    Parameters
    ----------
    path : str or path-like
        The file to (over)write.
    columns : list of str, optional
        The columns every frame has, in order (taken from the first frame when omitted).
    """

    def __init__(self, path: str | os.PathLike[str], columns: list[str] | None = None) -> None:
        self.path, self.columns = Path(path), columns
        self.parquet = is_parquet(self.path)
        self.rows = 0
        self._writer = None
        self._started = False

    def write(self, frame: pd.DataFrame) -> None:
        """Append ``frame`` (its columns in :attr:`columns` order)."""
        if self.columns is None:
            self.columns = [str(c) for c in frame.columns]
        frame = frame[self.columns]
        if self.parquet:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._writer is None:
                self._writer = pq.ParquetWriter(self.path, table.schema)
            self._writer.write_table(table.cast(self._writer.schema))
        else:
            to_safe_csv(frame, self.path, index=False, mode="a" if self._started else "w", header=not self._started)
        self._started = True
        self.rows += len(frame)

    def close(self) -> None:
        """Finish the file (a Parquet footer); with nothing written, a file of no rows."""
        if not self._started and self.columns is not None:
            self.write(pd.DataFrame(columns=self.columns))
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
