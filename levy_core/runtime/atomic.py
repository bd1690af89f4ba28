"""Writing a directory or a file so that a reader sees all of the old or all of the new.

Recovery story
--------------
A model directory (``FittedModel.save``, ``levy fit --out``, ``LevyForecaster.save``) is
written whole into a fresh temporary directory beside its target, ``.NAME.tmp-PID-XXXXXXXX``
(same folder, so the same file system), every file and the directory fsynced, then swapped
in:

- target absent: one ``rename`` of the temporary onto it;
- target present (Linux): one ``renameat2(RENAME_EXCHANGE)`` swaps the two directories in a
  single step, then the old one (now under the temporary's name) is removed;
- target present, no exchange on this system: the old directory is renamed aside to
  ``.NAME.old-PID-XXXXXXXX``, the new one renamed into place, the old one removed.

So a kill at any instant, a full disk or any write error leaves ``NAME`` holding the complete
old model or the complete new one, never a mix; files the new model lacks (an old twin) go
with the old directory. A write error removes the temporary and re-raises. Only SIGKILL (or a
power cut) can leave a temporary behind: the next save to the same target removes every
``.NAME.tmp-PID-…``/``.NAME.old-PID-…`` whose process ``PID`` is gone; and where the fallback
was cut between its two renames (``NAME`` missing, an ``.old-`` beside it), that next save
puts the old directory back first (`recover_directory`).

Files (`write_file_atomically`, the CLI's outputs through
``levy_core.serving.table_writer``) follow the same rule with one ``os.replace``.

`terminate_as_exit` makes SIGTERM raise `SystemExit` in the main thread, so that
``finally`` blocks and context managers remove their temporaries on ``kill`` as on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["UnsafeTargetError", "check_directory_target", "exchange", "fsync_directory", "fsync_file", "recover_directory", "remove_stale", "replace_directory",
           "terminate_as_exit", "write_file_atomically", "write_new_file"]

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class UnsafeTargetError(ValueError):
    """A target that is not ours to replace: a symbolic link, a file where a directory is
    expected, or a directory holding something else."""


def write_new_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Create ``path`` (which must not exist; never through a link) holding ``data``, fsynced."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: str | os.PathLike[str]) -> None:
    """Flush a written file's bytes to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(path: str | os.PathLike[str]) -> None:
    """Flush a directory's entries (a rename, a new file) to the disk, where the system allows it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # pragma: no cover - a system without directory descriptors
        return
    try:
        with contextlib.suppress(OSError):  # some file systems refuse fsync on a directory (EINVAL)
            os.fsync(fd)
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale(parent: Path, name: str) -> list[Path]:
    """Remove the temporaries that a killed writer (its process gone) left beside ``parent/name``;
    the ones of a running writer are kept. Returns what was removed."""
    removed = []
    prefixes = (f".{name}.tmp-", f".{name}.old-")
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            rest = next((entry.name[len(p):] for p in prefixes if entry.name.startswith(p)), None)
            pid_text = (rest or "").split("-", 1)[0].split(".", 1)[0]
            if rest is None or not pid_text.isdigit() or _pid_alive(int(pid_text)):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    entry.unlink()
            removed.append(entry)
    return removed


def recover_directory(target: Path) -> Path | None:
    """Where a save was cut between its two renames (``target`` missing, a complete old
    directory aside whose writer is gone), put the old directory back. Returns it, or None."""
    if target.exists() or target.is_symlink():
        return None
    aside = sorted(p for p in target.parent.glob(f".{target.name}.old-*") if p.is_dir() and not p.is_symlink())
    for old in aside:
        pid_text = old.name[len(f".{target.name}.old-"):].split("-", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)):
            os.rename(old, target)
            fsync_directory(target.parent)
            return target
    return None


def exchange(a: Path, b: Path) -> bool:
    """Swap two directory entries in one step (Linux renameat2 RENAME_EXCHANGE); False where
    the system or file system has no such call (nothing done)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _new_dir_beside(target: Path, kind: str) -> Path:
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            tmp.mkdir(mode=0o777)  # the permissions a new directory gets under the umask
        except FileExistsError:
            continue
        return tmp
    raise OSError(f"could not create a temporary directory beside {target}")  # pragma: no cover


def _swap_in(tmp: Path, target: Path) -> None:
    """Put the complete ``tmp`` at ``target``; the old directory (if any) is removed."""
    if not target.exists():
        os.rename(tmp, target)
        fsync_directory(target.parent)
        return
    if exchange(tmp, target):  # tmp now holds the old model
        fsync_directory(target.parent)
        shutil.rmtree(tmp, ignore_errors=True)
        return
    aside = target.with_name(f".{target.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
    os.rename(target, aside)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(aside, target)  # the old model back in place
        raise
    fsync_directory(target.parent)
    shutil.rmtree(aside, ignore_errors=True)


def check_directory_target(target: Path, check_existing: Callable[[Path], None]) -> None:
    """Refuse, before anything is written, a ``target`` that is a symbolic link or a file, or an
    existing directory ``check_existing`` refuses (`UnsafeTargetError`)."""
    if target.is_symlink():
        raise UnsafeTargetError(f"{target} is a symbolic link (to {os.readlink(target)}): a model is never written "
                                "through a link; give the real directory, or a new path")
    if target.exists():
        if not target.is_dir():
            raise UnsafeTargetError(f"{target} is a file, not a model directory: give a new path (a folder is "
                                    "written)")
        check_existing(target)


def replace_directory(target: str | os.PathLike[str], fill: Callable[[Path], None],
                      check_existing: Callable[[Path], None]) -> Path:
    """Write a directory whole, then swap it in for ``target`` (see the module's recovery story).

    Parameters
    ----------
    target : str or path-like
        The directory to create or replace; its parents are created.
    fill : callable
        Writes every file into the (empty) directory it is given.
    check_existing : callable
        Called with ``target`` when it exists; raises `UnsafeTargetError` (or another
        ValueError) when it is not ours to replace.

    Returns
    -------
    pathlib.Path
        ``target``.

    Raises
    ------
    UnsafeTargetError
        ``target`` is a symbolic link or not a directory (or what ``check_existing`` raises).
    OSError
        A write failed (a full disk): the temporary is removed, ``target`` untouched.
    """
    out = Path(target)
    check_directory_target(out, check_existing)
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out.parent, out.name)
    if recover_directory(out) is not None:
        check_existing(out)
    tmp = _new_dir_beside(out, "tmp")
    try:
        fill(tmp)
        for entry in tmp.iterdir():
            fsync_file(entry)
        fsync_directory(tmp)
        _swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def write_file_atomically(target: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``target`` through a fsynced temporary beside it and one
    ``os.replace``: all old or all new; a symlink at ``target`` is replaced, never written through."""
    out = Path(target)
    remove_stale(out.parent, out.name)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        write_new_file(tmp, data)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    fsync_directory(out.parent)
    return out


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def terminate_as_exit() -> Iterator[None]:
    """Within the block, SIGTERM raises ``SystemExit(143)`` (in the main thread), so that
    temporaries are removed as on Ctrl-C; the previous handler is restored afterwards.
    Elsewhere than the main thread: nothing changes."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_exit)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
