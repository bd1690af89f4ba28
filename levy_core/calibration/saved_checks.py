"""Checks for the saved state of the calibration steps (what their ``to_dict`` writes and
``from_dict`` reads back, e.g. from a model file).

Every reader raises ``ValueError`` that names the offending key, so a corrupt or
hand-edited state is refused with a message instead of producing a silently wrong band.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from levy_core.calibration.scores import check_scores
from levy_core.metrics import checks
from levy_core.metrics.checks import FloatArray, as_1d

__all__ = ["FORMAT_VERSION", "check_keys", "check_state", "saved_float", "saved_group_scores", "saved_level",
           "saved_optional_floor", "saved_scores", "saved_time_scores", "saved_value"]

#: Format version written by every ``to_dict`` of the calibration steps ([`levy_core.calibration`][levy_core.calibration]).
FORMAT_VERSION = 1


def check_state(data: Any, expected_type: str) -> dict[str, Any]:
    """``data`` itself if it is a dict with ``type == expected_type`` and the supported
    ``version``; ValueError otherwise."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a dict saved by {expected_type}.to_dict(), got {type(data)}")
    if data.get("type") != expected_type:
        raise ValueError(
            f"expected a dict with type={expected_type!r}, got type={data.get('type')!r}"
        )
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(
            f"unsupported {expected_type} format version {data.get('version')!r} "
            f"(this library reads version {FORMAT_VERSION})"
        )
    return data


def saved_float(data: dict[str, Any], key: str, *, allow_zero: bool = False) -> float:
    """``data[key]`` as a positive (or, with ``allow_zero``, non-negative) finite float."""
    try:
        value = float(data[key])
    except KeyError as exc:
        raise ValueError(f"saved calibration is missing {key!r}") from exc
    except (TypeError, ValueError) as exc:
        raise ValueError(f"saved {key!r} must be a number, got {data[key]!r}") from exc
    ok = value >= 0.0 if allow_zero else value > 0.0
    if not (math.isfinite(value) and ok):
        raise ValueError(
            f"saved {key!r} must be a {'non-negative' if allow_zero else 'positive'} "
            f"finite number, got {value!r}"
        )
    return value


def saved_scores(values: Any, name: str) -> FloatArray:
    """Saved conformal scores, shape (n,), sorted ascending: finite, non-negative, non-empty."""
    scores = as_1d(values, name)
    if (scores < 0).any():
        raise ValueError(f"saved {name!r} must be non-negative")
    return np.sort(scores)


def saved_group_scores(groups: Any) -> dict[str, FloatArray]:
    """Saved per-group scores: a non-empty mapping of label to scores (each as in
    `saved_scores`), keys as strings."""
    if not isinstance(groups, dict) or not groups:
        raise ValueError("saved 'group_scores' must be a non-empty mapping of group to scores")
    return {str(g): saved_scores(v, f"group_scores[{g!r}]") for g, v in groups.items()}


def saved_value(data: dict[str, Any], key: str, owner: str) -> Any:
    """``data[key]``; ValueError naming ``owner`` and the key when it is missing."""
    try:
        return data[key]
    except KeyError as exc:
        raise ValueError(f"saved {owner} is missing {key!r}") from exc


def check_keys(data: dict[str, Any], allowed: set[str], owner: str) -> None:
    """ValueError naming the keys of ``data`` outside ``allowed``."""
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ValueError(f"saved {owner} has unknown key(s) {unknown}")


def saved_level(data: dict[str, Any], owner: str) -> float:
    """The saved ``level``, in (0, 1)."""
    return checks.check_level(saved_value(data, "level", owner), "saved 'level'")


def saved_optional_floor(data: dict[str, Any], owner: str) -> float | None:
    """The saved ``sigma_floor``: None, or a positive finite float."""
    return None if saved_value(data, "sigma_floor", owner) is None else saved_float(data, "sigma_floor")


def saved_time_scores(data: dict[str, Any], owner: str) -> FloatArray:
    """The saved ``scores`` in time order (not sorted), shape (n,): finite, ``>= 0``."""
    try:
        return check_scores(saved_value(data, "scores", owner))
    except ValueError as exc:
        raise ValueError(f"saved 'scores' is malformed: {exc}") from exc
