"""The harmonic candidates of the base forecast: Prophet's additive model in closed form.

``harmonic`` regresses a channel's past on a piecewise-linear trend (Prophet's changepoints)
and ``sin/cos`` harmonics of every candidate period, with Gaussian priors on the
coefficients (the maximum a posteriori fit); ``harmonic_level`` keeps the seasonal profile
without a trend, re-levelled by the weighted level of its residuals; ``harmonic_recent``
fits the last ``RECENT_PERIODS`` longest periods only. The ``_ar`` variants add an AR(p) of
the gridded residuals carried forward from the origin (regression with autoregressive
errors, ``p`` by AIC at each origin). The candidates are listed in
[`levy_core.offsets.base_forecast`][levy_core.offsets.base_forecast].
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from levy_core.offsets.autoregression import aic_order, ar_ahead, regular_grid
from levy_core.offsets.smoothing import LEVEL_HALF_LIFE_GAPS, weighted_level
from levy_core.offsets.spec import MAX_AR_ORDER

__all__ = ["harmonic", "harmonic_ar", "harmonic_design", "harmonic_residuals", "harmonics_of", "map_fit",
           "residual_ar_order", "residual_order", "trend_design"]

MAX_HARMONICS = 4
RIDGE = 1e-3  # ridge penalty per observation on the (standardised) regressors
SEASONALITY_PRIOR = 10.0  # prior s.d. of a harmonic's coefficient (Prophet's seasonality_prior_scale)
TREND_PRIOR = 5.0  # of the slope over the past scaled to [0, 1] (Prophet's k ~ N(0, 5))
CHANGEPOINT_PRIOR = 0.05  # of each slope change (Prophet's changepoint_prior_scale)
CHANGEPOINT_RANGE = 0.8  # changepoints spread over the first 80 % of the past (Prophet's)
MAX_CHANGEPOINTS = 25
RECENT_PERIODS = 3.0  # harmonic_recent fits the last this many of its longest period


def harmonics_of(period: float, gap: float) -> int:
    """Sine/cosine pairs of a period (Prophet's orders: 10 for a year, 3 for a week, 4
    otherwise), no more than the sampling resolves."""
    order = 10 if period >= 300 * 24 else 3 if abs(period - 168.0) < 1 else MAX_HARMONICS
    return max(0, min(order, int((period / gap - 1) / 2)))  # below the Nyquist frequency


def harmonic_design(t: np.ndarray, periods: Iterable[float], gap: float) -> np.ndarray:
    """The ``sin/cos`` columns of every period's harmonics at ``t`` (n,): shape (n, 2 Σ_p k_p)."""
    cols = []
    for p in periods:
        for k in range(1, harmonics_of(p, gap) + 1):
            angle = 2 * np.pi * k * t / p
            cols += [np.sin(angle), np.cos(angle)]
    return np.column_stack(cols) if cols else np.zeros((len(t), 0))


def trend_design(t: np.ndarray, start: float, scale: float, knots: np.ndarray) -> np.ndarray:
    """A piecewise-linear trend in time scaled to [0, 1] over the past: the slope and one
    hinge ``max(0, s − s_j)`` per changepoint (Prophet's trend)."""
    s = (t - start) / scale
    return np.column_stack([s] + [np.maximum(0.0, s - k) for k in knots])


def map_fit(x: np.ndarray, y: np.ndarray, prior_sd: np.ndarray) -> tuple[np.ndarray, float]:
    """The maximum a posteriori coefficients of ``y ≈ x β + a`` under independent Gaussian
    priors ``β_j ~ N(0, prior_sd_j²)`` and a noise variance estimated from a first, nearly
    unpenalised fit (the intercept unpenalised): Prophet's fit with Gaussian priors."""
    xm, ym = x.mean(axis=0), y.mean()
    xc, yc = x - xm, y - ym
    gram, rhs = xc.T @ xc, xc.T @ yc
    eye = np.eye(x.shape[1])
    first = np.linalg.solve(gram + 1e-6 * (np.trace(gram) / max(x.shape[1], 1) + 1e-12) * eye, rhs)
    noise = max(float(np.mean((yc - xc @ first) ** 2)), 1e-12)
    beta = np.linalg.solve(gram + noise * np.diag(1.0 / prior_sd**2), rhs)
    return beta, float(ym - xm @ beta)


def _ridge(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Coefficients and intercept of a ridge regression (intercept unpenalised)."""
    xm, ym = x.mean(axis=0), y.mean()
    xc = x - xm
    gram = xc.T @ xc + RIDGE * len(y) * np.eye(x.shape[1])
    beta = np.linalg.solve(gram, xc.T @ (y - ym))
    return beta, float(ym - xm @ beta)


def harmonic(method: str, t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray,
              harmonics: tuple[float, ...], gap: float) -> tuple[np.ndarray | None, np.ndarray]:
    """One ``HARMONIC`` candidate: (its fit at the past points it used (the last ``k`` of
    ``t``), or None where it fell back to a simpler forecast; its forecast at ``tq``)."""
    n, last = len(t), float(y[-1])
    if method == "harmonic_recent":  # the last few longest periods (the last third without one)
        window = RECENT_PERIODS * max(harmonics) if harmonics else (origin - t[0]) / RECENT_PERIODS
        keep = t > origin - window
        t, y = t[keep], y[keep]
        n = len(t)
        if n < 2:
            return None, np.full(len(tq), last, dtype=np.float64)
    # a period longer than the past cannot be estimated from it: left out at this origin
    harmonics = tuple(p for p in harmonics if t[-1] - t[0] >= p)
    x_past = harmonic_design(t - origin, harmonics, gap)
    x_query = harmonic_design(tq - origin, harmonics, gap)
    prior = [SEASONALITY_PRIOR] * x_past.shape[1]
    if method != "harmonic_level":  # a trend and the seasonal profile
        scale = max(float(t[-1] - t[0]), gap)
        knots = (np.linspace(0.0, CHANGEPOINT_RANGE, min(MAX_CHANGEPOINTS, n // 8) + 1)[1:]
                 if method == "harmonic" else np.zeros(0))
        x_past = np.column_stack([x_past, trend_design(t, t[0], scale, knots)])
        x_query = np.column_stack([x_query, trend_design(tq, t[0], scale, knots)])
        prior += [TREND_PRIOR] + [CHANGEPOINT_PRIOR] * len(knots)
    if x_past.shape[1] == 0 or n < 8:
        fallback = last if method != "harmonic_level" else weighted_level(t, y, LEVEL_HALF_LIFE_GAPS * gap)
        return None, np.full(len(tq), fallback, dtype=np.float64)
    beta, intercept = map_fit(x_past, y, np.asarray(prior, np.float64))
    fitted_past = x_past @ beta + intercept
    out = x_query @ beta + intercept
    if method == "harmonic_level":  # re-levelled by the recent residuals (the level is part of the fit)
        level = weighted_level(t, y - fitted_past, LEVEL_HALF_LIFE_GAPS * gap)
        fitted_past, out = fitted_past + level, out + level
    return fitted_past, out


def harmonic_ar(method: str, t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray,
                 harmonics: tuple[float, ...], gap: float) -> tuple[np.ndarray, np.ndarray]:
    """A ``HARMONIC`` candidate at ``tq`` (m,), without and with an AR(p) of its gridded
    residuals carried forward (regression with autoregressive errors; ``p`` by
    `aic_order` at this origin): one fit for both."""
    out, z = harmonic_residuals(method, t, y, origin, tq, harmonics, gap)
    ahead = None if z is None else ar_ahead(z, residual_ar_order(z), origin, tq, gap)
    return out, (out if ahead is None else out + ahead)


def harmonic_residuals(method: str, t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray,
                        harmonics: tuple[float, ...], gap: float) -> tuple[np.ndarray, np.ndarray | None]:
    """A ``HARMONIC`` candidate's forecast at ``tq`` and its residuals over the past it fitted
    on a regular grid ending at ``origin`` (None where it fell back to a simpler forecast)."""
    fitted, out = harmonic(method, t, y, origin, tq, harmonics, gap)
    if fitted is None:
        return out, None
    keep = len(fitted)
    return out, regular_grid(t[-keep:], y[-keep:] - fitted, origin, gap)


def residual_ar_order(z: np.ndarray) -> int:
    """The residual AR's order: `aic_order` up to ``MAX_AR_ORDER``, a tenth of the points."""
    return aic_order(z, min(MAX_AR_ORDER, len(z) // 10))


def residual_order(t: np.ndarray, y: np.ndarray, periods: tuple[float, ...], gap: float) -> int:
    """The AR order the ``harmonic_ar`` candidate gives the residuals of the past ``(t, y)``
    at its last time (0 when there are none)."""
    _, z = harmonic_residuals("harmonic", t, y, float(t[-1]), t[-1:], periods, gap)
    return 0 if z is None else residual_ar_order(z)
