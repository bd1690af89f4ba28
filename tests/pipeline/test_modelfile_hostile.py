"""A model directory is input: every hostile ``model.json`` or weights file is refused with
``ModelLoadError`` and a message naming the problem, before anything large is built, and
``levy predict`` on it exits 2 without a traceback."""

from __future__ import annotations

import json
import math
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from levy_core.cli import main as cli
from levy_core.data import DataError
from levy_core.episodes.scaling import ChannelScaler
from levy_core.model.config import CONFIG_BOUNDS, ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.model.softmax_twin import SoftmaxTwin
from levy_core.pipeline.model_loading import (
    MAX_JSON_DEPTH,
    MAX_MC_PASSES,
    MAX_MODEL_JSON_BYTES,
    json_depth,
)
from levy_core.pipeline.modelfile import ModelLoadError, load_model


def edit_meta(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        meta = json.loads((d / "model.json").read_text())
        change(meta)
        (d / "model.json").write_text(json.dumps(meta))  # NaN/Infinity as Python's json writes them
    return corrupt


def setting(section: str, key: str, value) -> Callable[[Path], None]:
    return edit_meta(lambda meta: meta[section].__setitem__(key, value))


def write_text(text: str | bytes) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        data = text.encode() if isinstance(text, str) else text
        (d / "model.json").write_bytes(data)
    return corrupt


def nested_inside_meta(depth: int) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        raw = (d / "model.json").read_text()
        (d / "model.json").write_text(raw.replace('"training": {', '"training": {"x": ' + "[" * depth + "]" * depth
                                                  + ", ", 1))
    return corrupt


def oversized_json(d: Path) -> None:
    with open(d / "model.json", "r+b") as f:  # sparse: costs no disk
        f.truncate(MAX_MODEL_JSON_BYTES + 1)


def weight(file: str, name: str, value: float) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        tensors = load_file(d / file)
        tensors[name] = tensors[name].clone()
        tensors[name].view(-1)[0] = value
        save_file(tensors, d / file)
    return corrupt


def padded_weights(d: Path) -> None:
    tensors = load_file(d / "levy.safetensors")
    tensors["extra"] = torch.zeros(4_000_000)  # 16 MB that no model parameter claims
    save_file(tensors, d / "levy.safetensors")


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    # sizes and depths: refused before the networks are built
    "n_channels 1e9": (setting("model_config", "n_channels", 10**9), r"n_channels must be an integer in \[1, 100000\]"),
    "correction_bound 1e9": (edit_meta(lambda m: m.__setitem__("correction_bound", {"levy": [1e9] * 3})),
                             r"correction_bound.levy must list 3 numbers in \[0, 1e6\] or null"),
    "correction_bound short": (edit_meta(lambda m: m.__setitem__("correction_bound", {"levy": [0.5]})),
                               "correction_bound.levy must list 3"),
    "mean_reversion rate 1e9": (edit_meta(lambda m: m.__setitem__(
        "mean_reversion", {"levy": {"rate": [1e9] * 3, "to_series": [0.0] * 3}})),
        r"mean_reversion.levy must hold rate \(3 numbers in \[0, 1000\]\)"),
    "mean_reversion to_series 2": (edit_meta(lambda m: m.__setitem__(
        "mean_reversion", {"levy": {"rate": [0.5] * 3, "to_series": [2.0] * 3}})), r"to_series \(3 numbers in \[0, 1\]\)"),
    "mean_reversion a list": (edit_meta(lambda m: m.__setitem__("mean_reversion", {"levy": [0.5] * 3})),
                              "mean_reversion.levy must hold rate"),
    "context_layers 1e6": (setting("model_config", "context_layers", 10**6), r"context_layers must be an integer in \[0, 8\]"),
    "channel_layers -1": (setting("model_config", "channel_layers", -1), "channel_layers must be an integer"),
    "d_model 1e6": (setting("model_config", "d_model", 10**6), r"d_model must be an integer in \[2, 512\]"),
    "d_model odd": (setting("model_config", "d_model", 33), "d_model must be even"),
    "num_heads 0": (setting("model_config", "num_heads", 0), "num_heads must be an integer"),
    "head_dim 1e5": (setting("model_config", "head_dim", 10**5), "head_dim must be an integer"),
    "value_rank 1e4": (setting("model_config", "value_rank", 10**4), "value_rank must be an integer"),
    "d_time 1e4": (setting("model_config", "d_time", 10**4), "d_time must be an integer"),
    "d_channel 1e4": (setting("model_config", "d_channel", 10**4), "d_channel must be an integer"),
    "n_channels text": (setting("model_config", "n_channels", "3"), "n_channels must be an integer"),
    "n_channels float": (setting("model_config", "n_channels", 3.5), "n_channels must be an integer"),
    "n_channels bool": (setting("model_config", "n_channels", True), "n_channels must be an integer"),
    # finite numbers
    "time_scale NaN": (setting("model_config", "time_scale", math.nan), "time_scale must be a finite number"),
    "time_scale inf": (setting("model_config", "time_scale", math.inf), "time_scale must be a finite number"),
    "kappa_init inf": (setting("model_config", "kappa_init", math.inf), "kappa_init must be a finite number"),
    "kappa_init 1e6": (setting("model_config", "kappa_init", 1e6), r"kappa_init must lie in \[0.01, 45.0\]"),
    "length_scale_min NaN": (setting("model_config", "length_scale_min", math.nan), "length_scale_min must be a finite"),
    "length_scale_max inf": (setting("model_config", "length_scale_max", math.inf), "length_scale_max must be a finite"),
    "season NaN": (setting("model_config", "season", math.nan), "season must be a finite number"),
    "season -inf": (setting("model_config", "season", -math.inf), "season must be a finite number"),
    "dropout 1.5": (setting("model_config", "dropout", 1.5), r"dropout must lie in \[0, 1\)"),
    "phi unknown": (setting("model_config", "phi", "softmax"), "phi must be 'rate' or 'count'"),
    "task cutoff NaN": (setting("task", "cutoff", math.nan), r"task\.cutoff is nan, not a finite number"),
    "task horizon inf": (setting("task", "horizon", math.inf), r"task\.horizon is inf, not a finite number"),
    "split window NaN": (setting("split", "window_hours", math.nan), r"split\.window_hours is nan"),
    "train lr inf": (setting("train_config", "lr", math.inf), r"train_config\.lr is inf"),
    "seed negative": (setting("train_config", "seed", -1), r"seed must be an integer in \[0, 2\^63\)"),
    "seed huge": (setting("train_config", "seed", 2**70), r"seed must be an integer in \[0, 2\^63\)"),
    "mc_passes 1e9": (edit_meta(lambda m: m.__setitem__("mc_passes", 10**9)),
                      rf"mc_passes must be an integer in \[0, {MAX_MC_PASSES}\]"),
    "mc_passes text": (edit_meta(lambda m: m.__setitem__("mc_passes", "20")), "mc_passes must be an integer"),
    "scaler maximum Infinity": (edit_meta(lambda m: m["scaler"]["maximum"].update(
        {k: math.inf for k in m["scaler"]["maximum"]})), r"scaler\.maximum\..* is inf, not a finite number"),
    "scaler minimum NaN": (edit_meta(lambda m: m["scaler"]["minimum"].update(
        {k: math.nan for k in m["scaler"]["minimum"]})), r"scaler\.minimum\..* is nan"),
    "scaler maximum below minimum": (edit_meta(lambda m: m["scaler"].update(
        maximum={k: v - 10.0 for k, v in m["scaler"]["minimum"].items()})), "minimum < maximum"),
    "channels too few": (edit_meta(lambda m: m["channels"].pop()), "channels must list the model's 3 distinct"),
    "channels repeated": (edit_meta(lambda m: m["channels"].__setitem__(1, m["channels"][0])),
                          "channels must list the model's 3 distinct"),
    "task not an object": (edit_meta(lambda m: m.__setitem__("task", [1, 2])), "task must be an object, got list"),
    # structure of the file
    "nested 100000 deep": (write_text('{"format": "levy-model/2", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
                           rf"nests 100001 levels deep, more than the {MAX_JSON_DEPTH} allowed"),
    "nested inside a real model.json": (nested_inside_meta(5000), "levels deep, more than"),
    "larger than the cap": (oversized_json, f"more than the {MAX_MODEL_JSON_BYTES:,} a model description takes"),
    "integer of 400 digits": (setting("task", "horizon", 10**400), r"task\.horizon is an integer of 1329 bits"),
    "integer of 5000 digits": (write_text('{"format": "levy-model/2", "x": ' + "9" * 5000 + "}"), "is not valid JSON"),
    "not UTF-8": (write_text(b'{"format": "levy-model/2", "x": "\xff\xfe"}'), "is not valid JSON"),
    # weights
    "log_kappa NaN": (weight("levy.safetensors", "log_kappa", math.nan),
                      r"levy.safetensors holds non-finite weights \(NaN or ±inf in log_kappa\)"),
    "log_kappa inf": (weight("levy.safetensors", "log_kappa", math.inf), "non-finite weights"),
    "twin weight NaN": (weight("softmax.safetensors", "heads.prior_mean", math.nan),
                        r"softmax.safetensors holds non-finite weights \(NaN or ±inf in heads.prior_mean\)"),
    "weights file padded": (padded_weights, "bytes, more than the .* this model's weights take"),
}

#: run through ``levy predict`` as well (exit 2, the message, no traceback)
CLI_CASES = ["n_channels 1e9", "context_layers 1e6", "nested 100000 deep", "log_kappa NaN",
             "scaler maximum Infinity", "time_scale NaN", "kappa_init inf", "weights file padded",
             "integer of 400 digits"]


@pytest.fixture
def model_copy(fitted_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(fitted_dir, tmp_path / "model"))


def test_the_shared_model_loads_and_has_three_channels(fitted_dir: Path) -> None:
    fitted = load_model(fitted_dir)
    assert fitted.model_config.n_channels == len(fitted.channels) == 3
    assert json_depth((fitted_dir / "model.json").read_bytes()) <= 8


def test_the_correction_bound_round_trips_with_null_for_none(model_copy: Path) -> None:
    edit_meta(lambda m: m.__setitem__("correction_bound", {"levy": [0.25, None, 0.0]}))(model_copy)
    bound = load_model(model_copy).levy.correction_bound.tolist()
    assert bound[0] == pytest.approx(0.25) and math.isinf(bound[1]) and bound[2] == 0.0
    saved = load_model(model_copy).save(model_copy.parent / "again")
    assert json.loads((saved / "model.json").read_text())["correction_bound"]["levy"][:2] == [0.25, None]


def test_the_mean_reversion_round_trips(model_copy: Path) -> None:
    reversion = {"rate": [0.5, 0.0, 2.0], "to_series": [1.0, 0.0, 0.5]}
    edit_meta(lambda m: m.__setitem__("mean_reversion", {"levy": reversion}))(model_copy)
    loaded = load_model(model_copy)
    backbone = loaded.levy.backbone
    assert "reverting to its level as it ages on 2 of 3 channels" in loaded.offset_description()
    assert "towards the series' mean" in loaded.offset_description()
    assert backbone.revert_rate.tolist() == reversion["rate"]
    assert backbone.revert_to_series.tolist() == reversion["to_series"]
    saved = load_model(model_copy).save(model_copy.parent / "again")
    assert json.loads((saved / "model.json").read_text())["mean_reversion"]["levy"] == reversion
    edit_meta(lambda m: m.pop("mean_reversion"))(model_copy)  # saved before it was fitted: the last value
    assert not load_model(model_copy).levy.backbone.revert_rate.any()
    assert load_model(model_copy).offset_description() == "the last observed value of the query's channel"


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_model_directory_is_refused_with_a_message(case: str, model_copy: Path) -> None:
    corrupt, message = CASES[case]
    corrupt(model_copy)
    start = time.perf_counter()
    with pytest.raises(ModelLoadError, match=message) as info:
        load_model(model_copy)
    assert "levy fit" in str(info.value)
    assert time.perf_counter() - start < 10, "refused quickly: nothing large built or parsed"


@pytest.mark.parametrize("case", CLI_CASES)
def test_levy_predict_on_a_hostile_model_exits_2_without_a_traceback(case: str, model_copy: Path, fit_csv: Path,
                                                                     tmp_path: Path, capsys) -> None:
    corrupt, message = CASES[case]
    corrupt(model_copy)
    out = tmp_path / "pred.csv"
    assert cli.main(["predict", str(model_copy), str(fit_csv), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert "levy fit" in captured.err
    assert re.search(message, captured.err), captured.err
    assert not out.exists()


@pytest.mark.parametrize(("text", "depth"), [
    (b"{}", 1), (b"[]", 1), (b"1", 0), (b'{"a": [[1], {"b": [2]}]}', 4),
    (b'{"a": "[[[[{{{{"}', 1), (b'{"a": "\\"[[[["}', 1), (b'["\\\\", [["]"]]]', 3),
    (b"[" * 3 * 2**20 + b"]" * 3 * 2**20, 3 * 2**20),  # across the scan's chunks
])
def test_json_depth_ignores_brackets_inside_strings(text: bytes, depth: int) -> None:
    assert json_depth(text) == depth


def test_a_deep_string_full_of_brackets_still_loads(model_copy: Path) -> None:
    edit_meta(lambda m: m.__setitem__("data_hash", "[{" * 10_000))(model_copy)
    assert load_model(model_copy).data_hash == "[{" * 10_000


@pytest.mark.parametrize("field", list(CONFIG_BOUNDS))
def test_every_size_bound_is_enforced_on_both_sides(field: str) -> None:
    lo, hi = CONFIG_BOUNDS[field]
    base = {"n_channels": 3}
    for value in (lo, hi):
        if field == "d_model" and value % 2:
            continue
        ModelConfig(**{**base, field: value})
    for value in (lo - 1, hi + 1):
        with pytest.raises(ValueError, match=rf"^{field} must be an integer in \[{lo}, {hi}\]"):
            ModelConfig(**{**base, field: value})


def test_a_model_at_every_cap_stays_small() -> None:
    """The documented worst case: about 60 M parameters per network (240 MB in float32)."""
    cfg = ModelConfig(**{name: hi for name, (_, hi) in CONFIG_BOUNDS.items()})
    with torch.device("meta"):  # counts without allocating
        sizes = [sum(p.numel() for p in net.parameters()) for net in (LevyModel(cfg), SoftmaxTwin(cfg))]
    assert max(sizes) < 64_000_000


@pytest.mark.parametrize(("minimum", "maximum"), [
    (0.0, math.inf), (-math.inf, 1.0), (math.nan, 1.0), (0.0, math.nan), (1.0, 1.0), (2.0, 1.0),
    (-1e308, 1e308),  # a range that overflows
])
def test_scaler_from_dict_refuses_what_would_give_inf_or_nan(minimum: float, maximum: float) -> None:
    with pytest.raises(DataError, match="finite numbers with minimum < maximum"):
        ChannelScaler.from_dict({"minimum": {"hr": minimum}, "maximum": {"hr": maximum}})
    scaler = ChannelScaler.from_dict({"minimum": {"hr": 60.0}, "maximum": {"hr": 180.0}})
    assert scaler.maximum == {"hr": 180.0}
