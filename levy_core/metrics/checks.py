"""Argument checks shared by [`levy_core.metrics`][levy_core.metrics], the calibration steps (`levy_core.calibration`) and
[`levy_core.calibration.coverage`][levy_core.calibration.coverage].

Every check returns the validated value (converted to ``float64`` where it is
numeric) and raises ``ValueError`` whose message starts with the argument's name,
so a caller sees *which* input was wrong. Per-point arrays are 1-D of length
``n`` and accept anything ``np.asarray`` takes (lists, numpy arrays, CPU torch
tensors).

Rules (the ones the metrics module docstring states):

- ``y_true``, ``mean``, ``sigma`` must be finite (no NaN, no inf);
- ``lower`` and ``upper`` may be ``-inf``/``+inf`` but not NaN, and ``lower <= upper``;
- ``sigma >= 0``;
- every level lies in the open interval ``(0, 1)``;
- arrays are non-empty, 1-D and of equal length.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special

__all__ = [
    "FloatArray",
    "as_1d",
    "check_bounds",
    "check_gaussian",
    "check_interval",
    "check_level",
    "check_levels",
    "check_point_predictions",
    "check_positive",
    "check_positive_int",
    "check_sigma",
    "gaussian_half_width",
    "group_codes",
    "same_length",
]

FloatArray = NDArray[np.float64]


def as_1d(x: ArrayLike, name: str, *, allow_inf: bool = False) -> FloatArray:
    """``x`` as a non-empty 1-D ``float64`` array, shape (n,), without NaN (nor inf unless
    ``allow_inf``).

    Parameters
    ----------
    x : array-like, shape (n,)
    name : str
        The argument's name, used in the error message.
    allow_inf : bool, default False
        Accept ``-inf``/``+inf`` (interval bounds); NaN is refused either way.

    Returns
    -------
    numpy.ndarray, shape (n,), float64
        A new array or ``x`` itself when it already is one (not copied).
    """
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric 1-D array-like: {exc}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    nan = np.isnan(arr)
    if nan.any():
        raise ValueError(
            f"{name} contains {int(nan.sum())} NaN value(s) (first at index "
            f"{int(np.argmax(nan))}); drop or impute them first"
        )
    if not allow_inf:
        inf = np.isinf(arr)
        if inf.any():
            raise ValueError(
                f"{name} contains {int(inf.sum())} infinite value(s) (first at index "
                f"{int(np.argmax(inf))}); it must be finite"
            )
    return arr


def same_length(**arrays: np.ndarray) -> None:
    """Raise ``ValueError`` naming every argument and its length unless all ``arrays``
    (keyword = argument name, value of shape (n, ...)) have the same first dimension."""
    lengths = {name: a.shape[0] for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        raise ValueError(f"arguments must have the same length: {desc}")


def check_sigma(sigma: ArrayLike, name: str = "sigma") -> FloatArray:
    """Finite, non-negative 1-D spread, shape (n,) -> float64 array of shape (n,)."""
    s = as_1d(sigma, name)
    if (s < 0).any():
        bad = int(np.argmax(s < 0))
        raise ValueError(f"{name} must be >= 0; {name}[{bad}] = {float(s[bad])!r}")
    return s


def check_level(level: float, name: str = "level") -> float:
    """A real scalar (0-d) strictly between 0 and 1, returned as ``float``; NaN is refused.

    Levels below the forecast layer are fractions (``0.9`` for a 90 % band); a value in
    (1, 100) is refused with a message that says it looks like a percent
    (docs/guides/python-api.md, "Levels: fractions and percents")."""
    if np.ndim(level) != 0:
        raise ValueError(f"{name} must be a scalar in (0, 1), got shape {np.shape(level)}")
    try:
        value = float(level)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number in (0, 1), got {level!r}") from exc
    if not 0.0 < value < 1.0:  # also rejects NaN
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {level!r}{_percent_hint(value)}")
    return value


def _percent_hint(value: float) -> str:
    """For a level that looks like a percent (``1 < value < 100``): what to write instead."""
    if not 1.0 < value < 100.0:
        return ""
    return (f": {value:g} looks like a percent; this function takes fractions "
            f"(write {round(value / 100, 10):g} for a {value:g} % band)")


def check_levels(levels: ArrayLike, name: str = "levels") -> FloatArray:
    """A scalar or 1-D array of levels, shape (L,), each strictly between 0 and 1 ->
    float64 array of shape (L,) (a scalar gives L = 1); a percent is refused as by
    `check_level`."""
    try:
        raw = np.atleast_1d(np.asarray(levels, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numbers in (0, 1): {exc}") from exc
    arr = as_1d(raw, name)
    if ((arr <= 0.0) | (arr >= 1.0)).any():
        bad = float(arr[(arr <= 0.0) | (arr >= 1.0)][0])
        raise ValueError(f"every entry of {name} must lie strictly between 0 and 1, got {bad!r}{_percent_hint(bad)}")
    return arr


def check_point_predictions(
    y_true: ArrayLike, mean: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Finite ``y_true`` and ``mean`` of equal length: two float64 arrays of shape (n,)."""
    y = as_1d(y_true, "y_true")
    mu = as_1d(mean, "mean")
    same_length(y_true=y, mean=mu)
    return y, mu


def check_gaussian(
    y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Finite ``y_true``, ``mean`` and finite ``sigma >= 0``, all of shape (n,): three
    float64 arrays of shape (n,)."""
    y = as_1d(y_true, "y_true")
    mu = as_1d(mean, "mean")
    s = check_sigma(sigma)
    same_length(y_true=y, mean=mu, sigma=s)
    return y, mu, s


def check_bounds(lower: ArrayLike, upper: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Interval bounds of shape (n,): possibly infinite, never NaN, ``lower <= upper``
    pointwise -> two float64 arrays of shape (n,)."""
    lo = as_1d(lower, "lower", allow_inf=True)
    hi = as_1d(upper, "upper", allow_inf=True)
    same_length(lower=lo, upper=hi)
    if (lo > hi).any():
        bad = int(np.argmax(lo > hi))
        raise ValueError(
            f"lower must be <= upper pointwise; at index {bad} lower={float(lo[bad])!r} > upper={float(hi[bad])!r}"
        )
    return lo, hi


def check_interval(
    y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Finite ``y_true`` and bounds as in `check_bounds`, all of shape (n,): three
    float64 arrays of shape (n,)."""
    y = as_1d(y_true, "y_true")
    lo, hi = check_bounds(lower, upper)
    same_length(y_true=y, lower=lo, upper=hi)
    return y, lo, hi


def group_codes(
    groups: ArrayLike, n: int, name: str = "groups"
) -> tuple[NDArray[np.intp], NDArray[np.str_]]:
    """One label per point, shape (n,), as integer codes and the distinct labels.

    Labels are compared as strings (``1`` and ``"1"`` are one group); codes follow the
    order of first appearance.

    Parameters
    ----------
    groups : array-like, shape (n,)
        Any values; none may be missing (``None``/NaN).
    n : int
        The number of points the labels must match.
    name : str, default "groups"

    Returns
    -------
    codes : numpy.ndarray of int, shape (n,)
        ``uniques[codes[i]]`` is point ``i``'s label.
    uniques : numpy.ndarray of str, shape (G,)
        The distinct labels.
    """
    labels = np.asarray(groups, dtype=object)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"{name} must be 1-D with one label per point ({n}), got shape {labels.shape}")
    missing = pd.isna(labels)
    if missing.any():
        raise ValueError(f"{name} has {int(missing.sum())} missing label(s) (first at index "
                         f"{int(np.argmax(missing))}); give every point a label")
    codes, uniques = pd.factorize(labels.astype(str))
    return codes, np.asarray(uniques, dtype=str)


def gaussian_half_width(sigma: FloatArray, level: float) -> FloatArray:
    """Half width ``z_{(1+level)/2} * sigma`` of the central Gaussian interval, shape of
    ``sigma`` (n,); exactly 0 where ``sigma`` is 0. Inputs are not checked: pass the output
    of `check_sigma` and `check_level`."""
    z = special.ndtri(0.5 + 0.5 * level)
    return z * sigma


def check_positive(value: float, name: str) -> float:
    """A positive finite real scalar, returned as ``float``."""
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a positive number, got {value!r}") from exc
    if not (math.isfinite(out) and out > 0.0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return out


def check_positive_int(value: int, name: str) -> int:
    """An integer-valued scalar ``>= 1`` (``3`` or ``3.0``; not ``2.5``, not ``"3"``),
    returned as ``int``."""
    message = f"{name} must be a positive integer, got {value!r}"
    if isinstance(value, str | bytes) or np.ndim(value) != 0:
        raise ValueError(message)
    try:
        out = int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(message) from exc
    if out != value or out < 1:
        raise ValueError(message)
    return out
