"""Calibration that holds over time where exchangeability fails: adaptive conformal inference (ACI).

Split conformal (`levy_core.calibration.split_conformal.SplitConformal`) needs exchangeable
calibration and test points; one drifting series forecast from rolling origins is not,
and a quantile fitted on its early part under- or over-covers later. Two MAPIE-style
steps for that case, on ``SplitConformal``'s score ``s = |y - ŷ| / max(σ, floor)`` (``σ``
a method's raw spread, e.g. ``σ̂``; `levy_core.calibration.scores`):

- `AdaptiveConformal` (here) -- adaptive conformal inference (ACI; Gibbs & Candès,
  "Adaptive Conformal Inference Under Distribution Shift", NeurIPS 2021; what MAPIE's
  ``TimeSeriesRegressor(method="aci")`` implements). Walking the test queries in time
  order, step ``t`` predicts ``ŷ -+ q_t σ`` with ``q_t`` the conformal quantile at level
  ``1 - α_t`` of the scores seen so far, then updates
  ``α_{t+1} = α_t + γ (α - err_t)`` (``α = 1 - level``, ``err_t`` = 1 on a miss). Whatever
  the data -- no exchangeability, no stationarity -- the long-run miscoverage obeys the
  deterministic bound of their Proposition 4.1,
  ``|mean_t(err_t) - α| <= (max(α_1, 1 - α_1) + γ) / (γ T)``.
- `RecencyWeightedConformal` -- weighted split
  conformal with recency weights (`levy_core.calibration.recency`).

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
`levy_core.calibration.scores.NotFittedError`. Everything is deterministic (no randomness).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from levy_core.calibration import saved_checks
from levy_core.calibration.scores import NotFittedError, check_scores, floored_sigma, unchecked_rank
from levy_core.metrics import checks
from levy_core.metrics.checks import FloatArray

__all__ = ["AdaptiveConformal", "AdaptiveResult"]

# Saved α_t must lie in [-γ, 1 + γ] (Gibbs & Candès, Lemma 4.1); 1e-9 absorbs the rounding
# of the running sum of updates (each ~1e-16, far fewer than 1e7 steps in any saved state).
_ALPHA_RANGE_TOL = 1e-9


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
        k = unchecked_rank(n, 1.0 - alpha_t)
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
        order, oldest first, finite, ``>= 0``; see [`normalised_scores`][levy_core.calibration.scores.normalised_scores]) and reset ``α_t``
        to ``α = 1 - level``. ``sigma_floor``: the floor the scores were computed with,
        applied to every later ``σ``. Returns ``self``."""
        s = check_scores(scores)
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
        s = floored_sigma(s, self.sigma_floor_)
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
        s = floored_sigma(checks.check_sigma(sigma), self.sigma_floor_)
        checks.same_length(mean=mu, sigma=s)
        q = pool.quantile(self.alpha_)
        half = (pool.sorted[-1] if finite and math.isinf(q) and pool.sorted else q) * s
        return mu - half, mu + half

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready state: parameters, ``α_t``, step count, floor and the pool in time order."""
        pool = self._require_fitted()
        return {"type": "AdaptiveConformal", "version": saved_checks.FORMAT_VERSION, "level": self.level,
                "gamma": self.gamma, "window": self.window, "alpha": self.alpha_,
                "n_steps": self.n_steps_, "sigma_floor": self.sigma_floor_, "scores": list(pool.in_time)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdaptiveConformal:
        """Rebuild from [`to_dict`][levy_core.calibration.adaptive.AdaptiveConformal.to_dict] output; ValueError naming the key on malformed input."""
        owner = "AdaptiveConformal"
        data = saved_checks.check_state(data, owner)
        saved_checks.check_keys(data, {"type", "version", "level", "gamma", "window", "alpha", "n_steps",
                           "sigma_floor", "scores"}, owner)
        gamma = saved_checks.saved_float(data, "gamma")
        raw_window = saved_checks.saved_value(data, "window", owner)
        window = None if raw_window is None else checks.check_positive_int(raw_window, "saved 'window'")
        obj = cls(level=saved_checks.saved_level(data, owner), gamma=gamma, window=window)
        scores = saved_checks.saved_time_scores(data, owner)
        if window is not None and scores.size > window:
            raise ValueError(f"saved 'scores' has {scores.size} scores, more than 'window' = {window}")
        obj.conformalize(scores, sigma_floor=saved_checks.saved_optional_floor(data, owner))
        obj.alpha_ = _saved_alpha(data, gamma, owner)
        raw_steps = saved_checks.saved_value(data, "n_steps", owner)
        obj.n_steps_ = 0 if raw_steps == 0 else checks.check_positive_int(raw_steps, "saved 'n_steps'")
        return obj


def _saved_alpha(data: dict[str, Any], gamma: float, owner: str) -> float:
    """Saved ``α_t``: a finite number in ``[-γ, 1 + γ]`` (Lemma 4.1)."""
    raw = saved_checks.saved_value(data, "alpha", owner)
    try:
        value = float(raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"saved 'alpha' must be a number, got {raw!r}") from exc
    if not (-gamma - _ALPHA_RANGE_TOL <= value <= 1.0 + gamma + _ALPHA_RANGE_TOL):
        raise ValueError(f"saved 'alpha' must lie in [-gamma, 1 + gamma] = [{-gamma}, {1 + gamma}], "
                         f"got {raw!r}")
    return value
