"""The normalised score every conformal step of the band ranks: ``|y - ŷ| / max(σ, floor)``.

Split conformal (`levy_core.calibration.split_conformal`), adaptive conformal
(`levy_core.calibration.adaptive`) and recency-weighted conformal
(`levy_core.calibration.recency`) all take quantiles of calibration scores of that one
shape. This module holds what they share: the floor on ``σ``, the rank of the conformal
quantile (``k = ceil((n + 1) level)`` with a ``1e-12`` relative slack against binary
rounding of decimal levels), the weighted quantile of nexCP, and `NotFittedError`,
which every calibration step raises when used before it is fitted.

Zero sigma: a point with ``σ̂ = 0`` would give an infinite normalised score
(or ``0/0``). Every calibration step floors ``σ̂`` at ``sigma_floor_ = rel_floor *
median(σ̂ > 0)`` of the calibration split (``rel_floor = 1e-6`` by default),
and apply the same stored floor at prediction time, so that calibration and
test scores come from the same score function (needed for the conformal
guarantee). Above the floor nothing changes. A calibration point with ``σ̂ ≈ 0``
and a non-zero error has a huge score and dominates ``c``: the model claimed
certainty and was wrong, and the calibrated spread says so.
"""

from __future__ import annotations

import logging
import math

import numpy as np
from numpy.typing import ArrayLike

from levy_core.metrics import checks
from levy_core.metrics.checks import FloatArray

__all__ = [
    "DEFAULT_REL_FLOOR",
    "NotFittedError",
    "calibration_sigma_floor",
    "check_scores",
    "conformal_rank",
    "floored_sigma",
    "normalised_scores",
    "relative_sigma_floor",
    "unchecked_rank",
    "weighted_quantile",
]

logger = logging.getLogger(__name__)

#: Default floor on sigma, relative to the median positive sigma of the calibration split.
DEFAULT_REL_FLOOR: float = 1e-6

# Relative slack when taking ceil((n + 1) * level): a decimal level such as 0.9
# is stored as 0.9000000000000000222..., and (n + 1) * level can land a hair above
# the integer it means (25 * 0.28 -> 7.000000000000001). Binary rounding is
# ~1e-16 relative; 1e-12 absorbs it without touching any level that differs from
# a decimal by more than 1e-12.
_CEIL_REL_TOL = 1e-12


class NotFittedError(RuntimeError):
    """A calibration step was used before the step it depends on was run."""


def calibration_sigma_floor(sigma: FloatArray, rel_floor: float) -> float:
    """``rel_floor * median(sigma[sigma > 0])``; ValueError if every sigma is 0."""
    positive = sigma[sigma > 0]
    if positive.size == 0:
        raise ValueError(
            "every sigma in the calibration split is 0: there is no spread to calibrate"
        )
    floor = rel_floor * float(np.median(positive))
    n_floored = int(np.sum(sigma < floor))
    if n_floored:
        logger.info("floored %d of %d calibration sigmas at %.3g", n_floored, sigma.size, floor)
    return floor


def conformal_rank(n: int, level: float) -> int:
    """The rank ``k = max(1, ceil((n + 1) level))`` of the conformal quantile of ``n`` scores.

    ``k > n`` means the quantile is ``+inf`` (too few scores for that level). ``(n + 1)
    level`` is taken with a ``1e-12`` relative slack before the ceiling, exactly as
    `levy_core.calibration.split_conformal.SplitConformal.quantile`.
    """
    return unchecked_rank(checks.check_positive_int(n, "n"), checks.check_level(level))


def unchecked_rank(n: int, p: float) -> int:
    """[`conformal_rank`][levy_core.calibration.scores.conformal_rank] unchecked; ``p`` may round to 1.0 (``1 - α_t``, tiny ``α_t``)."""
    x = (n + 1) * p
    return max(1, math.ceil(x - _CEIL_REL_TOL * x))


def relative_sigma_floor(sigma: ArrayLike, rel_floor: float = DEFAULT_REL_FLOOR) -> float:
    """``rel_floor * median(sigma[sigma > 0])``, the floor ``SplitConformal`` puts on ``σ``;
    ``sigma``: calibration spreads ``>= 0``, shape (n,), not all 0."""
    s = checks.check_sigma(sigma)
    rel = checks.check_positive(rel_floor, "rel_floor")
    positive = s[s > 0]
    if positive.size == 0:
        raise ValueError("sigma is 0 everywhere: there is no spread to calibrate")
    return rel * float(np.median(positive))


def normalised_scores(
    y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike, *,
    sigma_floor: float | None = None, rel_floor: float = DEFAULT_REL_FLOOR,
) -> tuple[FloatArray, float]:
    """Non-conformity scores ``|y - ŷ| / max(σ, floor)``, in the order given.

    ``y_true``, ``mean``, ``sigma`` (shape (n,)): targets, predicted means, raw spreads
    ``>= 0`` (calibration: in time order). ``sigma_floor`` defaults to
    [`relative_sigma_floor`][levy_core.calibration.scores.relative_sigma_floor] of ``sigma`` with ``rel_floor``. Returns the scores, shape
    (n,), and the floor used: pass it to ``conformalize`` so later ``σ`` get the same floor.
    """
    y, mu, s = checks.check_gaussian(y_true, mean, sigma)
    floor = (relative_sigma_floor(s, rel_floor) if sigma_floor is None
             else checks.check_positive(sigma_floor, "sigma_floor"))
    return np.abs(y - mu) / np.maximum(s, floor), floor


def weighted_quantile(scores: ArrayLike, weights: ArrayLike, level: float, *,
                      test_weight: float = 1.0) -> float:
    """Level-``level`` quantile of ``sum_i w̃_i δ_{s_i} + w̃_{n+1} δ_{+inf}`` (nexCP).

    ``w̃_i = w_i / (sum_j w_j + test_weight)`` and ``w̃_{n+1} = test_weight / (sum_j w_j +
    test_weight)``: the test point's own mass sits at ``+inf``. The result is the smallest
    score ``s`` with ``sum_{i: s_i <= s} w_i >= level * (sum_j w_j + test_weight)`` (the
    right side with the ``1e-12`` relative slack of [`conformal_rank`][levy_core.calibration.scores.conformal_rank]), ``+inf`` if no
    score reaches it. With every weight 1 this is the ``ceil((n + 1) level)``-th smallest
    score: split conformal's quantile. ``scores`` (n,): finite, any order; ``weights`` (n,):
    finite, ``>= 0``, aligned; ``level`` in (0, 1); ``test_weight > 0``. Returns a float.
    """
    s = checks.as_1d(scores, "scores")
    w = checks.as_1d(weights, "weights")
    checks.same_length(scores=s, weights=w)
    if (w < 0).any():
        raise ValueError(f"weights must be >= 0; weights[{int(np.argmax(w < 0))}] is negative")
    p = checks.check_level(level)
    tw = checks.check_positive(test_weight, "test_weight")
    order = np.argsort(s, kind="stable")
    cum = np.cumsum(w[order])
    threshold = p * (cum[-1] + tw)
    k = int(np.searchsorted(cum, threshold - _CEIL_REL_TOL * threshold, side="left"))
    return math.inf if k >= s.size else float(s[order[k]])


def check_scores(scores: ArrayLike) -> FloatArray:
    """Calibration scores: finite, ``>= 0``, shape (n,), kept in the order given (time)."""
    s = checks.as_1d(scores, "scores")
    if (s < 0).any():
        raise ValueError(f"scores must be >= 0; scores[{int(np.argmax(s < 0))}] = {float(s[s < 0][0])!r}")
    return s.copy()


def floored_sigma(sigma: FloatArray, floor: float | None) -> FloatArray:
    """``max(σ, floor)``; without a stored floor every ``σ`` must already be positive."""
    if floor is not None:
        return np.maximum(sigma, floor)
    if (sigma <= 0).any():
        raise ValueError("sigma must be > 0 when conformalized without sigma_floor: pass the "
                         "sigma_floor the scores were computed with (see normalised_scores)")
    return sigma
