"""The deterministic offset ``b(q)`` of a fit on rolling origins: a classical forecaster.

One series or a few give little data to learn a forecast from, and classical forecasters
are strong there. Any offset that is a function of the query and the context, not of the
Poisson draw, keeps ``σ̂`` exact (``docs/levy-math.md``): the Lévy layer predicts the
*correction* to one of them, fitted in closed form to each episode's **whole past**.

The candidates, per channel (times in hours; ``o`` the origin, ``t_q`` the query):

* ``last`` — the last value;
* ``level`` — an exponentially weighted mean with a half-life of ``LEVEL_HALF_LIFE_GAPS``
  sampling intervals (simple exponential smoothing for irregular times);
* ``drift`` — the last value plus the average slope of the past (the random walk with drift);
* ``damped_trend`` — Holt's damped-trend exponential smoothing on a regular grid
  (`levy_core.offsets.smoothing`; its parameters fitted once per channel);
* ``holt`` — the same undamped (``φ = 1``): Holt's linear trend, ETS(A,A,N), which carries
  a steady trend over the whole horizon (a price index, a sector's employment);
* ``seasonal`` — the value one season ``P`` before ``t_q`` (the latest such time at or before
  ``o``; the last value when none lies within ``P/8``), for each candidate period;
* ``seasonal_drift`` — the same plus the change of the season's mean from the season before;
* ``harmonic`` — ridge regression of the past on a linear trend and ``sin/cos`` harmonics of
  every candidate period (Prophet's additive model, in closed form);
* ``harmonic_level`` — the same seasonal profile without a trend, re-levelled by the
  exponentially weighted mean of its residuals (the seasonal profile with a local level);
* ``harmonic_recent`` — ``harmonic`` on the last ``RECENT_PERIODS`` longest periods only (a
  local trend, and a cycle whose phase drifts); without a period, on the last third of the
  past;
* ``harmonic_ar``, ``harmonic_level_ar``, ``harmonic_recent_ar`` — each harmonic candidate
  plus an AR(p) of its residuals on the regular grid, carried forward from the origin
  (regression with autoregressive errors: a deviation from trend and season that persists
  — a CO₂ anomaly, a warm spell, a strong sunspot cycle — fades as it did in the past; ``p``
  by AIC at each origin); seasonal data only;
* ``autoregressive`` — an AR(p) of the past on a regular grid of the median sampling
  interval, ``p`` picked by AIC;
* ``gp`` — a Gaussian process's posterior mean (`levy_core.offsets.gp`; few series);
* ``combination`` — the mean of the ``COMBINED`` candidates that score best.

Candidate periods: [`levy_core.offsets.seasonality.candidate_periods`][levy_core.offsets.base_forecast.candidate_periods]. [`choose`][levy_core.offsets.base_forecast.choose] scores
every candidate on the later half of the training and calibration origins (the latest
before the test ones). The rule (``_pick``) keeps the one with the smallest squared error
there, a candidate over a simpler one (``METHODS`` is in order of complexity) only when its
error is lower by more than ``SIMPLER_MARGIN``, and the mean of the best ``COMBINED`` where
that is better still. It is applied to bootstrap resamples of the scored origins
(`levy_core.offsets.bagging`), and each channel's offset is the mean of the picks
weighted by how often each won: a clear winner alone, a close call a weighted combination.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from levy_core.offsets import gp as gp_forecast
from levy_core.offsets import smoothing
from levy_core.offsets.autoregression import (
    MAX_PAST,
    aic_order,
    ar_ahead,
    ar_order,
    autoregressive,
    regular_grid,
)
from levy_core.offsets.bagging import bagged_weights, overlap_lag
from levy_core.offsets.gp import GPSpec
from levy_core.offsets.seasonality import (
    candidate_periods,
    false_alarm,
    median_gap,
    periodogram_peak,
)
from levy_core.offsets.spec import (
    COMBINED,
    HARMONIC,
    HARMONIC_AR,
    MAX_AR_ORDER,
    METHODS,
    SEASONAL,
    BaseForecastSpec,
)
from levy_core.runtime.threads import single_threaded_blas

__all__ = ["HARMONIC_AR", "METHODS", "BaseForecast", "BaseForecastSpec", "CandidateScores", "candidate_periods", "choose",
           "false_alarm", "periodogram_peak", "residual_order", "score_candidates"]

MIN_SCORED_ORIGINS = 10  # candidates are scored on the later half of the origins from twice this many
OFFSET_RANGE = 10.0  # an offset beyond this many data ranges from the data is clipped (an exploding AR, a trend)
MAX_HARMONICS = 4
LEVEL_HALF_LIFE_GAPS = 4.0
RIDGE = 1e-3  # ridge penalty per observation on the (standardised) regressors
CACHE_EPISODES = 4096  # episodes whose offsets are kept (training re-asks for the same ones every epoch)
SEASONALITY_PRIOR = 10.0  # prior s.d. of a harmonic's coefficient (Prophet's seasonality_prior_scale)
TREND_PRIOR = 5.0  # of the slope over the past scaled to [0, 1] (Prophet's k ~ N(0, 5))
CHANGEPOINT_PRIOR = 0.05  # of each slope change (Prophet's changepoint_prior_scale)
CHANGEPOINT_RANGE = 0.8  # changepoints spread over the first 80 % of the past (Prophet's)
MAX_CHANGEPOINTS = 25
RECENT_PERIODS = 3.0  # harmonic_recent fits the last this many of its longest period
SIMPLER_MARGIN = 0.02  # a candidate must beat every simpler one by this share of squared error


# ---------------------------------------------------------------------------------------
# the forecasters: each maps one channel's past (t, y: times ≤ origin, sorted) to values at
# query times tq > origin (or anywhere: queries inside the past get the same formula)


def _level(t: np.ndarray, y: np.ndarray, half_life: float) -> float:
    w = np.exp2(-(t[-1] - t) / half_life)
    return float(np.sum(w * y) / np.sum(w))


def _seasonal(t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray, period: float) -> np.ndarray:
    """The past's value at ``τ = t_q − kP`` (k ≥ 1, the latest such time ≤ origin): read
    off the line between the observations either side of ``τ`` when they lie within
    ``P/8`` of each other (a missing point of a smooth cycle is not replaced by a neighbour
    an hour away in the cycle), else the value observed nearest ``τ``; NaN where none lies
    within ``P/8``."""
    k = np.maximum(np.ceil((tq - origin) / period), 1.0)
    tau = tq - k * period
    pos = np.clip(np.searchsorted(t, tau), 1, len(t) - 1)  # callers have at least two points
    left, right = pos - 1, pos
    pick = np.where(np.abs(t[left] - tau) <= np.abs(t[right] - tau), left, right)
    nearest = np.where(np.abs(t[pick] - tau) <= period / 8, y[pick], np.nan)
    width = t[right] - t[left]
    inside = (t[left] <= tau) & (tau <= t[right]) & (width <= period / 8) & (width > 0)
    share = np.where(inside, (tau - t[left]) / np.where(width > 0, width, 1.0), 0.0)
    return np.where(inside, y[left] + share * (y[right] - y[left]), nearest)


def harmonics_of(period: float, gap: float) -> int:
    """Sine/cosine pairs of a period (Prophet's orders: 10 for a year, 3 for a week, 4
    otherwise), no more than the sampling resolves."""
    order = 10 if period >= 300 * 24 else 3 if abs(period - 168.0) < 1 else MAX_HARMONICS
    return max(0, min(order, int((period / gap - 1) / 2)))  # below the Nyquist frequency


def _harmonic_design(t: np.ndarray, periods: Iterable[float], gap: float) -> np.ndarray:
    cols = []
    for p in periods:
        for k in range(1, harmonics_of(p, gap) + 1):
            angle = 2 * np.pi * k * t / p
            cols += [np.sin(angle), np.cos(angle)]
    return np.column_stack(cols) if cols else np.zeros((len(t), 0))


def _trend_design(t: np.ndarray, start: float, scale: float, knots: np.ndarray) -> np.ndarray:
    """A piecewise-linear trend in time scaled to [0, 1] over the past: the slope and one
    hinge ``max(0, s − s_j)`` per changepoint (Prophet's trend)."""
    s = (t - start) / scale
    return np.column_stack([s] + [np.maximum(0.0, s - k) for k in knots])


def _map_fit(x: np.ndarray, y: np.ndarray, prior_sd: np.ndarray) -> tuple[np.ndarray, float]:
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


class ChannelPast:
    """One (series, channel)'s observations ``times``, ``values`` (n,), sorted by time."""

    def __init__(self, times: np.ndarray, values: np.ndarray) -> None:
        order = np.argsort(times, kind="stable")
        self.t, self.y = times[order], values[order]

    def before(self, origin: float) -> tuple[np.ndarray, np.ndarray]:
        n = int(np.searchsorted(self.t, origin, side="right"))
        lo = max(0, n - MAX_PAST)
        return self.t[lo:n], self.y[lo:n]


def best_observed(past: dict[tuple[str, str], ChannelPast]) -> dict[str, ChannelPast]:
    """Per channel (in order of first appearance), the past of its series with the most observations (the first on ties)."""
    return {c: max((p for (_, ch), p in past.items() if str(ch) == c), key=lambda p: len(p.t))
            for c in dict.fromkeys(str(channel) for _, channel in past)}


def forecast(method: str, t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray, *,
             period: float = 0.0, harmonics: tuple[float, ...] = (), gap: float = 1.0,
             order: int = 0, gp: GPSpec | None = None,
             smoothing_parameters: tuple[float, float, float] | None = None) -> np.ndarray:
    """One candidate's forecast at ``tq`` (m,) from the past ``(t, y)`` (n,), ``t ≤ origin``
    sorted. Falls back to the last value where the method has too little past."""
    last = np.full(len(tq), y[-1], dtype=np.float64)
    n = len(t)
    if method == "last" or n < 2:
        return last
    if method == "level":
        return np.full(len(tq), _level(t, y, LEVEL_HALF_LIFE_GAPS * gap))
    if method == "drift":
        span = t[-1] - t[0]
        slope = (y[-1] - y[0]) / span if span > 0 else 0.0
        return last + slope * (tq - t[-1])
    if method in SEASONAL:
        if not period > 0:
            return last
        out = _seasonal(t, y, origin, tq, period)
        if method == "seasonal_drift":
            recent, before = (t > origin - period), (t > origin - 2 * period) & (t <= origin - period)
            if recent.any() and before.any():
                k = np.maximum(np.ceil((tq - origin) / period), 1.0)
                out = out + k * (y[recent].mean() - y[before].mean())
        return np.where(np.isfinite(out), out, last)
    if method == "autoregressive":
        return autoregressive(t, y, origin, tq, order=order, gap=gap)
    if method == "gp":
        return gp_forecast.posterior_mean(gp, t, y, tq) if gp is not None else last
    if method in ("damped_trend", "holt"):  # the caller passes the method's own (α, β, φ)
        if smoothing_parameters is None:
            return last
        z = regular_grid(t, y, origin, gap)
        steps = int(np.ceil(max(float(np.max(tq)) - origin, 0.0) / gap)) + 1
        path = smoothing.forecast(z, smoothing_parameters, steps)
        return np.interp(tq, origin + gap * np.arange(len(path)), path)
    if method in HARMONIC:
        return _harmonic(method, t, y, origin, tq, harmonics, gap)[1]
    if method in HARMONIC_AR:
        return _harmonic_ar(method.removesuffix("_ar"), t, y, origin, tq, harmonics, gap)[1]
    raise ValueError(f"unknown base-forecast method {method!r}")


def _harmonic(method: str, t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray,
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
    x_past = _harmonic_design(t - origin, harmonics, gap)
    x_query = _harmonic_design(tq - origin, harmonics, gap)
    prior = [SEASONALITY_PRIOR] * x_past.shape[1]
    if method != "harmonic_level":  # a trend and the seasonal profile
        scale = max(float(t[-1] - t[0]), gap)
        knots = (np.linspace(0.0, CHANGEPOINT_RANGE, min(MAX_CHANGEPOINTS, n // 8) + 1)[1:]
                 if method == "harmonic" else np.zeros(0))
        x_past = np.column_stack([x_past, _trend_design(t, t[0], scale, knots)])
        x_query = np.column_stack([x_query, _trend_design(tq, t[0], scale, knots)])
        prior += [TREND_PRIOR] + [CHANGEPOINT_PRIOR] * len(knots)
    if x_past.shape[1] == 0 or n < 8:
        fallback = last if method != "harmonic_level" else _level(t, y, LEVEL_HALF_LIFE_GAPS * gap)
        return None, np.full(len(tq), fallback, dtype=np.float64)
    beta, intercept = _map_fit(x_past, y, np.asarray(prior, np.float64))
    fitted_past = x_past @ beta + intercept
    out = x_query @ beta + intercept
    if method == "harmonic_level":  # re-levelled by the recent residuals (the level is part of the fit)
        level = _level(t, y - fitted_past, LEVEL_HALF_LIFE_GAPS * gap)
        fitted_past, out = fitted_past + level, out + level
    return fitted_past, out


def _harmonic_ar(method: str, t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray,
                 harmonics: tuple[float, ...], gap: float) -> tuple[np.ndarray, np.ndarray]:
    """A ``HARMONIC`` candidate at ``tq`` (m,), without and with an AR(p) of its gridded
    residuals carried forward (regression with autoregressive errors; ``p`` by
    `aic_order` at this origin): one fit for both."""
    out, z = _harmonic_residuals(method, t, y, origin, tq, harmonics, gap)
    ahead = None if z is None else ar_ahead(z, _residual_ar_order(z), origin, tq, gap)
    return out, (out if ahead is None else out + ahead)


def _harmonic_residuals(method: str, t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray,
                        harmonics: tuple[float, ...], gap: float) -> tuple[np.ndarray, np.ndarray | None]:
    """A ``HARMONIC`` candidate's forecast at ``tq`` and its residuals over the past it fitted
    on a regular grid ending at ``origin`` (None where it fell back to a simpler forecast)."""
    fitted, out = _harmonic(method, t, y, origin, tq, harmonics, gap)
    if fitted is None:
        return out, None
    keep = len(fitted)
    return out, regular_grid(t[-keep:], y[-keep:] - fitted, origin, gap)


def _residual_ar_order(z: np.ndarray) -> int:
    """The residual AR's order: `aic_order` up to ``MAX_AR_ORDER``, a tenth of the points."""
    return aic_order(z, min(MAX_AR_ORDER, len(z) // 10))


def residual_order(t: np.ndarray, y: np.ndarray, periods: tuple[float, ...], gap: float) -> int:
    """The AR order the ``harmonic_ar`` candidate gives the residuals of the past ``(t, y)``
    at its last time (0 when there are none)."""
    _, z = _harmonic_residuals("harmonic", t, y, float(t[-1]), t[-1:], periods, gap)
    return 0 if z is None else _residual_ar_order(z)


def bounded(t: np.ndarray, y: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """A forecast kept finite and within ``OFFSET_RANGE`` data ranges of the past's values
    (an autoregression that explodes or a trend run far ahead would otherwise hand the
    network non-finite or absurd offsets)."""
    lo, hi = float(np.min(y)), float(np.max(y))
    span = max(hi - lo, 1e-12)
    pred = np.nan_to_num(pred, nan=float(y[-1]), posinf=hi + OFFSET_RANGE * span, neginf=lo - OFFSET_RANGE * span)
    return np.clip(pred, lo - OFFSET_RANGE * span, hi + OFFSET_RANGE * span)


class BaseForecast:
    """The offsets of one model's episodes, from the whole past of their series.

    Parameters
    ----------
    spec : BaseForecastSpec
    frame : DataFrame
        The user's observations, normalised (columns series_id, channel, time, value; the
        user's ids and hours).
    origins : dict of str to (str, float)
        Model-space episode id → (user series id, origin in the user's hours)
        (``OriginClock.origins``).
    channels : list of str
        The model's channel vocabulary (position = channel code).
    """

    def __init__(self, spec: BaseForecastSpec, frame: pd.DataFrame, origins: dict[str, tuple[str, float]],
                 channels: list[str]) -> None:
        self.spec, self.origins, self.channels = spec, origins, list(channels)
        self._cache: dict[tuple[str, bytes, bytes], np.ndarray] = {}  # training asks for the same episodes every epoch
        self.past: dict[tuple[str, str], ChannelPast] = {}
        for (sid, channel), g in frame.groupby(["series_id", "channel"], sort=False):
            self.past[(str(sid), str(channel))] = ChannelPast(g["time"].to_numpy(np.float64),
                                                                g["value"].to_numpy(np.float64))

    def offsets(self, model_id: str, times: np.ndarray, channel_codes: np.ndarray) -> np.ndarray:
        """The offset of each query of one episode (model time ``times`` (m,), relative to
        its origin, and channel codes (m,)), in normalised units; NaN where the series never
        observed the channel before the origin (the model's own default applies there)."""
        times = np.asarray(times, np.float64)
        channel_codes = np.asarray(channel_codes, np.int64)
        key = (model_id, times.tobytes(), channel_codes.tobytes())
        cached = self._cache.get(key)
        if cached is not None:
            return cached.copy()
        sid, origin = self.origins[model_id]
        with single_threaded_blas():  # the same offsets whatever the machine's cores
            out = self._compute(sid, origin, times, channel_codes)
        if len(self._cache) >= CACHE_EPISODES:
            self._cache.clear()
        self._cache[key] = out
        return out.copy()

    def _compute(self, sid: str, origin: float, times: np.ndarray, channel_codes: np.ndarray) -> np.ndarray:
        out = np.full(len(times), np.nan)
        for code in np.unique(channel_codes):
            channel = self.channels[int(code)]
            method = self.spec.methods.get(channel)
            past = self.past.get((sid, channel))
            if method is None or past is None:
                continue
            t, y = past.before(origin)
            if not len(t):
                continue
            rows = np.flatnonzero(channel_codes == code)
            pairs = self.spec.members[channel] if method == "combination" else [
                (method, self.spec.periods.get(channel, 0.0))]
            weights = self.spec.weights.get(channel) if method == "combination" else None
            out[rows] = np.average([bounded(t, y, forecast(m, t, y, origin, origin + times[rows], period=period,
                                          harmonics=self.spec.harmonics, gap=self.spec.gap,
                                          order=self.spec.orders.get(channel, 0), gp=self.spec.gp.get(channel),
                                          smoothing_parameters=(self.spec.holt if m == "holt" else
                                                                self.spec.smoothing).get(channel)))
                                 for m, period in pairs], axis=0, weights=weights)
        return out


Smoothing = dict[str, tuple[float, float, float]]  # channel → (α, β, φ)


def fitted_parameters(richest: dict[str, ChannelPast], first: float, periods: tuple[float, ...], gap: float, *,
                      few: bool) -> tuple[dict[str, GPSpec], Smoothing, Smoothing]:
    """Per channel, from its best-observed series' past before ``first`` (the first scored
    origin: the choice never sees its own future): the Gaussian process's kernel (``few``
    series only), the damped trend's smoothing parameters and Holt's (``φ = 1``)."""
    kernels: dict[str, GPSpec] = {}
    damped: Smoothing = {}
    linear: Smoothing = {}
    for channel, p in richest.items():
        t, y = p.before(first)
        spec = gp_forecast.fit(t, y, periods, gap) if few and len(t) >= 30 else None
        if spec is not None:
            kernels[channel] = spec
        grid = regular_grid(t, y, float(t[-1]), gap) if len(t) >= 2 else None
        params = smoothing.fit(grid) if grid is not None else None
        if params is not None:
            damped[channel] = params
        params = smoothing.fit(grid, damped=False) if grid is not None else None
        if params is not None:
            linear[channel] = params
    return kernels, damped, linear


class CandidateScores(NamedTuple):
    """Every candidate's forecasts on the scored episodes ([`score_candidates`][levy_core.offsets.base_forecast.score_candidates]): the
    candidate ``periods`` and the sampling ``gap`` (hours); per channel the AR order, GP kernel,
    damped-trend and Holt parameters (fitted before the first scored origin); ``records``, per
    channel and scored episode in time order, each candidate ``(method, period)``'s forecast at
    the episode's queries (m,) and their values (m,), in normalised units."""

    periods: tuple[float, ...]
    gap: float
    orders: dict[str, int]
    kernels: dict[str, GPSpec]
    damped: Smoothing
    linear: Smoothing
    records: dict[str, list[tuple[dict[tuple[str, float], np.ndarray], np.ndarray]]]

    def forecasts(self, channel: str, t: np.ndarray, y: np.ndarray, origin: float,
                  tq: np.ndarray) -> dict[tuple[str, float], np.ndarray]:
        """Every candidate's forecast at ``tq`` (m,) from one channel's past ``(t, y)`` (n,):
        what the scoring computed at each scored origin, anywhere else (a held-out window)."""
        order, kernel = self.orders.get(channel, 0), self.kernels.get(channel)
        params = {"damped_trend": self.damped.get(channel), "holt": self.linear.get(channel)}
        names = [("last", 0.0), ("level", 0.0), ("drift", 0.0)]
        names += [(m, p) for p in self.periods for m in SEASONAL]
        # without a period, harmonic is Prophet's piecewise-linear trend alone and harmonic_recent a line
        # through the last third of the past; the residuals' AR only with a season (without one it repeats
        # the autoregressive and Holt candidates, and cost the development set's trending series 7-27 %)
        names += [(m, 0.0) for m in HARMONIC if self.periods or m != "harmonic_level"]
        names += [(m, 0.0) for m in HARMONIC_AR if self.periods]
        names += ([("autoregressive", 0.0)] if order else []) + ([("gp", 0.0)] if kernel else []) + [
            (m, 0.0) for m, v in params.items() if v]
        preds: dict[tuple[str, float], np.ndarray] = {}
        for method, period in names:
            if (method, period) in preds:
                continue
            if method in HARMONIC and self.periods:  # one harmonic fit gives it and its residual AR
                plain, with_ar = _harmonic_ar(method, t, y, origin, tq, self.periods, self.gap)
                preds[(method, 0.0)], preds[(f"{method}_ar", 0.0)] = bounded(t, y, plain), bounded(t, y, with_ar)
                continue
            preds[(method, period)] = bounded(t, y, forecast(method, t, y, origin, tq, period=period,
                                                             harmonics=self.periods, gap=self.gap, order=order,
                                                             gp=kernel, smoothing_parameters=params.get(method)))
        return preds


def score_candidates(frame: pd.DataFrame, origins: dict[str, tuple[str, float]],
                     episodes: dict[str, pd.DataFrame], scored: list[str], *,
                     season: float | None = None) -> CandidateScores:
    """Every candidate's forecast at the queries of the episodes ``scored`` (ids of
    ``episodes``, in time order), from each one's past; parameters fitted once per channel,
    on its best-observed series' past before the first of them. Arguments as
    [`choose_offsets`][levy_core.offsets.base_forecast.choose_offsets]."""
    periods = candidate_periods(frame) if season is None else ((float(season),) if season > 0 else ())
    gap = median_gap(frame["time"].to_numpy(np.float64)) or 1.0
    past = {key: ChannelPast(g["time"].to_numpy(np.float64), g["value"].to_numpy(np.float64))
            for key, g in frame.groupby(["series_id", "channel"], sort=False)}
    longest = max(periods, default=0.0)
    richest = best_observed(past)  # one order per channel: from its best-observed series
    orders = {channel: ar_order(p.t[-MAX_PAST:], p.y[-MAX_PAST:], gap, longest)
              for channel, p in richest.items() if len(p.t) >= 30}
    first = origins[scored[0]][1] if scored else np.inf  # parameters from the past before it only
    kernels, damped, linear = fitted_parameters(richest, first, tuple(periods), gap,
                                                few=frame["series_id"].nunique() <= gp_forecast.MAX_SERIES)
    cands = CandidateScores(tuple(periods), float(gap), orders, kernels, damped, linear, {})
    for model_id in scored:
        sid, origin = origins[model_id]
        for channel, q in episodes[model_id].groupby("channel", sort=False):
            p = past.get((str(sid), str(channel)))
            if p is None:
                continue
            t, y = p.before(origin)
            if not len(t):
                continue
            preds = cands.forecasts(str(channel), t, y, origin, q["time"].to_numpy(np.float64))
            cands.records.setdefault(str(channel), []).append((preds, q["value"].to_numpy(np.float64)))
    return cands


def choose(frame: pd.DataFrame, origins: dict[str, tuple[str, float]], episodes: dict[str, pd.DataFrame],
           *, season: float | None = None) -> BaseForecastSpec:
    """[`choose_offsets`][levy_core.offsets.base_forecast.choose_offsets] with NumPy's BLAS on one thread: the same choice whatever the
    machine's cores or load."""
    with single_threaded_blas():
        return choose_offsets(frame, origins, episodes, season=season)


def choose_offsets(frame: pd.DataFrame, origins: dict[str, tuple[str, float]], episodes: dict[str, pd.DataFrame],
                   *, season: float | None = None) -> BaseForecastSpec:
    """Score every candidate on the later half of ``episodes`` and keep the best per channel.

    Parameters
    ----------
    frame : DataFrame
        The user's observations that may be seen (before the first test origin), normalised
        (columns series_id, channel, time, value).
    origins : dict of str to (str, float)
        Episode id → (user series id, origin hours).
    episodes : dict of str to DataFrame
        Scored episode id → its queries (columns channel, time in the user's hours, value).
    season : float, optional
        A period the user asked for (hours; 0: no seasonal or harmonic candidates); None:
        [`candidate_periods`][levy_core.offsets.base_forecast.candidate_periods].
    """
    by_time = sorted(episodes, key=lambda m: (origins[m][1], m))
    # the later half of the origins: the nearest to what is forecast next, with the most past behind
    # them (the first origins' short past would decide for the candidates that need the least)
    scored = by_time[len(by_time) // 2:] if len(by_time) >= 2 * MIN_SCORED_ORIGINS else by_time
    cands = score_candidates(frame, origins, episodes, scored, season=season)
    lag = overlap_lag(np.array([origins[m][1] for m in scored], np.float64),
                      np.array([float(episodes[m]["time"].max()) for m in scored], np.float64))
    methods, chosen_periods, members, weights, scores = {}, {}, {}, {}, {}
    for channel, recs in cands.records.items():
        counts = np.array([len(yq) for _, yq in recs], np.float64)
        total = max(float(counts.sum()), 1.0)
        errors = _origin_errors(recs)
        keys = list(recs[0][0])
        scores[channel] = {f"{m}" + (f"@{p:g}h" if p else ""): round(float(errors([(m, p)]).sum()) / total, 8)
                           for m, p in keys}
        # the rule on bootstrap resamples of the scored origins, each pick weighted by how often it won
        won = bagged_weights(errors, counts, lag, lambda mse_of, keys=keys: _pick(keys, mse_of))
        if len(won) == 1:
            methods[channel], chosen_periods[channel] = next(iter(won))[0], float(next(iter(won))[1])
            continue
        ranked = sorted(won, key=lambda key: (-won[key], METHODS.index(key[0]), key[1]))
        methods[channel], chosen_periods[channel] = "combination", 0.0
        members[channel], weights[channel] = ranked, [won[key] for key in ranked]
        mixed = sum(float(np.sum((sum(w * p[k] for k, w in zip(ranked, weights[channel], strict=True)) - yq) ** 2))
                    for p, yq in recs)
        scores[channel]["combination"] = round(mixed / total, 8)

    def chosen(table: dict) -> dict:  # a fitted parameter of each channel that has one
        return {ch: table[ch] for ch in methods if ch in table}

    return BaseForecastSpec(methods, chosen_periods, cands.periods, cands.gap, {ch: cands.orders.get(ch, 0) for ch in methods},
                            members, scores, chosen(cands.kernels), chosen(cands.damped), chosen(cands.linear),
                            weights)


Records = list[tuple[dict[tuple[str, float], np.ndarray], np.ndarray]]


def _origin_errors(recs: Records) -> Callable[[Sequence[tuple[str, float]]], np.ndarray]:
    """Members → the summed squared error of their mean at each scored origin (n,), cached."""
    cache: dict[tuple[tuple[str, float], ...], np.ndarray] = {}

    def errors(members: Sequence[tuple[str, float]]) -> np.ndarray:
        key = tuple(members)
        if key not in cache:
            cache[key] = np.array([float(np.sum((np.mean([p[k] for k in key], axis=0) - yq) ** 2)) for p, yq in recs])
        return cache[key]

    return errors


def _pick(keys: list[tuple[str, float]], mse_of: Callable[[Sequence[tuple[str, float]]], float]) -> list[tuple[str, float]]:
    """The selection rule, given the mean squared error of any members: the simplest candidate
    (``METHODS`` order) unless a more complex one is ``SIMPLER_MARGIN`` better, then the mean of
    the best ``COMBINED`` where that is better still (forecasts combined often beat the best
    one chosen)."""
    each = {key: mse_of([key]) for key in keys}
    ordered = sorted(keys, key=lambda key: (METHODS.index(key[0]), key[1]))
    best = ordered[0]
    for key in ordered[1:]:  # a more complex candidate must be clearly better
        if each[key] < (1 - SIMPLER_MARGIN) * each[best]:
            best = key
    top = sorted(keys, key=lambda key: each[key])[:COMBINED]
    if len(top) >= 2 and mse_of(top) < (1 - SIMPLER_MARGIN) * each[best]:
        return top
    return [best]
