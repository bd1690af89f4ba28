"""Metrics for point predictions with a Gaussian (mean, sigma) predictive.

One metric family per section, full names, and one argument order everywhere
(uncertainty-toolbox convention)::

    metric(y_true, mean, sigma, *, options)

All per-point inputs are 1-D array-likes of equal length ``n`` (anything
``np.asarray`` accepts: lists, numpy arrays, CPU torch tensors). They are
converted to ``float64``. Scalars come back as Python ``float``, curves as
``numpy`` arrays.

Input rules (each violation raises ``ValueError`` naming the argument):

- ``y_true``, ``mean``, ``sigma``, ``draws`` must be finite (no NaN, no inf);
- ``lower`` and ``upper`` may be ``-inf``/``+inf`` (e.g. an infinite conformal
  band) but not NaN, and ``lower <= upper`` pointwise;
- ``sigma >= 0``;
- every level lies in the open interval ``(0, 1)``;
- arrays are non-empty, 1-D, and of equal length.

``sigma = 0`` never produces NaN. The convention is the limit of the Gaussian
predictive as ``sigma -> 0``, i.e. a point mass at ``mean``:

- CRPS becomes the absolute error ``|y - mean|``;
- the central interval is the single point ``[mean, mean]`` (it covers ``y``
  only when ``y == mean`` exactly);
- the PIT is ``0`` below the mean, ``1`` above it and ``0.5`` at it;
- the Gaussian NLL, whose limit is infinite, floors ``sigma`` at
  :data:`NLL_SIGMA_FLOOR` (documented on :func:`gaussian_nll`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

__all__ = [
    "DEFAULT_LEVELS",
    "NLL_SIGMA_FLOOR",
    "calibration_curve",
    "central_interval",
    "coverage_by_level",
    "coverage_standard_error",
    "crps_ensemble",
    "crps_ensemble_per_point",
    "crps_gaussian",
    "crps_gaussian_per_point",
    "gaussian_nll",
    "interval_coverage",
    "interval_mean_width",
    "interval_score",
    "mean_absolute_error",
    "mean_squared_error",
    "miscalibration_area",
    "pit_values",
    "risk_coverage_area",
    "risk_coverage_curve",
    "sharpness",
    "spearman_sigma_abs_error",
]

FloatArray = NDArray[np.float64]

#: Grid of central-interval levels used by :func:`miscalibration_area` and
#: :func:`calibration_curve` by default: 0.01, 0.02, ..., 0.99.
DEFAULT_LEVELS: FloatArray = np.linspace(0.01, 0.99, 99)

#: Smallest sigma (in target units) used inside :func:`gaussian_nll`; a point
#: with ``sigma = 0`` is scored as if ``sigma = 1e-12``. The NLL of a point
#: mass is ``-inf`` at a hit and ``+inf`` at a miss, so some floor is needed to
#: keep the mean finite; this one is far below any sensible predictive spread.
NLL_SIGMA_FLOOR: float = 1e-12

_INV_SQRT_PI = 1.0 / np.sqrt(np.pi)
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


# ----------------------------------------------------------------------------
# input validation (shared with levy_core.calibrate)
# ----------------------------------------------------------------------------


def _as_1d(x: ArrayLike, name: str, *, allow_inf: bool = False) -> FloatArray:
    """Convert ``x`` to a non-empty 1-D float64 array without NaN (and inf)."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric 1-D array-like: {exc}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    nan = np.isnan(arr)
    if nan.any():
        raise ValueError(
            f"{name} contains {int(nan.sum())} NaN value(s) (first at index "
            f"{int(np.argmax(nan))}); drop or impute them first"
        )
    if not allow_inf:
        inf = np.isinf(arr)
        if inf.any():
            raise ValueError(
                f"{name} contains {int(inf.sum())} infinite value(s) (first at index "
                f"{int(np.argmax(inf))}); it must be finite"
            )
    return arr


def _same_length(**arrays: np.ndarray) -> None:
    """Raise ``ValueError`` unless all arrays have the same first dimension."""
    lengths = {name: a.shape[0] for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        raise ValueError(f"arguments must have the same length: {desc}")


def _check_sigma(sigma: ArrayLike, name: str = "sigma") -> FloatArray:
    """Finite, non-negative 1-D sigma."""
    s = _as_1d(sigma, name)
    if (s < 0).any():
        bad = int(np.argmax(s < 0))
        raise ValueError(f"{name} must be >= 0; {name}[{bad}] = {s[bad]!r}")
    return s


def _check_level(level: float, name: str = "level") -> float:
    """A real scalar strictly between 0 and 1."""
    if np.ndim(level) != 0:
        raise ValueError(f"{name} must be a scalar in (0, 1), got shape {np.shape(level)}")
    try:
        value = float(level)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number in (0, 1), got {level!r}") from exc
    if not 0.0 < value < 1.0:  # also rejects NaN
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {level!r}")
    return value


def _check_levels(levels: ArrayLike, name: str = "levels") -> FloatArray:
    """A non-empty 1-D array of levels, each strictly between 0 and 1."""
    arr = _as_1d(np.atleast_1d(np.asarray(levels, dtype=np.float64)), name)
    if ((arr <= 0.0) | (arr >= 1.0)).any():
        bad = arr[(arr <= 0.0) | (arr >= 1.0)][0]
        raise ValueError(f"every entry of {name} must lie strictly between 0 and 1, got {bad!r}")
    return arr


def _check_point_predictions(y_true: ArrayLike, mean: ArrayLike) -> tuple[FloatArray, FloatArray]:
    y = _as_1d(y_true, "y_true")
    mu = _as_1d(mean, "mean")
    _same_length(y_true=y, mean=mu)
    return y, mu


def _check_gaussian(
    y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    y = _as_1d(y_true, "y_true")
    mu = _as_1d(mean, "mean")
    s = _check_sigma(sigma)
    _same_length(y_true=y, mean=mu, sigma=s)
    return y, mu, s


def _check_bounds(lower: ArrayLike, upper: ArrayLike) -> tuple[FloatArray, FloatArray]:
    lo = _as_1d(lower, "lower", allow_inf=True)
    hi = _as_1d(upper, "upper", allow_inf=True)
    _same_length(lower=lo, upper=hi)
    if (lo > hi).any():
        bad = int(np.argmax(lo > hi))
        raise ValueError(
            f"lower must be <= upper pointwise; at index {bad} lower={lo[bad]!r} > upper={hi[bad]!r}"
        )
    return lo, hi


def _check_interval(
    y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    y = _as_1d(y_true, "y_true")
    lo, hi = _check_bounds(lower, upper)
    _same_length(y_true=y, lower=lo, upper=hi)
    return y, lo, hi


def _group_codes(groups: ArrayLike, n: int, name: str = "groups") -> tuple[np.ndarray, np.ndarray]:
    """Integer codes (first-appearance order) and the distinct labels, as strings, of one
    label per point; ValueError on a wrong length or a missing label."""
    labels = np.asarray(groups, dtype=object)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"{name} must be 1-D with one label per point ({n}), got shape {labels.shape}")
    missing = pd.isna(labels)
    if missing.any():
        raise ValueError(f"{name} has {int(missing.sum())} missing label(s) (first at index "
                         f"{int(np.argmax(missing))}); give every point a label")
    codes, uniques = pd.factorize(labels.astype(str))
    return codes, np.asarray(uniques, dtype=str)


def _gaussian_half_width(sigma: FloatArray, level: float) -> FloatArray:
    """``z_{(1+level)/2} * sigma``; exactly 0 where sigma is 0."""
    z = special.ndtri(0.5 + 0.5 * level)
    return z * sigma


# ----------------------------------------------------------------------------
# point-prediction errors
# ----------------------------------------------------------------------------


def mean_squared_error(y_true: ArrayLike, mean: ArrayLike) -> float:
    """Mean squared error ``mean((y - mean)^2)``.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        Observed targets.
    mean : array-like, shape (n,)
        Point predictions.

    Returns
    -------
    float
    """
    y, mu = _check_point_predictions(y_true, mean)
    return float(np.mean((y - mu) ** 2))


def mean_absolute_error(y_true: ArrayLike, mean: ArrayLike) -> float:
    """Mean absolute error ``mean(|y - mean|)``.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        Observed targets.
    mean : array-like, shape (n,)
        Point predictions.

    Returns
    -------
    float
    """
    y, mu = _check_point_predictions(y_true, mean)
    return float(np.mean(np.abs(y - mu)))


# ----------------------------------------------------------------------------
# proper scores: CRPS and NLL
# ----------------------------------------------------------------------------


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
    y, mu, s = _check_gaussian(y_true, mean, sigma)
    err = y - mu
    positive = s > 0
    safe = np.where(positive, s, 1.0)
    z = err / safe
    crps = safe * (z * (2.0 * special.ndtr(z) - 1.0) + 2.0 * stats.norm.pdf(z) - _INV_SQRT_PI)
    return np.where(positive, crps, np.abs(err))


def crps_gaussian(y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike) -> float:
    """Mean closed-form Gaussian CRPS over the points.

    See :func:`crps_gaussian_per_point` for the formula and the ``sigma = 0``
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
    y = _as_1d(y_true, "y_true")
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

    See :func:`crps_ensemble_per_point`.

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
    y, mu, s = _check_gaussian(y_true, mean, sigma)
    s = np.maximum(s, NLL_SIGMA_FLOOR)
    z = (y - mu) / s
    return float(np.mean(_HALF_LOG_2PI + np.log(s) + 0.5 * z * z))


# ----------------------------------------------------------------------------
# intervals
# ----------------------------------------------------------------------------


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
    mu = _as_1d(mean, "mean")
    s = _check_sigma(sigma)
    _same_length(mean=mu, sigma=s)
    half = _gaussian_half_width(s, _check_level(level))
    return mu - half, mu + half


def interval_coverage(y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike) -> float:
    """Fraction of points with ``lower <= y <= upper`` (bounds inclusive).

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
    y, lo, hi = _check_interval(y_true, lower, upper)
    return float(np.mean((lo <= y) & (y <= hi)))


def coverage_standard_error(
    y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike, *, groups: ArrayLike | None = None
) -> float:
    """Standard error of :func:`interval_coverage`.

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
    y, lo, hi = _check_interval(y_true, lower, upper)
    covered = ((lo <= y) & (y <= hi)).astype(np.float64)
    n = covered.size
    p = float(covered.mean())
    if groups is None:
        return float(np.sqrt(p * (1.0 - p) / n))
    codes, uniques = _group_codes(groups, n)
    n_groups = len(uniques)
    if n_groups < 2:
        raise ValueError("groups must contain at least two distinct labels for a grouped standard error")
    per_group = np.bincount(codes, weights=covered - p, minlength=n_groups)
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
    lo, hi = _check_bounds(lower, upper)
    return float(np.mean(hi - lo))


def coverage_by_level(
    y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike, levels: ArrayLike
) -> dict[float, float]:
    """Observed coverage of the central Gaussian interval at several levels.

    Parameters
    ----------
    y_true, mean, sigma : array-like, shape (n,)
    levels : array-like, shape (L,)
        Nominal levels, each in (0, 1).

    Returns
    -------
    dict[float, float]
        ``{level: observed coverage}``, in the order of ``levels``.
    """
    nominal, observed = calibration_curve(y_true, mean, sigma, levels)
    return {float(p): float(c) for p, c in zip(nominal, observed, strict=True)}


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
    y, lo, hi = _check_interval(y_true, lower, upper)
    alpha = 1.0 - _check_level(level)
    below = np.maximum(lo - y, 0.0)  # 0 when lo = -inf
    above = np.maximum(y - hi, 0.0)  # 0 when hi = +inf
    return float(np.mean((hi - lo) + (2.0 / alpha) * (below + above)))


# ----------------------------------------------------------------------------
# calibration
# ----------------------------------------------------------------------------


def calibration_curve(
    y_true: ArrayLike,
    mean: ArrayLike,
    sigma: ArrayLike,
    levels: ArrayLike = DEFAULT_LEVELS,
) -> tuple[FloatArray, FloatArray]:
    """Reliability curve of central Gaussian intervals.

    For each nominal level ``p`` the observed coverage is the fraction of
    points with ``|y - mean| <= z_{(1+p)/2} * sigma`` (inclusive, as in
    :func:`interval_coverage`).

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
    y, mu, s = _check_gaussian(y_true, mean, sigma)
    nominal = _check_levels(levels)
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
    (default 0.01, ..., 0.99), with ``observed`` from :func:`calibration_curve`.
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
    s = _check_sigma(sigma)
    return float(np.sqrt(np.mean(s * s)))


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
    y, mu, s = _check_gaussian(y_true, mean, sigma)
    err = y - mu
    positive = s > 0
    z = err / np.where(positive, s, 1.0)
    point_mass = 0.5 * (1.0 + np.sign(err))
    return np.where(positive, special.ndtr(z), point_mass)


# ----------------------------------------------------------------------------
# ranking quality: does sigma order the errors?
# ----------------------------------------------------------------------------


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
    y, mu, s = _check_gaussian(y_true, mean, sigma)
    abs_err = np.abs(y - mu)
    if s.size < 2 or np.ptp(s) == 0.0 or np.ptp(abs_err) == 0.0:
        return 0.0
    rho = float(stats.spearmanr(s, abs_err).statistic)
    return 0.0 if not np.isfinite(rho) else rho


_LOSSES = ("squared", "absolute")


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
    y, mu, s = _check_gaussian(y_true, mean, sigma)
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
