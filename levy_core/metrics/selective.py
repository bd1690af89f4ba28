"""Selective prediction: does ``sigma`` order the errors? Rank correlation of ``sigma``
with the absolute error, and the risk when only the most trusted points are kept.

Inputs as in [`levy_core.metrics`][levy_core.metrics].
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from levy_core.metrics.checks import FloatArray, check_gaussian

__all__ = ["risk_coverage_area", "risk_coverage_curve", "spearman_sigma_abs_error"]

_LOSSES = ("squared", "absolute")


def spearman_sigma_abs_error(y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike) -> float:
    """Spearman rank correlation between ``sigma`` and ``|y - mean|``.

    Higher is better (large sigma where errors are large). Rule for the
    degenerate cases where the correlation is undefined: if there are fewer
    than 2 points, or ``sigma`` is constant, or the absolute errors are
    constant, the result is ``0.0`` (no ranking information), never NaN.

    Parameters
    ----------
    y_true, mean, sigma : array-like, shape (n,)

    Returns
    -------
    float
        In [-1, 1].
    """
    y, mu, s = check_gaussian(y_true, mean, sigma)
    abs_err = np.abs(y - mu)
    if s.size < 2 or np.ptp(s) == 0.0 or np.ptp(abs_err) == 0.0:
        return 0.0
    from scipy import stats  # here: importing scipy.stats takes half a second, only this needs it

    rho = float(stats.spearmanr(s, abs_err).statistic)
    return 0.0 if not np.isfinite(rho) else rho


def risk_coverage_curve(
    y_true: ArrayLike,
    mean: ArrayLike,
    sigma: ArrayLike,
    *,
    n_points: int = 101,
    loss: Literal["squared", "absolute"] = "squared",
) -> tuple[FloatArray, FloatArray]:
    """Risk when only the most trusted fraction of points is kept.

    Points are sorted by ``sigma`` ascending (a stable sort: ties keep their
    input order). For a coverage fraction ``c`` the ``k(c) = ceil(c n)`` most
    trusted points are kept and the risk is their mean loss. The grid is
    ``c = 0, 1/(n_points-1), ..., 1``; at ``c = 0`` the value is the limit from
    the right, the loss of the single most trusted point (``k = 1``), so the
    curve is defined on coverage in (0, 1]. ``ceil`` is computed in exact
    integer arithmetic.

    Parameters
    ----------
    y_true, mean, sigma : array-like, shape (n,)
    n_points : int, default 101
        Grid size, ``>= 2``.
    loss : {"squared", "absolute"}, default "squared"
        Per-point loss.

    Returns
    -------
    coverage_fraction : numpy.ndarray, shape (n_points,)
        From 0 to 1.
    risk : numpy.ndarray, shape (n_points,)
        Mean loss over the kept points; ``risk[-1]`` is the overall MSE/MAE.
    """
    y, mu, s = check_gaussian(y_true, mean, sigma)
    if isinstance(n_points, bool) or not isinstance(n_points, int | np.integer):
        raise ValueError(f"n_points must be an int >= 2, got {n_points!r}")
    if n_points < 2:
        raise ValueError(f"n_points must be >= 2, got {n_points}")
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}")
    err = y - mu
    losses = err * err if loss == "squared" else np.abs(err)
    order = np.argsort(s, kind="stable")
    cum = np.cumsum(losses[order])  # (n,)
    n = y.shape[0]
    steps = int(n_points) - 1
    i = np.arange(steps + 1)
    k = np.maximum(-((-i * n) // steps), 1)  # exact ceil(i * n / steps), at least 1
    coverage = i / steps
    risk = cum[k - 1] / k
    return coverage.astype(np.float64), risk


def risk_coverage_area(
    y_true: ArrayLike,
    mean: ArrayLike,
    sigma: ArrayLike,
    *,
    n_points: int = 101,
    loss: Literal["squared", "absolute"] = "squared",
) -> float:
    """Area under the risk-coverage curve (trapezoid rule over coverage (0, 1]).

    Lower is better: a sigma that ranks the errors well keeps the risk low
    until the least trusted points are added. The value is in the loss's
    units (squared or absolute target units), so compare it only between
    models on the same data; it equals the overall risk when sigma carries no
    ranking information on average and is below it when sigma ranks well.

    Parameters
    ----------
    y_true, mean, sigma : array-like, shape (n,)
    n_points : int, default 101
    loss : {"squared", "absolute"}, default "squared"

    Returns
    -------
    float
    """
    coverage, risk = risk_coverage_curve(y_true, mean, sigma, n_points=n_points, loss=loss)
    return float(np.sum(0.5 * (risk[1:] + risk[:-1]) * np.diff(coverage)))
