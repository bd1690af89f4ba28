"""The scaled Gaussian predictive ``y ~ N(ŷ, (c σ̂)^2)``: one global scale ``c`` (and one per group).

``sigma`` (the operator's RMS deviation ``σ̂``) is not yet a calibrated predictive spread;
`ScaledGaussian` fits the scale ``c`` that makes it one, on a held-out calibration
split (see ``docs/levy-math-band.md``): ``c`` of minimum CRPS
(`levy_core.metrics.crps_scale`; ``estimator="mle"``: the closed-form MLE
``c = sqrt(mean((y - ŷ)^2 / σ̂^2))``, which the largest errors rule). ``σ̂`` is floored
as every calibration step floors it (`levy_core.calibration.scores`). With ``groups``
(e.g. each query's channel) each group also gets its own scale, shrunk towards the global
one.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from levy_core.calibration import saved_checks
from levy_core.calibration.scores import DEFAULT_REL_FLOOR, NotFittedError, calibration_sigma_floor
from levy_core.metrics import checks
from levy_core.metrics.checks import FloatArray
from levy_core.metrics.crps_scale import crps_scale

__all__ = ["GROUP_SHRINKAGE", "ScaledGaussian"]

logger = logging.getLogger(__name__)

GROUP_SHRINKAGE: float = 1.0  # pseudo-points at the global scale in each group's scale (PhysioNet draws: docs/benchmarks/unseen.md)


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
        """Whether [`fit`][levy_core.calibration.scaled_gaussian.ScaledGaussian.fit] has been called (or the state loaded)."""
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
        floor = calibration_sigma_floor(s, self.rel_floor)
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
            "version": saved_checks.FORMAT_VERSION,
            "rel_floor": self.rel_floor,
            "estimator": self.estimator,
            "scale": scale,
            "sigma_floor": floor,
            "n_calibration": self.n_calibration_,
            **({"group_scales": dict(self.group_scales_)} if self.group_scales_ else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScaledGaussian:
        """Rebuild a fitted instance from [`to_dict`][levy_core.calibration.scaled_gaussian.ScaledGaussian.to_dict] output."""
        data = saved_checks.check_state(data, "ScaledGaussian")
        estimator = data.get("estimator", "mle")  # states saved before minimum-CRPS scales hold MLE ones
        if estimator not in ("crps", "mle"):
            raise ValueError(f"saved ScaledGaussian: estimator must be 'crps' or 'mle', got {estimator!r}")
        obj = cls(rel_floor=saved_checks.saved_float(data, "rel_floor"), estimator=estimator)
        obj.scale_ = saved_checks.saved_float(data, "scale", allow_zero=True)
        obj.sigma_floor_ = saved_checks.saved_float(data, "sigma_floor")
        n = data.get("n_calibration")
        obj.n_calibration_ = None if n is None else int(n)
        groups = data.get("group_scales") or {}  # absent from states saved before per-group scales
        if not isinstance(groups, dict) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1e12
                for v in groups.values()):
            raise ValueError("saved ScaledGaussian: group_scales must map groups to finite scales in [0, 1e12]")
        obj.group_scales_ = {str(k): float(v) for k, v in groups.items()}
        return obj
