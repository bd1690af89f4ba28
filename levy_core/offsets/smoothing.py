"""Exponential smoothing for the base-forecast candidates: a weighted level for irregular times
([`weighted_level`][levy_core.offsets.smoothing.weighted_level]) and Holt's damped trend on a regular grid.

The additive damped trend (Gardner & McKenzie 1985; ETS(A,Ad,N) without its noise model):

    ℓ_t = α y_t + (1 − α)(ℓ_{t−1} + φ b_{t−1})
    b_t = β (ℓ_t − ℓ_{t−1}) + (1 − β) φ b_{t−1}
    ŷ_{t+h} = ℓ_t + (φ + φ² + … + φ^h) b_t

started at ``ℓ_0 = y_0, b_0 = y_1 − y_0``. It carries a recent trend (a recovery after a
recession) where a global line or a level cannot, and damps it over long horizons; with
``φ = 1`` it is Holt's linear trend, ETS(A,A,N), which carries the trend undamped. The
smoothing parameters are picked once per channel, on a grid, by the one-step squared error
over the channel's past (vectorised over the grid); every origin then runs the recursion
over its own past with them fixed. ``statsmodels``' ``Holt(damped_trend=True)`` is the
reference the tests compare with.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

ALPHAS = (0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.9)
BETAS = (0.01, 0.05, 0.1, 0.2, 0.4)
PHIS = (0.8, 0.9, 0.95, 0.98)
MAX_STEPS = 600  # grid steps the recursion runs over (the latest): older ones weigh < α(1−α)^600
MIN_STEPS = 8
LEVEL_HALF_LIFE_GAPS = 4.0  # the level's half-life, in sampling intervals


def weighted_level(t: np.ndarray, y: np.ndarray, half_life: float) -> float:
    """Simple exponential smoothing for irregular times: the mean of ``y`` (n,) weighted by
    ``2^(−(t_n − t)/half_life)``, ``t`` (n,) sorted."""
    w = np.exp2(-(t[-1] - t) / half_life)
    return float(np.sum(w * y) / np.sum(w))


def check_parameters(alpha: float, beta: float, phi: float) -> tuple[float, float, float]:
    """``(α, β, φ)`` as floats, each in (0, 1]; ``ValueError`` otherwise."""
    values = (float(alpha), float(beta), float(phi))
    if not all(math.isfinite(v) and 0 < v <= 1 for v in values):
        raise ValueError(f"damped trend: smoothing parameters must lie in (0, 1], got {values}")
    return values


def run(z: np.ndarray, alpha: np.ndarray, beta: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The recursion over ``z`` (n,), for ``k`` parameter triples at once (arrays (k,)).

    Returns the final level and trend (k,) and the sum of squared one-step errors (k,)
    over steps 2 … n−1 (the first two fix the start)."""
    level = np.full(alpha.shape, z[0], dtype=np.float64)
    trend = np.full(alpha.shape, z[1] - z[0], dtype=np.float64)
    sse = np.zeros(alpha.shape, dtype=np.float64)
    for value in z[1:]:
        ahead = level + phi * trend
        sse += (value - ahead) ** 2
        new_level = alpha * value + (1 - alpha) * ahead
        trend = beta * (new_level - level) + (1 - beta) * phi * trend
        level = new_level
    sse -= (z[1] - (z[0] + phi * (z[1] - z[0]))) ** 2  # the first step only checks the start
    return level, trend, sse


def fit(z: np.ndarray, *, damped: bool = True) -> tuple[float, float, float] | None:
    """The grid's ``(α, β, φ)`` with the least one-step squared error over ``z`` (n,), a
    regular grid of the past, oldest first (``damped=False``: ``φ = 1``, Holt's linear
    trend); None when shorter than ``MIN_STEPS``."""
    z = np.asarray(z, np.float64)[-MAX_STEPS:]
    if len(z) < MIN_STEPS or not np.all(np.isfinite(z)):
        return None
    grid = np.array(list(itertools.product(ALPHAS, BETAS, PHIS if damped else (1.0,))), np.float64)
    _, _, sse = run(z, grid[:, 0], grid[:, 1], grid[:, 2])
    best = grid[int(np.argmin(sse))]  # ties: the first, i.e. the smallest α, β, φ
    return float(best[0]), float(best[1]), float(best[2])


def forecast(z: np.ndarray, parameters: tuple[float, float, float], steps: int) -> np.ndarray:
    """The forecast ``ŷ_{n−1+h}`` for ``h = 0 … steps`` (steps + 1,) from a regular grid
    ``z`` (n,), oldest first; ``h = 0`` is the smoothed level at the grid's end."""
    z = np.asarray(z, np.float64)[-MAX_STEPS:]
    alpha, beta, phi = check_parameters(*parameters)
    if len(z) < 2:
        return np.full(steps + 1, z[-1] if len(z) else np.nan)
    # the recursion of ``run`` for one triple, on Python floats (numpy's per-call cost would
    # dominate a scalar loop run for every episode and channel)
    level, trend = float(z[0]), float(z[1] - z[0])
    for value in z[1:].tolist():
        new_level = alpha * value + (1 - alpha) * (level + phi * trend)
        trend = beta * (new_level - level) + (1 - beta) * phi * trend
        level = new_level
    damping = np.cumsum(phi ** np.arange(1, steps + 1))
    return np.concatenate([[level], level + damping * trend])
