"""Calibration of the single-pass spread: a global Gaussian scale and split conformal.

``sigma`` (the operator's RMS deviation ``σ̂``) is not yet a calibrated
predictive spread. Two explicit, MAPIE-style post-hoc steps turn it into one,
both fitted on a held-out calibration split (see ``docs/levy-math.md``):

- [`ScaledGaussian`][levy_core.calibration.calibrate.ScaledGaussian] -- ``y ~ N(ŷ, (c σ̂)^2)`` with ``c`` of minimum CRPS
  (`levy_core.metrics.crps_scale`; ``estimator="mle"``: the closed-form MLE
  ``c = sqrt(mean((y - ŷ)^2 / σ̂^2))``, which the largest errors rule);
- [`SplitConformal`][levy_core.calibration.calibrate.SplitConformal] -- split conformal on the normalised score
  ``r = |y - ŷ| / σ̂``: for exchangeable calibration and test points the band
  ``ŷ -+ q σ̂`` covers with probability ``>= level`` at every level, where ``q`` is
  the ``ceil((n+1) level)``-th smallest calibration score (infinite band when
  that index exceeds ``n``);
- [`Calibrator`][levy_core.calibration.calibrate.Calibrator] -- both, fitted on the same split.

Per-group ("Mondrian") conformal: pass ``groups`` (e.g. each query's channel) to
``conformalize`` and the quantile is taken among the calibration scores of the
point's own group, so the guarantee holds *within each group* (heart rate and
lactate alike), not only on average over a mix dominated by the frequent
channels. A group with fewer than ``min_group_size`` calibration scores (or one
unseen in calibration) uses the pooled scores.

Usage::

    cal = SplitConformal().conformalize(y_cal, mean_cal, sigma_cal)
    lower, upper = cal.predict_interval(mean_test, sigma_test, level=0.9)

All per-point arrays are 1-D of equal length and accept anything ``np.asarray``
takes. Bad input raises ``ValueError``; using a step before fitting it raises
[`NotFittedError`][levy_core.calibration.calibrate.NotFittedError].

Zero sigma: a point with ``σ̂ = 0`` would give an infinite normalised score
(or ``0/0``). Both classes floor ``σ̂`` at ``sigma_floor_ = rel_floor *
median(σ̂ > 0)`` of the calibration split (``rel_floor = 1e-6`` by default),
and apply the same stored floor at prediction time, so that calibration and
test scores come from the same score function (needed for the conformal
guarantee). Above the floor nothing changes. A calibration point with ``σ̂ ≈ 0``
and a non-zero error has a huge score and dominates ``c``: the model claimed
certainty and was wrong, and the calibrated spread says so.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from levy_core.calibration import state
from levy_core.metrics import checks
from levy_core.metrics.checks import FloatArray
from levy_core.metrics.crps_scale import crps_scale

__all__ = [
    "DEFAULT_MIN_GROUP_SIZE",
    "DEFAULT_REL_FLOOR",
    "Calibrator",
    "NotFittedError",
    "ScaledGaussian",
    "SplitConformal",
]

logger = logging.getLogger(__name__)

#: Default floor on sigma, relative to the median positive sigma of the calibration split.
DEFAULT_REL_FLOOR: float = 1e-6
GROUP_SHRINKAGE: float = 1.0  # pseudo-points at the global scale in each group's scale (PhysioNet draws: docs/benchmarks/unseen.md)

#: Per-group conformal: groups with fewer calibration scores than this use the pooled ones
#: (50 keeps the 95 % quantile finite: ceil(51 * 0.95) = 49 <= 50).
DEFAULT_MIN_GROUP_SIZE: int = 50

# Relative slack when taking ceil((n + 1) * level): a decimal level such as 0.9
# is stored as 0.9000000000000000222..., and (n + 1) * level can land a hair above
# the integer it means (25 * 0.28 -> 7.000000000000001). Binary rounding is
# ~1e-16 relative; 1e-12 absorbs it without touching any level that differs from
# a decimal by more than 1e-12.
_CEIL_REL_TOL = 1e-12


class NotFittedError(RuntimeError):
    """A calibration step was used before the step it depends on was run."""


def _sigma_floor(sigma: FloatArray, rel_floor: float) -> float:
    """``rel_floor * median(sigma[sigma > 0])``; ValueError if every sigma is 0."""
    positive = sigma[sigma > 0]
    if positive.size == 0:
        raise ValueError(
            "every sigma in the calibration split is 0: there is no spread to calibrate"
        )
    floor = rel_floor * float(np.median(positive))
    n_floored = int(np.sum(sigma < floor))
    if n_floored:
        logger.info("floored %d of %d calibration sigmas at %.3g", n_floored, sigma.size, floor)
    return floor


class ScaledGaussian:
    """Scaled Gaussian predictive ``y ~ N(ŷ, (c σ̂)^2)`` with one global scale ``c``.

    Parameters
    ----------
    rel_floor : float, default 1e-6
        Sigma floor relative to the median positive calibration sigma (see the
        module docstring).
    estimator : {"crps", "mle"}, default "crps"
        How ``c`` is fitted: the minimum CRPS over the calibration points (the score the
        predictive is judged by; `crps_scale`), or
        the Gaussian maximum likelihood ``c² = mean(r²)``.

    Attributes
    ----------
    scale_ : float
        The fitted ``c``. 0 only if every calibration error is 0 (``"crps"``: or too
        many of them, see `crps_scale`).
    sigma_floor_ : float
        Absolute sigma floor used in ``fit`` and at prediction.
    n_calibration_ : int
        Number of calibration points.
    group_scales_ : dict of str to float
        With ``groups`` at fit: each group's own scale shrunk towards the global one with
        ``GROUP_SHRINKAGE`` pseudo-points at it (``"crps"``: a weighted mean of the scales;
        ``"mle"``: of their squares; a channel's band at its own level, as the conformal
        band is per channel). Empty otherwise.
    """

    def __init__(self, rel_floor: float = DEFAULT_REL_FLOOR, estimator: Literal["crps", "mle"] = "crps") -> None:
        self.rel_floor = checks.check_positive(rel_floor, "rel_floor")
        if estimator not in ("crps", "mle"):
            raise ValueError(f"estimator must be 'crps' or 'mle', got {estimator!r}")
        self.estimator = estimator
        self.group_scales_: dict[str, float] = {}
        self.scale_: float | None = None
        self.sigma_floor_: float | None = None
        self.n_calibration_: int | None = None

    def __repr__(self) -> str:
        return f"ScaledGaussian(rel_floor={self.rel_floor!r}, estimator={self.estimator!r}, scale_={self.scale_!r})"

    @property
    def is_fitted(self) -> bool:
        """Whether [`fit`][levy_core.calibration.calibrate.ScaledGaussian.fit] has been called (or the state loaded)."""
        return self.scale_ is not None

    def _require_fitted(self) -> tuple[float, float]:
        if self.scale_ is None or self.sigma_floor_ is None:
            raise NotFittedError(
                "this ScaledGaussian is not fitted yet: call fit(y_true, mean, sigma) on a "
                "calibration split first"
            )
        return self.scale_, self.sigma_floor_

    def fit(self, y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike, *,
            groups: ArrayLike | None = None) -> ScaledGaussian:
        """Fit the global scale (and per group) with ``σ_i`` floored at ``sigma_floor_``.

        ``"crps"``: ``c = argmin Σ_i CRPS(N(ŷ_i, c² σ_i²), y_i)``, one root of a monotone
        equation; ``"mle"``: maximising ``Σ_i log N(y_i; ŷ_i, c² σ_i²)`` gives
        ``c² = mean((y_i - ŷ_i)^2 / σ_i^2)``.

        Parameters
        ----------
        y_true, mean, sigma : array-like, shape (n,)
            Calibration targets, predicted means and raw spreads ``σ̂ >= 0``.
        groups : array-like, shape (n,), optional
            Each point's group (e.g. channel): also fit one shrunk scale per group.

        Returns
        -------
        ScaledGaussian
            ``self``, fitted.
        """
        y, mu, s = checks.check_gaussian(y_true, mean, sigma)
        floor = _sigma_floor(s, self.rel_floor)
        s = np.maximum(s, floor)
        r = (y - mu) / s
        crps = self.estimator == "crps"
        scale = crps_scale(np.abs(r), s) if crps else float(np.sqrt(np.mean(r * r)))
        if scale == 0.0:
            logger.warning("every calibration error is 0: the fitted scale is 0")
        self.scale_, self.sigma_floor_, self.n_calibration_ = scale, floor, int(y.size)
        self.group_scales_ = {}
        if groups is not None:
            keys = np.asarray(groups).astype(str)
            checks.same_length(y_true=y, groups=keys)
            for g in np.unique(keys):
                rg, k = r[keys == g], GROUP_SHRINKAGE
                self.group_scales_[str(g)] = (
                    (rg.size * crps_scale(np.abs(rg), s[keys == g]) + k * scale) / (rg.size + k) if crps
                    else float(np.sqrt((np.sum(rg * rg) + k * scale**2) / (rg.size + k))))
        return self

    def scales_for(self, groups: ArrayLike | None, n: int) -> FloatArray | float:
        """The scale of each of ``n`` points: its group's where fitted, the global one otherwise."""
        scale, _ = self._require_fitted()
        if groups is None or not self.group_scales_:
            return scale
        keys = np.asarray(groups).astype(str)
        if keys.shape != (n,):
            raise ValueError(f"groups must hold one entry per point ({n}), got shape {keys.shape}")
        return np.array([self.group_scales_.get(k, scale) for k in keys], dtype=np.float64)

    def predict_std(self, sigma: ArrayLike, groups: ArrayLike | None = None) -> FloatArray:
        """Calibrated predictive standard deviation ``c * max(σ, sigma_floor_)`` (each
        point's group scale ``c_g`` where ``groups`` are given and were fitted).

        Parameters
        ----------
        sigma : array-like, shape (n,)
            Raw spreads ``σ̂ >= 0``.
        groups : array-like, shape (n,), optional

        Returns
        -------
        numpy.ndarray, shape (n,)
        """
        _, floor = self._require_fitted()
        s = checks.check_sigma(sigma)
        return self.scales_for(groups, s.size) * np.maximum(s, floor)

    def predict_interval(
        self, mean: ArrayLike, sigma: ArrayLike, level: float, groups: ArrayLike | None = None
    ) -> tuple[FloatArray, FloatArray]:
        """Central Gaussian interval ``ŷ -+ z_{(1+level)/2} * c * σ``.

        Parameters
        ----------
        mean, sigma : array-like, shape (n,)
        level : float
            Nominal coverage in (0, 1).

        Returns
        -------
        lower, upper : numpy.ndarray, shape (n,)
        """
        std = self.predict_std(sigma, groups)
        mu = checks.as_1d(mean, "mean")
        checks.same_length(mean=mu, sigma=std)
        half = checks.gaussian_half_width(std, checks.check_level(level))
        return mu - half, mu + half

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable state (plain floats and ints)."""
        scale, floor = self._require_fitted()
        return {
            "type": "ScaledGaussian",
            "version": state.FORMAT_VERSION,
            "rel_floor": self.rel_floor,
            "estimator": self.estimator,
            "scale": scale,
            "sigma_floor": floor,
            "n_calibration": self.n_calibration_,
            **({"group_scales": dict(self.group_scales_)} if self.group_scales_ else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScaledGaussian:
        """Rebuild a fitted instance from [`to_dict`][levy_core.calibration.calibrate.ScaledGaussian.to_dict] output."""
        data = state.check_state(data, "ScaledGaussian")
        estimator = data.get("estimator", "mle")  # states saved before minimum-CRPS scales hold MLE ones
        if estimator not in ("crps", "mle"):
            raise ValueError(f"saved ScaledGaussian: estimator must be 'crps' or 'mle', got {estimator!r}")
        obj = cls(rel_floor=state.saved_float(data, "rel_floor"), estimator=estimator)
        obj.scale_ = state.saved_float(data, "scale", allow_zero=True)
        obj.sigma_floor_ = state.saved_float(data, "sigma_floor")
        n = data.get("n_calibration")
        obj.n_calibration_ = None if n is None else int(n)
        groups = data.get("group_scales") or {}  # absent from states saved before per-group scales
        if not isinstance(groups, dict) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1e12
                for v in groups.values()):
            raise ValueError("saved ScaledGaussian: group_scales must map groups to finite scales in [0, 1e12]")
        obj.group_scales_ = {str(k): float(v) for k, v in groups.items()}
        return obj


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

    def __repr__(self) -> str:
        n = None if self.scores_ is None else self.scores_.size
        groups = "" if self.group_scores_ is None else f", groups={len(self.group_scores_)}"
        return f"SplitConformal(rel_floor={self.rel_floor!r}, n_calibration={n!r}{groups})"

    @property
    def is_fitted(self) -> bool:
        """Whether [`conformalize`][levy_core.calibration.calibrate.SplitConformal.conformalize] has been called (or the state loaded)."""
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
        floor = _sigma_floor(s, self.rel_floor)
        scores = np.abs(y - mu) / np.maximum(s, floor)
        self.scores_ = np.sort(scores)
        self.sigma_floor_ = floor
        self.group_scores_ = None
        if grouped is not None:
            codes, uniques = grouped
            order = np.argsort(codes, kind="stable")
            bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
            self.group_scores_ = {str(u): np.sort(scores[order[bounds[i]:bounds[i + 1]]])
                                  for i, u in enumerate(uniques)}
        return self

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
            [`conformalize`][levy_core.calibration.calibrate.SplitConformal.conformalize].
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
            "version": state.FORMAT_VERSION,
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
        """Rebuild a conformalized instance from [`to_dict`][levy_core.calibration.calibrate.SplitConformal.to_dict] output."""
        data = state.check_state(data, "SplitConformal")
        obj = cls(rel_floor=state.saved_float(data, "rel_floor"),
                  min_group_size=int(data.get("min_group_size", DEFAULT_MIN_GROUP_SIZE)))
        obj.sigma_floor_ = state.saved_float(data, "sigma_floor")
        if "group_scores" in data:
            obj.group_scores_ = state.saved_group_scores(data["group_scores"])
            obj.scores_ = np.sort(np.concatenate(list(obj.group_scores_.values())))
        elif "scores" in data:
            obj.scores_ = state.saved_scores(data["scores"], "scores")
        else:
            raise ValueError("saved calibration is missing 'scores'")
        return obj


class Calibrator:
    """Both calibrations fitted on one calibration split.

    Parameters
    ----------
    rel_floor : float, default 1e-6
        Passed to both parts.

    Attributes
    ----------
    scaled_gaussian : ScaledGaussian
    conformal : SplitConformal
    """

    def __init__(self, rel_floor: float = DEFAULT_REL_FLOOR) -> None:
        self.scaled_gaussian = ScaledGaussian(rel_floor=rel_floor)
        self.conformal = SplitConformal(rel_floor=rel_floor)

    def __repr__(self) -> str:
        return f"Calibrator({self.scaled_gaussian!r}, {self.conformal!r})"

    @property
    def is_fitted(self) -> bool:
        """Whether both parts are fitted."""
        return self.scaled_gaussian.is_fitted and self.conformal.is_fitted

    def _require_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(
                "this Calibrator is not fitted yet: call fit(y_true, mean, sigma) on a "
                "calibration split first"
            )

    def fit(self, y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike, *,
            groups: ArrayLike | None = None) -> Calibrator:
        """Fit the scale, then conformalize, on the same calibration split.

        Parameters
        ----------
        y_true, mean, sigma : array-like, shape (n,)
        groups : array-like, shape (n,), optional
            Conformalize per group (e.g. channel), and fit a shrunk Gaussian scale per group
            beside the global one (``scale_``).

        Returns
        -------
        Calibrator
            ``self``, fitted.
        """
        self.scaled_gaussian.fit(y_true, mean, sigma, groups=groups)
        self.conformal.conformalize(y_true, mean, sigma, groups=groups)
        return self

    @property
    def scale_(self) -> float:
        """The fitted global scale ``c``."""
        self._require_fitted()
        return self.scaled_gaussian._require_fitted()[0]

    def predict_std(self, sigma: ArrayLike, groups: ArrayLike | None = None) -> FloatArray:
        """Scaled-Gaussian predictive standard deviation ``c σ`` (``c_g σ`` per group where
        ``groups`` are given), shape (n,)."""
        self._require_fitted()
        return self.scaled_gaussian.predict_std(sigma, groups)

    def interval(
        self,
        mean: ArrayLike,
        sigma: ArrayLike,
        level: float,
        kind: Literal["gaussian", "conformal"] = "gaussian",
        *,
        groups: ArrayLike | None = None,
    ) -> tuple[FloatArray, FloatArray]:
        """Predictive band at ``level``.

        Parameters
        ----------
        mean, sigma : array-like, shape (n,)
            Raw predictions (``sigma`` = the uncalibrated ``σ̂``).
        level : float
            Nominal coverage in (0, 1).
        kind : {"gaussian", "conformal"}, default "gaussian"
            Scaled-Gaussian central interval, or split-conformal band
            (finite-sample coverage guarantee).
        groups : array-like, shape (n,), optional
            Each point's group for a conformal band fitted per group (required then).

        Returns
        -------
        lower, upper : numpy.ndarray, shape (n,)
        """
        if kind not in ("gaussian", "conformal"):
            raise ValueError(f"kind must be 'gaussian' or 'conformal', got {kind!r}")
        self._require_fitted()
        if kind == "gaussian":
            return self.scaled_gaussian.predict_interval(mean, sigma, level, groups)
        return self.conformal.predict_interval(mean, sigma, level, groups=groups)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable state of both parts."""
        self._require_fitted()
        return {
            "type": "Calibrator",
            "version": state.FORMAT_VERSION,
            "scaled_gaussian": self.scaled_gaussian.to_dict(),
            "conformal": self.conformal.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibrator:
        """Rebuild a fitted instance from [`to_dict`][levy_core.calibration.calibrate.Calibrator.to_dict] output."""
        data = state.check_state(data, "Calibrator")
        obj = cls()
        try:
            obj.scaled_gaussian = ScaledGaussian.from_dict(data["scaled_gaussian"])
            obj.conformal = SplitConformal.from_dict(data["conformal"])
        except KeyError as exc:
            raise ValueError(f"saved Calibrator is missing {exc.args[0]!r}") from exc
        return obj
