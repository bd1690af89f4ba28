"""The calibrated band of [`levy_core.decisions.advise.advise`][levy_core.decisions.advise.advise] in the data's units.

A band is computed in the model's normalised (and, for a log / log1p channel, transformed)
space and its ends mapped back with the channel's inverse map: on a transformed channel the
band is asymmetric around the forecast, so advice keeps its width *and* how far it reaches
below the forecast.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from levy_core.calibration.learned_spread import query_columns
from levy_core.pipeline.modelfile import FittedModel

__all__ = ["band_extent", "evidence_spread", "original_values"]


def original_values(fitted: FittedModel, v_norm: np.ndarray, channels: np.ndarray) -> np.ndarray:
    """Normalised values (J, D), row j of channel ``channels[j]``, in data units, (J, D)."""
    flat = np.repeat(np.asarray(channels), v_norm.shape[1])
    return fitted.scaler.inverse_value(v_norm.reshape(-1), flat).reshape(v_norm.shape)


def band_extent(fitted: FittedModel, spread: np.ndarray, channels: np.ndarray, level: float,
                mean: np.ndarray, series_id: str) -> tuple[np.ndarray, np.ndarray]:
    """The calibrated band at ``level`` (conformal; scaled Gaussian where a channel's
    conformal quantile is infinite) around ``mean``, mapped back to data units.

    Parameters
    ----------
    spread, mean : ndarray of float, shape (n,)
        The band's spread and centre, normalised.
    channels : ndarray of str, shape (n,)
    level : float
    series_id : str
        The model-space series: its calibrator, as its predictions take it.

    Returns
    -------
    width, below : ndarray of float64, shape (n,)
        ``upper − lower`` and ``forecast − lower`` in data units (``below`` is half the
        width on a channel without transform, bit for bit as before transforms existed).
    """
    # the calibrator this series' predictions take (FittedModel.calibration_for)
    cal, groups = fitted.calibration_for(series_id), np.asarray(channels).astype(str)
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


def evidence_spread(fitted: FittedModel, sigma_ev: np.ndarray, lead_factor: np.ndarray, out0: Any, out1: Any,
                    t_codes: np.ndarray, m: int, n_draws: int) -> np.ndarray:
    """The spread of advice's evidence part (J, M): today's disagreement under tomorrow's evidence.
    ``out0`` / ``out1``: today's pass (one row) and the candidates' (``n_draws`` rows each), with
    their ``disagreement`` (B, H, M) and ``context`` summaries; ``lead_factor`` (J, M) the lead's
    factor on rolling origins.
    On a panel's per-query map or learned spread, tomorrow's evidence and distances to the data
    (value-free) with today's disagreement term, mean and history of the channel (what the value
    would change); on rolling origins σ̂ times the lead factor."""
    if fitted.query_scale is None and fitted.learned_spread is None:
        return sigma_ev * lead_factor
    log_d0 = 0.5 * np.log(np.maximum(out0.disagreement[0, :, :m].sum(axis=0), 1e-300))  # (M,)
    evidence1 = np.log(np.maximum(sigma_ev, 1e-300)) - log_d0[None, :]  # (J, M): log σ̂_ev = E₁ + D₀
    J = sigma_ev.shape[0]
    context = {k: np.broadcast_to(out0.context[k][0, :m], (J, m)) for k in out0.context}
    for k in ("gap_any", "gap_channel"):  # where tomorrow's data would be
        context[k] = out1.context[k][::n_draws, :m]
    if fitted.query_scale is None:  # the learned spread: tomorrow's evidence and leads, today's values
        log_ev = out1.log_evidence[::n_draws, :, :m]  # (J, H, M), value-free
        log_ev1 = np.logaddexp.reduce(log_ev, axis=1) - np.log(log_ev.shape[1])
        x = query_columns(evidence1.ravel(), np.broadcast_to(log_d0, (J, m)).ravel(), sigma_ev.ravel(),
                          log_ev1.ravel(), np.broadcast_to(out0.mean[0, :m], (J, m)).ravel(),
                          np.broadcast_to(t_codes, (J, m)).ravel(), {k: np.ravel(v) for k, v in context.items()})
        return fitted.learned_spread.spread(x).reshape(J, m)
    return fitted.query_scale.spread(np.broadcast_to(t_codes, (J, m)), evidence1, np.broadcast_to(log_d0, (J, m)),
                                     context)
