"""The offset's choice bagged over the rolling origins it is scored on.

Picking the candidate with the lowest error on a few dozen overlapping windows is unstable:
two candidates a few per cent apart swap places when one window more or less is scored, and
the pick then forecasts as well as a coin flip between them. Bagging the selection (Breiman,
*Bagging predictors*, 1996) applies the rule to ``DRAWS`` bootstrap resamples of the scored
origins and averages the picks, each weighted by how often it won: a stable choice is kept
whole, an unstable one becomes the weighted mean of the candidates it wavers between.

Rolling origins closer together than the horizon forecast overlapping windows, so their
errors are correlated; the resamples are moving blocks (Künsch 1989) of ``lag + 1``
consecutive origins, ``lag`` being how many later origins fall inside an origin's window
(`overlap_lag`). The draws come from a fixed seed: the same data give the same choice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["DRAWS", "bagged_weights", "block_resamples", "overlap_lag"]

DRAWS = 32
SEED = 0

Key = tuple[str, float]


def overlap_lag(origins: np.ndarray, window_ends: np.ndarray) -> int:
    """Per origin (n,), how many later origins fall before its window's last query (n,): the
    median over origins, the lag over which rolling-origin errors are correlated."""
    o, e = np.asarray(origins, np.float64), np.asarray(window_ends, np.float64)
    if o.shape != e.shape or o.ndim != 1:
        raise ValueError("overlap lag: origins and window ends must be 1-D of one length")
    if not len(o):
        return 0
    order = np.argsort(o, kind="stable")
    later_before_end = np.searchsorted(o[order], e[order], side="left") - np.arange(1, len(o) + 1)
    return int(np.median(np.maximum(later_before_end, 0)))


def block_resamples(n: int, lag: int, draws: int = DRAWS, seed: int = SEED) -> np.ndarray:
    """Moving-block bootstrap of ``n`` time-ordered origins: (draws, n) counts, how often each
    origin is drawn in each resample (blocks of ``min(lag + 1, n)`` consecutive origins,
    uniform starts, the concatenation cut to ``n``). Each row sums to ``n``."""
    if n < 1 or lag < 0 or draws < 1:
        raise ValueError(f"block resamples: need n >= 1, lag >= 0 and draws >= 1, got {n}, {lag}, {draws}")
    rng = np.random.default_rng(seed)
    block = min(lag + 1, n)
    blocks = -(-n // block)
    out = np.zeros((draws, n), np.float64)
    for row in range(draws):
        starts = rng.integers(0, n - block + 1, size=blocks)
        idx = (starts[:, None] + np.arange(block)[None, :]).ravel()[:n]
        out[row] = np.bincount(idx, minlength=n)
    return out


def bagged_weights(errors: Callable[[Sequence[Key]], np.ndarray], counts: np.ndarray, lag: int,
                   rule: Callable[[Callable[[Sequence[Key]], float]], list[Key]],
                   draws: int = DRAWS) -> dict[Key, float]:
    """Each candidate's weight in the bagged choice, summing to 1 (only those with weight > 0).

    Parameters
    ----------
    errors : callable
        Members (a list of candidate keys) → the summed squared error of their mean at each
        scored origin, (n,) in time order.
    counts : ndarray
        Queries scored at each origin, (n,).
    lag : int
        The origins' overlap (`overlap_lag`).
    rule : callable
        The selection rule: given the mean squared error of any members (a callable), the
        members it picks (their mean is the pick).
    draws : int
        Bootstrap resamples.
    """
    counts = np.asarray(counts, np.float64)
    weights: dict[Key, float] = {}
    for w in block_resamples(len(counts), lag, draws):
        total = max(float(w @ counts), 1.0)
        pick = rule(lambda members, w=w, total=total: float(w @ errors(members)) / total)
        for key in pick:
            weights[key] = weights.get(key, 0.0) + 1.0 / (draws * len(pick))
    return weights
