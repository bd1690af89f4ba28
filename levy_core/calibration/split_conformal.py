"""Split conformal on the normalised score ``r = |y - ŷ| / σ̂``, pooled or per group.

For exchangeable calibration and test points the band ``ŷ -+ q σ̂`` covers with probability
``>= level`` at every level, where ``q`` is the ``ceil((n+1) level)``-th smallest
calibration score (infinite band when that index exceeds ``n``). ``σ̂`` is floored as every
calibration step floors it (`levy_core.calibration.scores`).

Per-group ("Mondrian") conformal: pass ``groups`` (e.g. each query's channel) to
``conformalize`` and the quantile is taken among the calibration scores of the
point's own group, so the guarantee holds *within each group* (heart rate and
lactate alike), not only on average over a mix dominated by the frequent
channels. A group with fewer than ``min_group_size`` calibration scores (or one
unseen in calibration) uses the pooled scores.

Usage::

    cal = SplitConformal().conformalize(y_cal, mean_cal, sigma_cal)
    lower, upper = cal.predict_interval(mean_test, sigma_test, level=0.9)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from levy_core.calibration import saved_checks
from levy_core.calibration.scores import DEFAULT_REL_FLOOR, NotFittedError, calibration_sigma_floor
from levy_core.metrics import checks
from levy_core.metrics.checks import FloatArray

__all__ = ["DEFAULT_MIN_GROUP_SIZE", "SplitConformal"]

#: Per-group conformal: groups with fewer calibration scores than this use the pooled ones
#: (50 keeps the 95 % quantile finite: ceil(51 * 0.95) = 49 <= 50).
DEFAULT_MIN_GROUP_SIZE: int = 50

# Relative slack when taking ceil((n + 1) * level): a decimal level such as 0.9
# is stored as 0.9000000000000000222..., and (n + 1) * level can land a hair above
# the integer it means (25 * 0.28 -> 7.000000000000001). Binary rounding is
# ~1e-16 relative; 1e-12 absorbs it without touching any level that differs from
# a decimal by more than 1e-12.
_CEIL_REL_TOL = 1e-12


class SplitConformal:
    """Split conformal prediction with the normalised score ``|y - ŷ| / σ``, pooled or per group.

    Parameters
    ----------
    rel_floor : float, default 1e-6
        Sigma floor relative to the median positive calibration sigma.
    min_group_size : int, default 50
        Per-group conformal: a group with fewer calibration scores uses the pooled ones.

    Attributes
    ----------
    scores_ : numpy.ndarray, shape (n,)
        Sorted calibration scores ``r_(1) <= ... <= r_(n)`` (all groups pooled).
    group_scores_ : dict[str, numpy.ndarray] or None
        Sorted scores of each group when conformalized with ``groups``.
    sigma_floor_ : float
        Absolute sigma floor used for the scores and at prediction.
    """

    def __init__(self, rel_floor: float = DEFAULT_REL_FLOOR,
                 min_group_size: int = DEFAULT_MIN_GROUP_SIZE) -> None:
        self.rel_floor = checks.check_positive(rel_floor, "rel_floor")
        self.min_group_size = checks.check_positive_int(min_group_size, "min_group_size")
        self.scores_: FloatArray | None = None
        self.group_scores_: dict[str, FloatArray] | None = None
        self.sigma_floor_: float | None = None
        # what `extended` added to another instance's scores (None: conformalized whole)
        self.added_scores_: FloatArray | dict[str, FloatArray] | None = None

    def __repr__(self) -> str:
        n = None if self.scores_ is None else self.scores_.size
        groups = "" if self.group_scores_ is None else f", groups={len(self.group_scores_)}"
        return f"SplitConformal(rel_floor={self.rel_floor!r}, n_calibration={n!r}{groups})"

    @property
    def is_fitted(self) -> bool:
        """Whether [`conformalize`][levy_core.calibration.split_conformal.SplitConformal.conformalize] has been called (or the state loaded)."""
        return self.scores_ is not None

    @property
    def is_grouped(self) -> bool:
        """Whether the scores were conformalized per group."""
        return self.group_scores_ is not None

    @property
    def n_calibration_(self) -> int:
        """Number of calibration scores (all groups)."""
        return self._require_fitted()[0].size

    def _require_fitted(self) -> tuple[FloatArray, float]:
        if self.scores_ is None or self.sigma_floor_ is None:
            raise NotFittedError(
                "this SplitConformal has no calibration scores yet: call "
                "conformalize(y_true, mean, sigma) on a calibration split before "
                "quantile() or predict_interval()"
            )
        return self.scores_, self.sigma_floor_

    def conformalize(self, y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike, *,
                     groups: ArrayLike | None = None) -> SplitConformal:
        """Store the sorted normalised calibration scores (and each group's, with ``groups``).

        Parameters
        ----------
        y_true, mean, sigma : array-like, shape (n,)
            Calibration targets, predicted means and spreads ``>= 0``. Any
            positive rescaling of ``sigma`` (e.g. ``c σ̂``) gives the same bands.
        groups : array-like, shape (n,), optional
            A label per point (compared as strings), e.g. the channel: per-group conformal.

        Returns
        -------
        SplitConformal
            ``self``, conformalized.
        """
        y, mu, s = checks.check_gaussian(y_true, mean, sigma)
        grouped = None if groups is None else checks.group_codes(groups, y.size)
        floor = calibration_sigma_floor(s, self.rel_floor)
        scores = np.abs(y - mu) / np.maximum(s, floor)
        self.scores_ = np.sort(scores)
        self.sigma_floor_ = floor
        self.group_scores_, self.added_scores_ = None, None
        if grouped is not None:
            codes, uniques = grouped
            order = np.argsort(codes, kind="stable")
            bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
            self.group_scores_ = {str(u): np.sort(scores[order[bounds[i]:bounds[i + 1]]])
                                  for i, u in enumerate(uniques)}
        return self

    def extended(self, y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike, *,
                 groups: ArrayLike | None = None) -> SplitConformal:
        """A new instance holding these scores and the points' own, scored with this
        instance's ``sigma_floor_`` (one score function for all); per group when this one is.

        A panel's band for new series: the calibration split's scores extended by the test
        split's. ``added_scores_`` keeps what was added (``added_to_dict``: the saved form
        stores only that beside the calibration split's scores).

        Parameters
        ----------
        y_true, mean, sigma : array-like, shape (n,)
        groups : array-like, shape (n,)
            Required when this instance is grouped, refused otherwise.

        Returns
        -------
        SplitConformal
        """
        _, floor = self._require_fitted()
        y, mu, s = checks.check_gaussian(y_true, mean, sigma)
        if (groups is None) != (self.group_scores_ is None):
            raise ValueError("extend a per-group SplitConformal with groups=, a pooled one without")
        scores = np.abs(y - mu) / np.maximum(s, floor)
        if groups is None:
            return self.extended_by_scores(scores)
        labels = np.asarray(groups, dtype=object).astype(str)
        checks.same_length(y_true=y, groups=labels)
        return self.extended_by_scores({g: scores[labels == g] for g in np.unique(labels)})

    def extended_by_scores(self, added: FloatArray | dict[str, FloatArray]) -> SplitConformal:
        """A new instance holding these scores and ``added`` (already scored: an array when
        pooled, a mapping of group to scores when grouped); ``added_scores_`` keeps them."""
        scores, floor = self._require_fitted()
        out = SplitConformal(rel_floor=self.rel_floor, min_group_size=self.min_group_size)
        out.sigma_floor_ = floor
        if self.group_scores_ is None:
            if isinstance(added, dict):
                raise ValueError("a pooled SplitConformal is extended by an array of scores")
            extra = np.sort(np.asarray(added, np.float64))
            out.scores_, out.added_scores_ = np.sort(np.concatenate([scores, extra])), extra
            return out
        if not isinstance(added, dict):
            raise ValueError("a per-group SplitConformal is extended by a mapping of group to scores")
        extra_by_group = {str(g): np.sort(np.asarray(v, np.float64)) for g, v in added.items()}
        merged = dict(self.group_scores_)
        for g, v in extra_by_group.items():
            merged[g] = np.sort(np.concatenate([merged.get(g, np.empty(0)), v]))
        out.group_scores_, out.added_scores_ = merged, extra_by_group
        out.scores_ = np.sort(np.concatenate(list(merged.values())))
        return out

    def added_to_dict(self) -> list[float] | dict[str, list[float]]:
        """The scores ``extended`` added, JSON-serialisable (``extended_by_scores`` takes them back)."""
        if self.added_scores_ is None:
            raise ValueError("this SplitConformal was not extended: save it whole with to_dict()")
        if isinstance(self.added_scores_, dict):
            return {g: v.tolist() for g, v in self.added_scores_.items()}
        return self.added_scores_.tolist()

    def _scores_for(self, group: object | None) -> FloatArray:
        """The scores a point of ``group`` is calibrated against."""
        pooled, _ = self._require_fitted()
        if self.group_scores_ is None or group is None:
            return pooled
        own = self.group_scores_.get(str(group))
        return own if own is not None and own.size >= self.min_group_size else pooled

    def quantile(self, level: float, group: object | None = None) -> float:
        """Finite-sample conformal quantile of the scores (of ``group``'s scores when grouped).

        The ``k``-th smallest score with ``k = ceil((n + 1) * level)``, or
        ``inf`` when ``k > n`` (too few calibration points for that level).
        ``(n + 1) * level`` is taken with a relative slack of ``1e-12`` before
        the ceiling so that a decimal level like 0.9 is not pushed one index up
        by binary rounding.

        Parameters
        ----------
        level : float
            Target coverage in (0, 1).
        group : optional
            A group label; ignored when not conformalized per group. A group with fewer than
            ``min_group_size`` scores, or not seen in calibration, gets the pooled quantile.

        Returns
        -------
        float
        """
        scores = self._scores_for(group)
        p = checks.check_level(level)
        n = scores.size
        x = (n + 1) * p
        k = max(1, math.ceil(x - _CEIL_REL_TOL * x))
        return math.inf if k > n else float(scores[k - 1])

    def calibration_counts(self, groups: ArrayLike) -> np.ndarray:
        """How many calibration scores each point's quantile is taken from, shape (n,)
        (the ``n`` of its ``1/(n + 1)`` coverage slack); ``groups``: each point's group."""
        self._require_fitted()
        codes, uniques = checks.group_codes(groups, len(np.asarray(groups, dtype=object)))
        return np.array([self._scores_for(u).size for u in uniques])[codes]

    def predict_interval(
        self, mean: ArrayLike, sigma: ArrayLike, level: float, *, groups: ArrayLike | None = None
    ) -> tuple[FloatArray, FloatArray]:
        """Conformal band ``ŷ -+ q * max(σ, sigma_floor_)`` at any level.

        Parameters
        ----------
        mean, sigma : array-like, shape (n,)
            Test predictions; ``sigma`` on the same scale as in
            [`conformalize`][levy_core.calibration.split_conformal.SplitConformal.conformalize].
        level : float
            Target coverage in (0, 1); no refitting needed to change it.
        groups : array-like, shape (n,), optional
            Each point's group; required when conformalized per group, ignored otherwise.

        Returns
        -------
        lower, upper : numpy.ndarray, shape (n,)
            ``-inf`` / ``+inf`` where the quantile is infinite.
        """
        _, floor = self._require_fitted()
        mu = checks.as_1d(mean, "mean")
        s = checks.check_sigma(sigma)
        checks.same_length(mean=mu, sigma=s)
        if self.group_scores_ is None:
            q = np.full(mu.size, self.quantile(level))
        else:
            if groups is None:
                raise ValueError("this SplitConformal was conformalized per group: pass groups= (one label "
                                 "per point, e.g. the channel) to predict_interval")
            codes, uniques = checks.group_codes(groups, mu.size)
            q = np.array([self.quantile(level, u) for u in uniques])[codes]
        half = q * np.maximum(s, floor)  # inf where q is inf (s >= floor > 0)
        return mu - half, mu + half

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable state, including every calibration score."""
        scores, floor = self._require_fitted()
        out: dict[str, Any] = {
            "type": "SplitConformal",
            "version": saved_checks.FORMAT_VERSION,
            "rel_floor": self.rel_floor,
            "sigma_floor": floor,
        }
        if self.group_scores_ is None:
            out["scores"] = scores.tolist()
        else:  # the pooled scores are the union: not stored twice
            out["min_group_size"] = self.min_group_size
            out["group_scores"] = {g: v.tolist() for g, v in self.group_scores_.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SplitConformal:
        """Rebuild a conformalized instance from [`to_dict`][levy_core.calibration.split_conformal.SplitConformal.to_dict] output."""
        data = saved_checks.check_state(data, "SplitConformal")
        obj = cls(rel_floor=saved_checks.saved_float(data, "rel_floor"),
                  min_group_size=int(data.get("min_group_size", DEFAULT_MIN_GROUP_SIZE)))
        obj.sigma_floor_ = saved_checks.saved_float(data, "sigma_floor")
        if "group_scores" in data:
            obj.group_scores_ = saved_checks.saved_group_scores(data["group_scores"])
            obj.scores_ = np.sort(np.concatenate(list(obj.group_scores_.values())))
        elif "scores" in data:
            obj.scores_ = saved_checks.saved_scores(data["scores"], "scores")
        else:
            raise ValueError("saved calibration is missing 'scores'")
        return obj
