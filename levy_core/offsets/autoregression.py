"""Autoregressions on a regular grid: the ``autoregressive`` offset candidate, and the AR of
a harmonic candidate's residuals ([`levy_core.offsets.base_forecast`][levy_core.offsets.base_forecast]).

An irregular past is first put on a regular grid of its median sampling interval (linear
interpolation across missing points); an AR(p) with intercept is fitted to it by least
squares, ``p`` picked by AIC, and iterated forward from the origin.
"""

from __future__ import annotations

import numpy as np

from levy_core.offsets.spec import MAX_AR_ORDER

__all__ = ["MAX_PAST", "aic_order", "ar_ahead", "ar_order", "autoregressive", "regular_grid"]

MAX_PAST = 4000  # grid points (and past points) an offset is fitted on, the latest


def regular_grid(t: np.ndarray, y: np.ndarray, origin: float, gap: float) -> np.ndarray:
    """The past on a regular grid of ``gap`` ending at ``origin`` (linear interpolation
    across missing points), oldest first, at most ``MAX_PAST`` points."""
    steps = min(int((origin - t[0]) / gap), MAX_PAST - 1)
    grid = origin - gap * np.arange(steps, -1, -1, dtype=np.float64)
    return np.interp(grid, t, y)


def ar_order(t: np.ndarray, y: np.ndarray, gap: float, longest: float) -> int:
    """The order of an autoregression of the gridded past picked by AIC, up to a season
    and a step (at most ``MAX_AR_ORDER``, a tenth of the points); 0 when too short."""
    z = regular_grid(t, y, float(t[-1]), gap)
    top = min(MAX_AR_ORDER, len(z) // 10, max(3, int(round(longest / gap)) + 1))
    best, best_aic = 0, np.inf
    for p in range(1, top + 1):
        lags = np.column_stack([z[p - j - 1:len(z) - j - 1] for j in range(p)])
        target = z[p:]
        x = np.column_stack([np.ones(len(target)), lags])
        coef, *_ = np.linalg.lstsq(x, target, rcond=None)
        rss = float(np.sum((target - x @ coef) ** 2))
        aic = len(target) * np.log(max(rss / len(target), 1e-300)) + 2 * (p + 1)
        if aic < best_aic:
            best, best_aic = p, aic
    return best


def aic_order(z: np.ndarray, top: int) -> int:
    """The order ``p`` in ``0 … top`` of an AR(p) with intercept whose AIC on ``z`` is the
    lowest, all orders fitted by least squares on the same targets ``z[top:]`` (one QR of the
    lag matrix gives every nested order's residual sum of squares); 0 when ``z`` is too
    short for ``top``."""
    top = min(top, (len(z) - 3) // 3)
    if top < 1:
        return 0
    target = z[top:]
    x = np.column_stack([np.ones(len(target))] + [z[top - j - 1:len(z) - j - 1] for j in range(top)])
    q, _ = np.linalg.qr(x)
    explained = np.cumsum((q.T @ target) ** 2)  # by the intercept and the first p lags
    rss = np.maximum(float(target @ target) - explained, 1e-300 * len(target))
    aic = len(target) * np.log(rss / len(target)) + 2 * np.arange(1, top + 2)
    return int(np.argmin(aic))  # the first minimum: ties go to the lower order


def autoregressive(t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray, *, order: int,
                    gap: float) -> np.ndarray:
    """An AR(``order``) with intercept fitted by least squares on the gridded past, iterated
    forward and read at ``tq`` by linear interpolation between grid steps."""
    ahead = ar_ahead(regular_grid(t, y, origin, gap), order, origin, tq, gap)
    return np.full(len(tq), y[-1], dtype=np.float64) if ahead is None else ahead


def ar_ahead(z: np.ndarray, order: int, origin: float, tq: np.ndarray, gap: float) -> np.ndarray | None:
    """An AR(``order``) with intercept fitted by least squares to ``z`` (a regular grid of
    step ``gap`` ending at ``origin``), iterated forward and read at ``tq`` by linear
    interpolation between steps; None when ``order`` is 0 or ``z`` too short for it."""
    if order < 1 or len(z) < 3 * order + 3:
        return None
    lags = np.column_stack([z[order - j - 1:len(z) - j - 1] for j in range(order)])
    x = np.column_stack([np.ones(len(z) - order), lags])
    coef, *_ = np.linalg.lstsq(x, z[order:], rcond=None)
    steps = int(np.ceil(max(float(np.max(tq) - origin), 0.0) / gap)) + 1
    path = list(z[-order:])
    for _ in range(steps):
        path.append(float(coef[0] + np.dot(coef[1:], path[-1:-order - 1:-1])))
    ahead = np.asarray(path[order - 1:])  # the origin's value, then one per step
    return np.interp(tq, origin + gap * np.arange(len(ahead)), ahead)
