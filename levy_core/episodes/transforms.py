"""Per-channel value transforms for positive and skewed quantities (``log``, ``log1p``).

A channel's values ``v`` are mapped by ``g`` before the min-max scaling of
`ChannelScaler`; the model is fitted and calibrated on
``g(v)`` and every band is mapped back with ``g⁻¹``. ``g`` is strictly increasing, so a
band that holds for ``g(y)`` holds for ``y`` with the same probability (the conformal
guarantee is kept) and the band never leaves ``g``'s range: ``(0, ∞)`` for ``log``,
``(-1, ∞)`` for ``log1p`` (it never goes below the data's zero in practice, and never
below −1).

The automatic rule (`choose_transform`), per channel:

* ``log`` when every value of the file is > 0, ``|skewness of log v|`` is smaller than
  ``|skewness of v|`` on the training values, and either their sample skewness is
  > `SKEW_THRESHOLD` or their mean is within `NEAR_ZERO_SDS` standard deviations
  of zero (a Gaussian band of such a channel reaches below zero: PBC's platelets, mean 2.4
  s.d. from zero with skewness 0.95 on one draw, got bounds below zero without it);
* ``log1p`` when every value is ≥ 0, some are 0, and the same holds with ``log1p``;
* ``none`` otherwise (and for channels with fewer than `MIN_VALUES` training values).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from levy_core.data.errors import DataError
from levy_core.data.messages import quote_list

__all__ = ["KINDS", "MIN_VALUES", "NEAR_ZERO_SDS", "SKEW_THRESHOLD", "TransformSpec", "choose_transform", "forward", "inverse",
           "inverse_slope", "parse_transform", "resolve_transforms"]

KINDS: tuple[str, ...] = ("none", "log", "log1p")
SKEW_THRESHOLD: float = 1.0
"""A channel is transformed automatically only when its values' skewness exceeds this."""
NEAR_ZERO_SDS: float = 3.0
"""A positive channel whose training mean is fewer standard deviations than this from zero is
transformed even when its skewness is small (when the transform reduces it)."""
MIN_VALUES: int = 8
"""Fewer training values than this: no skewness to trust, no automatic transform."""

TransformSpec = str | Mapping[str, str]
"""``"auto"``, ``"none"``, ``"log"``, ``"log1p"`` (every channel), or channel → kind (the
others ``auto``)."""


def _skew(v: np.ndarray) -> float:
    """Sample skewness (biased moment estimator); 0 for a constant."""
    d = v - v.mean()
    m2 = float(np.mean(d**2))
    return float(np.mean(d**3) / m2**1.5) if m2 > 0 else 0.0


def choose_transform(values: np.ndarray, training: np.ndarray | None = None) -> str:
    """The automatic transform of one channel.

    Parameters
    ----------
    values : ndarray of float, shape (n,)
        Every value of the channel in the file (its sign decides what is possible).
    training : ndarray of float, shape (k,), optional
        The training series' values (the skewness is measured on them); ``values`` when omitted.

    Returns
    -------
    str
        ``"log"``, ``"log1p"`` or ``"none"`` (rule in the module docstring).
    """
    v = np.asarray(values, np.float64)
    t = v if training is None else np.asarray(training, np.float64)
    v, t = v[np.isfinite(v)], t[np.isfinite(t)]
    if len(t) < MIN_VALUES or not len(v) or v.min() < 0:
        return "none"
    kind = "log" if v.min() > 0 else "log1p"
    raw = _skew(t)
    near_zero = kind == "log" and t.mean() < NEAR_ZERO_SDS * t.std()  # zeros in the data: skewness alone
    if raw <= SKEW_THRESHOLD and not near_zero:
        return "none"
    return kind if abs(_skew(forward(t, kind))) < abs(raw) else "none"


def forward(values: np.ndarray, kind: str) -> np.ndarray:
    """``g(v)``: ``log v``, ``log(1 + v)`` or ``v``, float64, same shape (no domain check)."""
    v = np.asarray(values, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "log":
            return np.log(v)
        if kind == "log1p":
            return np.log1p(v)
    return v


def inverse(values: np.ndarray, kind: str) -> np.ndarray:
    """``g⁻¹(u)``: ``exp u``, ``exp u − 1`` or ``u``, float64, same shape."""
    u = np.asarray(values, np.float64)
    with np.errstate(over="ignore"):
        if kind == "log":
            return np.exp(u)
        if kind == "log1p":
            return np.expm1(u)
    return u


def inverse_slope(values: np.ndarray, kind: str) -> np.ndarray:
    """``dg⁻¹/du`` at ``u``: ``exp u`` for both logs, 1 for none (the delta method's factor)."""
    u = np.asarray(values, np.float64)
    if kind in ("log", "log1p"):
        with np.errstate(over="ignore"):
            return np.exp(u)
    return np.ones_like(u)


def parse_transform(text: str) -> TransformSpec:
    """A ``--transform`` argument: ``auto|none|log|log1p`` or ``channel=kind,channel=kind``.

    Raises
    ------
    ValueError
        An unknown kind or a malformed pair, naming it and the accepted forms.
    """
    text = str(text).strip()
    if "=" not in text:
        if text not in ("auto", *KINDS):
            raise ValueError(f"--transform {text!r} is not one of auto, none, log, log1p (or channel=kind pairs "
                             "such as 'bili=log,albumin=none')")
        return text
    spec: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, kind = (s.strip() for s in part.partition("="))
        if not sep or not name or kind not in ("auto", *KINDS):
            raise ValueError(f"--transform: {part!r} is not channel=kind with kind one of auto, none, log, log1p "
                             "(e.g. 'bili=log,albumin=none')")
        spec[name] = kind
    return spec


def _check_domain(channel: str, kind: str, values: np.ndarray) -> None:
    """DataError when a forced ``kind`` cannot take the channel's values."""
    v = values[np.isfinite(values)]
    if not len(v):
        return
    low = float(v.min())
    if (kind == "log" and low <= 0) or (kind == "log1p" and low < 0):
        need = "> 0" if kind == "log" else "≥ 0"
        other = "log1p or none" if kind == "log" and low == 0 else "none"
        raise DataError(f"Channel {channel!r} cannot take the {kind} transform: it needs every value {need}, and its "
                        f"minimum is {low:.6g}. Use --transform {channel}={other} (or auto).")


def resolve_transforms(frame: pd.DataFrame, channels: list[str], spec: TransformSpec = "auto",
                       training: pd.DataFrame | None = None) -> dict[str, str]:
    """Each channel's transform kind under ``spec``.

    Parameters
    ----------
    frame : pandas.DataFrame
        Long frame with ``channel`` and ``value``: every value the model will see at fit time.
    channels : list of str
        The channels to resolve.
    spec : str or mapping
        ``"auto"``, a kind for every channel, or channel → kind (unnamed channels: auto).
    training : pandas.DataFrame, optional
        The training series' rows (the automatic rule's skewness); ``frame`` when omitted.

    Returns
    -------
    dict of str to str
        Channel → ``"none"``, ``"log"`` or ``"log1p"``.

    Raises
    ------
    DataError
        A named channel the data does not have, or a forced kind its values cannot take
        (naming the channel and its minimum).
    """
    per = dict(spec) if isinstance(spec, Mapping) else {c: str(spec) for c in channels}
    unknown = sorted(set(per) - set(channels))
    if unknown:
        raise DataError(f"--transform names channel(s) {quote_list(unknown)} that the data does not have "
                        f"(channels: {quote_list(channels, 10)}). Check the spelling.")
    bad = sorted(k for k in per.values() if k not in ("auto", *KINDS))
    if bad:
        raise ValueError(f"transform kind(s) {quote_list(bad)} unknown: use auto, none, log or log1p")
    values = {str(c): g.to_numpy(np.float64) for c, g in frame.groupby("channel", sort=True)["value"]}
    train = values if training is None else {
        str(c): g.to_numpy(np.float64) for c, g in training.groupby("channel", sort=True)["value"]}
    out: dict[str, str] = {}
    for c in channels:
        v = values.get(c, np.empty(0))
        kind = per.get(c, "auto")
        if kind == "auto":
            kind = choose_transform(v, train.get(c, np.empty(0)))
        else:
            _check_domain(c, kind, v)
        out[c] = kind
    return out
