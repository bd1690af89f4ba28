"""Every input bounded (issue 27, part B, and issue 24's small items): the new surfaces tried as a stranger.

Each case is read right or refused with a message that names the problem and what to do;
on the command line: exit 2, ``error: …``, no traceback.

- Parquet: dictionary amplification, long ids, footers that hide rows, decoded sizes;
  peak memory on the amplification file measured in a subprocess (under 1 GB).
- Saved models: every number of ``model.json`` at its bounds (the pass runs) and past them
  (refused by name), the parsed JSON's size, weights' dtypes (F32 only) checked from the
  safetensors header, weights not unpacked before they are refused, calibration numbers,
  a level whose band would be infinite.
- Knobs: ``--points``, ``--mc-passes``, ``--chunk-series``, ``--epochs``, ``--port``,
  ``--host`` bounded, the limit named. (Ray's ``--workers``, ``--address`` and sockets:
  tests/serving/test_ray_engine.py; the dashboard's ``--port`` / ``--host``: tests/cli/test_cli_server.py.)
"""

from __future__ import annotations

import io
import json
import math
import shutil
import struct
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file, save_file

from levy_core.cli import main as cli
from levy_core.cli.evaluate import MAX_MC_PASSES
from levy_core.cli.predict import MAX_POINTS
from levy_core.data import DataError, Observations
from levy_core.data import parquet as parquet_module
from levy_core.data.parquet import MAX_ID_CHARS, check_parquet, read_parquet
from levy_core.model.limits import MAX_JSON_CONTAINERS, NUMBER_BOUNDS
from levy_core.pipeline.modelfile import ModelLoadError, load_model
from levy_core.pipeline.predict import predict_grid
from levy_core.pipeline.prepared import prepare
from levy_core.serving.modelzip import load_model_zip, model_zip_bytes

ROOT = Path(__file__).resolve().parents[2]


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    """``levy ARGV`` in this process: exit code and stderr (argparse's refusals included)."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse: usage and `levy …: error: …`, exit 2
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


# ---------------------------------------------------------------------------------------
# Parquet
# ---------------------------------------------------------------------------------------

def repeated(text: str, n: int) -> pa.DictionaryArray:
    """``text`` in ``n`` rows, dictionary-encoded (one entry, ``n`` references): small on disk."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([text]))


def amplified(path: Path, n: int, series: str = "s" * 9_999, **extra: pa.Array) -> Path:
    """The issue's file: one long series id repeated on every row (the channel a real one)."""
    table = pa.table({"series_id": repeated(series, n), "channel": repeated("coupled", n),
                      "time": pa.array(np.arange(n, dtype=float) / 10), "value": pa.array(np.sin(np.arange(n) / 7)),
                      **extra})
    pq.write_table(table, path, use_dictionary=True)
    return path


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def lying_footer(source: Path, target: Path, claim: int, *, everywhere: bool) -> Path:
    """``source`` with its footer's row count (thrift i64 field 3: 0x16, zigzag varint)
    rewritten to ``claim``: the file's only, or every count of the same value (row groups'
    and column chunks' too)."""
    data = source.read_bytes()
    length = struct.unpack("<I", data[-8:-4])[0]
    footer = data[-8 - length:-8]
    rows = pq.ParquetFile(source).metadata.num_rows
    old, new = b"\x16" + _varint(rows << 1), b"\x16" + _varint(claim << 1)
    assert old in footer
    footer = footer.replace(old, new) if everywhere else footer.replace(old, new, 1)
    target.write_bytes(data[:-8 - length] + footer + struct.pack("<I", len(footer)) + b"PAR1")
    return target


@pytest.fixture(scope="module")
def series_file(synthetic_obs: Observations, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 40 synthetic series as Parquet, ids dictionary-encoded (9,119 rows, one row group)."""
    path = tmp_path_factory.mktemp("parquet") / "series.parquet"
    synthetic_obs.frame.to_parquet(path, index=False)
    return path


def _long_channel(tmp: Path, series_file: Path) -> Path:
    table = pq.read_table(series_file)
    names = pa.array(["c" * (MAX_ID_CHARS + 44)] * table.num_rows)
    pq.write_table(table.set_column(table.schema.get_field_index("channel"), "channel", names), tmp / "f.parquet")
    return tmp / "f.parquet"


def _long_notes(tmp: Path, series_file: Path) -> Path:
    """A free-text column (not an id) of 5,000-character cells on 1,000 rows: 5 MB decoded,
    past a row-group bound of 1 MiB (the test lowers it), a few kB on disk."""
    table = pq.read_table(series_file).slice(0, 1000)
    pq.write_table(table.append_column("note", repeated("n" * 5_000, 1000)), tmp / "f.parquet")
    return tmp / "f.parquet"


def _repeated_number(tmp: Path, series_file: Path) -> Path:
    """200,000 rows of one value, dictionary / run-length encoded: 1.6 MB decoded per number
    column, a few kB on disk, past a row-group bound of 1 MiB (the test lowers it)."""
    n = 200_000
    table = pa.table({"series_id": repeated("s1", n), "channel": repeated("coupled", n),
                      "time": pa.array(np.arange(n, dtype=float)), "value": pa.array(np.ones(n))})
    pq.write_table(table, tmp / "f.parquet", use_dictionary=True)
    return tmp / "f.parquet"


PARQUET_CASES: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    "one 9,999-character id on every row": (
        lambda tmp, _: amplified(tmp / "f.parquet", 50_000),
        rf"column 'series_id' has a text cell of 9,999 characters \(line 2\), more than the {MAX_ID_CHARS} accepted"),
    "a channel name longer than the limit": (
        _long_channel, rf"column 'channel' has a text cell of {MAX_ID_CHARS + 44} characters.*Series ids and channel"),
    "a note column decoding past the row-group bound": (_long_notes, r"row group 0 would decode to .* MiB, more than"),
    "one number repeated past the row-group bound": (_repeated_number, r"row group 0 would decode to .* MiB"),
    "every row count in the footer says 10": (
        lambda tmp, src: lying_footer(src, tmp / "f.parquet", 10, everywhere=True),
        r"row group 0 says 10 rows, but its column '\w+' holds [\d,]+ bytes, more than 10 values take.*altered"),
    "the file's row count says 10": (
        lambda tmp, src: lying_footer(src, tmp / "f.parquet", 10, everywhere=False),
        r"its footer says 10 rows, but its row groups hold 9,119"),
}
_LOW_BOUND = {"a note column decoding past the row-group bound", "one number repeated past the row-group bound"}


@pytest.mark.parametrize("case", list(PARQUET_CASES))
def test_a_hostile_parquet_file_is_refused_by_the_library(case: str, series_file: Path, tmp_path: Path,
                                                          monkeypatch) -> None:
    build, message = PARQUET_CASES[case]
    path = build(tmp_path, series_file)
    if case in _LOW_BOUND:
        monkeypatch.setattr(parquet_module, "MAX_ROW_GROUP_BYTES", 2**20)
    with pytest.raises(DataError, match=message):
        read_parquet(path)
    with pytest.raises(DataError, match=message):  # what levy rank --engine ray checks on the driver
        check_parquet(path)


@pytest.mark.parametrize("command", ["rank", "predict"])
@pytest.mark.parametrize("case", list(PARQUET_CASES))
def test_a_hostile_parquet_file_exits_2_on_the_command_line(case: str, command: str, fitted_dir: Path,
                                                            series_file: Path, tmp_path: Path, monkeypatch,
                                                            capsys) -> None:
    build, message = PARQUET_CASES[case]
    path = build(tmp_path, series_file)
    if case in _LOW_BOUND:
        monkeypatch.setattr(parquet_module, "MAX_ROW_GROUP_BYTES", 2**20)
    code, err = run_cli([command, str(fitted_dir), str(path), "--out", str(tmp_path / "out.csv"), "--quiet"], capsys)
    assert code == 2 and err.startswith("error: ") and __import__("re").search(message, err), err


def test_an_honest_file_in_many_row_groups_reads_every_series(synthetic_obs: Observations, tmp_path: Path) -> None:
    path = tmp_path / "groups.parquet"
    synthetic_obs.frame.to_parquet(path, index=False, row_group_size=700)  # 14 row groups, ids dictionary-encoded
    assert pq.ParquetFile(path).metadata.num_row_groups == 14
    obs = read_parquet(path)
    assert obs.n_series == 40 and obs.n_obs == synthetic_obs.n_obs
    assert check_parquet(path) == len(synthetic_obs.frame)


@pytest.mark.integration
def test_the_amplification_file_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """The issue's file (one 9,999-character id repeated) at 1,000,000 rows: 10 GB decoded,
    about 13 MB on disk. The chunked reader behind `levy rank` / `levy predict` refuses it
    with the process's peak memory (VmHWM, read by the process itself) under 1 GB."""
    path = amplified(tmp_path / "amplified.parquet", 1_000_000)
    assert path.stat().st_size < 20 * 2**20
    script = textwrap.dedent(f"""
        import re
        from levy_core.data import DataError
        from levy_core.data.series_chunks import iter_series_chunks
        try:
            for _ in iter_series_chunks({str(path)!r}, chunk_series=2000):
                pass
            print("READ")
        except DataError as exc:
            print("REFUSED", exc)
        status = open("/proc/self/status").read()
        print("VmHWM_kB", re.search(r"VmHWM:\\s+(\\d+)", status).group(1))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("REFUSED") and "9,999 characters" in lines[0], proc.stdout
    peak = int(lines[-1].split()[1]) * 1024
    assert peak < 2**30, f"peak memory {peak / 2**20:.0f} MiB"


# ---------------------------------------------------------------------------------------
# Saved models: numbers, sizes, dtypes
# ---------------------------------------------------------------------------------------

@pytest.fixture
def model_copy(fitted_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(fitted_dir, tmp_path / "model"))


def _concrete(meta: dict, pattern: str) -> list[str] | None:
    """The first path of ``meta`` that ``pattern`` (``*``: any key or item) names, or None."""
    def walk(node, steps: list[str], done: list[str]) -> list[str] | None:
        if not steps:
            return done
        head, rest = steps[0], steps[1:]
        if isinstance(node, dict):
            keys = list(node) if head == "*" else [head] if head in node else []
        elif isinstance(node, list):
            keys = [str(i) for i in range(len(node))] if head == "*" else []
        else:
            return None
        for key in keys[:1]:
            child = node[key] if isinstance(node, dict) else node[int(key)]
            found = walk(child, rest, [*done, key])
            if found is not None:
                return found
        return None
    return walk(meta, pattern.split("."), [])


def _set(meta: dict, path: list[str], value: float) -> None:
    node = meta
    for key in path[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(path[-1])] = value
    else:
        node[path[-1]] = value


# fields that are null in the shared model (no horizon, no window, ...): set to a bound they
# change what the model is (a windowed clock, an origin plan), so only the refusal is tested
_NULL_FIELDS = {"split.window_hours", "split.origin_plan.*",
                "mc_calibration.conformal.scores.*", "levy_calibration.conformal.scores.*",
                "last_value_calibration.conformal.scores.*", "adaptive.*.*.scores.*", "adaptive.*.*.sigma_floor"}


def _bound_cases(learned: bool = False) -> list[tuple[str, str, float]]:
    """Each bounded number at both bounds and past them: the shared model's, or (``learned``)
    the learned spread's, which only a forecast panel past its gate saves."""
    cases = []
    for pattern, (lo, hi, _) in NUMBER_BOUNDS.items():
        if pattern.startswith("learned_spread.") != learned:
            continue
        past_hi = hi * 10 if hi > 0 else 1.0
        past_lo = lo / 10 if lo > 0 else (lo * 10 if lo < 0 else -1.0)
        cases += [(pattern, "at", lo), (pattern, "at", hi), (pattern, "past", past_hi), (pattern, "past", past_lo)]
    return cases


@pytest.mark.parametrize(("pattern", "where", "value"), _bound_cases(),
                         ids=[f"{p}-{w}-{v:g}" for p, w, v in _bound_cases()])
def test_every_bounded_number_at_its_bounds_runs_a_pass_and_past_them_is_refused_by_name(
        pattern: str, where: str, value: float, model_copy: Path, new_obs: Observations) -> None:
    meta = json.loads((model_copy / "model.json").read_text())
    path = _concrete(meta, pattern)
    if path is None:  # absent from this model (no adaptive state, no group scores, ...)
        if pattern in _NULL_FIELDS or where == "at":
            pytest.skip(f"{pattern} is not in the shared model")
        raise AssertionError(pattern)
    if where == "at" and pattern in _NULL_FIELDS:
        pytest.skip(f"{pattern}: set, it changes what the model is")
    _set(meta, path, value)
    (model_copy / "model.json").write_text(json.dumps(meta))
    name = ".".join(path)
    if where == "past":  # the whole path, or the field's name where ModelConfig's own check speaks first
        with pytest.raises(ModelLoadError, match=name.replace(".", r"\.") if path[0] != "model_config"
                           else path[-1]):
            load_model(model_copy)
        return
    try:
        fitted = load_model(model_copy)
    except ModelLoadError as exc:  # a bound that meets another field's (length_scale_min above max)
        assert path[-1] in str(exc), str(exc)
        return
    if name == "task.cutoff" and value < 0:  # a cut-off before every observation: nothing to predict from
        with pytest.raises(DataError, match="no observation before the forecast cut-off"):
            predict_grid(fitted, prepare(fitted, new_obs), n_points=5)
        return
    pred = predict_grid(fitted, prepare(fitted, new_obs), n_points=5)
    numbers = pred[["mean", "sigma", "lower_conf", "upper_conf", "lower_gauss", "upper_gauss"]].to_numpy(float)
    assert len(pred) and np.isfinite(numbers).all(), name


@pytest.fixture(scope="module")
def learned_dir(synthetic_obs: Observations, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A forecast panel past the learned spread's gate (lowered to the synthetic panel's size), saved."""
    from levy_core.calibration import learned_spread
    from levy_core.episodes.tasks import TaskConfig
    from levy_core.pipeline.recipe import fit
    from levy_core.training.train import TrainConfig

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(learned_spread, "MIN_QUERIES", 200)
        fitted = fit(synthetic_obs, task=TaskConfig("forecast"), train=TrainConfig(epochs=2, seed=0), size="small",
                     train_twin=False)
    assert fitted.learned_spread is not None
    return fitted.save(tmp_path_factory.mktemp("learned") / "levy_model")


@pytest.mark.parametrize(("pattern", "where", "value"), _bound_cases(learned=True),
                         ids=[f"{p}-{w}-{v:g}" for p, w, v in _bound_cases(learned=True)])
def test_the_learned_spreads_numbers_at_their_bounds_give_a_finite_band_and_past_them_are_refused(
        pattern: str, where: str, value: float, learned_dir: Path, new_obs: Observations, tmp_path: Path) -> None:
    model = Path(shutil.copytree(learned_dir, tmp_path / "model"))
    meta = json.loads((model / "model.json").read_text())
    path = _concrete(meta, pattern)
    assert path is not None, pattern
    _set(meta, path, value)
    (model / "model.json").write_text(json.dumps(meta))
    if where == "past":
        with pytest.raises(ModelLoadError, match=".".join(path).replace(".", r"\.")):
            load_model(model)
        return
    pred = predict_grid(load_model(model), prepare(load_model(model), new_obs), n_points=5)
    numbers = pred[["mean", "sigma", "lower_conf", "upper_conf", "lower_gauss", "upper_gauss"]].to_numpy(float)
    assert len(pred) and np.isfinite(numbers).all() and (pred["upper_conf"] >= pred["lower_conf"]).all()


def _first_split(meta: dict) -> tuple[dict, int]:
    tree = meta["learned_spread"]["trees"]["trees"][0]
    return tree, tree["is_leaf"].index(0)


_LEAF = {"value": [0.0], "feature_idx": [0], "num_threshold": [0.0], "missing_go_to_left": [0], "left": [0],
         "right": [0], "is_leaf": [1], "is_categorical": [0], "bitset_idx": [0], "left_bitsets": []}
LEARNED_DAMAGE: dict[str, tuple[Callable[[dict], None], str]] = {
    "a channel count unlike the model's": (
        lambda m: m["learned_spread"].update(n_channels=m["learned_spread"]["n_channels"] + 1,
                                             coef=m["learned_spread"]["coef"] + [0.0]),
        r"learned_spread\.n_channels is \d+, but the model has \d+ channels"),
    "a child pointing back at the root (a cycle)": (
        lambda m: _first_split(m)[0]["left"].__setitem__(_first_split(m)[1], 0), r"learned_spread: .*child index"),
    "a split on a 14th column": (
        lambda m: _first_split(m)[0]["feature_idx"].__setitem__(_first_split(m)[1], 13), r"learned_spread: .*feature"),
    "1,001 trees": (lambda m: m["learned_spread"]["trees"].update(trees=[_LEAF] * 1001),
                    r"learned_spread: .*at most 1000 trees"),
    "a tree without its thresholds": (lambda m: _first_split(m)[0].pop("num_threshold"),
                                      r"learned_spread: tree 0 .*num_threshold"),
}


@pytest.mark.parametrize("case", list(LEARNED_DAMAGE))
def test_a_damaged_learned_spread_is_refused_by_name_before_a_pass(case: str, learned_dir: Path, tmp_path: Path,
                                                                   fit_csv: Path, capsys) -> None:
    model = Path(shutil.copytree(learned_dir, tmp_path / "model"))
    meta = json.loads((model / "model.json").read_text())
    change, message = LEARNED_DAMAGE[case]
    change(meta)
    (model / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match=message):
        load_model(model)
    code, err = run_cli(["predict", str(model), str(fit_csv), "--out", str(tmp_path / "p.csv")], capsys)
    assert code == 2 and err.startswith("error: ") and "re-run `levy fit`" in err


ISSUE_24 = {"time_scale": 1e300, "length_scale_max": 1e300}


@pytest.mark.parametrize("field", list(ISSUE_24))
def test_issue_24_huge_time_scales_are_refused_at_load_not_at_the_first_pass(field: str, model_copy: Path,
                                                                              capsys) -> None:
    meta = json.loads((model_copy / "model.json").read_text())
    meta["model_config"][field] = ISSUE_24[field]
    (model_copy / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match=rf"model_config\.{field} is 1e\+300, outside"):
        load_model(model_copy)
    with pytest.raises(ModelLoadError, match=rf"model_config\.{field}"):
        load_model_zip(model_zip_bytes(model_copy), name="upload.zip")


OTHER_NUMBERS: dict[str, tuple[Callable[[dict], None], str]] = {
    "calibration scale 1e308": (lambda m: m["levy_calibration"]["scaled_gaussian"].__setitem__("scale", 1e308),
                                r"levy_calibration\.scaled_gaussian\.scale is 1e\+308, outside \[0, 1e\+12\]"),
    "a conformal score 1e300": (
        lambda m: next(iter(m["levy_calibration"]["conformal"]["group_scores"].values())).__setitem__(0, 1e300),
        r"levy_calibration\.conformal\.group_scores\.\w+\.0 is 1e\+300"),
    "a drift minimum 1e300": (lambda m: next(iter(m["drift"]["channels"].values())).__setitem__("minimum", -1e300),
                              r"drift\.channels\.\w+\.minimum is -1e\+300, outside \[-1e\+100, 1e\+100\]"),
    "a training figure 1e300": (lambda m: m["training"]["levy"].__setitem__("seconds", 1e300),
                                r"training\.levy\.seconds is 1e\+300"),
    "a scaler maximum 1e200": (lambda m: m["scaler"]["maximum"].update({k: 1e200 for k in m["scaler"]["maximum"]}),
                               r"scaler\.maximum\.\w+ is 1e\+200"),
    "500,001 empty objects in training": (
        lambda m: m["training"].__setitem__("x", [{} for _ in range(MAX_JSON_CONTAINERS + 1)]),
        rf"holds {MAX_JSON_CONTAINERS + 4:,} objects and arrays|holds [\d,]+ objects and arrays, more than"),
}


@pytest.mark.parametrize("case", list(OTHER_NUMBERS))
def test_other_numbers_and_sizes_are_refused_by_name(case: str, model_copy: Path, capsys, tmp_path: Path,
                                                     fit_csv: Path) -> None:
    change, message = OTHER_NUMBERS[case]
    meta = json.loads((model_copy / "model.json").read_text())
    change(meta)
    (model_copy / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match=message):
        load_model(model_copy)
    code, err = run_cli(["predict", str(model_copy), str(fit_csv), "--out", str(tmp_path / "p.csv")], capsys)
    assert code == 2 and err.startswith("error: ") and "re-run `levy fit`" in err


def _bomb_zip(fitted_dir: Path) -> bytes:
    """The issue's 130 KB zip: a 64 MiB model.json of empty objects and real weights."""
    head = b'{"format": "levy-model/2", "x": ['
    body = b"{}," * ((64 * 2**20 - len(head) - 10) // 3)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("model.json", head + body + b"{}]}")
        archive.writestr("levy.safetensors", (fitted_dir / "levy.safetensors").read_bytes())
    return buffer.getvalue()


@pytest.mark.integration
def test_a_zip_of_64_mib_of_empty_objects_is_refused_in_under_a_second_with_bounded_memory(
        fitted_dir: Path, tmp_path: Path) -> None:
    """In a fresh process: the CPU seconds of ``load_model_zip`` and the process's peak
    memory (VmHWM) beyond what importing the library took (before: +1.67 GB, 1.8 s)."""
    data = _bomb_zip(fitted_dir)
    assert len(data) < 200_000
    (tmp_path / "bomb.zip").write_bytes(data)
    script = textwrap.dedent(f"""
        import re, time
        def peak():
            return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) * 1024
        from levy_core.serving.modelzip import ModelLoadError, load_model_zip
        data = open({str(tmp_path / "bomb.zip")!r}, "rb").read()
        before, t0 = peak(), time.process_time()
        try:
            load_model_zip(data, name="bomb.zip")
            print("LOADED")
        except ModelLoadError as exc:
            print("REFUSED", exc)
        print("CPU", time.process_time() - t0)
        print("GROWTH", peak() - before)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert "objects and arrays, more than the 500,000" in out["REFUSED"], proc.stdout
    assert float(out["CPU"]) < 1.0, proc.stdout
    assert int(out["GROWTH"]) < 400 * 2**20, proc.stdout


def _retyped(file: Path, dtype: torch.dtype) -> None:
    tensors = load_file(file)
    save_file({k: v.to(dtype) for k, v in tensors.items()}, file)


DTYPES = {"BOOL": torch.bool, "F16": torch.float16, "F64": torch.float64, "I64": torch.int64}


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_weights_not_stored_as_float32_are_refused_by_name(dtype: str, model_copy: Path, capsys,
                                                           tmp_path: Path, fit_csv: Path) -> None:
    _retyped(model_copy / "levy.safetensors", DTYPES[dtype])
    message = rf"levy\.safetensors: tensor '[\w.]+' is stored as {dtype}, not F32"
    with pytest.raises(ModelLoadError, match=message):
        load_model(model_copy)
    with pytest.raises(ModelLoadError, match=message):
        load_model_zip(model_zip_bytes(model_copy), name="upload.zip")
    code, err = run_cli(["predict", str(model_copy), str(fit_csv), "--out", str(tmp_path / "p.csv")], capsys)
    assert code == 2 and f"is stored as {dtype}, not F32" in err
    assert not (tmp_path / "p.csv").exists()


def test_weights_that_do_not_match_are_refused_before_they_are_unpacked(model_copy: Path, monkeypatch) -> None:
    """A 40 MB weights file in the zip whose header names a tensor the model does not have:
    refused after its header, with at most the first MiB or two written to disk (before: all
    of it, up to 600 MiB, then refused)."""
    import levy_core.serving.modelzip as modelzip

    tensors = load_file(model_copy / "levy.safetensors")
    tensors["zz_extra"] = torch.zeros(10_000_000)
    save_file(tensors, model_copy / "levy.safetensors")
    data = model_zip_bytes(model_copy)
    written: list[int] = []

    class Counting(io.FileIO):
        def write(self, chunk) -> int:  # type: ignore[override]
            written.append(len(chunk))
            return super().write(chunk)

    monkeypatch.setattr(modelzip, "open", lambda path, mode="r": Counting(path, mode.replace("b", "")),
                        raising=False)
    with pytest.raises(ModelLoadError, match="holds a tensor 'zz_extra' that the model does not have"):
        load_model_zip(data, name="upload.zip")
    assert 0 < sum(written) <= 3 * 2**20, sum(written)


def test_a_level_whose_conformal_band_is_infinite_is_refused_with_a_note(fitted_dir: Path, fit_csv: Path,
                                                                         tmp_path: Path, capsys) -> None:
    """Chosen: refuse (not write ±inf). The message names the level, the calibration
    split's size, the highest level it bounds and --band gaussian; nothing is written."""
    out = tmp_path / "p.csv"
    for extra in (["--level", "99.99"], ["--level", "90", "99.99"], ["--level", "99.99", "--format", "nixtla"]):
        code, err = run_cli(["predict", str(fitted_dir), str(fit_csv), "--out", str(out), "--quiet", *extra], capsys)
        assert code == 2 and "99.99 %: the conformal band is infinite" in err and "--band gaussian" in err, err
        assert "scores, too few to bound the band" in err and not out.exists()
    code, err = run_cli(["predict", str(fitted_dir), str(fit_csv), "--out", str(out), "--quiet", "--level", "99.99",
                         "--band", "gaussian"], capsys)
    assert code == 0, err
    bands = pd.read_csv(out)[["lower", "upper"]].to_numpy()
    assert np.isfinite(bands).all()


# ---------------------------------------------------------------------------------------
# Knobs
# ---------------------------------------------------------------------------------------

KNOBS: dict[str, tuple[list[str], str]] = {
    "predict --points 1000000": (["predict", "{model}", "{data}", "--out", "{out}", "--points", "1000000"],
                                 "--points: must be at most 10,000 (the limit), got 1,000,000"),
    "predict --points 0": (["predict", "{model}", "{data}", "--out", "{out}", "--points", "0"],
                           "--points: must be at least 1, got 0 (a whole number from 1 to 10,000)"),
    "evaluate --mc-passes 1000000": (["evaluate", "{model}", "{data}", "--json", "{out}", "--mc-passes", "1000000"],
                                     "--mc-passes: must be at most 1,000 (the limit), got 1,000,000"),
    "rank --chunk-series 1e9": (["rank", "{model}", "{data}", "--out", "{out}", "--chunk-series", "1000000000"],
                                "--chunk-series: must be at most 100,000 (the limit)"),
    "fit --epochs 1e9": (["fit", "{data}", "--out", "{out}", "--epochs", "1000000000"],
                         "--epochs: must be at most 100,000 (the limit)"),
    "dashboard --port 70000": (["dashboard", "--port", "70000"],
                               "--port: must be at most 65535 (the limit), got 70000"),
    "dashboard --port -1": (["dashboard", "--port", "-1"], "--port: must be at least 1, got -1 (a whole number from 1 to 65535)"),
}


@pytest.mark.parametrize("case", list(KNOBS))
def test_a_knob_past_its_limit_exits_2_naming_the_limit(case: str, fitted_dir: Path, fit_csv: Path,
                                                        tmp_path: Path, capsys) -> None:
    argv, message = KNOBS[case]
    argv = [a.format(model=fitted_dir, data=fit_csv, out=tmp_path / "out") for a in argv]
    code, err = run_cli(argv, capsys)
    assert code == 2 and "error: argument " in err and message in err, err
    assert not (tmp_path / "out").exists()


def test_points_at_its_limit_still_predicts(fitted_dir: Path, tmp_path: Path, fit_csv: Path, capsys) -> None:
    one = pd.read_csv(fit_csv)
    one = one[one["series_id"] == one["series_id"].iloc[0]]
    one.to_csv(tmp_path / "one.csv", index=False)
    code, err = run_cli(["predict", str(fitted_dir), str(tmp_path / "one.csv"), "--out", str(tmp_path / "p.csv"),
                         "--points", str(MAX_POINTS), "--quiet"], capsys)
    assert code == 0, err
    assert len(pd.read_csv(tmp_path / "p.csv")) == MAX_POINTS * one["channel"].nunique()


def test_the_limits_are_stated_in_the_help(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["predict", "--help"])
    assert "1 to 10,000" in capsys.readouterr().out
    assert math.isfinite(MAX_MC_PASSES)
