"""Weighted split conformal with recency weights, for bands that hold when the noise drifts.

Split conformal (`levy_core.calibration.split_conformal`) needs exchangeable calibration
and test points; one drifting series is not. `RecencyWeightedConformal` weighs the
calibration scores with recency weights ``w_i = decay^(n - i)`` (Barber, Candès, Ramdas &
Tibshirani, "Conformal prediction beyond exchangeability", Ann. Statist. 2023, "nexCP"): old
scores count less, so a quantile fitted before a jump in the noise follows the recent scores.
Its companion for the same case is adaptive conformal inference
(`levy_core.calibration.adaptive`).

Scores and floors follow `levy_core.calibration.scores` (see
`normalised_scores`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from levy_core.calibration import saved_checks
from levy_core.calibration.scores import (
    NotFittedError,
    check_scores,
    floored_sigma,
    weighted_quantile,
)
from levy_core.metrics import checks
from levy_core.metrics.checks import FloatArray

__all__ = ["RecencyWeightedConformal"]


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
    [`weighted_quantile`][levy_core.calibration.scores.weighted_quantile]). ``decay = 1`` is split conformal (``SplitConformal``
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
        Target coverage in (0, 1), the default of [`predict_interval`][levy_core.calibration.recency.RecencyWeightedConformal.predict_interval].
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
        """Whether [`conformalize`][levy_core.calibration.recency.RecencyWeightedConformal.conformalize] has been called (or the state loaded)."""
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
        """Recency weights ``decay^(n - i)``, shape (n,), aligned with [`scores_`][levy_core.calibration.recency.RecencyWeightedConformal.scores_]."""
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
        s = check_scores(scores)
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
        s = floored_sigma(checks.check_sigma(sigma), self.sigma_floor_)
        checks.same_length(mean=mu, sigma=s)
        return mu - q * s, mu + q * s

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready state: level, decay, floor and the scores in time order."""
        scores = self._require_fitted()
        return {"type": "RecencyWeightedConformal", "version": saved_checks.FORMAT_VERSION, "level": self.level,
                "decay": self.decay, "sigma_floor": self.sigma_floor_, "scores": scores.tolist()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecencyWeightedConformal:
        """Rebuild from [`to_dict`][levy_core.calibration.recency.RecencyWeightedConformal.to_dict] output; ValueError naming the key on malformed input."""
        owner = "RecencyWeightedConformal"
        data = saved_checks.check_state(data, owner)
        saved_checks.check_keys(data, {"type", "version", "level", "decay", "sigma_floor", "scores"}, owner)
        try:
            decay = _check_decay(saved_checks.saved_value(data, "decay", owner))
        except ValueError as exc:
            raise ValueError(f"saved 'decay' is malformed: {exc}") from exc
        obj = cls(level=saved_checks.saved_level(data, owner), decay=decay)
        return obj.conformalize(saved_checks.saved_time_scores(data, owner), sigma_floor=saved_checks.saved_optional_floor(data, owner))
