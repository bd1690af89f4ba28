"""Proper scoring rules: Gaussian and ensemble CRPS, Gaussian NLL, interval (Winkler) score.

Lower is better for all of them. Inputs and the ``sigma = 0`` conventions are those of
[`levy_core.metrics`][levy_core.metrics].
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from levy_core.metrics.checks import FloatArray, as_1d, check_gaussian, check_interval, check_level

__all__ = [
    "NLL_SIGMA_FLOOR",
    "crps_ensemble",
    "crps_ensemble_per_point",
    "crps_gaussian",
    "crps_gaussian_per_point",
    "crps_lognormal_per_point",
    "gaussian_nll",
    "interval_score",
]

#: Smallest sigma (in target units) used inside :func:`gaussian_nll`; a point
#: with ``sigma = 0`` is scored as if ``sigma = 1e-12``. The NLL of a point
#: mass is ``-inf`` at a hit and ``+inf`` at a miss, so some floor is needed to
#: keep the mean finite; this one is far below any sensible predictive spread.
NLL_SIGMA_FLOOR: float = 1e-12

_INV_SQRT_PI = 1.0 / np.sqrt(np.pi)
_SQRT_2PI = np.sqrt(2 * np.pi)  # scipy.stats.norm.pdf's constant
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


def crps_gaussian_per_point(y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike) -> FloatArray:
    """Closed-form CRPS of ``N(mean, sigma^2)`` at each observation.

    ``CRPS = sigma * [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)]`` with
    ``z = (y - mean) / sigma`` (Gneiting et al. 2005, eq. 5). Where
    ``sigma == 0`` the predictive is a point mass and the CRPS is ``|y - mean|``.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        Observed targets.
    mean : array-like, shape (n,)
        Predictive means.
    sigma : array-like, shape (n,)
        Predictive standard deviations, ``>= 0``.

    Returns
    -------
    numpy.ndarray, shape (n,)
        CRPS per point, in the target's units (lower is better).
    """
    y, mu, s = check_gaussian(y_true, mean, sigma)
    err = y - mu
    positive = s > 0
    safe = np.where(positive, s, 1.0)
    z = err / safe
    crps = safe * (z * (2.0 * special.ndtr(z) - 1.0) + 2.0 * _normal_pdf(z) - _INV_SQRT_PI)
    return np.where(positive, crps, np.abs(err))


def _normal_pdf(z: FloatArray) -> FloatArray:
    """The standard normal density, as ``scipy.stats.norm.pdf`` computes it (bit for bit),
    without importing ``scipy.stats`` (half a second or more of every ``levy`` command's start)."""
    return np.exp(-z**2 / 2.0) / _SQRT_2PI


def crps_gaussian(y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike) -> float:
    """Mean closed-form Gaussian CRPS over the points.

    See [`crps_gaussian_per_point`][levy_core.metrics.crps_gaussian_per_point] for the formula and the ``sigma = 0``
    convention.

    Parameters
    ----------
    y_true, mean, sigma : array-like, shape (n,)

    Returns
    -------
    float
        Mean CRPS (lower is better).
    """
    return float(np.mean(crps_gaussian_per_point(y_true, mean, sigma)))


def crps_lognormal_per_point(y_true: ArrayLike, mu: ArrayLike, sigma: ArrayLike,
                             shift: ArrayLike = 0.0) -> FloatArray:
    """Closed-form CRPS of ``Y = exp(X) - shift``, ``X ~ N(mu, sigma^2)``, at each observation.

    The predictive of a channel fitted on ``log(v + shift)`` (``shift`` 0: log, 1: log1p)
    with a Gaussian there. With ``y' = y + shift > 0`` and ``z = (log y' - mu) / sigma``
    (Baran & Lerch 2015, eq. 5)::

        CRPS = y' (2 Phi(z) - 1) - 2 exp(mu + sigma^2/2) (Phi(z - sigma) + Phi(sigma/sqrt 2) - 1)

    and for ``y' <= 0`` (``z = -inf``) ``2 exp(mu + sigma^2/2)(1 - Phi(sigma/sqrt 2)) - y'``.
    Where ``sigma == 0`` the predictive is a point mass: ``|y' - exp(mu)|``.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        Observed targets, original units.
    mu, sigma : array-like, shape (n,)
        Mean and standard deviation of ``log(Y + shift)``, ``sigma >= 0``.
    shift : float or array-like, shape (n,)

    Returns
    -------
    numpy.ndarray, shape (n,)
        CRPS per point, in the target's units (lower is better).
    """
    y, m, s = check_gaussian(y_true, mu, sigma)
    yp = y + np.broadcast_to(np.asarray(shift, np.float64), y.shape)
    positive = s > 0
    safe = np.where(positive, s, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(yp > 0, (np.log(np.where(yp > 0, yp, 1.0)) - m) / safe, -np.inf)
    mean_x = np.exp(m + safe**2 / 2.0)
    crps = yp * (2.0 * special.ndtr(z) - 1.0) - 2.0 * mean_x * (
        special.ndtr(z - safe) + special.ndtr(safe / np.sqrt(2.0)) - 1.0)
    return np.where(positive, crps, np.abs(yp - np.exp(m)))


def crps_ensemble_per_point(
    y_true: ArrayLike, draws: ArrayLike, *, fair: bool = True
) -> FloatArray:
    """CRPS of an ensemble (sample) forecast at each observation.

    With ``m`` draws ``X_1..X_m`` per point::

        CRPS = mean_j |X_j - y| - c * sum_{j,k} |X_j - X_k|

    where ``c = 1 / (2 m (m - 1))`` for the *fair* (unbiased) estimator of the
    CRPS of the distribution the draws come from (Ferro 2014), and
    ``c = 1 / (2 m^2)`` for the standard empirical-distribution CRPS
    (``fair=False``; what ``properscoring.crps_ensemble`` computes).

    The pair sum is computed by sorting: for sorted draws ``x_(1) <= ... <= x_(m)``,
    ``sum_{j,k} |X_j - X_k| = 2 sum_i (2 i - m - 1) x_(i)``, so the cost is
    ``O(n m log m)`` time and ``O(n m)`` memory.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        Observed targets.
    draws : array-like, shape (n, m)
        ``m`` finite draws from the predictive of each point.
    fair : bool, default True
        Fair (unbiased, needs ``m >= 2``) or standard estimator.

    Returns
    -------
    numpy.ndarray, shape (n,)
        CRPS per point (lower is better). The fair version can be slightly
        negative for tiny ensembles.
    """
    y = as_1d(y_true, "y_true")
    try:
        x = np.asarray(draws, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"draws must be a numeric array of shape (n, m): {exc}") from exc
    if x.ndim != 2:
        raise ValueError(f"draws must have shape (n, m), got shape {x.shape}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(
            f"draws must have one row per point: y_true has {y.shape[0]}, draws has {x.shape[0]} rows"
        )
    m = x.shape[1]
    if m == 0:
        raise ValueError("draws must have at least one column (draw)")
    if np.isnan(x).any():
        raise ValueError("draws contains NaN")
    if np.isinf(x).any():
        raise ValueError("draws contains infinite values; it must be finite")
    if fair and m < 2:
        raise ValueError("the fair ensemble CRPS needs at least 2 draws per point (m >= 2)")

    x = np.sort(x, axis=1)  # (n, m)
    abs_err = np.mean(np.abs(x - y[:, None]), axis=1)  # (n,)
    weights = 2.0 * np.arange(1, m + 1) - m - 1.0  # (m,)
    pair_sum = 2.0 * (x @ weights)  # (n,) = sum_{j,k} |X_j - X_k|
    denom = 2.0 * m * (m - 1) if fair else 2.0 * m * m
    return abs_err - pair_sum / denom


def crps_ensemble(y_true: ArrayLike, draws: ArrayLike, *, fair: bool = True) -> float:
    """Mean ensemble CRPS over the points.

    See [`crps_ensemble_per_point`][levy_core.metrics.crps_ensemble_per_point].

    Parameters
    ----------
    y_true : array-like, shape (n,)
    draws : array-like, shape (n, m)
    fair : bool, default True

    Returns
    -------
    float
    """
    return float(np.mean(crps_ensemble_per_point(y_true, draws, fair=fair)))


def gaussian_nll(y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike) -> float:
    """Mean negative log-likelihood of ``y`` under ``N(mean, sigma^2)``.

    ``NLL_i = 0.5 log(2 pi) + log s_i + 0.5 ((y_i - mean_i) / s_i)^2`` with
    ``s_i = max(sigma_i, NLL_SIGMA_FLOOR)`` (``1e-12``, target units), so that
    ``sigma = 0`` gives a large but finite value instead of ``+-inf``/NaN.

    Parameters
    ----------
    y_true, mean, sigma : array-like, shape (n,)

    Returns
    -------
    float
        Mean NLL in nats (lower is better).
    """
    y, mu, s = check_gaussian(y_true, mean, sigma)
    s = np.maximum(s, NLL_SIGMA_FLOOR)
    z = (y - mu) / s
    return float(np.mean(_HALF_LOG_2PI + np.log(s) + 0.5 * z * z))


def interval_score(y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike, *, level: float) -> float:
    """Mean interval (Winkler) score of central ``level`` intervals.

    With ``alpha = 1 - level`` (Gneiting & Raftery 2007, eq. 43)::

        IS = (u - l) + (2 / alpha) (l - y) 1{y < l} + (2 / alpha) (y - u) 1{y > u}

    A proper score for the ``alpha/2`` and ``1 - alpha/2`` quantiles; lower is
    better. An infinite band scores ``inf``.

    Parameters
    ----------
    y_true, lower, upper : array-like, shape (n,)
    level : float
        Nominal coverage of the intervals, in (0, 1).

    Returns
    -------
    float
    """
    y, lo, hi = check_interval(y_true, lower, upper)
    alpha = 1.0 - check_level(level)
    below = np.maximum(lo - y, 0.0)  # 0 when lo = -inf
    above = np.maximum(y - hi, 0.0)  # 0 when hi = +inf
    return float(np.mean((hi - lo) + (2.0 / alpha) * (below + above)))
