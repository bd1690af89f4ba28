"""Where the dashboard's data comes from: a bundled sample, a path, or an upload, as bytes."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from levy_core.data import SAMPLES, DataError

__all__ = ["DEFAULT_SAMPLE", "ENV_DATA", "DataSource", "env_data_path", "source_from_path", "source_from_sample",
           "source_from_upload"]

ENV_DATA = "LEVY_DASHBOARD_DATA"  # set by `levy dashboard DATA`: the file to open first
DEFAULT_SAMPLE = "Synthetic multichannel"


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
    return _source(f"upload: {name}", name, bytes(data))


def env_data_path() -> str | None:
    value = os.environ.get(ENV_DATA, "").strip()
    return value or None
