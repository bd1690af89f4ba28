"""Where the dashboard's data comes from: a bundled sample, a path, or an upload, as bytes."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from levy_core.data import SAMPLES, DataError

__all__ = ["DEFAULT_SAMPLE", "ENV_DATA", "MAX_UPLOAD_BYTES", "DataSource", "check_upload_size", "env_data_path",
           "source_from_path", "source_from_sample", "source_from_upload", "upload_limit_text"]

ENV_DATA = "LEVY_DASHBOARD_DATA"  # set by `levy dashboard DATA`: the file to open first
DEFAULT_SAMPLE = "Synthetic multichannel"
MAX_UPLOAD_BYTES = 50 * 2**20
"""Largest CSV upload the dashboard reads: 50 MiB (52.4 MB). Streamlit's own cap
(``server.maxUploadSize``, a flag of ``levy dashboard``: ``levy_core.cli.server.DASHBOARD_SETTINGS``,
counted by the browser in decimal MB)
is set higher, so that a file a little over this limit reaches the app and gets a message
in the page saying so, not only the uploader's red icon."""


def upload_limit_text() -> str:
    """The upload limit in both units, for the page: '50 MiB (52.4 MB)'."""
    return f"{MAX_UPLOAD_BYTES / 2**20:g} MiB ({MAX_UPLOAD_BYTES / 1e6:.1f} MB)"


def check_upload_size(name: str, size: int) -> None:
    """DataError when an upload of ``size`` bytes is over :data:`MAX_UPLOAD_BYTES`, saying
    its size and the limit in MB and MiB and what to do instead."""
    if size > MAX_UPLOAD_BYTES:
        raise DataError(f"{name!r} is {size / 1e6:.1f} MB ({size / 2**20:.1f} MiB), more than the "
                        f"{upload_limit_text()} the dashboard reads. Upload it gzipped (.csv.gz), or a part "
                        "of it (fewer series), or use the command line (`levy fit` / `levy predict`), "
                        "which reads large files in chunks.")


@dataclass(frozen=True)
class DataSource:
    """Raw bytes of a CSV and where they came from."""

    label: str  # what the user sees, e.g. "sample: Synthetic multichannel"
    name: str  # file name, for messages
    data: bytes = field(repr=False)
    digest: str = ""  # SHA-256 of ``data``


def _source(label: str, name: str, data: bytes) -> DataSource:
    return DataSource(label, name, data, hashlib.sha256(data).hexdigest())


def source_from_path(path: str | os.PathLike[str], label: str | None = None) -> DataSource:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"File not found: {str(p)!r}. Check the path given to `levy dashboard`, "
                        "or pick a bundled sample / upload a CSV in the sidebar.")
    return _source(label or f"file: {p.name}", p.name, p.read_bytes())


def source_from_sample(name: str) -> DataSource:
    if name not in SAMPLES:
        raise DataError(f"Unknown sample {name!r}; choose one of {list(SAMPLES)}.")
    return source_from_path(SAMPLES[name], label=f"sample: {name}")


def source_from_upload(name: str, data: bytes) -> DataSource:
    check_upload_size(name, len(data))
    return _source(f"upload: {name}", name, bytes(data))


def env_data_path() -> str | None:
    value = os.environ.get(ENV_DATA, "").strip()
    return value or None
