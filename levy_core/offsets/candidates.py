"""The candidate forecasters of the base forecast, one channel's past at a time.

Each maps one channel's past ``(t, y)`` (times ≤ origin, sorted) to values at query times
``t_q`` (queries inside the past get the same formula): [`forecast`][levy_core.offsets.candidates.forecast] runs one candidate
by name (the list: [`levy_core.offsets.base_forecast`][levy_core.offsets.base_forecast]), [`bounded`][levy_core.offsets.candidates.bounded] keeps a forecast
within ``OFFSET_RANGE`` data ranges of the past, and [`ChannelPast`][levy_core.offsets.candidates.ChannelPast] holds the past of
one (series, channel).
"""

from __future__ import annotations

import numpy as np

from levy_core.offsets import gp as gp_forecast
from levy_core.offsets import smoothing
from levy_core.offsets.autoregression import MAX_PAST, autoregressive, regular_grid
from levy_core.offsets.gp import GPSpec
from levy_core.offsets.harmonic import harmonic, harmonic_ar
from levy_core.offsets.smoothing import LEVEL_HALF_LIFE_GAPS, weighted_level
from levy_core.offsets.spec import HARMONIC, HARMONIC_AR, SEASONAL

__all__ = ["OFFSET_RANGE", "ChannelPast", "best_observed", "bounded", "forecast"]

OFFSET_RANGE = 10.0  # an offset beyond this many data ranges from the data is clipped (an exploding AR, a trend)


def _seasonal(t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray, period: float) -> np.ndarray:
    """The past's value at ``τ = t_q − kP`` (k ≥ 1, the latest such time ≤ origin): read
    off the line between the observations either side of ``τ`` when they lie within
    ``P/8`` of each other (a missing point of a smooth cycle is not replaced by a neighbour
    an hour away in the cycle), else the value observed nearest ``τ``; NaN where none lies
    within ``P/8``."""
    k = np.maximum(np.ceil((tq - origin) / period), 1.0)
    tau = tq - k * period
    pos = np.clip(np.searchsorted(t, tau), 1, len(t) - 1)  # callers have at least two points
    left, right = pos - 1, pos
    pick = np.where(np.abs(t[left] - tau) <= np.abs(t[right] - tau), left, right)
    nearest = np.where(np.abs(t[pick] - tau) <= period / 8, y[pick], np.nan)
    width = t[right] - t[left]
    inside = (t[left] <= tau) & (tau <= t[right]) & (width <= period / 8) & (width > 0)
    share = np.where(inside, (tau - t[left]) / np.where(width > 0, width, 1.0), 0.0)
    return np.where(inside, y[left] + share * (y[right] - y[left]), nearest)


class ChannelPast:
    """One (series, channel)'s observations ``times``, ``values`` (n,), sorted by time."""

    def __init__(self, times: np.ndarray, values: np.ndarray) -> None:
        order = np.argsort(times, kind="stable")
        self.t, self.y = times[order], values[order]

    def before(self, origin: float) -> tuple[np.ndarray, np.ndarray]:
        n = int(np.searchsorted(self.t, origin, side="right"))
        lo = max(0, n - MAX_PAST)
        return self.t[lo:n], self.y[lo:n]


def best_observed(past: dict[tuple[str, str], ChannelPast]) -> dict[str, ChannelPast]:
    """Per channel (in order of first appearance), the past of its series with the most observations (the first on ties)."""
    return {c: max((p for (_, ch), p in past.items() if str(ch) == c), key=lambda p: len(p.t))
            for c in dict.fromkeys(str(channel) for _, channel in past)}


def forecast(method: str, t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray, *,
             period: float = 0.0, harmonics: tuple[float, ...] = (), gap: float = 1.0,
             order: int = 0, gp: GPSpec | None = None,
             smoothing_parameters: tuple[float, float, float] | None = None) -> np.ndarray:
    """One candidate's forecast at ``tq`` (m,) from the past ``(t, y)`` (n,), ``t ≤ origin``
    sorted. Falls back to the last value where the method has too little past."""
    last = np.full(len(tq), y[-1], dtype=np.float64)
    n = len(t)
    if method == "last" or n < 2:
        return last
    if method == "level":
        return np.full(len(tq), weighted_level(t, y, LEVEL_HALF_LIFE_GAPS * gap))
    if method == "drift":
        span = t[-1] - t[0]
        slope = (y[-1] - y[0]) / span if span > 0 else 0.0
        return last + slope * (tq - t[-1])
    if method in SEASONAL:
        if not period > 0:
            return last
        out = _seasonal(t, y, origin, tq, period)
        if method == "seasonal_drift":
            recent, before = (t > origin - period), (t > origin - 2 * period) & (t <= origin - period)
            if recent.any() and before.any():
                k = np.maximum(np.ceil((tq - origin) / period), 1.0)
                out = out + k * (y[recent].mean() - y[before].mean())
        return np.where(np.isfinite(out), out, last)
    if method == "autoregressive":
        return autoregressive(t, y, origin, tq, order=order, gap=gap)
    if method == "gp":
        return gp_forecast.posterior_mean(gp, t, y, tq) if gp is not None else last
    if method in ("damped_trend", "holt"):  # the caller passes the method's own (α, β, φ)
        if smoothing_parameters is None:
            return last
        z = regular_grid(t, y, origin, gap)
        steps = int(np.ceil(max(float(np.max(tq)) - origin, 0.0) / gap)) + 1
        path = smoothing.forecast(z, smoothing_parameters, steps)
        return np.interp(tq, origin + gap * np.arange(len(path)), path)
    if method in HARMONIC:
        return harmonic(method, t, y, origin, tq, harmonics, gap)[1]
    if method in HARMONIC_AR:
        return harmonic_ar(method.removesuffix("_ar"), t, y, origin, tq, harmonics, gap)[1]
    raise ValueError(f"unknown base-forecast method {method!r}")


def bounded(t: np.ndarray, y: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """A forecast kept finite and within ``OFFSET_RANGE`` data ranges of the past's values
    (an autoregression that explodes or a trend run far ahead would otherwise hand the
    network non-finite or absurd offsets)."""
    lo, hi = float(np.min(y)), float(np.max(y))
    span = max(hi - lo, 1e-12)
    pred = np.nan_to_num(pred, nan=float(y[-1]), posinf=hi + OFFSET_RANGE * span, neginf=lo - OFFSET_RANGE * span)
    return np.clip(pred, lo - OFFSET_RANGE * span, hi + OFFSET_RANGE * span)
