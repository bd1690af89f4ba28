"""A Gaussian-process posterior mean as a base-forecast candidate (``gp``).

The kernel is what a careful single-series user writes with scikit-learn: a smooth trend
(``C·RBF(long)``), for each of at most ``MAX_GP_PERIODS`` periods a locally periodic term
(``C·ExpSineSquared(P)·RBF(decay)``, the period fixed), short-range variation
(``C·RBF(short)``) and noise (``WhiteKernel``). Its hyperparameters are fitted once per
channel, by scikit-learn's marginal-likelihood optimiser, on the past of the channel's
best-observed series before the first origin the candidates are scored on (so the choice
between candidates never sees its own future); every origin then gets the posterior mean
given its own past, with those hyperparameters fixed, in closed form (one Cholesky
factorisation of at most ``MAX_POINTS`` points).

The cost is cubic in the points conditioned on, so the past is thinned: the latest
``RECENT_POINTS`` observations at full resolution and ``MAX_POINTS − RECENT_POINTS`` more
spread evenly over the rest of the last ``PERIODS_KEPT`` longest periods (the season a
year ago is what a yearly term needs, not every day of it).

Like every offset, the forecast is a deterministic function of the query time and the
past, never of the Poisson draw: ``σ̂`` stays exact (docs/levy-math-model.md, item 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_POINTS = 200  # observations a posterior conditions on (cubic cost)
RECENT_POINTS = 120  # of which the latest, at full resolution
FIT_POINTS = 240  # observations the hyperparameters are fitted on
PERIODS_KEPT = 2.5  # the thinned older past reaches back this many longest periods
MAX_GP_PERIODS = 2
MIN_POINTS = 12  # fewer past observations: the candidate is the last value
MAX_SERIES = 10  # the candidate is tried for one series or a few (a fit per channel, a solve per origin)
JITTER = 1e-8


@dataclass(frozen=True)
class GPSpec:
    """One channel's fitted kernel, recorded with the model.

    Attributes
    ----------
    unit : float
        Hours per kernel time unit (the span of the past the kernel was fitted on).
    periods : tuple of float
        The periods (hours) of the locally periodic terms (fixed, not fitted).
    theta : tuple of float
        The fitted kernel's log-hyperparameters, in scikit-learn's order for the kernel
        `kernel_for` builds with these periods.
    """

    unit: float
    periods: tuple[float, ...]
    theta: tuple[float, ...]

    def __post_init__(self) -> None:
        if not (math.isfinite(self.unit) and 0 < self.unit <= 1e8):
            raise ValueError("gp forecast: the time unit must be finite hours in (0, 1e8]")
        if len(self.periods) > MAX_GP_PERIODS or not all(math.isfinite(p) and 0 < p <= 1e7 for p in self.periods):
            raise ValueError(f"gp forecast: at most {MAX_GP_PERIODS} periods, finite hours in (0, 1e7]")
        if len(self.theta) != 5 + 3 * len(self.periods) or not all(math.isfinite(x) and abs(x) <= 50
                                                                   for x in self.theta):
            raise ValueError("gp forecast: the kernel's log-hyperparameters must be "
                             f"{5 + 3 * len(self.periods)} finite numbers within ±50")

    def to_dict(self) -> dict:
        return {"unit": self.unit, "periods": list(self.periods), "theta": list(self.theta)}

    @classmethod
    def from_dict(cls, data: dict) -> GPSpec:
        try:
            return cls(float(data["unit"]), tuple(float(p) for p in list(data["periods"])[:MAX_GP_PERIODS + 1]),
                       tuple(float(x) for x in list(data["theta"])[:64]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"gp forecast: malformed record ({exc})") from exc


def kernel_for(periods_in_units: tuple[float, ...], short_floor: float = 1e-3):
    """The kernel's structure (scikit-learn), time in units of the fitted span."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, ExpSineSquared, WhiteKernel

    kernel = ConstantKernel(1.0, (1e-3, 1e3)) * RBF(1.0, (0.25, 1e3))  # the trend
    for p in periods_in_units:
        kernel = kernel + (ConstantKernel(0.5, (1e-3, 1e3))
                           * ExpSineSquared(1.0, p, length_scale_bounds=(0.05, 20.0), periodicity_bounds="fixed")
                           * RBF(4 * p, (p, 1e3)))
    kernel = kernel + ConstantKernel(0.1, (1e-4, 1e2)) * RBF(0.05, (short_floor, 1.0))
    return kernel + WhiteKernel(0.05, (1e-6, 1.0))


def thinned(t: np.ndarray, y: np.ndarray, longest: float, *, total: int = MAX_POINTS,
            recent: int = RECENT_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The latest ``recent`` points and ``total − recent`` more spread evenly over the
    older past within ``PERIODS_KEPT`` longest periods (all of it without a period)."""
    if len(t) <= total:
        return t, y
    head_t, head_y = t[-recent:], y[-recent:]
    older = t[:-recent]
    keep = older >= (t[-1] - PERIODS_KEPT * longest) if longest > 0 else np.ones(len(older), bool)
    idx = np.flatnonzero(keep)
    if len(idx) > total - recent:
        idx = idx[np.linspace(0, len(idx) - 1, total - recent).round().astype(int)]
    return np.concatenate([older[idx], head_t]), np.concatenate([y[:-recent][idx], head_y])


def fit(t: np.ndarray, y: np.ndarray, periods: tuple[float, ...], gap: float) -> GPSpec | None:
    """Fit the kernel's hyperparameters to one channel's past ``(t, y)`` (n,), hours and
    normalised values, by maximum marginal likelihood (one start, deterministic). None
    when the past is too short."""
    from sklearn.gaussian_process import GaussianProcessRegressor

    if len(t) < MIN_POINTS:
        return None
    span = float(t[-1] - t[0])
    if not span > 0:
        return None
    periods = tuple(p for p in periods if span >= 2 * p)[:MAX_GP_PERIODS]
    tt, yy = thinned(t, y, max(periods, default=0.0), total=FIT_POINTS, recent=FIT_POINTS // 2)
    unit = float(tt[-1] - tt[0]) or span
    x = ((tt - tt[-1]) / unit)[:, None]
    scale = float(np.std(yy)) or 1.0
    z = (yy - yy.mean()) / scale
    kernel = kernel_for(tuple(p / unit for p in periods), short_floor=min(max(gap / unit, 1e-4), 0.5))
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gpr = GaussianProcessRegressor(kernel, normalize_y=False, optimizer="fmin_l_bfgs_b",
                                       n_restarts_optimizer=0, random_state=0).fit(x, z)
    theta = tuple(float(v) for v in gpr.kernel_.theta)
    if not all(math.isfinite(v) for v in theta):
        return None
    return GPSpec(unit, periods, theta)


def gram(theta: np.ndarray, periods_in_units: tuple[float, ...], x: np.ndarray,
         xq: np.ndarray | None = None) -> np.ndarray:
    """The kernel of `kernel_for` with log-hyperparameters ``theta``, evaluated in numpy.

    Parameters
    ----------
    theta : ndarray (5 + 3·len(periods_in_units),)
        scikit-learn's ``kernel.theta`` order: trend (c, ℓ); per period (c, ℓ_sine, ℓ_decay);
        short (c, ℓ); noise.
    x : ndarray (n,)
        Times (kernel units).
    xq : ndarray (m,), optional
        Other times: the cross-covariance ``k(xq, x)`` (m, n), no noise term. Without it the
        Gram matrix ``k(x, x)`` (n, n), noise on the diagonal.

    Bit for bit what scikit-learn's kernel returns (the same operations in the same order;
    ``tests/offsets/test_gp_forecast.py`` compares them), without its per-call cost of
    building and cloning the kernel objects: a posterior is asked for every origin.
    """
    p = np.exp(np.asarray(theta, dtype=np.float64))  # what clone_with_theta sets
    left = x if xq is None else xq
    if periods_in_units:  # |x_i − x_j|, as scipy's euclidean distance computes it
        diff = left[:, None] - x[None, :]
        dist = np.sqrt(diff * diff)

    def rbf(scale: float) -> np.ndarray:
        u = (left / scale)[:, None] - (x / scale)[None, :]
        return np.exp(-0.5 * (u * u))

    def periodic(period: float, scale: float) -> np.ndarray:
        arg = np.pi * dist / period if xq is None else np.pi / period * dist
        return np.exp(-2 * (np.sin(arg) / scale) ** 2)

    k = p[0] * rbf(p[1])  # a constant times a kernel, summed left to right as sklearn's tree
    for i, period in enumerate(periods_in_units):
        c, ls, decay = p[2 + 3 * i: 5 + 3 * i]
        k = k + (c * periodic(period, ls)) * rbf(decay)
    j = 2 + 3 * len(periods_in_units)
    k = k + p[j] * rbf(p[j + 1])
    return k + p[j + 2] * np.eye(len(x)) if xq is None else k


def posterior_mean(spec: GPSpec, t: np.ndarray, y: np.ndarray, tq: np.ndarray) -> np.ndarray:
    """The posterior mean at ``tq`` (m,) given the past ``(t, y)`` (n,), the spec's kernel
    fixed; the past is centred and scaled by its own mean and s.d. (as ``normalize_y``)."""
    if len(t) < MIN_POINTS:
        return np.full(len(tq), y[-1], dtype=np.float64)
    t, y = thinned(t, y, max(spec.periods, default=0.0))
    periods = tuple(p / spec.unit for p in spec.periods)
    x, xq = (t - t[-1]) / spec.unit, (tq - t[-1]) / spec.unit
    mean, scale = float(y.mean()), float(np.std(y)) or 1.0
    matrix = gram(np.asarray(spec.theta), periods, x)
    matrix[np.diag_indices_from(matrix)] += JITTER
    try:
        factor = np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return np.full(len(tq), y[-1], dtype=np.float64)
    alpha = np.linalg.solve(factor.T, np.linalg.solve(factor, (y - mean) / scale))
    # the cross-covariance has no noise term: WhiteKernel is zero between distinct inputs
    return mean + scale * (gram(np.asarray(spec.theta), periods, x, xq) @ alpha)
