"""Calibration of the single-pass spread: a global Gaussian scale and split conformal.

``sigma`` (the operator's RMS deviation ``σ̂``) is not yet a calibrated
predictive spread. Two explicit, MAPIE-style post-hoc steps turn it into one,
both fitted on a held-out calibration split (see ``docs/levy-math-band.md``):

- `ScaledGaussian` -- ``y ~ N(ŷ, (c σ̂)^2)`` with ``c`` of minimum CRPS
  (`levy_core.metrics.crps_scale`; ``estimator="mle"``: the closed-form MLE
  ``c = sqrt(mean((y - ŷ)^2 / σ̂^2))``, which the largest errors rule);
- `SplitConformal` -- split conformal on the normalised score ``r = |y - ŷ| / σ̂``,
  pooled or per group (`levy_core.calibration.split_conformal`: its guarantee, groups and
  usage);
- [`Calibrator`][levy_core.calibration.calibrate.Calibrator] -- both, fitted on the same split;
- [`RowwiseCalibrator`][levy_core.calibration.calibrate.RowwiseCalibrator] -- two fitted
  calibrators, each point taking one (a panel's band for new series, and the band of the
  calibration split alone for the series the new one was calibrated on).

All per-point arrays are 1-D of equal length and accept anything ``np.asarray``
takes. Bad input raises ``ValueError``; using a step before fitting it raises
`NotFittedError`.

Zero sigma: both floor ``σ̂`` at ``rel_floor * median(σ̂ > 0)`` of the calibration split and
apply the same stored floor at prediction time (`levy_core.calibration.scores`).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from levy_core.calibration import saved_checks
from levy_core.calibration.scaled_gaussian import ScaledGaussian
from levy_core.calibration.scores import DEFAULT_REL_FLOOR, NotFittedError
from levy_core.calibration.split_conformal import SplitConformal
from levy_core.metrics.checks import FloatArray

__all__ = ["Calibrator", "RowwiseCalibrator"]


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
            "version": saved_checks.FORMAT_VERSION,
            "scaled_gaussian": self.scaled_gaussian.to_dict(),
            "conformal": self.conformal.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibrator:
        """Rebuild a fitted instance from [`to_dict`][levy_core.calibration.calibrate.Calibrator.to_dict] output."""
        data = saved_checks.check_state(data, "Calibrator")
        obj = cls()
        try:
            obj.scaled_gaussian = ScaledGaussian.from_dict(data["scaled_gaussian"])
            obj.conformal = SplitConformal.from_dict(data["conformal"])
        except KeyError as exc:
            raise ValueError(f"saved Calibrator is missing {exc.args[0]!r}") from exc
        return obj


class RowwiseCalibrator:
    """Two fitted calibrators, each point taking one: ``held_out`` where ``use_held_out`` is
    True, ``other`` elsewhere.

    A panel fit calibrates the band it gives new series on its calibration and test series
    together (twice the series of the calibration split: the band's coverage varies less from
    one fit to the next); a query of one of those series is scored by the band of the
    calibration split alone, which never saw the test series, so an evaluation on them stays
    honest. Same ``predict_std`` and ``interval`` as `Calibrator`.

    Parameters
    ----------
    held_out, other : Calibrator
        Both fitted.
    use_held_out : array-like of bool, shape (n,)
        Per point, which calibrator it takes; the ``n`` of every later call.
    """

    def __init__(self, held_out: Calibrator, other: Calibrator, use_held_out: ArrayLike) -> None:
        self.held_out, self.other = held_out, other
        self.use_held_out = np.asarray(use_held_out, dtype=bool).ravel()

    def __repr__(self) -> str:
        return f"RowwiseCalibrator(held out: {int(self.use_held_out.sum())} of {self.use_held_out.size} points)"

    @property
    def conformal(self) -> SplitConformal:
        """The held-out calibrator's conformal step (the fewer scores: its slack is the larger)."""
        return self.held_out.conformal

    def _pick(self, a: FloatArray, b: FloatArray) -> FloatArray:
        if a.shape != self.use_held_out.shape:
            raise ValueError(f"RowwiseCalibrator holds {self.use_held_out.size} points, got {a.size}")
        return np.where(self.use_held_out, a, b)

    def predict_std(self, sigma: ArrayLike, groups: ArrayLike | None = None) -> FloatArray:
        """`Calibrator.predict_std`, each point from its own calibrator, shape (n,)."""
        return self._pick(self.held_out.predict_std(sigma, groups), self.other.predict_std(sigma, groups))

    def interval(self, mean: ArrayLike, sigma: ArrayLike, level: float,
                 kind: Literal["gaussian", "conformal"] = "gaussian", *,
                 groups: ArrayLike | None = None) -> tuple[FloatArray, FloatArray]:
        """`Calibrator.interval`, each point from its own calibrator; lower, upper each (n,)."""
        lo_h, hi_h = self.held_out.interval(mean, sigma, level, kind, groups=groups)
        lo_o, hi_o = self.other.interval(mean, sigma, level, kind, groups=groups)
        return self._pick(lo_h, lo_o), self._pick(hi_h, hi_o)
