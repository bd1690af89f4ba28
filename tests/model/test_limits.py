"""levy_core.model.limits.check_numbers against the reference walk it replaced (every leaf
looked up one by one): the same first offending number and the same message, on a shipped
model's ``model.json`` with numbers made hostile at random places."""

from __future__ import annotations

import json
import math
import numbers
import re
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from levy_core.model import limits
from levy_core.model.limits import MAX_ABS_NUMBER, NUMBER_BOUNDS, LimitError, check_numbers

SHIPPED = Path(__file__).resolve().parents[2] / "sample_data" / "models"


def leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from leaves(item, (*path, str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from leaves(item, (*path, str(i)))
    else:
        yield path, value


def bound_of(path: tuple[str, ...]) -> tuple[float, float, str] | None:
    """The first of NUMBER_BOUNDS that matches the path step by step ("*" any step), those
    that name its first step before those that start with "*"."""
    patterns = [(tuple(p.split(".")), b) for p, b in NUMBER_BOUNDS.items()]
    for first in (path[0], "*"):
        for steps, bound in patterns:
            if len(steps) == len(path) and steps[0] == first and all(
                    s in ("*", p) for s, p in zip(steps, path, strict=True)):
                return bound
    return None


def reference(meta: Mapping[str, Any]) -> None:
    """The per-leaf check, as it was (2026-12-02)."""
    for path, value in leaves(meta):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        if not math.isfinite(value):
            raise LimitError(f"model.json: {'.'.join(path)} is {value}, not a finite number; re-run `levy fit`")
        bound = bound_of(path)
        lo, hi, what = bound if bound is not None else (-MAX_ABS_NUMBER, MAX_ABS_NUMBER, "")
        if not lo <= value <= hi:
            raise LimitError(f"model.json: {'.'.join(path)} is {value:g}, outside [{lo:g}, {hi:g}]"
                             + (f" ({what})" if what else "") + "; a model fitted by `levy fit` stays within it: "
                             "re-run `levy fit`")


def outcome(check, meta: Mapping[str, Any]) -> str:
    try:
        check(meta)
    except LimitError as exc:
        return str(exc)
    return "accepted"


def shipped_meta(name: str) -> dict:
    with zipfile.ZipFile(SHIPPED / name) as z:
        inner = next(n for n in z.namelist() if n.endswith("model.json"))
        return json.loads(z.read(inner))


def get_at(meta: dict, path: tuple[str, ...]) -> Any:
    node: Any = meta
    for step in path:
        node = node[int(step)] if isinstance(node, list) else node[step]
    return node


def set_at(meta: dict, path: tuple[str, ...], value: Any) -> None:
    node = meta
    for step in path[:-1]:
        node = node[int(step)] if isinstance(node, list) else node[step]
    if isinstance(node, list):
        node[int(path[-1])] = value
    else:
        node[path[-1]] = value


def shrunk(value: Any, keep: int = 6) -> Any:
    """The same document with every list cut to its first ``keep`` items (the reference walk
    is slow on the full conformal scores; the patterns met are the same)."""
    if isinstance(value, Mapping):
        return {k: shrunk(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [shrunk(v, keep) for v in value[:keep]]
    return value


@pytest.mark.parametrize("name", ["physionet2012_sample.zip", "single_series.zip"])
def test_the_same_verdict_and_message_as_the_reference_walk(name: str) -> None:
    full = shipped_meta(name)
    check_numbers(full)  # the shipped model, every number: accepted
    meta = shrunk(full)
    assert outcome(check_numbers, meta) == outcome(reference, meta) == "accepted"
    numeric = [path for path, v in leaves(meta) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    assert len(numeric) > 100  # lists of scores among them: checked at once
    rng = np.random.default_rng(0)
    hostile = [math.nan, math.inf, -math.inf, -1.0, 1e300, -1e300, 2.5, 0.0, True, "text", None]
    for trial in range(60):
        chosen = [numeric[int(i)] for i in rng.integers(len(numeric), size=int(rng.integers(1, 4)))]
        kept = []
        for path in chosen:  # one to three numbers replaced, anywhere; put back after
            kept.append((path, get_at(meta, path)))
            set_at(meta, path, hostile[int(rng.integers(len(hostile)))])
        assert outcome(check_numbers, meta) == outcome(reference, meta), trial
        for path, value in reversed(kept):
            set_at(meta, path, value)


@pytest.mark.parametrize("meta, where", [({"task": {"horizon": 10**400}}, "task.horizon"),
                                         ({"adaptive": {"scores": [0.5, -(10**400), 0.2]}}, "adaptive.scores.1")],
                         ids=["alone", "in a list of scores"])
def test_an_integer_beyond_any_float_is_refused_by_name_not_an_overflow(meta: dict, where: str) -> None:
    """JSON parses an integer of 400 digits; a float cannot hold it. The check names it, where
    the walk it replaced stopped on an OverflowError (a traceback for a hostile model file)."""
    with pytest.raises(LimitError, match=rf"model\.json: {re.escape(where)} is an integer of 1329 bits, beyond any float"):
        check_numbers(meta)
    with pytest.raises(OverflowError):
        reference(meta)


def test_json_shape_counts_structure_outside_strings_only() -> None:
    text = b'{"a": [1, 2, {"b": "[,{\\"}"}], "c": {}}'
    assert json.loads(text)  # valid JSON, an escaped quote inside a string
    assert limits.json_shape(text) == (3, 4, 7)  # depth, {[{{, 3 commas + 4 containers


def test_a_bomb_is_refused_by_its_count_without_measuring_its_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = b"[" + b"{}," * (limits.MAX_JSON_CONTAINERS + 1) + b"{}]"
    monkeypatch.setattr(limits, "_depth", lambda _: pytest.fail("the depth was measured"))
    with pytest.raises(limits.LimitError, match="objects and arrays, more than"):
        limits.check_json_shape(bomb, "model.json", 64)
    monkeypatch.undo()
    deep = b"[" * 100 + b"]" * 100
    with pytest.raises(limits.LimitError, match="nests 100 levels deep"):
        limits.check_json_shape(deep, "model.json", 64)
