"""A fitted model as one zip file: [`model_zip_bytes`][levy_core.serving.modelzip.model_zip_bytes] and [`load_model_zip`][levy_core.serving.modelzip.load_model_zip].

The zip holds a model directory's files (``model.json``, ``levy.safetensors`` and, with the
twin, ``softmax.safetensors``), flat or inside one folder (as ``zip -r`` of the directory
writes it). An uploaded zip is hostile input: its member names, kinds and sizes are checked
from the central directory before anything is extracted, every member is read back with its
actual size bounded, pickles and nested archives are refused by their first bytes, and the
files are written to a private temporary directory (deleted afterwards) that
[`levy_core.pipeline.modelfile.load_model`][levy_core.pipeline.modelfile.load_model] then validates exactly as it does a model directory.
"""

from __future__ import annotations

import io
import json
import stat
import tempfile
import zipfile
import zlib
from pathlib import Path

from levy_core.model.limits import (
    MAX_HEADER_BYTES,
    LimitError,
    check_json_shape,
    check_weights_header,
    expected_tensors,
    read_header,
)
from levy_core.pipeline.model_loading import MAX_JSON_DEPTH, MAX_MODEL_JSON_BYTES
from levy_core.pipeline.modelfile import FORMAT, FittedModel, ModelLoadError, load_model

__all__ = ["CPU_BUILD_CAPS", "MAX_WEIGHTS_BYTES", "MAX_ZIP_BYTES", "MODEL_FILES", "load_model_zip", "model_zip_bytes"]

META_FILE = "model.json"
WEIGHT_FILES = ("levy.safetensors", "softmax.safetensors")
MODEL_FILES = (META_FILE, *WEIGHT_FILES)  # everything a model zip may hold
REQUIRED_FILES = (META_FILE, "levy.safetensors")
# the largest model CONFIG_BOUNDS allows has about 60 M float32 parameters (240 MB) per network
MAX_WEIGHTS_BYTES = 300 * 2**20
MAX_ZIP_BYTES = MAX_MODEL_JSON_BYTES + 2 * MAX_WEIGHTS_BYTES  # all members together, uncompressed
MAX_MEMBERS = 16  # a model zip has at most 3 files and a folder entry
PICKLE_SUFFIXES = (".pt", ".pth", ".pkl", ".pickle", ".bin", ".ckpt", ".joblib", ".npy", ".npz")
_SAFETENSORS_MAX_HEADER = 100 * 2**20  # safetensors' own limit on its JSON header
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed: the same model gives the same bytes
_CHUNK = 2**20
# a model.json no wider than this (twice the largest preset, 10,000 channels: at most ~6 M parameters
# for both networks, 0.2 s) has its networks built on the CPU to read their shapes; anything wider only
# on PyTorch's meta device (shapes, no memory: a model.json is input). Meta's first use in a process
# imports torch._dynamo (its init ops run through torch._refs): 1.4 s of the first zip opened.
CPU_BUILD_CAPS = {"n_channels": 10_000, "d_model": 192, "d_time": 16, "d_channel": 16, "num_heads": 16,
                   "head_dim": 32, "value_rank": 8, "channel_layers": 4, "context_layers": 2}
_HOW = "a saved model zip holds only model.json and safetensors weights (the dashboard's download, or a zip of `levy fit --out DIR`)"


def model_zip_bytes(model: FittedModel | str | Path) -> bytes:
    """The model directory's files zipped (deflated, flat, fixed time stamps: the same model
    gives the same bytes).

    Parameters
    ----------
    model : FittedModel, or a directory written by ``FittedModel.save`` / ``levy fit --out``
        Only `MODEL_FILES` are zipped; anything else in the directory is left out.

    Returns
    -------
    bytes
        A zip that [`load_model_zip`][levy_core.serving.modelzip.load_model_zip] opens.
    """
    if isinstance(model, FittedModel):
        with tempfile.TemporaryDirectory(prefix="levy-model-") as tmp:
            return _zip_directory(model.save(Path(tmp) / "model"))
    directory = Path(model)
    missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
    if missing:
        raise ModelLoadError(f"{directory} is not a model directory (no {', '.join(missing)}); "
                             "create one with `levy fit DATA --out DIR`")
    return _zip_directory(directory)


def _zip_directory(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in MODEL_FILES:
            path = directory / name
            if path.is_symlink():
                raise ModelLoadError(f"{path} is a symbolic link; a model directory holds plain files")
            if path.is_file():
                info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def load_model_zip(data: bytes, *, name: str = "the zip") -> FittedModel:
    """Open a model zip: checked member by member, extracted to a private temporary
    directory, validated by [`load_model`][levy_core.pipeline.modelfile.load_model] (safetensors weights and
    bounded JSON only), then deleted.

    Parameters
    ----------
    data : bytes
        The zip's bytes (an upload).
    name : str
        How messages name the file (the upload's name).

    Returns
    -------
    FittedModel

    Raises
    ------
    ModelLoadError
        Not a zip, an empty or corrupt one, a member that is not one of `MODEL_FILES`
        (a pickle, a path that escapes the folder, a link, an encrypted entry), a member
        larger than its bound (declared or actual), or anything ``load_model`` refuses.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ModelLoadError(f"{name}: expected the zip's bytes, got {type(data).__name__}")
    data = bytes(data)
    entries = _declared_entries(data)
    if entries is not None and entries > MAX_MEMBERS:  # before zipfile builds an object per entry
        raise ModelLoadError(f"{name} holds {entries:,} entries; {_HOW}")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise ModelLoadError(f"{name} is not a zip file or is corrupt ({exc}); {_HOW}") from exc
    with archive:
        members = _checked_members(archive, name)
        with tempfile.TemporaryDirectory(prefix="levy-open-") as tmp:  # mode 0700: this process only
            folder = Path(tmp)
            try:
                # model.json first: it says which tensors the weights hold, checked from each weights
                # file's header as it is unpacked (a mismatch is refused before the rest is written)
                _extract(archive, members[META_FILE], folder / META_FILE, name)
                expected = _expected_weights(folder / META_FILE)
                for file_name, info in members.items():
                    if file_name != META_FILE:
                        _extract(archive, info, folder / file_name, name, expected[file_name])
                return load_model(folder)
            except ModelLoadError as exc:  # name the upload, not the private folder
                raise ModelLoadError(str(exc).replace(str(folder), name)) from exc


def _expected_weights(meta_path: Path) -> dict[str, dict[str, tuple[int, ...]]]:
    """Weights file → tensor name → shape, of the networks ``model.json`` describes, after
    model.json's own checks (built on the CPU when small, ``CPU_BUILD_CAPS``, else on PyTorch's
    meta device: shapes only, no memory)."""
    import torch

    from levy_core.model.config import ModelConfig
    from levy_core.model.levy_model import LevyModel
    from levy_core.model.softmax_twin import SoftmaxTwin

    raw = meta_path.read_bytes()  # at most MAX_MODEL_JSON_BYTES: checked from the zip's entry
    try:  # depth, objects and values bounded before parsing
        check_json_shape(raw, str(meta_path), MAX_JSON_DEPTH)
    except LimitError as exc:
        raise ModelLoadError(str(exc)) from None
    try:
        meta = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of 4,300+ digits
        raise ModelLoadError(f"{meta_path} is not valid JSON ({exc}); re-run `levy fit`") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:  # load_model's message, before the weights
        raise ModelLoadError(f"{meta_path} has format {meta.get('format') if isinstance(meta, dict) else None!r}, "
                             f"expected {FORMAT!r}; re-run `levy fit` with this version")
    try:
        cfg = ModelConfig.from_dict(meta["model_config"])
        small = all(getattr(cfg, name) <= cap for name, cap in CPU_BUILD_CAPS.items())
        with torch.device("cpu" if small else "meta"):
            return {"levy.safetensors": expected_tensors(LevyModel(cfg)),
                    "softmax.safetensors": expected_tensors(SoftmaxTwin(cfg))}
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError, RuntimeError) as exc:
        raise ModelLoadError(f"{meta_path} is damaged, incomplete or from another version ({exc}); "
                             "re-run `levy fit`") from exc


def _declared_entries(data: bytes) -> int | None:
    """The entry count the end-of-central-directory record declares (None: no such record;
    0xFFFF: a zip64 archive, which no model zip needs)."""
    tail = data[-(22 + 0xFFFF):]  # the record (22 bytes) and at most a 64 KiB comment
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None  # zipfile says it is not a zip
    return int.from_bytes(tail[at + 10:at + 12], "little")


def _checked_members(archive: zipfile.ZipFile, name: str) -> dict[str, zipfile.ZipInfo]:
    """Model file name → its entry, after every entry's name, kind and declared size is checked."""
    infos = archive.infolist()
    if not infos:
        raise ModelLoadError(f"{name} is an empty zip; {_HOW}")
    if len(infos) > MAX_MEMBERS:
        raise ModelLoadError(f"{name} holds {len(infos):,} entries; {_HOW}")
    for info in infos:
        _check_entry(info, name)
    files = [i for i in infos if not i.is_dir()]
    folders = {i.filename.rstrip("/") for i in infos if i.is_dir()}
    prefixes = {f.filename.rpartition("/")[0] for f in files}
    if len(prefixes) > 1 or len(folders - prefixes) > 0 or any("/" in p for p in prefixes | folders):
        raise ModelLoadError(f"{name} keeps its files in several folders or a nested one ({sorted(prefixes | folders)}): "
                             f"a model zip holds them at its top level or in one folder; {_HOW}")
    members: dict[str, zipfile.ZipInfo] = {}
    for info in files:
        file_name = info.filename.rpartition("/")[2]
        _check_file_name(file_name, info.filename, name)
        if file_name in members:
            raise ModelLoadError(f"{name} holds {info.filename!r} twice; {_HOW}")
        limit = MAX_MODEL_JSON_BYTES if file_name == META_FILE else MAX_WEIGHTS_BYTES
        if info.file_size > limit:
            raise ModelLoadError(f"{name}: {info.filename} would unpack to {info.file_size:,} bytes, more than the "
                                 f"{limit:,} allowed; {_HOW}")
        members[file_name] = info
    missing = [f for f in REQUIRED_FILES if f not in members]
    if missing:
        raise ModelLoadError(f"{name} has no {' or '.join(missing)}; {_HOW}")
    total = sum(i.file_size for i in members.values())
    if total > MAX_ZIP_BYTES:
        raise ModelLoadError(f"{name} would unpack to {total:,} bytes, more than the {MAX_ZIP_BYTES:,} allowed; {_HOW}")
    return members


def _check_entry(info: zipfile.ZipInfo, name: str) -> None:
    """A member path that stays inside the folder, a plain file or folder, not encrypted."""
    path = info.filename
    parts = path.rstrip("/").split("/")
    if (not path or path.startswith("/") or "\\" in path or "\x00" in path or ":" in path
            or any(p in ("", ".", "..") for p in parts)):
        raise ModelLoadError(f"{name} holds the path {path!r}, which escapes the model's folder; {_HOW}")
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):  # unix modes (0: none recorded): links, devices
        what = "a symbolic link" if kind == stat.S_IFLNK else "not a plain file"
        raise ModelLoadError(f"{name}: {path} is {what}; {_HOW}")
    if info.flag_bits & 0x1:
        raise ModelLoadError(f"{name}: {path} is encrypted; {_HOW}")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ModelLoadError(f"{name}: {path} uses compression method {info.compress_type}, not stored or "
                             f"deflated; {_HOW}")


def _check_file_name(file_name: str, path: str, name: str) -> None:
    if file_name.lower().endswith(PICKLE_SUFFIXES):
        raise ModelLoadError(f"{name} holds {path}: pickled files (.pt, .pkl, .bin, …) can run code when loaded and "
                             f"are never opened; {_HOW}")
    if file_name not in MODEL_FILES:
        raise ModelLoadError(f"{name} holds {path}, which is not part of a saved model ({', '.join(MODEL_FILES)}); "
                             f"{_HOW}")


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, name: str,
             tensors: dict[str, tuple[int, ...]] | None = None) -> None:
    """Copy one member to ``target``, counting the bytes actually inflated (a lying header
    stops at its declared size) and refusing pickles and archives by their first bytes;
    weights (``tensors``: the names and shapes the model expects) are refused on their
    safetensors header (float32 only, the model's names and shapes, the declared size)
    before more than the header has been written."""
    written = 0
    head = b""  # a weights file's first bytes, until its header is checked
    try:
        with archive.open(info) as src, open(target, "xb") as out:
            while chunk := src.read(_CHUNK):
                if written == 0:
                    _check_magic(chunk, info.filename, name)
                if tensors is not None:
                    head += chunk
                    need = 8 + int.from_bytes(head[:8], "little") if len(head) >= 8 else _CHUNK
                    if len(head) >= min(need, 8 + MAX_HEADER_BYTES):
                        _check_weights(head, info, tensors, name)
                        tensors, head = None, b""
                written += len(chunk)
                if written > info.file_size:
                    raise ModelLoadError(f"{name}: {info.filename} unpacks to more than the {info.file_size:,} "
                                         f"bytes its header declares (a zip bomb?); {_HOW}")
                out.write(chunk)
    except ModelLoadError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError) as exc:  # bad CRC, cut stream
        raise ModelLoadError(f"{name}: {info.filename} is corrupt ({exc}); {_HOW}") from exc
    if written == 0:
        raise ModelLoadError(f"{name}: {info.filename} is empty; {_HOW}")
    if tensors is not None:  # shorter than its header says
        _check_weights(head, info, tensors, name)


def _check_weights(head: bytes, info: zipfile.ZipInfo, tensors: dict[str, tuple[int, ...]], name: str) -> None:
    where = f"{name}: {info.filename}"
    try:
        header, header_bytes = read_header(io.BytesIO(head), info.file_size, where)
        check_weights_header(header, header_bytes, info.file_size, tensors, where)
    except LimitError as exc:
        raise ModelLoadError(str(exc)) from None


def _check_magic(head: bytes, path: str, name: str) -> None:
    """Pickles (protocol 2+ start with 0x80 and the protocol), zips (a torch.save file is one)
    and, for weights, anything that does not open like a safetensors file."""
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        raise ModelLoadError(f"{name}: {path} is a pickle, which can run code when loaded and is never opened; {_HOW}")
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        raise ModelLoadError(f"{name}: {path} is itself an archive (a torch.save file is a zip of pickles); {_HOW}")
    if path.endswith(".safetensors"):
        header = int.from_bytes(head[:8], "little") if len(head) >= 8 else 0
        if not 2 <= header <= _SAFETENSORS_MAX_HEADER or head[8:9] != b"{":
            raise ModelLoadError(f"{name}: {path} is not a safetensors file (no JSON header at its start); {_HOW}")
