"""Bands that hold over time for few-series forecasts: adaptive conformal inference (ACI)
walked along the test origins, in time order.

Rolling-origin episodes of one drifting series are not exchangeable, so split conformal's
guarantee does not apply to them. A fit on rolling origins therefore also walks ACI
(``levy_core.calibration.adaptive``) over its test origins, oldest first, starting from each method's
calibration scores: every origin's band is predicted from the scores seen so far, then
``α_t`` is updated with that origin's miscoverage. Whatever the data, the long-run
miscoverage of the walk stays within ``(max(α, 1 − α) + γ) / (γ T)`` of ``α`` (Gibbs &
Candès 2021, Proposition 4.1; ``T`` test origins). The state after the walk is what a
forecast beyond the end of the data uses (``Predictive.interval(level, "adaptive")``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from levy_core import metrics
from levy_core.calibration.adaptive import AdaptiveConformal, AdaptiveResult
from levy_core.calibration.calibrate import Calibrator
from levy_core.metrics.checks import as_1d

__all__ = ["ADAPTIVE_GAMMA", "ADAPTIVE_LEVELS", "GUARANTEE", "backtest", "channel_scores", "channel_sigma",
           "fit_adaptive", "origin_gamma", "rolling_coverage", "walk"]

ADAPTIVE_LEVELS = (0.5, 0.8, 0.9, 0.95)
# Gibbs & Candès use γ = 0.005 over thousands of steps; a series gives tens to hundreds of
# forecasts, where a step that small never moves α. At γ = 0.05 per independent forecast
# (one horizon of origins, see origin_gamma) α reacts within ~20 of them.
ADAPTIVE_GAMMA = 0.05


def origin_gamma(plan: dict[str, float] | None) -> float:
    """ACI's step for a walk over rolling origins ``plan`` (``stride`` and ``horizon``, hours):
    ``ADAPTIVE_GAMMA · min(1, stride / horizon)``.

    Consecutive origins a stride apart forecast almost the same window: with a 24 h horizon
    and origins every half hour, 48 of them share most of their queries, and one bad day is
    48 misses in a row. ACI's update assumes a fresh miss indicator each step; walked at
    ``γ = 0.05`` per origin, two neighbouring fits of one sensor ended at ``α_T`` = 0.18 and
    0.01, and their forecasts' bands at 0.86 and 9.8 times the plain 90 % quantile. Scaled,
    one horizon of origins moves ``α`` as one independent forecast would at ``γ``. With no
    plan (or origins a horizon or more apart) the step is ``ADAPTIVE_GAMMA``."""
    if not plan:
        return ADAPTIVE_GAMMA
    stride, horizon = float(plan.get("stride", 0.0)), float(plan.get("horizon", 0.0))
    if not (stride > 0 and horizon > 0 and np.isfinite(stride) and np.isfinite(horizon)):
        return ADAPTIVE_GAMMA
    return ADAPTIVE_GAMMA * min(1.0, stride / horizon)


GUARANTEE = ("adaptive conformal inference (Gibbs & Candès 2021) along the test origins: over any "
             "T origins the miss rate stays within (max(α, 1 − α) + γ)/(γT) of α, without exchangeability")


def channel_sigma(calibrator: Calibrator, spread: np.ndarray, channels: np.ndarray) -> np.ndarray:
    """The σ the adaptive walk divides by: each channel's calibrated ``c_g · max(σ̂, floor)``
    (n,). Channels of one model can sit on very different raw scales — a channel whose
    correction share is 0.05 has its ``σ̂`` shrunk 20× — and one ACI over them all pools their
    scores: divided by ``c_g``, one channel's ``|y − ŷ| / σ`` means what another's does."""
    return calibrator.predict_std(as_1d(spread, "spread"), np.asarray(channels).astype(str))


def channel_scores(calibrator: Calibrator) -> tuple[np.ndarray, float]:
    """The calibration scores of every channel on that common scale (each channel's split
    conformal scores ÷ its ``c_g``), and the floor of the σ they go with."""
    conformal, gaussian = calibrator.conformal, calibrator.scaled_gaussian
    groups = conformal.group_scores_ or {}
    if not groups:
        scale = float(gaussian.scales_for(None, 0))
        return conformal.scores_ / max(scale, 1e-300), conformal.sigma_floor_ * max(scale, 1e-300)
    scales = {g: float(np.asarray(gaussian.scales_for(np.array([g]), 1)).ravel()[0]) for g in groups}
    pooled = np.concatenate([groups[g] / max(scales[g], 1e-300) for g in groups])
    return pooled, conformal.sigma_floor_ * max(min(scales.values()), 1e-300)


def walk(calibrator: Calibrator, level: float, y: np.ndarray, mean: np.ndarray, spread: np.ndarray,
         origin: np.ndarray, *, channels: np.ndarray | None = None,
         gamma: float = ADAPTIVE_GAMMA) -> tuple[AdaptiveConformal, AdaptiveResult]:
    """ACI at ``level`` from ``calibrator``'s pooled split-conformal scores (and σ floor),
    walked over queries ``y, mean, spread`` (n,) in the order of their forecast ``origin``
    (n,); the queries of one origin form one step. With ``channels`` (n,), scores and σ are
    each channel's calibrated ones (`channel_sigma`): what a fit walks. Returns the
    state after the walk and the walk itself (bands in input order)."""
    conformal = calibrator.conformal
    if channels is None:
        scores, floor, sigma = conformal.scores_, conformal.sigma_floor_, as_1d(spread, "spread")
    else:
        (scores, floor), sigma = channel_scores(calibrator), channel_sigma(calibrator, spread, channels)
    aci = AdaptiveConformal(level, gamma).conformalize(scores, sigma_floor=floor)
    result = aci.run(as_1d(y, "y"), as_1d(mean, "mean"), sigma, order=as_1d(origin, "origin"))
    return aci, result


def fit_adaptive(calibrators: dict[str, Calibrator | None], frame: pd.DataFrame, origin: np.ndarray, *,
                 gamma: float, levels: tuple[float, ...] = ADAPTIVE_LEVELS,
                 ) -> dict[str, dict[str, AdaptiveConformal]]:
    """The post-walk ACI state of every method (``{"levy": …, "mc": …}``, keyed by level as
    text) over the test predictions ``frame`` (normalised columns, see
    ``levy_core.pipeline.predictive.METHODS``) whose forecast origins are ``origin`` (n,),
    walked at step ``gamma`` (required: a fit passes `origin_gamma` of its plan)."""
    from_columns = {"levy": ("mean_norm", "spread_norm"), "mc": ("mc_mean_norm", "mc_std_norm")}
    out: dict[str, dict[str, AdaptiveConformal]] = {}
    y = frame["y_norm"].to_numpy(np.float64)
    for key, (mean_col, spread_col) in from_columns.items():
        cal = calibrators.get(key)
        if cal is None or mean_col not in frame:
            continue
        out[key] = {str(level): walk(cal, level, y, frame[mean_col].to_numpy(np.float64),
                                     frame[spread_col].to_numpy(np.float64), origin,
                                     channels=frame["channel"].to_numpy(), gamma=gamma)[0] for level in levels}
    return out


def backtest(calibrators: dict[str, Calibrator | None], frame: pd.DataFrame, origin: np.ndarray, *,
             gamma: float, levels: tuple[float, ...] = ADAPTIVE_LEVELS) -> tuple[dict[str, dict], pd.DataFrame]:
    """The ACI walk at step ``gamma`` (the fit's own) over the test predictions ``frame``
    (normalised columns, origins ``origin`` (n,)) for each method, as ``evaluate`` reports it: per method
    ``{"adaptive_coverage": {level: …}, "adaptive_bound": {level: …},
    "adaptive_mean_width": {level: …}, "test_origins": T, "gamma": γ}`` and a copy of
    ``frame`` with ``origin`` and each walked band at 90 % (``lower_adaptive_90`` … for
    Lévy, ``mc_lower_adaptive_90`` … for MC-Dropout; normalised units)."""
    from_columns = {"levy": ("mean_norm", "spread_norm", ""), "mc": ("mc_mean_norm", "mc_std_norm", "mc_")}
    out, bands = {}, frame.assign(origin=origin)
    y = frame["y_norm"].to_numpy(np.float64)
    for key, (mean_col, spread_col, prefix) in from_columns.items():
        cal = calibrators.get(key)
        if cal is None or mean_col not in frame:
            continue
        mean, spread = frame[mean_col].to_numpy(np.float64), frame[spread_col].to_numpy(np.float64)
        report: dict = {"adaptive_coverage": {}, "adaptive_bound": {}, "adaptive_mean_width": {}, "gamma": gamma}
        for level in levels:
            _, res = walk(cal, level, y, mean, spread, origin, channels=frame["channel"].to_numpy(), gamma=gamma)
            report["adaptive_coverage"][str(level)] = res.coverage
            report["adaptive_bound"][str(level)] = res.bound
            report["adaptive_mean_width"][str(level)] = res.mean_width
            report["test_origins"] = res.n_steps
            if level == 0.9:
                bands[f"{prefix}lower_adaptive_90_norm"], bands[f"{prefix}upper_adaptive_90_norm"] = res.lower, res.upper
        out[key] = report
    return out, bands


def rolling_coverage(pred: pd.DataFrame, *, window: int = 10) -> pd.DataFrame:
    """Coverage over time of each method's 90 % bands in a backtest frame (``evaluate``'s
    per-query frame on rolling origins: ``origin``, ``y_true`` and the original-unit
    ``lower_adaptive_90`` / ``lower_conf_90`` … columns): per test origin, oldest first, the
    share of queries inside each band ([`levy_core.metrics.covered`][levy_core.metrics.covered]) over the last
    ``window`` origins.

    Returns columns ``origin, method, band, coverage, n_queries`` (one row per origin, method
    and band kind: "adaptive" and "split conformal")."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    bands = {("Lévy", "adaptive"): ("lower_adaptive_90", "upper_adaptive_90"),
             ("Lévy", "split conformal"): ("lower_90", "upper_90"),
             ("MC-Dropout", "adaptive"): ("mc_lower_adaptive_90", "mc_upper_adaptive_90")}
    y = pred["y_true"].to_numpy(np.float64)
    parts = []
    for (method, band), (lo, hi) in bands.items():
        if lo not in pred or hi not in pred:
            continue
        inside = pd.DataFrame({"origin": pred["origin"].to_numpy(),
                               "inside": metrics.covered(y, pred[lo].to_numpy(), pred[hi].to_numpy())})
        per = inside.groupby("origin", sort=True)["inside"].agg(["sum", "size"])
        hits, n = per["sum"].rolling(window, min_periods=1).sum(), per["size"].rolling(window, min_periods=1).sum()
        parts.append(pd.DataFrame({"origin": per.index, "method": method, "band": band,
                                   "coverage": (hits / n).to_numpy(), "n_queries": n.to_numpy().astype(int)}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["origin", "method", "band", "coverage", "n_queries"])
