"""The calibrated band of :func:`levy_core.decisions.advise.advise` in the data's units.

A band is computed in the model's normalised (and, for a log / log1p channel, transformed)
space and its ends mapped back with the channel's inverse map: on a transformed channel the
band is asymmetric around the forecast, so advice keeps its width *and* how far it reaches
below the forecast.
"""

from __future__ import annotations

import numpy as np

from levy_core.pipeline.modelfile import FittedModel

__all__ = ["band_extent", "original_values"]


def original_values(fitted: FittedModel, v_norm: np.ndarray, channels: np.ndarray) -> np.ndarray:
    """Normalised values (J, D), row j of channel ``channels[j]``, in data units, (J, D)."""
    flat = np.repeat(np.asarray(channels), v_norm.shape[1])
    return fitted.scaler.inverse_value(v_norm.reshape(-1), flat).reshape(v_norm.shape)


def band_extent(fitted: FittedModel, spread: np.ndarray, channels: np.ndarray, level: float,
                mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The calibrated band at ``level`` (conformal; scaled Gaussian where a channel's
    conformal quantile is infinite) around ``mean``, mapped back to data units.

    Parameters
    ----------
    spread, mean : ndarray of float, shape (n,)
        The band's spread and centre, normalised.
    channels : ndarray of str, shape (n,)
    level : float

    Returns
    -------
    width, below : ndarray of float64, shape (n,)
        ``upper − lower`` and ``forecast − lower`` in data units (``below`` is half the
        width on a channel without transform, bit for bit as before transforms existed).
    """
    cal, groups = fitted.levy_calibration, np.asarray(channels).astype(str)
    transformed = bool(fitted.scaler.transforms)
    centre = np.asarray(mean, np.float64) if transformed else np.zeros_like(spread, dtype=np.float64)
    lo, hi = cal.interval(centre, spread, level, kind="conformal", groups=groups)
    bad = ~np.isfinite(hi - lo)
    if bad.any():
        glo, ghi = cal.interval(centre, spread, level, kind="gaussian", groups=groups)
        lo, hi = np.where(bad, glo, lo), np.where(bad, ghi, hi)
    if not transformed:  # linear: the width alone, the band symmetric
        width = (hi - lo) * fitted.scaler.scale_of(groups)
        return width, width / 2
    lower = fitted.scaler.inverse_value(lo, groups)
    return fitted.scaler.inverse_value(hi, groups) - lower, fitted.scaler.inverse_value(centre, groups) - lower
