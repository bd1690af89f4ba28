"""Calibration and sharpness: central intervals, their coverage (with standard errors) and
width, reliability curves, PIT values, and the sharpness of the spread.

Coverage has one rule, [`covered`][levy_core.metrics.covered] (``lower <= y <= upper``, bounds inclusive, as
MAPIE), and every coverage number of the library is a share of it: [`interval_coverage`][levy_core.metrics.interval_coverage]
here, and above it the coverage family of [`levy_core.calibration.coverage`][levy_core.calibration.coverage] (the
family's table is there). Levels are fractions in (0, 1); a percent is refused.

Like uncertainty-toolbox's ``metrics_calibration`` this module also holds
[`sharpness`][levy_core.metrics.sharpness], the spread measure that calibration is read together with.
Inputs and the ``sigma = 0`` conventions are those of [`levy_core.metrics`][levy_core.metrics].
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from levy_core.metrics.checks import (
    FloatArray,
    as_1d,
    check_bounds,
    check_gaussian,
    check_interval,
    check_level,
    check_levels,
    check_sigma,
    gaussian_half_width,
    group_codes,
    same_length,
)

__all__ = [
    "DEFAULT_LEVELS",
    "calibration_curve",
    "central_interval",
    "coverage_standard_error",
    "covered",
    "interval_coverage",
    "interval_mean_width",
    "miscalibration_area",
    "pit_values",
    "sharpness",
]

#: Grid of central-interval levels used by [`miscalibration_area`][levy_core.metrics.coverage.miscalibration_area] and
#: [`calibration_curve`][levy_core.metrics.coverage.calibration_curve] by default: 0.01, 0.02, ..., 0.99.
DEFAULT_LEVELS: FloatArray = np.linspace(0.01, 0.99, 99)


def central_interval(
    mean: ArrayLike, sigma: ArrayLike, level: float
) -> tuple[FloatArray, FloatArray]:
    """Central Gaussian interval ``mean -+ z_{(1+level)/2} * sigma``.

    Parameters
    ----------
    mean : array-like, shape (n,)
    sigma : array-like, shape (n,)
        ``>= 0``; ``sigma = 0`` gives the degenerate interval ``[mean, mean]``.
    level : float
        Nominal coverage in (0, 1), e.g. 0.9.

    Returns
    -------
    lower, upper : numpy.ndarray, shape (n,)
    """
    mu = as_1d(mean, "mean")
    s = check_sigma(sigma)
    same_length(mean=mu, sigma=s)
    half = gaussian_half_width(s, check_level(level))
    return mu - half, mu + half


def covered(y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike) -> NDArray[np.bool_]:
    """Whether each point lies in its interval: ``lower <= y <= upper`` (bounds inclusive).

    The one coverage rule of the library; every coverage is a share of these.

    Parameters
    ----------
    y_true, lower, upper : array-like, shape (n,)
        Finite ``y_true``; bounds may be infinite, ``lower <= upper``.

    Returns
    -------
    numpy.ndarray of bool, shape (n,)
    """
    y, lo, hi = check_interval(y_true, lower, upper)
    return (lo <= y) & (y <= hi)


def interval_coverage(y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike) -> float:
    """Fraction of points with ``lower <= y <= upper`` (bounds inclusive): the mean of
    [`covered`][levy_core.metrics.covered].

    Same definition as MAPIE's ``regression_coverage_score``. Bounds may be
    infinite.

    Parameters
    ----------
    y_true, lower, upper : array-like, shape (n,)

    Returns
    -------
    float
        Observed coverage in [0, 1].
    """
    return float(np.mean(covered(y_true, lower, upper)))


def coverage_standard_error(
    y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike, *, groups: ArrayLike | None = None
) -> float:
    """Standard error of [`interval_coverage`][levy_core.metrics.interval_coverage].

    Without ``groups`` the points are taken as independent: the binomial
    ``sqrt(p (1 - p) / n)``. With ``groups`` (e.g. the series each query belongs
    to) points of one group may be correlated and groups are independent: the
    cluster-robust (sandwich) standard error of a mean,

        se^2 = G / (G - 1) * sum_g (sum_{i in g} (covered_i - p))^2 / n^2,

    the same number as statsmodels' ``OLS(covered, 1)`` with
    ``cov_type="cluster"`` (and ``"HC0"`` without groups). When the errors of a
    series move together -- a patient whose every value is hard to forecast --
    the grouped s.e. is several times the binomial one, and it is the honest one.

    Parameters
    ----------
    y_true, lower, upper : array-like, shape (n,)
    groups : array-like, shape (n,), optional
        A label per point (any hashable values); at least two distinct labels.

    Returns
    -------
    float
    """
    inside = covered(y_true, lower, upper).astype(np.float64)
    n = inside.size
    p = float(inside.mean())
    if groups is None:
        return float(np.sqrt(p * (1.0 - p) / n))
    codes, uniques = group_codes(groups, n)
    n_groups = len(uniques)
    if n_groups < 2:
        raise ValueError("groups must contain at least two distinct labels for a grouped standard error")
    per_group = np.bincount(codes, weights=inside - p, minlength=n_groups)
    return float(np.sqrt(n_groups / (n_groups - 1) * np.sum(per_group**2)) / n)


def interval_mean_width(lower: ArrayLike, upper: ArrayLike) -> float:
    """Mean width ``mean(upper - lower)``; ``inf`` if any bound is infinite.

    Parameters
    ----------
    lower, upper : array-like, shape (n,)
        ``lower <= upper`` pointwise.

    Returns
    -------
    float
    """
    lo, hi = check_bounds(lower, upper)
    return float(np.mean(hi - lo))


def calibration_curve(
    y_true: ArrayLike,
    mean: ArrayLike,
    sigma: ArrayLike,
    levels: ArrayLike = DEFAULT_LEVELS,
) -> tuple[FloatArray, FloatArray]:
    """Reliability curve of central Gaussian intervals.

    For each nominal level ``p`` the observed coverage is the fraction of
    points with ``|y - mean| <= z_{(1+p)/2} * sigma`` (inclusive, as in
    [`covered`][levy_core.metrics.covered]; all levels in one vectorised pass). ``dict(zip(*calibration_curve(...)))``
    is the coverage by level.

    Parameters
    ----------
    y_true, mean, sigma : array-like, shape (n,)
    levels : array-like, shape (L,), default 0.01, 0.02, ..., 0.99
        Nominal levels, each in (0, 1).

    Returns
    -------
    nominal : numpy.ndarray, shape (L,)
        The levels as given.
    observed : numpy.ndarray, shape (L,)
        Observed coverage at each level.
    """
    y, mu, s = check_gaussian(y_true, mean, sigma)
    nominal = check_levels(levels)
    z = special.ndtri(0.5 + 0.5 * nominal)  # (L,)
    half = z[:, None] * s[None, :]  # (L, n)
    lower = mu[None, :] - half  # (L, n)
    upper = mu[None, :] + half  # (L, n)
    observed = np.mean((lower <= y[None, :]) & (y[None, :] <= upper), axis=1)  # (L,)
    return nominal.copy(), observed


def miscalibration_area(
    y_true: ArrayLike,
    mean: ArrayLike,
    sigma: ArrayLike,
    *,
    levels: ArrayLike = DEFAULT_LEVELS,
) -> float:
    """Average absolute calibration error over central intervals.

    ``mean_p |observed(p) - p|`` over the grid of central-interval levels ``p``
    (default 0.01, ..., 0.99), with ``observed`` from [`calibration_curve`][levy_core.metrics.calibration_curve].
    On a uniform grid this approximates the area between the reliability curve
    and the diagonal. 0 is perfect calibration, lower is better.

    Note: uncertainty-toolbox's ``miscalibration_area`` uses a different
    construction (one-sided quantiles, polygon area); values are comparable in
    spirit but not equal.

    Parameters
    ----------
    y_true, mean, sigma : array-like, shape (n,)
    levels : array-like, shape (L,), keyword-only
        Nominal levels in (0, 1).

    Returns
    -------
    float
        In [0, 1).
    """
    nominal, observed = calibration_curve(y_true, mean, sigma, levels)
    return float(np.mean(np.abs(observed - nominal)))


def pit_values(y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike) -> FloatArray:
    """Probability integral transform ``Phi((y - mean) / sigma)``.

    Uniform on [0, 1] for a calibrated predictive. Where ``sigma == 0`` the
    predictive is a point mass: PIT is 0 if ``y < mean``, 1 if ``y > mean``
    and 0.5 if ``y == mean``.

    Parameters
    ----------
    y_true, mean, sigma : array-like, shape (n,)

    Returns
    -------
    numpy.ndarray, shape (n,)
        Values in [0, 1].
    """
    y, mu, s = check_gaussian(y_true, mean, sigma)
    err = y - mu
    positive = s > 0
    z = err / np.where(positive, s, 1.0)
    point_mass = 0.5 * (1.0 + np.sign(err))
    return np.where(positive, special.ndtr(z), point_mass)


def sharpness(sigma: ArrayLike) -> float:
    """Root mean predictive variance ``sqrt(mean(sigma^2))`` (uncertainty-toolbox).

    Smaller is sharper; only meaningful together with calibration.

    Parameters
    ----------
    sigma : array-like, shape (n,)

    Returns
    -------
    float
    """
    s = check_sigma(sigma)
    return float(np.sqrt(np.mean(s * s)))
