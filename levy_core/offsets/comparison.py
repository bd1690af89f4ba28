"""Is one forecaster clearly better than another on rolling origins? Diebold and Mariano's test.

The offset is chosen by its squared error on rolling origins (:func:`levy_core.offsets.
base_forecast.choose_offsets`). Origins closer together than the horizon forecast overlapping
windows, so their losses are strongly correlated: 121 monthly origins of a 12-month horizon
hold about ten independent years, 16 yearly origins of a 10-year horizon fewer than two. A
fixed margin on the pooled error cannot tell those apart; Diebold and Mariano's statistic
(J. Bus. Econ. Stat. 1995) does: the mean per-origin loss difference ``d̄`` over its standard
error, with the long-run variance of ``d`` estimated by Newey and West's Bartlett-weighted
autocovariances up to the lag over which windows overlap,

    S = γ₀ + 2 Σ_{l=1..L} (1 − l/(L+1)) γ_l,     t = d̄ / sqrt(S / n).

A more complex candidate then replaces a simpler one only where ``t < −z``. Tested against
statsmodels' HAC standard error of a mean (``tests/offsets/test_comparison.py``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CLEARLY_BETTER_Z", "clearly_better", "loss_difference_t", "overlap_lag"]

CLEARLY_BETTER_Z = 1.0  # one-sided: about a 16 % chance to prefer the complex candidate by luck


def loss_difference_t(loss_a: np.ndarray, loss_b: np.ndarray, lag: int) -> float:
    """Diebold and Mariano's ``t`` of ``mean(loss_a − loss_b)``, per-origin losses (n,) in
    time order, with Newey and West's variance up to ``lag`` (≥ 0; capped at n − 1).

    Negative: ``a`` has the lower loss. ``−inf`` / ``+inf`` where every difference is the
    same non-zero number (no variance), 0 where ``a`` and ``b`` lose the same everywhere.
    """
    a, b = np.asarray(loss_a, np.float64), np.asarray(loss_b, np.float64)
    if a.shape != b.shape or a.ndim != 1 or not len(a):
        raise ValueError(f"loss difference: two 1-D loss arrays of one length > 0, got {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("loss difference: losses must be finite")
    if lag < 0:
        raise ValueError(f"loss difference: lag must be >= 0, got {lag}")
    d = a - b
    n = len(d)
    mean = float(d.mean())
    centred = d - mean
    lag = min(int(lag), n - 1)
    long_run = float(centred @ centred) / n
    for k in range(1, lag + 1):
        long_run += 2 * (1 - k / (lag + 1)) * float(centred[k:] @ centred[:-k]) / n
    scale = max(float(np.abs(d).max()), 1e-300)
    if long_run <= 1e-24 * scale * scale:  # no variance left beyond rounding
        return 0.0 if abs(mean) <= 1e-12 * scale else math.copysign(math.inf, mean)
    return mean / math.sqrt(long_run / n)


def clearly_better(loss_new: np.ndarray, loss_old: np.ndarray, lag: int, z: float = CLEARLY_BETTER_Z) -> bool:
    """Whether ``loss_new`` (n,) is lower than ``loss_old`` (n,) beyond chance: ``t < −z``."""
    return loss_difference_t(loss_new, loss_old, lag) < -z


def overlap_lag(origins: np.ndarray, window_ends: np.ndarray) -> int:
    """The lag over which rolling-origin losses are correlated: per origin (n,), how many later
    origins fall before its window's last query (n,); the median over origins, as an int."""
    o, e = np.asarray(origins, np.float64), np.asarray(window_ends, np.float64)
    if o.shape != e.shape or o.ndim != 1:
        raise ValueError("overlap lag: origins and window ends must be 1-D of one length")
    if not len(o):
        return 0
    order = np.argsort(o, kind="stable")
    o, e = o[order], e[order]
    later_before_end = np.searchsorted(o, e, side="left") - np.arange(1, len(o) + 1)
    return int(np.median(np.maximum(later_before_end, 0)))
