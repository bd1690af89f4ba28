"""Bounds on a saved model's ``model.json`` and weights, checked before anything is built.

A model directory or zip is input (issue 27). Besides what `levy_core.pipeline.modelfile`
checks (size, nesting, formats, finite numbers), everything here is bounded so that a
hostile file is refused by name instead of costing memory or failing inside a pass:

- the parsed JSON's size: at most `MAX_JSON_CONTAINERS` objects and arrays and
  `MAX_JSON_ELEMENTS` values, counted on the raw bytes before ``json.loads``
  (64 MiB of ``{}`` would take 1.7 GB parsed);
- every number: within ``±```MAX_ABS_NUMBER` anywhere, and within the ranges of
  `NUMBER_BOUNDS` where it reaches the float32 pass or the bands (the time scale,
  length scales, season, cut-off, horizon, calibration scale and scores);
- the weights: read from the safetensors header (JSON at the file's start) before a tensor
  is loaded; only float32 (``F32``) tensors whose names and shapes are the architecture's.
"""

from __future__ import annotations

import json
import math
import numbers
import re
import sys
from collections.abc import Mapping
from typing import Any, BinaryIO

import numpy as np
import torch

__all__ = ["MAX_ABS_NUMBER", "MAX_HEADER_BYTES", "MAX_JSON_CONTAINERS", "MAX_JSON_ELEMENTS", "NUMBER_BOUNDS",
           "check_json_shape", "check_numbers", "check_weights_header", "expected_tensors", "json_shape",
           "read_header"]

MAX_JSON_CONTAINERS = 500_000
"""Most objects and arrays in ``model.json`` (one per channel of the scaler, drift and
calibration groups at most: ``n_channels`` is at most 100,000)."""
MAX_JSON_ELEMENTS = 5_000_000
"""Most values in ``model.json`` (a split of two million series ids and the calibration scores)."""
MAX_ABS_NUMBER = 1e100
"""Largest magnitude of any number in ``model.json`` (the data reader's own limit on values)."""
MAX_CALIBRATION = 1e12
"""Largest calibration scale ``c``, conformal score or σ floor (normalised units). A fit
usually gives ~1–100, but a barely trained MC-Dropout twin whose passes hardly differ gave
c = 2.55e6 once (a time-capped fit under load): every model a fit writes must load, and
``c·σ`` stays far inside float64 (the bands are computed in float64)."""
MAX_HOURS = 1e8
"""Largest time in hours (about 11,000 years, the limit on date-times)."""
MAX_HEADER_BYTES = 2**20
"""Largest safetensors header accepted (a model's holds ~100 bytes per tensor)."""

_ANY = "*"  # a path step that matches every key of an object / every item of a list
# path (dotted, _ANY for any key or item) → (lowest, highest, what it is); both inclusive
NUMBER_BOUNDS: dict[str, tuple[float, float, str]] = {
    "model_config.time_scale": (1e-3, 1e6, "hours mapped to 1 in the time features"),
    "model_config.length_scale_min": (1e-6, 1e3, "in time_scale units"),
    "model_config.length_scale_max": (1e-6, 1e3, "in time_scale units"),
    "model_config.season": (0.0, 1e6, "hours"),
    "model_config.dropout": (0.0, 0.99, "a rate"),
    "task.cutoff": (-MAX_HOURS, MAX_HOURS, "hours"),
    "task.horizon": (1e-6, MAX_HOURS, "hours"),
    "task.holdout_fraction": (0.0, 1.0, "a fraction"),
    "task.season": (0.0, 1e6, "hours"),
    "split.window_hours": (1e-6, MAX_HOURS, "hours"),
    f"split.origin_plan.{_ANY}": (-MAX_HOURS, MAX_HOURS, "hours"),
    f"last_value.train_mean.{_ANY}": (-1e6, 1e6, "normalised units"),
    f"last_value.spread.{_ANY}": (1e-12, 1e6, "normalised units"),
}
for _key in ("levy_calibration", "mc_calibration", "last_value_calibration"):
    NUMBER_BOUNDS.update({
        f"{_key}.scaled_gaussian.scale": (0.0, MAX_CALIBRATION, "the calibration scale c"),
        f"{_key}.scaled_gaussian.rel_floor": (0.0, 1.0, "a fraction"),
        f"{_key}.scaled_gaussian.sigma_floor": (0.0, MAX_CALIBRATION, "normalised units"),
        f"{_key}.conformal.rel_floor": (0.0, 1.0, "a fraction"),
        f"{_key}.conformal.sigma_floor": (0.0, MAX_CALIBRATION, "normalised units"),
        f"{_key}.conformal.scores.{_ANY}": (0.0, MAX_CALIBRATION, "conformal scores |y - ŷ| / σ"),
        f"{_key}.conformal.group_scores.{_ANY}.{_ANY}": (0.0, MAX_CALIBRATION, "conformal scores |y - ŷ| / σ"),
    })
for _key in ("levy", "mc", "last_value"):  # a panel's new series: the scale, and the test series' scores
    NUMBER_BOUNDS.update({
        f"new_series_calibration.{_key}.scaled_gaussian.scale": (0.0, MAX_CALIBRATION, "the calibration scale c"),
        f"new_series_calibration.{_key}.scaled_gaussian.rel_floor": (0.0, 1.0, "a fraction"),
        f"new_series_calibration.{_key}.scaled_gaussian.sigma_floor": (0.0, MAX_CALIBRATION, "normalised units"),
        f"new_series_calibration.{_key}.added_scores.{_ANY}.{_ANY}": (0.0, MAX_CALIBRATION, "conformal scores |y - ŷ| / σ"),
    })
NUMBER_BOUNDS.update({  # the learned spread: the GLM reads columns clipped to ±20, log E[e²] stays in a float
    f"learned_spread.centre.{_ANY}": (-20.0, 20.0, "the mean of a GLM column clipped to ±20"),
    f"learned_spread.width.{_ANY}": (1e-12, 40.0, "the spread of a GLM column clipped to ±20"),
    f"learned_spread.coef.{_ANY}": (-1e6, 1e6, "a GLM coefficient"),
    "learned_spread.intercept": (-1e3, 1e3, "the GLM's log E[e²]"),
    "learned_spread.n_queries": (0.0, 1e9, "queries"),
    "learned_spread.trees.baseline": (-1e3, 1e3, "the trees' log E[e²]"),
    f"learned_spread.trees.trees.{_ANY}.value.{_ANY}": (-1e3, 1e3, "a leaf's addition to log E[e²]"),
})
NUMBER_BOUNDS.update({
    f"adaptive.{_ANY}.{_ANY}.scores.{_ANY}": (0.0, MAX_CALIBRATION, "conformal scores |y - ŷ| / σ"),
    f"adaptive.{_ANY}.{_ANY}.sigma_floor": (0.0, MAX_CALIBRATION, "normalised units"),
})

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_CHUNK = 2**20
_REFIT = "it was not written by `levy fit`: re-run `levy fit`"


class LimitError(ValueError):
    """A saved model beyond a bound (``levy_core.pipeline.modelfile`` turns it into ``ModelLoadError``)."""


def json_shape(text: bytes) -> tuple[int, int, int]:
    """``(depth, containers, elements)`` of JSON ``text``: how deep arrays and objects nest,
    how many there are, and how many values they hold (brackets and commas inside strings
    ignored), in bounded memory, before ``json.loads``."""
    structure = _structure(text)
    return (_depth(structure), *_counts(structure))


def _structure(text: bytes) -> bytes:
    """``text`` with every JSON string emptied: what is left are the structural bytes."""
    return _JSON_STRING.sub(b'""', text)


def _counts(structure: bytes) -> tuple[int, int]:
    """``(containers, elements)`` of ``structure`` (strings emptied): its objects and arrays,
    and the values they hold (one per comma, plus one per container)."""
    containers = structure.count(b"[") + structure.count(b"{")
    return containers, structure.count(b",") + containers


def _depth(structure: bytes) -> int:
    """How deep the brackets of ``structure`` (strings emptied) nest, a chunk at a time."""
    data = np.frombuffer(structure, dtype=np.uint8)
    deepest = depth = 0
    for start in range(0, len(data), _CHUNK):
        chunk = data[start:start + _CHUNK]
        opens = (chunk == ord("[")) | (chunk == ord("{"))
        closes = (chunk == ord("]")) | (chunk == ord("}"))
        levels = depth + np.cumsum(opens.astype(np.int64) - closes)
        if len(levels):
            deepest, depth = max(deepest, int(levels.max())), int(levels[-1])
    return deepest


def check_json_shape(text: bytes, where: str, max_depth: int) -> None:
    """`LimitError` for JSON holding more than `MAX_JSON_CONTAINERS` objects and
    arrays or `MAX_JSON_ELEMENTS` values (counted first: a byte count refuses a bomb
    of empty objects at once) or nesting deeper than ``max_depth``."""
    structure = _structure(text)
    containers, elements = _counts(structure)
    if containers > MAX_JSON_CONTAINERS:
        raise LimitError(f"{where} holds {containers:,} objects and arrays, more than the {MAX_JSON_CONTAINERS:,} "
                         f"a model description has; {_REFIT}")
    if elements > MAX_JSON_ELEMENTS:
        raise LimitError(f"{where} holds {elements:,} values, more than the {MAX_JSON_ELEMENTS:,} a model "
                         f"description has; {_REFIT}")
    depth = _depth(structure)
    if depth > max_depth:
        raise LimitError(f"{where} nests {depth} levels deep, more than the {max_depth} allowed; {_REFIT}")


_LARGEST_FLOAT = sys.float_info.max
# no bound names a list item by its index (what lets _check_tree check a list of numbers at once)
_NO_INDEX_STEP = not any(step.isdigit() for pattern in NUMBER_BOUNDS for step in pattern.split("."))


_Patterns = dict[tuple[int, str], list[tuple[tuple[str, ...], tuple[float, float, str]]]]


def _patterns() -> _Patterns:
    """`NUMBER_BOUNDS` as step tuples, by (number of steps, first step): a saved model
    holds tens of thousands of numbers (conformal scores), each one looked up."""
    out: _Patterns = {}
    for pattern, bound in NUMBER_BOUNDS.items():
        steps = tuple(pattern.split("."))
        out.setdefault((len(steps), steps[0]), []).append((steps, bound))
    return out


def _bound_of(path: tuple[str, ...], patterns: _Patterns) -> tuple[float, float, str] | None:
    if not path:
        return None
    for key in ((len(path), path[0]), (len(path), _ANY)):
        for steps, bound in patterns.get(key, ()):
            if all(s in (_ANY, p) for s, p in zip(steps, path, strict=True)):
                return bound
    return None


def check_numbers(meta: Mapping[str, Any]) -> None:
    """`LimitError` naming the first number of ``model.json`` outside its bounds:
    `NUMBER_BOUNDS` where it has one, ``±```MAX_ABS_NUMBER` everywhere."""
    _check_tree(meta, (), _patterns())


def _check_leaf(path: tuple[str, ...], value: Any, bound: tuple[float, float, str] | None) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return
    if isinstance(value, int) and abs(value) > _LARGEST_FLOAT:  # JSON's 400 digits parse, then overflow
        raise LimitError(f"model.json: {'.'.join(path)} is an integer of {value.bit_length()} bits, beyond any "
                         f"float; {_REFIT}")
    if not math.isfinite(value):
        raise LimitError(f"model.json: {'.'.join(path)} is {value}, not a finite number; re-run `levy fit`")
    lo, hi, what = bound if bound is not None else (-MAX_ABS_NUMBER, MAX_ABS_NUMBER, "")
    if not lo <= value <= hi:
        raise LimitError(f"model.json: {'.'.join(path)} is {value:g}, outside [{lo:g}, {hi:g}]"
                         + (f" ({what})" if what else "") + "; a model fitted by `levy fit` stays within it: "
                         "re-run `levy fit`")


def _check_tree(value: Any, path: tuple[str, ...], patterns: _Patterns) -> None:
    """Every leaf in document order (objects' keys, then lists' items, depth first); a list of plain JSON numbers
    (the conformal scores: tens of thousands) checked at once, as no pattern names a list item
    by its index (``_NO_INDEX_STEP``): every item has the bound of the first."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_tree(item, (*path, str(key)), patterns)
    elif isinstance(value, list):
        if _NO_INDEX_STEP and value and all(type(x) is float or type(x) is int for x in value):
            bound = _bound_of((*path, "0"), patterns)
            lo, hi, _ = bound if bound is not None else (-MAX_ABS_NUMBER, MAX_ABS_NUMBER, "")
            try:
                array = np.asarray(value, dtype=np.float64)
            except OverflowError:  # an integer beyond any float: checked item by item below
                array = None
            if array is not None:
                with np.errstate(invalid="ignore"):
                    bad = ~(np.isfinite(array) & (array >= lo) & (array <= hi))
                if bad.any():
                    i = int(np.argmax(bad))
                    _check_leaf((*path, str(i)), value[i], bound)
                return
        for i, item in enumerate(value):
            _check_tree(item, (*path, str(i)), patterns)
    else:
        _check_leaf(path, value, _bound_of(path, patterns))


def expected_tensors(model: torch.nn.Module) -> dict[str, tuple[int, ...]]:
    """Name → shape of every float32 tensor a network's weights file may hold."""
    out = {}
    for name, tensor in model.state_dict().items():
        if tensor.dtype != torch.float32:  # pragma: no cover - every parameter and buffer is float32
            raise LimitError(f"{name} is {tensor.dtype}; the weights check expects float32 only")
        out[name] = tuple(tensor.shape)
    return out


def read_header(stream: BinaryIO, size: int, where: str) -> tuple[dict[str, Any], int]:
    """The JSON header at the start of a safetensors file of ``size`` bytes, and its length
    with the 8-byte prefix (only the header is read)."""
    prefix = stream.read(8)
    n = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
    if not 2 <= n <= MAX_HEADER_BYTES or 8 + n > size:
        raise LimitError(f"{where} has no safetensors header of at most {MAX_HEADER_BYTES:,} bytes at its start "
                         "(not a safetensors file, or not a model's); re-run `levy fit`")
    try:
        header = json.loads(stream.read(n).decode("utf-8"))
    except ValueError as exc:
        raise LimitError(f"{where}: its safetensors header is not valid JSON ({exc}); re-run `levy fit`") from None
    if not isinstance(header, dict):
        raise LimitError(f"{where}: its safetensors header is not a JSON object; re-run `levy fit`")
    return header, 8 + n


def check_weights_header(header: Mapping[str, Any], header_bytes: int, size: int,
                         expected: Mapping[str, tuple[int, ...]], where: str) -> None:
    """`LimitError` unless every tensor the header lists is float32 (``F32``), is one
    of ``expected`` with its shape, and the data offsets tile the file's ``size`` exactly."""
    end = header_bytes
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, Mapping) or not {"dtype", "shape", "data_offsets"} <= set(info):
            raise LimitError(f"{where}: tensor {name!r} has no dtype, shape and offsets; re-run `levy fit`")
        if info["dtype"] != "F32":
            raise LimitError(f"{where}: tensor {name!r} is stored as {info['dtype']}, not F32 (float32) as "
                             "`levy fit` writes weights; re-run `levy fit`")
        if name not in expected:
            raise LimitError(f"{where} holds a tensor {name!r} that the model does not have; re-run `levy fit`")
        shape = info["shape"]
        if not isinstance(shape, list) or tuple(shape) != expected[name]:
            raise LimitError(f"{where}: tensor {name!r} has shape {shape}, the model's is {list(expected[name])}; "
                             "re-run `levy fit`")
        offsets = info["data_offsets"]
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
                or offsets[1] - offsets[0] != 4 * math.prod(shape) or offsets[0] < 0):
            raise LimitError(f"{where}: tensor {name!r} has data offsets {offsets} that do not match its shape; "
                             "re-run `levy fit`")
        spans.append((offsets[0], offsets[1]))
    spans.sort()
    position = 0
    for start, stop in spans:
        if start != position:
            raise LimitError(f"{where}: its tensors overlap or leave gaps; re-run `levy fit`")
        position = stop
    if end + position != size:
        raise LimitError(f"{where} is {size:,} bytes, but its header describes {end + position:,}; re-run "
                         "`levy fit`")
