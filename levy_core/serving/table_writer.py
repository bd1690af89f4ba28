"""Writing a table piece by piece, as CSV or Parquet, so that no result is held whole;
and writing any output file so that a failure leaves nothing behind.

Every file is written to a temporary file beside its target (same folder, so the rename
cannot cross file systems) and renamed into place with `os.replace` only once it is
complete: an error partway (a bad row in the last chunk, a full disk, Ctrl-C) removes the
temporary file and leaves an existing target as it was. The temporary is fsynced before the
rename (a power cut leaves the old file or the new one), named ``.NAME.tmp-PID-XXXXXXXX``, and
removed on SIGTERM too where the command raises on it (``levy``:
`levy_core.runtime.atomic.terminate_as_exit`); only SIGKILL leaves one behind, and the
next write of the same target removes the temporaries of writers that are gone
(`levy_core.runtime.atomic.remove_stale`). `refuse_same_file` refuses
an output that is one of the inputs (the same path, or the same file through a link)
before anything is read or written.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

import pandas as pd

from levy_core.data.errors import DataError
from levy_core.data.parquet import is_parquet
from levy_core.runtime.atomic import fsync_directory, fsync_file, remove_stale
from levy_core.serving.csv_safety import to_safe_csv

__all__ = ["TableWriter", "atomic_output", "refuse_same_file"]


def _temporary_beside(target: Path) -> Path:
    """A new, empty file beside ``target`` (created exclusively, with the permissions a
    new file gets under the process's umask)."""
    remove_stale(target.parent, target.name)  # what a killed writer left
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise OSError(f"could not create a temporary file beside {target}")  # pragma: no cover


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path to write ``path``'s content to; renamed onto ``path`` when the
    block ends without an error, removed when it raises (``path`` untouched).

    Parameters
    ----------
    path : str or path-like
        The file to (over)write; its folder must exist.

    Yields
    ------
    pathlib.Path
        The temporary file (created empty) in the same folder.
    """
    target = Path(path)
    tmp = _temporary_beside(target)
    try:
        yield tmp
    except BaseException:
        _remove(tmp)
        raise
    _replace(tmp, target)


def _replace(tmp: Path, target: Path) -> None:
    """The complete ``tmp`` fsynced and renamed onto ``target`` (removed on any error)."""
    try:
        fsync_file(tmp)
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise
    fsync_directory(target.parent)


def _same(a: Path, b: Path) -> bool:
    """Whether two paths name the same file: the same resolved path, or (both existing)
    the same file on disk (hard links, links to it)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def refuse_same_file(inputs: Mapping[str, str | os.PathLike[str] | None],
                     outputs: Mapping[str, str | os.PathLike[str] | None]) -> None:
    """Refuse an output that would overwrite an input, or another output.

    Parameters
    ----------
    inputs : mapping of str to path
        What each input is called (``"the data"``, ``"--queries"``, ``"the model"``) to
        its path (None: not given). A folder (a model directory) also protects the files
        in it.
    outputs : mapping of str to path
        What each output is called (``"--out"``) to its path (None: not given).

    Raises
    ------
    DataError
        Naming the output, the input and what to do.
    """
    given_out = [(k, Path(v)) for k, v in outputs.items() if v is not None]
    for i, (what, out) in enumerate(given_out):
        for name, src in ((k, Path(v)) for k, v in inputs.items() if v is not None):
            inside = src.is_dir() and out.resolve().is_relative_to(src.resolve())
            if _same(out, src) or inside:
                where = f"is inside {name} ({src})" if inside and not _same(out, src) else f"is {name} ({src})"
                raise DataError(f"{what} {str(out)!r} {where}: writing it would destroy what is being read. "
                                f"Give {what} a new file name.")
        for other, path in given_out[:i]:
            if _same(out, path):
                raise DataError(f"{what} and {other} are the same file ({str(out)!r}): give each its own name.")


class TableWriter:
    """Append pandas frames of the same columns to one file: Parquet when the name ends in
    ``.parquet``/``.pq`` (one row group per frame), CSV otherwise (through
    `to_safe_csv`, header once). Use as a context manager;
    a file with no frame written gets the header of ``columns`` (CSV) or no rows (Parquet).

    The frames go to a temporary file beside ``path``, renamed onto ``path`` when the
    ``with`` block ends without an error; when it raises, the temporary file is removed
    and an existing ``path`` is left as it was (see `atomic_output`).

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
        self._tmp: Path | None = None

    def write(self, frame: pd.DataFrame) -> None:
        """Append ``frame`` (its columns in `columns` order)."""
        if self.columns is None:
            self.columns = [str(c) for c in frame.columns]
        frame = frame[self.columns]
        if self._tmp is None:
            self._tmp = _temporary_beside(self.path)
        if self.parquet:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._writer is None:
                self._writer = pq.ParquetWriter(self._tmp, table.schema)
            self._writer.write_table(table.cast(self._writer.schema))
        else:
            to_safe_csv(frame, self._tmp, index=False, mode="a" if self._started else "w", header=not self._started)
        self._started = True
        self.rows += len(frame)

    def close(self) -> None:
        """Finish the file (a Parquet footer; with nothing written, a file of no rows) and
        rename it onto `path`."""
        try:
            if not self._started and self.columns is not None:
                self.write(pd.DataFrame(columns=self.columns))
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        except BaseException:
            self.discard()
            raise
        if self._tmp is not None:
            tmp, self._tmp = self._tmp, None
            _replace(tmp, self.path)

    def discard(self) -> None:
        """Drop what was written: the temporary file is removed, `path` untouched."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        if self._tmp is not None:
            _remove(self._tmp)
            self._tmp = None

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.discard()
