"""A model as one zip: the round trip gives the same predictions, and every hostile zip (a
pickle, a path that escapes the folder, a link, a huge JSON, a zip bomb, a corrupt or empty
zip) is refused with ``ModelLoadError`` naming the problem, before anything is loaded."""

from __future__ import annotations

import io
import json
import pickle
import stat
import struct
import tempfile
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from levy_core.pipeline.model_loading import MAX_MODEL_JSON_BYTES
from levy_core.pipeline.modelfile import ModelLoadError
from levy_core.pipeline.predict import predict_grid
from levy_core.serving import modelzip
from levy_core.serving.modelzip import load_model_zip, model_zip_bytes


@pytest.fixture(scope="module")
def good_zip(fitted) -> bytes:
    return model_zip_bytes(fitted)


@pytest.fixture(scope="module")
def files(good_zip: bytes) -> dict[str, bytes]:
    """The model's files as the zip holds them."""
    with zipfile.ZipFile(io.BytesIO(good_zip)) as z:
        return {name: z.read(name) for name in z.namelist()}


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every temporary directory of this module lands here (to check it is deleted)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def make_zip(entries: dict[str, bytes] | list[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as z:
        warnings.simplefilter("ignore")  # "Duplicate name": one case means it
        for name, data in entries.items() if isinstance(entries, dict) else entries:
            z.writestr(name, data)
    return buffer.getvalue()


def patch_central(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    """Overwrite one field of the first central-directory entry (``offset`` from its signature)."""
    at = data.index(b"PK\x01\x02") + offset
    return data[:at] + struct.pack(fmt, value) + data[at + struct.calcsize(fmt):]


# ----------------------------------------------------------------------------- the round trip


def test_the_round_trip_predicts_exactly_as_the_fitted_model(fitted, new_obs, good_zip, private_tmp) -> None:
    opened = load_model_zip(good_zip)
    before = predict_grid(fitted, new_obs, n_points=20)
    after = predict_grid(opened, new_obs, n_points=20)
    for column in ("mean", "sigma", "lower_conf", "upper_conf", "log_evidence"):
        np.testing.assert_array_equal(after[column].to_numpy(), before[column].to_numpy())
    assert opened.channels == fitted.channels and opened.twin is not None
    assert list(private_tmp.iterdir()) == [], "the extracted files are deleted"


def test_the_zip_holds_the_model_files_only_and_is_the_same_from_a_directory(fitted_dir, good_zip,
                                                                             tmp_path) -> None:
    with zipfile.ZipFile(io.BytesIO(good_zip)) as z:
        assert sorted(z.namelist()) == ["levy.safetensors", "model.json", "softmax.safetensors"]
    copy = tmp_path / "model"
    copy.mkdir()
    for name in modelzip.MODEL_FILES:
        (copy / name).write_bytes((fitted_dir / name).read_bytes())
    (copy / "notes.txt").write_text("left out")
    assert model_zip_bytes(copy) == model_zip_bytes(fitted_dir), "same files, same bytes"
    with zipfile.ZipFile(io.BytesIO(model_zip_bytes(copy))) as z:
        assert "notes.txt" not in z.namelist()
    with pytest.raises(ModelLoadError, match="is not a model directory"):
        model_zip_bytes(tmp_path)


def test_a_zip_of_the_model_folder_as_zip_r_writes_it_loads(files) -> None:
    entries = [("icu_model/", b"")] + [(f"icu_model/{name}", data) for name, data in files.items()]
    assert load_model_zip(make_zip(entries)).channels


# ----------------------------------------------------------------------------- hostile zips


def with_member(name: str, data: bytes):
    return lambda files: make_zip({**files, name: data})


def replacing(name: str, data: bytes):
    return lambda files: make_zip({**files, name: data})


def symlink(files: dict[str, bytes]) -> bytes:
    info = zipfile.ZipInfo("levy.safetensors")
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return make_zip([("model.json", files["model.json"]), (info, b"/etc/passwd")])


def torch_file() -> bytes:
    buffer = io.BytesIO()
    torch.save({"w": torch.zeros(2)}, buffer)
    return buffer.getvalue()


def meta_with(change) -> callable:
    def build(files: dict[str, bytes]) -> bytes:
        meta = json.loads(files["model.json"])
        change(meta)
        return make_zip({**files, "model.json": json.dumps(meta).encode()})
    return build


CASES = {
    "not a zip": (lambda files: b"this is a CSV, not a zip\n" * 10, "is not a zip file or is corrupt"),
    "empty zip": (lambda files: make_zip({}), "is an empty zip"),
    "a .pkl inside": (with_member("weights.pkl", pickle.dumps({"a": 1})), r"holds weights\.pkl: pickled files"),
    "a .pt inside": (with_member("model.pt", torch_file()), r"holds model\.pt: pickled files"),
    "a .bin inside": (with_member("pytorch_model.bin", b"\x80\x04K\x01."), "pickled files"),
    "a pickle named safetensors": (replacing("levy.safetensors", pickle.dumps({"w": [1.0] * 10})),
                                   r"levy\.safetensors is a pickle"),
    "a torch.save file named safetensors": (replacing("softmax.safetensors", torch_file()),
                                            "is itself an archive"),
    "not safetensors": (replacing("levy.safetensors", b"\x00" * 64), "is not a safetensors file"),
    "a path with ..": (with_member("../model.json", b"{}"), r"the path '\.\./model\.json', which escapes"),
    "an absolute path": (with_member("/etc/cron.d/model.json", b"{}"), "which escapes the model's folder"),
    "a backslash path": (with_member("..\\..\\model.json", b"{}"), "which escapes the model's folder"),
    "a dot inside the path": (with_member("m/../../model.json", b"{}"), "which escapes the model's folder"),
    "a drive letter": (with_member("C:/model.json", b"{}"), "which escapes the model's folder"),
    "a symbolic link": (symlink, r"levy\.safetensors is a symbolic link"),
    "another file": (with_member("README.txt", b"hello"), r"holds README\.txt, which is not part of a saved model"),
    "two folders": (lambda files: make_zip({"a/model.json": files["model.json"],
                                           "b/levy.safetensors": files["levy.safetensors"]}), "several folders or a nested one"),
    "a deeper folder": (lambda files: make_zip({f"a/b/{n}": d for n, d in files.items()}), "several folders or a nested one"),
    "no weights": (lambda files: make_zip({"model.json": files["model.json"]}), r"has no levy\.safetensors"),
    "a member twice": (lambda files: make_zip([*files.items(), ("model.json", b"{}")]), "holds 'model.json' twice"),
    "too many entries": (lambda files: make_zip({f"x{i}.txt": b"" for i in range(100)}), "holds 100 entries"),
    "encrypted": (lambda files: patch_central(make_zip(files), 8, "<H", 0x1), "is encrypted"),
    "corrupt data": (lambda files: (lambda z: z[:200] + bytes(b ^ 0xFF for b in z[200:400]) + z[400:])(
        make_zip(files)), "corrupt"),
    "a bad model.json inside": (meta_with(lambda m: m["model_config"].__setitem__("n_channels", 10**9)),
                                r"n_channels must be an integer in \[1, 100000\]"),
    "not JSON inside": (replacing("model.json", b"{not json"), "is not valid JSON"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_zip_is_refused_with_a_message(case: str, files, private_tmp) -> None:
    build, message = CASES[case]
    data = build(files)
    with pytest.raises(ModelLoadError, match=message) as info:
        load_model_zip(data, name="upload.zip")
    assert "upload.zip" in str(info.value)
    assert str(private_tmp) not in str(info.value), "the private folder is never named"
    assert list(private_tmp.iterdir()) == [], "nothing is left behind"


def test_a_huge_json_is_refused_from_its_declared_size_before_extraction(files, private_tmp,
                                                                         monkeypatch) -> None:
    huge = make_zip({**files, "model.json": b" " * (MAX_MODEL_JSON_BYTES + 1)})
    assert len(huge) < MAX_MODEL_JSON_BYTES // 100, "a few hundred kB that would unpack to 64 MiB"
    opened = []
    monkeypatch.setattr(modelzip, "_extract", lambda *a: opened.append(a))
    start = time.perf_counter()
    with pytest.raises(ModelLoadError, match=rf"model\.json would unpack to {MAX_MODEL_JSON_BYTES + 1:,} bytes"):
        load_model_zip(huge)
    assert opened == [] and time.perf_counter() - start < 5


def test_a_zip_bomb_with_a_lying_header_stops_at_the_declared_size(files, private_tmp) -> None:
    bomb = make_zip({"model.json": files["model.json"] + b" " * 5_000_000,
                     "levy.safetensors": files["levy.safetensors"]})
    lying = patch_central(bomb, 24, "<I", 1000)  # uncompressed size: 1,000 bytes declared
    with pytest.raises(ModelLoadError, match="corrupt|declares") as info:
        load_model_zip(lying)
    assert "model.json" in str(info.value)
    assert list(private_tmp.iterdir()) == []


def test_the_total_bound_is_checked_before_extraction(files, monkeypatch) -> None:
    monkeypatch.setattr(modelzip, "MAX_ZIP_BYTES", len(files["model.json"]) + 10)
    with pytest.raises(ModelLoadError, match="would unpack to .* bytes, more than the .* allowed"):
        load_model_zip(make_zip(files))


def test_weights_larger_than_their_bound_are_refused(files, monkeypatch) -> None:
    monkeypatch.setattr(modelzip, "MAX_WEIGHTS_BYTES", 1000)
    with pytest.raises(ModelLoadError, match=r"levy\.safetensors would unpack to"):
        load_model_zip(make_zip(files))


def test_a_zip_of_a_million_empty_entries_is_refused_before_it_is_parsed(monkeypatch) -> None:
    few = make_zip({f"x{i}": b"" for i in range(3)})
    end = few.rindex(b"PK\x05\x06")
    claims = few[:end + 8] + struct.pack("<HH", 0xFFFF, 0xFFFF) + few[end + 12:]  # the zip64 marker
    parsed = []
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: parsed.append(a))
    with pytest.raises(ModelLoadError, match="holds 65,535 entries"):
        load_model_zip(claims)
    assert parsed == []


def test_a_directory_with_a_linked_file_is_not_zipped(fitted_dir, tmp_path) -> None:
    copy = tmp_path / "model"
    copy.mkdir()
    (copy / "model.json").symlink_to(fitted_dir / "model.json")
    (copy / "levy.safetensors").write_bytes((fitted_dir / "levy.safetensors").read_bytes())
    with pytest.raises(ModelLoadError, match="is a symbolic link"):
        model_zip_bytes(copy)


def test_anything_but_bytes_is_refused() -> None:
    with pytest.raises(ModelLoadError, match="expected the zip's bytes, got str"):
        load_model_zip("model.zip")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the weights' expected shapes


def test_small_networks_are_built_on_the_cpu_and_wide_ones_only_on_meta(files, monkeypatch) -> None:
    """model.json's networks are built to know the weights' shapes: on the CPU when no wider
    than ``CPU_BUILD_CAPS`` (the meta device's first use imports torch._dynamo: 1.4 s), on
    PyTorch's meta device only (no memory: model.json is input) past any one cap."""
    from levy_core.model import levy_model, softmax_twin

    meta = json.loads(files["model.json"])
    assert all(meta["model_config"].get(k, 0) <= cap for k, cap in modelzip.CPU_BUILD_CAPS.items())
    assert load_model_zip(make_zip(files)).channels  # the shapes read off the CPU build match the weights
    devices = []

    def recorded(cfg: object) -> torch.nn.Module:
        devices.append(torch.get_default_device().type)
        return torch.nn.Module()  # no tensors: the weights then do not match, after the build

    monkeypatch.setattr(levy_model, "LevyModel", recorded)
    monkeypatch.setattr(softmax_twin, "SoftmaxTwin", recorded)
    with pytest.raises(ModelLoadError):
        load_model_zip(make_zip(files))
    assert devices == ["cpu", "cpu"]
    for name, cap in modelzip.CPU_BUILD_CAPS.items():
        devices.clear()
        wide = {**meta, "model_config": {**meta["model_config"], name: cap + 2}}  # + 2: d_model stays even
        with pytest.raises(ModelLoadError):
            load_model_zip(make_zip({**files, "model.json": json.dumps(wide).encode()}))
        assert devices == ["meta", "meta"], name
