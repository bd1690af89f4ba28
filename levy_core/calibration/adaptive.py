"""Calibration that holds over time where exchangeability fails: ACI and recency-weighted conformal.

Split conformal ([`levy_core.calibration.calibrate.SplitConformal`][levy_core.calibration.calibrate.SplitConformal]) needs exchangeable
calibration and test points; one drifting series forecast from rolling origins is not,
and a quantile fitted on its early part under- or over-covers later. Two MAPIE-style
steps for that case, on ``SplitConformal``'s score ``s = |y - ŷ| / max(σ, floor)`` (``σ``
a method's raw spread, e.g. ``σ̂``):

- [`AdaptiveConformal`][levy_core.calibration.adaptive.AdaptiveConformal] -- adaptive conformal inference (ACI; Gibbs & Candès,
  "Adaptive Conformal Inference Under Distribution Shift", NeurIPS 2021; what MAPIE's
  ``TimeSeriesRegressor(method="aci")`` implements). Walking the test queries in time
  order, step ``t`` predicts ``ŷ -+ q_t σ`` with ``q_t`` the conformal quantile at level
  ``1 - α_t`` of the scores seen so far, then updates
  ``α_{t+1} = α_t + γ (α - err_t)`` (``α = 1 - level``, ``err_t`` = 1 on a miss). Whatever
  the data -- no exchangeability, no stationarity -- the long-run miscoverage obeys the
  deterministic bound of their Proposition 4.1,
  ``|mean_t(err_t) - α| <= (max(α_1, 1 - α_1) + γ) / (γ T)``.
- [`RecencyWeightedConformal`][levy_core.calibration.adaptive.RecencyWeightedConformal] -- weighted split conformal with recency weights
  ``w_i = decay^(n - i)`` (Barber, Candès, Ramdas & Tibshirani, "Conformal prediction
  beyond exchangeability", Ann. Statist. 2023, "nexCP"): old scores count less, so a
  quantile fitted before a jump in the noise follows the recent scores.

Usage::

    scores, floor = normalised_scores(y_cal, mean_cal, sigma_cal)   # calibration, time order
    aci = AdaptiveConformal(level=0.9, gamma=0.005).conformalize(scores, sigma_floor=floor)
    result = aci.run(y_test, mean_test, sigma_test, order=t_test)    # walks the test queries
    result.coverage, result.long_run_miscoverage_gap, result.bound
    lower, upper = aci.next_interval(mean_future, sigma_future)      # beyond the end of the data

Conventions mirror ``SplitConformal``: the quantile at level ``p`` of ``n`` scores is the
``k``-th smallest with ``k = ceil((n + 1) p)`` (with a ``1e-12`` relative slack against
binary rounding of decimal levels), an infinite band when ``k > n``; ``σ`` is floored at
``sigma_floor = rel_floor * median(σ > 0)`` of the calibration split, and the same stored
floor is applied to every later ``σ`` so that all scores come from one score function.
A band covers ``y`` when ``lower <= y <= upper`` (as [`levy_core.metrics`][levy_core.metrics]). Bad input
raises ``ValueError`` naming the argument; a step used before ``conformalize`` raises
[`levy_core.calibration.calibrate.NotFittedError`][levy_core.calibration.calibrate.NotFittedError]. Everything is deterministic (no randomness).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from levy_core.calibration import state
from levy_core.calibration.calibrate import DEFAULT_REL_FLOOR, NotFittedError
from levy_core.metrics import checks
from levy_core.metrics.checks import FloatArray

__all__ = [
    "AdaptiveConformal",
    "AdaptiveResult",
    "RecencyWeightedConformal",
    "conformal_rank",
    "normalised_scores",
    "relative_sigma_floor",
    "weighted_quantile",
]

# Relative slack before ceil((n + 1) p), as in levy_core.calibration.calibrate: a decimal level such as
# 0.9 is stored as 0.9000000000000000222..., and (n + 1) p can land a hair above the integer
# it means; binary rounding is ~1e-16 relative, 1e-12 absorbs it.
_CEIL_REL_TOL = 1e-12

# Saved α_t must lie in [-γ, 1 + γ] (Gibbs & Candès, Lemma 4.1); 1e-9 absorbs the rounding
# of the running sum of updates (each ~1e-16, far fewer than 1e7 steps in any saved state).
_ALPHA_RANGE_TOL = 1e-9


def conformal_rank(n: int, level: float) -> int:
    """The rank ``k = max(1, ceil((n + 1) level))`` of the conformal quantile of ``n`` scores.

    ``k > n`` means the quantile is ``+inf`` (too few scores for that level). ``(n + 1)
    level`` is taken with a ``1e-12`` relative slack before the ceiling, exactly as
    [`levy_core.calibration.calibrate.SplitConformal.quantile`][levy_core.calibration.calibrate.SplitConformal.quantile].
    """
    return _rank(checks.check_positive_int(n, "n"), checks.check_level(level))


def _rank(n: int, p: float) -> int:
    """[`conformal_rank`][levy_core.calibration.adaptive.conformal_rank] unchecked; ``p`` may round to 1.0 (``1 - α_t``, tiny ``α_t``)."""
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
    [`relative_sigma_floor`][levy_core.calibration.adaptive.relative_sigma_floor] of ``sigma`` with ``rel_floor``. Returns the scores, shape
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
    right side with the ``1e-12`` relative slack of [`conformal_rank`][levy_core.calibration.adaptive.conformal_rank]), ``+inf`` if no
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


def _scores_arg(scores: ArrayLike) -> FloatArray:
    """Calibration scores: finite, ``>= 0``, shape (n,), kept in the order given (time)."""
    s = checks.as_1d(scores, "scores")
    if (s < 0).any():
        raise ValueError(f"scores must be >= 0; scores[{int(np.argmax(s < 0))}] = {float(s[s < 0][0])!r}")
    return s.copy()


def _floored_sigma(sigma: FloatArray, floor: float | None) -> FloatArray:
    """``max(σ, floor)``; without a stored floor every ``σ`` must already be positive."""
    if floor is not None:
        return np.maximum(sigma, floor)
    if (sigma <= 0).any():
        raise ValueError("sigma must be > 0 when conformalized without sigma_floor: pass the "
                         "sigma_floor the scores were computed with (see normalised_scores)")
    return sigma


def _steps(order: ArrayLike | None, n: int) -> list[NDArray[np.intp]]:
    """Query indices of each step, in walk order: one query a step, or one time a step."""
    if order is None:
        return [np.array([i]) for i in range(n)]
    times = checks.as_1d(order, "order")
    if times.size != n:
        raise ValueError(f"order must have one time per query ({n}), got {times.size}")
    perm = np.argsort(times, kind="stable")
    cuts = np.flatnonzero(np.diff(times[perm]) != 0) + 1
    return np.split(perm, cuts)


def _saved(data: dict[str, Any], key: str, owner: str) -> Any:
    try:
        return data[key]
    except KeyError as exc:
        raise ValueError(f"saved {owner} is missing {key!r}") from exc


def _check_keys(data: dict[str, Any], allowed: set[str], owner: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ValueError(f"saved {owner} has unknown key(s) {unknown}")


def _saved_level(data: dict[str, Any], owner: str) -> float:
    return checks.check_level(_saved(data, "level", owner), "saved 'level'")


def _saved_floor(data: dict[str, Any], owner: str) -> float | None:
    return None if _saved(data, "sigma_floor", owner) is None else state.saved_float(data, "sigma_floor")


def _saved_scores(data: dict[str, Any], owner: str) -> FloatArray:
    try:
        return _scores_arg(_saved(data, "scores", owner))
    except ValueError as exc:
        raise ValueError(f"saved 'scores' is malformed: {exc}") from exc


class _ScorePool:
    """Scores in time order (the oldest dropped beyond ``window``) and the same sorted."""

    def __init__(self, scores: FloatArray, window: int | None) -> None:
        kept = scores if window is None else scores[-window:]
        self.window = window
        self.in_time: deque[float] = deque(float(v) for v in kept)
        self.sorted: list[float] = sorted(self.in_time)

    def add(self, values: FloatArray) -> None:
        for v in values.tolist():
            self.in_time.append(v)
            bisect.insort(self.sorted, v)
            if self.window is not None and len(self.in_time) > self.window:
                old = self.in_time.popleft()
                del self.sorted[bisect.bisect_left(self.sorted, old)]

    def quantile(self, alpha_t: float) -> float:
        """Score quantile at level ``1 - α_t``: inf for ``α_t <= 0``, 0 for ``α_t >= 1``."""
        if alpha_t <= 0.0:
            return math.inf
        if alpha_t >= 1.0:
            return 0.0
        n = len(self.sorted)
        k = _rank(n, 1.0 - alpha_t)
        return math.inf if k > n else self.sorted[k - 1]


@dataclass(frozen=True)
class AdaptiveResult:
    """What [`AdaptiveConformal.run`][levy_core.calibration.adaptive.AdaptiveConformal.run] walked: the bands and the α and error paths.

    ``lower``, ``upper`` (n,): each query's band in the input order (infinite where
    ``α_t`` gave an infinite band; ``lower == upper == ŷ`` for the empty band of ``α_t >=
    1``). ``covered`` (n,): ``lower <= y <= upper``, False on an empty band (even if ``y ==
    ŷ``). ``alpha``, ``err`` (T,): ``α_t`` and ``err_t`` (the fraction of the step's queries
    missed) of each of the ``T`` steps, in walk order. ``level`` (``1 - α``), ``gamma``
    (``γ``) and ``next_alpha`` (``α_{T+1}``, what the next query will use).
    """

    lower: FloatArray
    upper: FloatArray
    covered: NDArray[np.bool_]
    alpha: FloatArray
    err: FloatArray
    level: float
    gamma: float
    next_alpha: float

    @property
    def n_steps(self) -> int:
        """``T``, the number of steps (distinct times) walked."""
        return int(self.alpha.size)

    @property
    def coverage(self) -> float:
        """Fraction of the ``n`` queries covered."""
        return float(np.mean(self.covered))

    @property
    def long_run_miscoverage_gap(self) -> float:
        """``|mean_t err_t - α|`` over the ``T`` steps, what Proposition 4.1 bounds."""
        return abs(float(np.mean(self.err)) - (1.0 - self.level))

    @property
    def bound(self) -> float:
        """Gibbs & Candès' deterministic bound ``(max(α_1, 1 - α_1) + γ) / (γ T)``."""
        a1 = float(self.alpha[0])
        return (max(a1, 1.0 - a1) + self.gamma) / (self.gamma * self.n_steps)

    @property
    def mean_width(self) -> float:
        """Mean of ``upper - lower`` over the queries (``inf`` if any band is infinite)."""
        return float(np.mean(self.upper - self.lower))


class AdaptiveConformal:
    """Adaptive conformal inference (Gibbs & Candès 2021) on the normalised score ``|y - ŷ| / σ``.

    Step ``t`` (one query, or every query of one time / forecast origin) gets the band
    ``ŷ -+ q_t max(σ, floor)`` with ``q_t`` the conformal quantile (rank ``ceil((n + 1)(1 -
    α_t))`` of the ``n`` scores seen so far) at level ``1 - α_t``; ``α_t <= 0`` gives an
    infinite band, ``α_t >= 1`` the empty band (reported as the zero-width ``[ŷ, ŷ]`` and
    counted as a miss, as the paper's empty set). Then ``err_t`` (the fraction of the step's
    queries missed) updates ``α_{t+1} = α_t + γ (α - err_t)`` and the step's scores join
    the pool. ``α_t`` is not clipped: by Lemma 4.1 it stays in ``[-γ, 1 + γ]``, and
    telescoping the updates gives Proposition 4.1,
    ``|mean_t err_t - α| <= (max(α_1, 1 - α_1) + γ) / (γ T)``, for any data. With several
    queries a step the proof is unchanged (``err_t`` lies in [0, 1], is 0 on an infinite
    band and 1 on an empty one); the bound is in steps ``T``, not queries.

    Parameters
    ----------
    level : float, default 0.9
        Target coverage ``1 - α`` in (0, 1); ``α_1 = α``.
    gamma : float, default 0.005
        Step size ``γ > 0``: larger adapts faster and bounds the long-run gap tighter
        (``~1/(γT)``), at the price of more jittery bands.
    window : int, optional
        Keep only the last ``window`` scores (calibration, then test, in time order);
        default all of them.

    Attributes
    ----------
    alpha_ : float
        The current ``α_t`` (the next step's).
    sigma_floor_ : float or None
        Floor applied to every ``σ`` (None: ``σ`` must be positive).
    n_steps_ : int
        Steps walked since ``conformalize``.

    Differences from MAPIE 1.6 ``TimeSeriesRegressor(method="aci")``: MAPIE clips ``α_t`` to
    [0, 1] after each update (so Proposition 4.1's telescoping, hence its bound, no longer
    holds exactly), rounds the target ``α`` to 2 decimals, counts ``y`` on a bound as a miss,
    and adds test scores to its fixed-size pool only through ``update`` (our ``window`` =
    its calibration size, with ``update`` after every step).
    """

    def __init__(self, level: float = 0.9, gamma: float = 0.005, window: int | None = None) -> None:
        self.level = checks.check_level(level)
        self.gamma = checks.check_positive(gamma, "gamma")
        self.window = None if window is None else checks.check_positive_int(window, "window")
        self.alpha_: float = 1.0 - self.level
        self.sigma_floor_: float | None = None
        self.n_steps_: int = 0
        self._pool: _ScorePool | None = None

    def __repr__(self) -> str:
        n = None if self._pool is None else len(self._pool.in_time)
        return (f"AdaptiveConformal(level={self.level!r}, gamma={self.gamma!r}, window={self.window!r}, "
                f"alpha_={self.alpha_!r}, n_scores={n!r})")

    @property
    def is_fitted(self) -> bool:
        """Whether [`conformalize`][levy_core.calibration.adaptive.AdaptiveConformal.conformalize] has been called (or the state loaded)."""
        return self._pool is not None

    @property
    def scores_(self) -> FloatArray:
        """The scores the next quantile is taken from, shape (m,), in time order."""
        return np.array(self._require_fitted().in_time, dtype=np.float64)

    def _require_fitted(self) -> _ScorePool:
        if self._pool is None:
            raise NotFittedError("this AdaptiveConformal has no scores yet: call conformalize(scores) "
                                 "with the calibration scores in time order first")
        return self._pool

    def conformalize(self, scores: ArrayLike, *, sigma_floor: float | None = None) -> AdaptiveConformal:
        """Start from the calibration scores (shape (n,), ``|y - ŷ| / max(σ, floor)`` in time
        order, oldest first, finite, ``>= 0``; see [`normalised_scores`][levy_core.calibration.adaptive.normalised_scores]) and reset ``α_t``
        to ``α = 1 - level``. ``sigma_floor``: the floor the scores were computed with,
        applied to every later ``σ``. Returns ``self``."""
        s = _scores_arg(scores)
        self.sigma_floor_ = None if sigma_floor is None else checks.check_positive(sigma_floor, "sigma_floor")
        self._pool = _ScorePool(s, self.window)
        self.alpha_, self.n_steps_ = 1.0 - self.level, 0
        return self

    def quantile(self, alpha_t: float | None = None) -> float:
        """Score quantile at level ``1 - α_t`` of the current pool (default: the current
        ``α_t``); ``inf`` for ``α_t <= 0`` or too few scores, 0 for ``α_t >= 1``."""
        pool = self._require_fitted()
        if alpha_t is None:
            return pool.quantile(self.alpha_)
        if not isinstance(alpha_t, int | float | np.integer | np.floating) or math.isnan(alpha_t):
            raise ValueError(f"alpha_t must be a real number, got {alpha_t!r}")
        return pool.quantile(float(alpha_t))

    def run(self, y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike,
            order: ArrayLike | None = None) -> AdaptiveResult:
        """Walk the test queries in time order: predict each step's band, then update.

        Continues from the current state (``α_t`` and the pool), so ``run(a); run(b)``
        walks exactly as ``run(a + b)`` when ``b`` comes after ``a``.

        Parameters
        ----------
        y_true, mean, sigma : array-like, shape (n,)
            Test targets, predicted means and raw spreads ``σ >= 0``.
        order : array-like, shape (n,), optional
            Each query's time (or forecast origin), numbers. The walk follows
            ``argsort(order)`` (stable); queries with equal ``order`` form one step: the
            same ``α_t``, one update with their average error, and their scores join the
            pool after the step. Default: input order, one query a step.

        Returns
        -------
        AdaptiveResult
            Bands in the input order; α and error paths in walk order.
        """
        pool = self._require_fitted()
        y, mu, s = checks.check_gaussian(y_true, mean, sigma)
        s = _floored_sigma(s, self.sigma_floor_)
        steps = _steps(order, y.size)
        scores = np.abs(y - mu) / s
        lower, upper = np.empty_like(y), np.empty_like(y)
        covered = np.empty(y.size, dtype=bool)
        alphas, errs = np.empty(len(steps)), np.empty(len(steps))
        target = 1.0 - self.level
        for t, idx in enumerate(steps):
            a = self.alpha_
            half = pool.quantile(a) * s[idx]  # inf where q is inf (s > 0)
            lower[idx], upper[idx] = mu[idx] - half, mu[idx] + half
            hit = (lower[idx] <= y[idx]) & (y[idx] <= upper[idx]) & (a < 1.0)
            covered[idx] = hit
            alphas[t], errs[t] = a, 1.0 - float(np.mean(hit))
            self.alpha_ = a + self.gamma * (target - errs[t])
            pool.add(scores[idx])
        self.n_steps_ += len(steps)
        return AdaptiveResult(lower=lower, upper=upper, covered=covered, alpha=alphas, err=errs,
                              level=self.level, gamma=self.gamma, next_alpha=self.alpha_)

    def next_interval(self, mean: ArrayLike, sigma: ArrayLike, *,
                      finite: bool = False) -> tuple[FloatArray, FloatArray]:
        """The band ``(lower, upper)``, shape (n,) each, for new queries ``mean``, ``sigma``
        (n,) after the last step (a forecast beyond the data): all share the current ``α_t``,
        as one step would; nothing is updated. Infinite where ``α_t`` gives an infinite band
        (more misses than the step absorbs), unless ``finite``: then the largest score seen,
        the band that would have covered every error so far; ``ŷ`` (empty) if ``α_t >= 1``."""
        pool = self._require_fitted()
        mu = checks.as_1d(mean, "mean")
        s = _floored_sigma(checks.check_sigma(sigma), self.sigma_floor_)
        checks.same_length(mean=mu, sigma=s)
        q = pool.quantile(self.alpha_)
        half = (pool.sorted[-1] if finite and math.isinf(q) and pool.sorted else q) * s
        return mu - half, mu + half

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready state: parameters, ``α_t``, step count, floor and the pool in time order."""
        pool = self._require_fitted()
        return {"type": "AdaptiveConformal", "version": state.FORMAT_VERSION, "level": self.level,
                "gamma": self.gamma, "window": self.window, "alpha": self.alpha_,
                "n_steps": self.n_steps_, "sigma_floor": self.sigma_floor_, "scores": list(pool.in_time)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdaptiveConformal:
        """Rebuild from [`to_dict`][levy_core.calibration.adaptive.AdaptiveConformal.to_dict] output; ValueError naming the key on malformed input."""
        owner = "AdaptiveConformal"
        data = state.check_state(data, owner)
        _check_keys(data, {"type", "version", "level", "gamma", "window", "alpha", "n_steps",
                           "sigma_floor", "scores"}, owner)
        gamma = state.saved_float(data, "gamma")
        raw_window = _saved(data, "window", owner)
        window = None if raw_window is None else checks.check_positive_int(raw_window, "saved 'window'")
        obj = cls(level=_saved_level(data, owner), gamma=gamma, window=window)
        scores = _saved_scores(data, owner)
        if window is not None and scores.size > window:
            raise ValueError(f"saved 'scores' has {scores.size} scores, more than 'window' = {window}")
        obj.conformalize(scores, sigma_floor=_saved_floor(data, owner))
        obj.alpha_ = _saved_alpha(data, gamma, owner)
        raw_steps = _saved(data, "n_steps", owner)
        obj.n_steps_ = 0 if raw_steps == 0 else checks.check_positive_int(raw_steps, "saved 'n_steps'")
        return obj


def _saved_alpha(data: dict[str, Any], gamma: float, owner: str) -> float:
    """Saved ``α_t``: a finite number in ``[-γ, 1 + γ]`` (Lemma 4.1)."""
    raw = _saved(data, "alpha", owner)
    try:
        value = float(raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"saved 'alpha' must be a number, got {raw!r}") from exc
    if not (-gamma - _ALPHA_RANGE_TOL <= value <= 1.0 + gamma + _ALPHA_RANGE_TOL):
        raise ValueError(f"saved 'alpha' must lie in [-gamma, 1 + gamma] = [{-gamma}, {1 + gamma}], "
                         f"got {raw!r}")
    return value


def _check_decay(decay: float) -> float:
    try:
        value = float(decay)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"decay must be a number in (0, 1], got {decay!r}") from exc
    if not 0.0 < value <= 1.0:  # also rejects NaN
        raise ValueError(f"decay must lie in (0, 1], got {decay!r}")
    return value


class RecencyWeightedConformal:
    """Weighted split conformal with recency weights (Barber, Candès, Ramdas & Tibshirani 2023).

    The calibration scores ``s_1, ..., s_n`` (time order, ``s_n`` the most recent) get the
    fixed weights ``w_i = decay^(n - i)``; the test point gets weight 1 at ``+inf``. The
    band is ``ŷ -+ q max(σ, floor)`` with ``q`` the level quantile of
    ``sum_i w̃_i δ_{s_i} + w̃_{n+1} δ_{+inf}``, ``w̃_i = w_i / (w_1 + ... + w_n + 1)``,
    ``w̃_{n+1} = 1 / (w_1 + ... + w_n + 1)`` (their nexCP split-conformal formula; see
    [`weighted_quantile`][levy_core.calibration.adaptive.weighted_quantile]). ``decay = 1`` is split conformal (``SplitConformal``
    pooled); ``decay < 1`` keeps an effective memory of about ``1 / (1 - decay)`` scores.

    Coverage without exchangeability (their Theorem 2, fixed weights and a fitted model
    that does not depend on the calibration points): with ``Z = (Z_1, ..., Z_{n+1})`` the
    calibration points and the test point, ``Z^i`` the same sequence with ``Z_i`` and
    ``Z_{n+1}`` swapped, and ``R(Z)`` the vector of their scores,

        ``P(y_{n+1} in band) >= level - sum_{i=1}^n w̃_i d_TV(R(Z), R(Z^i))``.

    The coverage gap is therefore small when the points that carry the weight (the
    recent ones) are nearly exchangeable with the test point, whatever the older points
    do; with exchangeable data every ``d_TV`` is 0 and the bound is split conformal's.
    The ``d_TV`` terms are unknown in practice: the bound is stated, not checked.

    Parameters
    ----------
    level : float, default 0.9
        Target coverage in (0, 1), the default of [`predict_interval`][levy_core.calibration.adaptive.RecencyWeightedConformal.predict_interval].
    decay : float, default 0.99
        In (0, 1]; 1 gives equal weights.

    Attributes
    ----------
    sigma_floor_ : float or None
        Floor applied to every ``σ`` (None: ``σ`` must be positive).
    """

    def __init__(self, level: float = 0.9, decay: float = 0.99) -> None:
        self.level = checks.check_level(level)
        self.decay = _check_decay(decay)
        self.sigma_floor_: float | None = None
        self._scores: FloatArray | None = None

    def __repr__(self) -> str:
        n = None if self._scores is None else self._scores.size
        return f"RecencyWeightedConformal(level={self.level!r}, decay={self.decay!r}, n_calibration={n!r})"

    @property
    def is_fitted(self) -> bool:
        """Whether [`conformalize`][levy_core.calibration.adaptive.RecencyWeightedConformal.conformalize] has been called (or the state loaded)."""
        return self._scores is not None

    def _require_fitted(self) -> FloatArray:
        if self._scores is None:
            raise NotFittedError("this RecencyWeightedConformal has no scores yet: call "
                                 "conformalize(scores) with the calibration scores in time order first")
        return self._scores

    @property
    def scores_(self) -> FloatArray:
        """Calibration scores in time order, shape (n,) (a copy)."""
        return self._require_fitted().copy()

    @property
    def weights_(self) -> FloatArray:
        """Recency weights ``decay^(n - i)``, shape (n,), aligned with [`scores_`][levy_core.calibration.adaptive.RecencyWeightedConformal.scores_]."""
        n = self._require_fitted().size
        return self.decay ** np.arange(n - 1, -1, -1, dtype=np.float64)

    @property
    def effective_size(self) -> float:
        """Kish's effective number of scores ``(sum w)^2 / sum w^2``."""
        w = self.weights_
        return float(np.sum(w) ** 2 / np.sum(w * w))

    def conformalize(self, scores: ArrayLike, *, sigma_floor: float | None = None) -> RecencyWeightedConformal:
        """Store the calibration scores (shape (n,), ``|y - ŷ| / max(σ, floor)`` in time
        order, oldest first, finite, ``>= 0``) and ``sigma_floor``, the floor they were
        computed with (applied to every later ``σ``). Returns ``self``."""
        s = _scores_arg(scores)
        self.sigma_floor_ = None if sigma_floor is None else checks.check_positive(sigma_floor, "sigma_floor")
        self._scores = s
        return self

    def quantile(self, level: float | None = None) -> float:
        """The recency-weighted conformal quantile at ``level`` (default ``self.level``)."""
        scores = self._require_fitted()
        return weighted_quantile(scores, self.weights_, self.level if level is None else level)

    def predict_interval(self, mean: ArrayLike, sigma: ArrayLike,
                         level: float | None = None) -> tuple[FloatArray, FloatArray]:
        """Band ``(ŷ - q max(σ, floor), ŷ + q max(σ, floor))``, shape (n,) each, for
        ``mean``, ``sigma`` of shape (n,) at ``level`` (default ``self.level``); infinite
        where the quantile is."""
        q = self.quantile(level)
        mu = checks.as_1d(mean, "mean")
        s = _floored_sigma(checks.check_sigma(sigma), self.sigma_floor_)
        checks.same_length(mean=mu, sigma=s)
        return mu - q * s, mu + q * s

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready state: level, decay, floor and the scores in time order."""
        scores = self._require_fitted()
        return {"type": "RecencyWeightedConformal", "version": state.FORMAT_VERSION, "level": self.level,
                "decay": self.decay, "sigma_floor": self.sigma_floor_, "scores": scores.tolist()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecencyWeightedConformal:
        """Rebuild from [`to_dict`][levy_core.calibration.adaptive.RecencyWeightedConformal.to_dict] output; ValueError naming the key on malformed input."""
        owner = "RecencyWeightedConformal"
        data = state.check_state(data, owner)
        _check_keys(data, {"type", "version", "level", "decay", "sigma_floor", "scores"}, owner)
        try:
            decay = _check_decay(_saved(data, "decay", owner))
        except ValueError as exc:
            raise ValueError(f"saved 'decay' is malformed: {exc}") from exc
        obj = cls(level=_saved_level(data, owner), decay=decay)
        return obj.conformalize(_saved_scores(data, owner), sigma_floor=_saved_floor(data, owner))
