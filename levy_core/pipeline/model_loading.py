"""A model directory read back: ``model.json`` bounded before it is parsed and checked before
anything is built, then the networks built and their safetensors weights checked against
them (names, shapes, dtypes, size, finite values). Every refusal is a [`ModelLoadError`][levy_core.pipeline.model_loading.ModelLoadError]
that says to re-run ``levy fit``; [`load_model`][levy_core.pipeline.modelfile.load_model] is the way in.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_model as load_weights

from levy_core.calibration.adaptive import AdaptiveConformal
from levy_core.calibration.calibrate import Calibrator
from levy_core.calibration.horizon_scale import HorizonScale
from levy_core.calibration.learned_spread import LearnedSpread
from levy_core.calibration.query_scale import QueryScale
from levy_core.calibration.saved_checks import saved_group_scores, saved_scores
from levy_core.calibration.scaled_gaussian import ScaledGaussian
from levy_core.data.drift import DriftReference
from levy_core.data.recorded import RecordedReading
from levy_core.episodes.baselines import LastValueForecaster
from levy_core.episodes.scaling import ChannelScaler
from levy_core.episodes.tasks import Split, TaskConfig
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.model.limits import (
    LimitError,
    check_json_shape,
    check_numbers,
    check_weights_header,
    expected_tensors,
    read_header,
)
from levy_core.model.reversion import MAX_RATE
from levy_core.model.softmax_twin import SoftmaxTwin
from levy_core.offsets.spec import BaseForecastSpec
from levy_core.training.train import TrainConfig

__all__ = ["CALIBRATION_ATTRIBUTES", "MAX_JSON_DEPTH", "MAX_MC_PASSES", "MAX_MODEL_JSON_BYTES", "ModelLoadError", "check_meta", "correction_bound",
           "correction_scale", "json_depth", "load_checked_weights", "mean_reversion", "model_parts", "read_meta",
           "recorded_reading", "require_finite", "source_sha256"]

# A model directory is input: bounded before it is parsed or anything is built (sizes and
# depths of the networks: levy_core.model.config.CONFIG_BOUNDS).
# each method's key (Predictive's, new_series_calibration's) → its calibration split's calibrator on FittedModel
CALIBRATION_ATTRIBUTES = {"levy": "levy_calibration", "mc": "mc_calibration", "last_value": "last_value_calibration"}
MAX_MODEL_JSON_BYTES = 64 * 2**20  # a split of two million series ids fits
MAX_JSON_DEPTH = 32  # model.json nests 6 deep; json.loads recurses once per level
MAX_MC_PASSES = 10_000  # the prediction runs this many passes of the twin
WEIGHTS_SLACK_BYTES = 2**20  # a weights file may exceed its tensors' bytes by its header, at most this
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_CHUNK = 2**20


class ModelLoadError(ValueError):
    """A model directory that is missing, incomplete or not written by ``levy fit``."""


def json_depth(text: bytes) -> int:
    """How deep arrays and objects nest in JSON ``text`` (brackets inside strings ignored),
    without recursion and in bounded memory, so it can be asked before ``json.loads``
    (which recurses once per level)."""
    structure = np.frombuffer(_JSON_STRING.sub(b'""', text), dtype=np.uint8)
    deepest = depth = 0
    for start in range(0, len(structure), _CHUNK):
        chunk = structure[start:start + _CHUNK]
        steps = (chunk == ord("[")).astype(np.int64) + (chunk == ord("{")) - (chunk == ord("]")) - (chunk == ord("}"))
        levels = depth + np.cumsum(steps)
        if len(levels):
            deepest, depth = max(deepest, int(levels.max())), int(levels[-1])
    return deepest


def read_meta(meta_path: Path) -> Any:
    """``model.json`` parsed, after its size and nesting depth are checked."""
    size = meta_path.stat().st_size
    if size > MAX_MODEL_JSON_BYTES:
        raise ModelLoadError(f"{meta_path} is {size:,} bytes, more than the {MAX_MODEL_JSON_BYTES:,} a model "
                             "description takes; it was not written by `levy fit`: re-run `levy fit`")
    raw = meta_path.read_bytes()
    try:  # depth, objects and values counted before json.loads builds them
        check_json_shape(raw, str(meta_path), MAX_JSON_DEPTH)
    except LimitError as exc:
        raise ModelLoadError(str(exc)) from None
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of 4,300+ digits
        raise ModelLoadError(f"{meta_path} is not valid JSON ({exc}); re-run `levy fit`") from exc


def require_finite(section: str, value: Any, where: str = "") -> None:
    """``ModelLoadError`` for a NaN or ±inf anywhere in ``value`` (JSON: dicts, lists, numbers)."""
    if isinstance(value, dict):
        for key, item in value.items():
            require_finite(section, item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            require_finite(section, item, f"{where}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ModelLoadError(f"model.json: {section}{where} is {value}, not a finite number; re-run `levy fit`")


def check_meta(meta: dict[str, Any], cfg: ModelConfig) -> None:
    """What the configs' own checks do not cover: finite numbers, the channel list, the
    MC-Dropout pass count and seed."""
    for section in ("model_config", "task", "train_config", "split", "scaler"):
        if not isinstance(meta[section], dict):
            raise ModelLoadError(f"model.json: {section} must be an object, got {type(meta[section]).__name__}; "
                                 "re-run `levy fit`")
        require_finite(section, meta[section])
    channels = meta["channels"]
    if (not isinstance(channels, list) or len(channels) != cfg.n_channels
            or not all(isinstance(c, str) for c in channels) or len(set(channels)) != len(channels)):
        raise ModelLoadError(f"model.json: channels must list the model's {cfg.n_channels} distinct channel "
                             "names; re-run `levy fit`")
    passes, seed = meta.get("mc_passes", 20), meta["train_config"].get("seed", 0)
    if isinstance(passes, bool) or not isinstance(passes, numbers.Integral) or not 0 <= passes <= MAX_MC_PASSES:
        raise ModelLoadError(f"model.json: mc_passes must be an integer in [0, {MAX_MC_PASSES}], got {passes!r}; "
                             "re-run `levy fit`")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**63:
        raise ModelLoadError(f"model.json: train_config.seed must be an integer in [0, 2^63), got {seed!r}; "
                             "re-run `levy fit`")


def model_parts(meta: dict[str, Any], path: Path) -> tuple[dict[str, Any], LevyModel, SoftmaxTwin | None]:
    """What a ``FittedModel`` is made of, from a model directory's parsed ``model.json`` (format
    checked) and its weights at ``path``: every field but the networks, the Lévy model and the
    twin (None when not saved). Everything in model.json is checked before the networks are built."""
    cfg = ModelConfig.from_dict(meta["model_config"])
    check_meta(meta, cfg)
    try:
        check_numbers(meta)  # every number within what the float32 pass and the bands carry
    except LimitError as exc:
        raise ModelLoadError(str(exc)) from None

    def calibrator(key: str) -> Calibrator | None:
        return Calibrator.from_dict(meta[key]) if meta.get(key) else None

    parts = dict(
        model_config=cfg, task=TaskConfig.from_dict(meta["task"]),
        train_config=TrainConfig.from_dict(meta["train_config"]),
        split=Split.from_dict(meta["split"]), scaler=ChannelScaler.from_dict(meta["scaler"]),
        channels=list(meta["channels"]), levy_calibration=Calibrator.from_dict(meta["levy_calibration"]),
        mc_calibration=calibrator("mc_calibration"),
        mc_passes=int(meta.get("mc_passes", 20)), data_hash=str(meta.get("data_hash", "")),
        source_sha256=source_sha256(meta.get("source_sha256", "")),
        training=dict(meta.get("training", {})),
        last_value=LastValueForecaster.from_dict(meta["last_value"]) if meta.get("last_value") else None,
        last_value_calibration=calibrator("last_value_calibration"),
        adaptive={str(key): {str(level): AdaptiveConformal.from_dict(state) for level, state in by_level.items()}
                  for key, by_level in (meta.get("adaptive") or {}).items()},
        adaptive_by_channel=meta.get("adaptive_by_channel") is True,
        # absent from models saved before drift statistics were recorded: they still load
        drift=DriftReference.from_dict(meta["drift"], meta["channels"]) if meta.get("drift") is not None else None,
        base_forecast=(BaseForecastSpec.from_dict(meta["base_forecast"]) if meta.get("base_forecast") is not None
                       else None),
        horizon_scale=(HorizonScale.from_dict(meta["horizon_scale"]) if meta.get("horizon_scale") is not None
                       else None),
        query_scale=(QueryScale.from_dict(meta["query_scale"]) if meta.get("query_scale") is not None else None),
        learned_spread=learned_spread(meta.get("learned_spread"), cfg.n_channels),
        reading=recorded_reading(meta.get("reading")),
    )
    # absent from models saved before new series had their own band: the calibration split's
    parts["new_series_calibration"] = new_series_calibration(meta.get("new_series_calibration"), parts)
    levy = LevyModel(cfg)
    load_checked_weights(levy, path / "levy.safetensors")
    twin = None
    if (path / "softmax.safetensors").is_file():
        twin = SoftmaxTwin(cfg)
        load_checked_weights(twin, path / "softmax.safetensors")
    scales = meta.get("correction_scale") or {}  # absent from models saved before it was fitted: γ = 1
    for key, model in (("levy", levy), ("softmax", twin)):
        if model is not None and scales.get(key) is not None:
            model.correction_scale.copy_(correction_scale(scales[key], cfg.n_channels, key))
    bounds = meta.get("correction_bound") or {}  # absent from models saved before it was fitted: none
    for key, model in (("levy", levy), ("softmax", twin)):
        if model is not None and bounds.get(key) is not None:
            model.correction_bound.copy_(correction_bound(bounds[key], cfg.n_channels, key))
    reversion = meta.get("mean_reversion") or {}  # absent from models saved before it was fitted: none
    for key, model in (("levy", levy), ("softmax", twin)):
        if model is not None and reversion.get(key) is not None:
            rate, to_series = mean_reversion(reversion[key], cfg.n_channels, key)
            model.backbone.revert_rate.copy_(rate)
            model.backbone.revert_to_series.copy_(to_series)
    return parts, levy, twin


def learned_spread(value: Any, n_channels: int) -> LearnedSpread | None:
    """``model.json``'s ``learned_spread``, validated (its trees walk, its GLM has one
    coefficient per channel of the model); None when absent (σ̂ sizes the band)."""
    if value is None:
        return None
    try:
        spread = LearnedSpread.from_dict(value)
    except ValueError as exc:
        raise ModelLoadError(f"model.json: learned_spread: {exc}; re-run `levy fit`") from None
    if spread.n_channels != n_channels:
        raise ModelLoadError(f"model.json: learned_spread.n_channels is {spread.n_channels}, but the model has "
                             f"{n_channels} channels; re-run `levy fit`")
    return spread


def recorded_reading(value: Any) -> RecordedReading | None:
    """``model.json``'s ``reading`` (how the fit read its data), validated; None when absent
    (a model saved before it was recorded: its data are read as before)."""
    if value is None:
        return None
    try:
        return RecordedReading.from_dict(value)
    except (ValueError, TypeError) as exc:
        raise ModelLoadError(f"model.json: reading: {exc}; re-run `levy fit`") from None


def source_sha256(value: Any) -> str:
    """``model.json``'s ``source_sha256``: 64 hexadecimal digits, or "" (absent: fitted in memory,
    or saved before it was recorded)."""
    if value == "" or value is None:
        return ""
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ModelLoadError("model.json: source_sha256 must be 64 lower-case hexadecimal digits (the SHA-256 of "
                             "the data file) or empty; re-run `levy fit`")
    return value


def correction_scale(values: Any, n_channels: int, key: str) -> torch.Tensor:
    """``model.json``'s correction scale of one model: ``n_channels`` numbers in (0, 1]."""
    if not isinstance(values, list) or len(values) != n_channels or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 < v <= 1 for v in values):
        raise ModelLoadError(f"model.json: correction_scale.{key} must list {n_channels} numbers in (0, 1]; "
                             "re-run `levy fit`")
    return torch.tensor(values, dtype=torch.float32)


def correction_bound(values: Any, n_channels: int, key: str) -> torch.Tensor:
    """``model.json``'s correction bound of one model: ``n_channels`` entries, each a
    number in [0, 1e6] (normalised units) or null (no bound)."""
    if not isinstance(values, list) or len(values) != n_channels or not all(
            v is None or (isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 <= v <= 1e6)
            for v in values):
        raise ModelLoadError(f"model.json: correction_bound.{key} must list {n_channels} numbers in [0, 1e6] or "
                             "null; re-run `levy fit`")
    return torch.tensor([math.inf if v is None else v for v in values], dtype=torch.float32)


def mean_reversion(value: Any, n_channels: int, key: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``model.json``'s mean reversion of one model: ``rate`` (``n_channels`` numbers in
    [0, MAX_RATE]) and ``to_series`` (``n_channels`` numbers in [0, 1])."""
    def numbers_in(values: Any, hi: float) -> bool:
        return isinstance(values, list) and len(values) == n_channels and all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 <= v <= hi for v in values)

    if not isinstance(value, dict) or not numbers_in(value.get("rate"), MAX_RATE) or not numbers_in(
            value.get("to_series"), 1.0):
        raise ModelLoadError(f"model.json: mean_reversion.{key} must hold rate ({n_channels} numbers in "
                             f"[0, {MAX_RATE:g}]) and to_series ({n_channels} numbers in [0, 1]); re-run `levy fit`")
    return (torch.tensor(value["rate"], dtype=torch.float32), torch.tensor(value["to_series"], dtype=torch.float32))


def load_checked_weights(model: torch.nn.Module, file: Path) -> None:
    """safetensors only (no pickle): tensors, checked strictly against the architecture, no
    larger than it, and finite (a NaN ``log_kappa`` would make every σ̂ 0)."""
    tensors = model.state_dict().values()
    expected = sum(t.numel() * t.element_size() for t in tensors) + WEIGHTS_SLACK_BYTES
    size = file.stat().st_size
    if size > expected:
        raise ModelLoadError(f"{file} is {size:,} bytes, more than the {expected:,} this model's weights take; "
                             "re-run `levy fit`")
    try:  # names, shapes and dtypes (float32 only) from the header, before any tensor is read
        with open(file, "rb") as stream:
            header, header_bytes = read_header(stream, size, str(file))
        check_weights_header(header, header_bytes, size, expected_tensors(model), str(file))
    except LimitError as exc:
        raise ModelLoadError(str(exc)) from None
    missing, unexpected = load_weights(model, str(file), strict=False)
    if missing or unexpected:
        raise ModelLoadError(f"{file} does not match the model (missing {sorted(missing)[:3]}, "
                             f"unexpected {sorted(unexpected)[:3]}); re-run `levy fit`")
    bad = [name for name, t in model.state_dict().items() if t.is_floating_point() and not torch.isfinite(t).all()]
    if bad:
        raise ModelLoadError(f"{file} holds non-finite weights (NaN or ±inf in {', '.join(bad[:3])}"
                             f"{' …' if len(bad) > 3 else ''}); re-run `levy fit`")


def new_series_calibration(saved: Any, parts: dict[str, Any]) -> dict[str, Calibrator] | None:
    """A panel's calibrators for new series from their saved form (each method's scale, and the
    test series' scores added to that method's calibration split scores); None when absent."""
    if not saved:
        return None
    if not isinstance(saved, dict):
        raise ValueError("saved 'new_series_calibration' must be a mapping of method to its calibration")
    out = {}
    for key, state in saved.items():
        own = parts.get(CALIBRATION_ATTRIBUTES.get(str(key), ""))
        if own is None or not isinstance(state, dict):
            raise ValueError(f"saved 'new_series_calibration' has {key!r}, which the model has no calibration of")
        added = state.get("added_scores")
        if own.conformal.is_grouped:
            added = saved_group_scores(added)
        else:
            added = saved_scores(added, "added_scores")
        calibrator = Calibrator()
        calibrator.scaled_gaussian = ScaledGaussian.from_dict(state.get("scaled_gaussian"))
        calibrator.conformal = own.conformal.extended_by_scores(added)
        out[str(key)] = calibrator
    return out
