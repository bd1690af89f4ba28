"""Scoring a fitted model on held-out queries: every method side by side, scored the same way.

The methods are the [`Predictive`][levy_core.pipeline.predictive.Predictive] objects of a prediction frame
(Lévy, MC-Dropout, the last-value baseline); metrics are on the normalised scale (as
t-PatchGNN reports), coverage is scale-free; beside them, each method's per-channel MAE, RMSE
and CRPS in the channel's own units (`per_channel_data_units`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch

from levy_core import metrics
from levy_core.calibration.coverage import CoverageNote, coverage_check, coverage_note
from levy_core.calibration.over_time import GUARANTEE, backtest, origin_gamma
from levy_core.data import DataError, Observations
from levy_core.episodes import transforms as tf
from levy_core.episodes.origins import OriginClock
from levy_core.episodes.tasks import EpisodeBuilder
from levy_core.model.batch import Batch
from levy_core.operator.attention import levy_attention
from levy_core.operator.sampling import sample_levy_attention
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import chunks, in_original_units, observed_queries, run_pass
from levy_core.pipeline.predictive import Predictive
from levy_core.pipeline.prepared import ModelData, as_model_data

__all__ = ["ADAPTIVE_BAND_COLUMNS", "LEVELS", "PRED_COLUMNS", "RELIABILITY_LEVELS", "TIMING_MIN_SECONDS", "calibration_curves", "channel_coverage", "coverage_checks",
           "crps_data_units_per_point", "evaluate", "evaluate_episodes", "per_channel_data_units", "evaluation_note", "method_metrics", "point_scores", "sampler_check", "sampler_draws", "timed"]

LEVELS = (0.5, 0.8, 0.9, 0.95)
RELIABILITY_LEVELS = np.round(np.concatenate([np.arange(0.05, 0.951, 0.05), [0.99]]), 2)
PRED_COLUMNS = ["series_id", "channel", "time", "y_true", "mean", "sigma", "spread", "pred_std", "lower_90", "upper_90",
                "log_evidence", "disagreement", "n_eff", "mc_mean", "mc_std"]
ADAPTIVE_BAND_COLUMNS = ["lower_adaptive_90", "upper_adaptive_90", "mc_lower_adaptive_90", "mc_upper_adaptive_90"]
# ``timed``'s default: a method's passes are repeated until they add up to this many seconds (read at each
# call; the test suite lowers it: its timings are never compared, and the repeats were 8 s of the dashboard's)
TIMING_MIN_SECONDS = 0.25


def point_scores(y: np.ndarray, mean: np.ndarray, std: np.ndarray) -> dict[str, float]:
    """``mse, mae`` of the point prediction and the Gaussian ``crps, nll`` of ``(mean, std)``
    against the truth ``y``; each array (n,), normalised units."""
    return {"mse": metrics.mean_squared_error(y, mean), "mae": metrics.mean_absolute_error(y, mean),
            "crps": metrics.crps_gaussian(y, mean, std), "nll": metrics.gaussian_nll(y, mean, std)}


def method_metrics(y: np.ndarray, p: Predictive, seconds: float) -> dict[str, Any]:
    """Accuracy, scoring rules, coverage (scaled Gaussian and conformal at every level),
    the 90 % band's width and Spearman(spread, |error|) of one method; normalised units
    (its bands derived once, as one `Band` of both kinds at every level of `LEVELS`)."""
    band = p.band(LEVELS + LEVELS, ("gaussian",) * len(LEVELS) + ("conformal",) * len(LEVELS))
    out: dict[str, Any] = {**point_scores(y, band.mean, band.std), "coverage": {}, "conformal_coverage": {}}
    for level in LEVELS:
        out["coverage"][str(level)] = metrics.interval_coverage(y, *band.bounds(level, "gaussian"))
        out["conformal_coverage"][str(level)] = metrics.interval_coverage(y, *band.bounds(level, "conformal"))
    out["mean_width_90"] = metrics.interval_mean_width(*band.bounds(0.9, "gaussian"))
    out["spearman_sigma_abs_error"] = metrics.spearman_sigma_abs_error(y, p.mean, p.spread)
    out["seconds"] = seconds
    return out


def crps_data_units_per_point(y: np.ndarray, mean: np.ndarray, std: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Each query's CRPS in the data's units, (n,): the Gaussian CRPS of ``(mean, std)`` on a
    channel without transform, the log-normal predictive's closed form
    ([`levy_core.metrics.crps_lognormal_per_point`][levy_core.metrics.crps_lognormal_per_point]) on a ``log`` / ``log1p`` channel.

    ``y, mean, std``: (n,) data units (``mean`` the point prediction ``g⁻¹(μ)``, ``std`` the
    delta method's ``σ · dg⁻¹/du`` at ``μ``, as the prediction frame's ``mean`` and
    ``pred_std``); ``kinds``: (n,) each query's channel transform
    (``ChannelScaler.transform_of``). On a log channel ``μ = g(mean)`` and ``σ = std /
    dg⁻¹/du(μ)`` recover the Gaussian on the transformed scale.
    """
    y, mean, std = (np.asarray(a, np.float64) for a in (y, mean, std))
    kinds = np.asarray(kinds, dtype=object)
    out = metrics.crps_gaussian_per_point(y, mean, std)
    for kind, shift in (("log", 0.0), ("log1p", 1.0)):
        rows = kinds == kind
        if rows.any():
            mu = tf.forward(mean[rows], kind)
            out[rows] = metrics.crps_lognormal_per_point(y[rows], mu, std[rows] / tf.inverse_slope(mu, kind), shift)
    return out


def per_channel_data_units(fitted: FittedModel, pred: pd.DataFrame, p: Predictive) -> dict[str, dict[str, Any]]:
    """One method's scores per channel in the channel's own units: ``{channel: {"n", "mae",
    "rmse", "crps"}}`` (channels sorted), from ``pred``'s ``y_true`` and ``p``'s point
    prediction and calibrated std in data units (`crps_data_units_per_point`)."""
    channels = np.asarray(p.channels).astype(str)
    y, mean = pred["y_true"].to_numpy(np.float64), p.original_mean()
    kinds = np.array([fitted.scaler.transform_of(c) for c in channels], dtype=object)
    crps = crps_data_units_per_point(y, mean, p.std(original=True), kinds)
    out: dict[str, dict[str, Any]] = {}
    for c in sorted(set(channels)):
        rows = channels == c
        err = y[rows] - mean[rows]
        out[c] = {"n": int(rows.sum()), "mae": float(np.mean(np.abs(err))), "rmse": float(np.sqrt(np.mean(err**2))),
                  "crps": float(np.mean(crps[rows]))}
    return out


def coverage_checks(fitted: FittedModel, pred: pd.DataFrame, *, levels: tuple[float, ...] = LEVELS,
                    calibration_series: int | None = None, z: float = 3.0) -> pd.DataFrame:
    """Does each method's conformal band hold its level on the test split?

    For every method and level: the coverage, its s.e. if the queries were independent
    (binomial) and per series (queries of one series move together), and whether it lies
    in ``[level - z se, level + slack + z se]`` with each s.e. (calibration draw's share
    included; see ``levy_core.calibration.coverage.coverage_check``); ``slack`` is the mean over the test
    queries of ``1/(n + 1)``, ``n`` the calibration queries of the query's channel.

    ``pred``: the per-query frame of ``evaluate`` (``series_id, channel, y_norm`` and each
    method's normalised columns). Returns one row per (Lévy / MC-Dropout, level):
    ``method, level, coverage, se_binomial, holds_binomial, se_series, lower_series,
    upper_series, holds_series, n_test, n_series``; the per-series columns are None when
    the test split has a single series.
    """
    if calibration_series is None:
        n_series = (fitted.training or {}).get("n_series", {})
        band_map = (fitted.training or {}).get("band_map") or {}  # a panel's map: half the series calibrate
        calibration_series = int(band_map.get("calibration_series") or n_series.get("calibration")
                                 or len(fitted.split.calibration))
    y, groups = pred["y_norm"].to_numpy(np.float64), pred["series_id"].to_numpy()
    n_series = int(pd.unique(groups).size)
    rows = []
    for p in fitted.predictives(pred):
        if p.method.key == "last_value":
            continue  # the guarantee is shown for the uncertainty methods
        n_cal = p.calibrator.conformal.n_calibration_
        # per-channel quantiles: each query may land 1/(n_channel + 1) above the level
        slack = float(np.mean(1.0 / (p.calibrator.conformal.calibration_counts(p.channels) + 1)))
        band = p.band(levels, "conformal")
        for level, lo, hi in zip(levels, band.lower, band.upper, strict=True):
            b = coverage_check(y, lo, hi, level=level, n_calibration=n_cal, z=z, slack=slack)
            row = {"method": p.name, "level": level, "coverage": b.coverage, "se_binomial": b.se,
                   "holds_binomial": b.holds, "se_series": None, "lower_series": None, "upper_series": None,
                   "holds_series": None, "n_test": b.n, "n_series": n_series}
            if n_series >= 2:  # a per-series s.e. needs two series at least
                g = coverage_check(y, lo, hi, level=level, n_calibration=n_cal, groups=groups,
                                   calibration_groups=calibration_series, z=z, slack=slack)
                row.update(se_series=g.se, lower_series=g.lower_bound, upper_series=g.upper_bound,
                           holds_series=g.holds)
            rows.append(row)
    return pd.DataFrame(rows)


def calibration_curves(fitted: FittedModel, pred: pd.DataFrame,
                       levels: np.ndarray | None = None) -> dict[str, Any]:
    """Reliability (scaled Gaussian and conformal), PIT and risk–coverage of the Lévy and
    MC-Dropout predictives of ``pred``, and the oracle risk–coverage curve."""
    levels = RELIABILITY_LEVELS if levels is None else np.asarray(levels)
    y = pred["y_norm"].to_numpy(np.float64)
    reliability: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    pits: dict[str, np.ndarray] = {}
    risk: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    methods = [p for p in fitted.predictives(pred) if p.method.key != "last_value"]
    for p in methods:
        std = p.std()
        reliability[f"{p.name} — scaled Gaussian"] = metrics.calibration_curve(y, p.mean, std, levels)
        band = p.band([float(lv) for lv in levels], "conformal")
        conformal = [metrics.interval_coverage(y, lo, hi) for lo, hi in zip(band.lower, band.upper, strict=True)]
        reliability[f"{p.name} — conformal"] = (levels.copy(), np.asarray(conformal))
        pits[p.name] = metrics.pit_values(y, p.mean, std)
        risk[p.name] = metrics.risk_coverage_curve(y, p.mean, std)
    oracle = metrics.risk_coverage_curve(y, methods[0].mean, np.abs(y - methods[0].mean))
    return {"reliability": reliability, "pit": pits, "risk": risk, "oracle": oracle, "n": int(len(y))}


def channel_coverage(fitted: FittedModel, pred: pd.DataFrame, level: float) -> pd.DataFrame:
    """Coverage of the Lévy and MC-Dropout conformal bands at ``level`` (a fraction), per
    channel: columns ``channel, method, coverage, n`` (each coverage the share of
    [`levy_core.metrics.covered`][levy_core.metrics.covered] over the channel's queries)."""
    y = pred["y_norm"].to_numpy(np.float64)
    parts = []
    for p in fitted.predictives(pred):
        if p.method.key == "last_value":
            continue
        lo, hi = p.band((level,), "conformal").bounds(level)
        inside = pd.Series(metrics.covered(y, lo, hi)).groupby(p.channels)
        parts.append(pd.DataFrame({"channel": inside.mean().index, "method": p.name,
                                   "coverage": inside.mean().values, "n": inside.size().values}))
    return pd.concat(parts, ignore_index=True)


@torch.no_grad()
def sampler_draws(fitted: FittedModel, batch: Batch, n_draws: int, seed: int) -> np.ndarray:
    """Draws of the sampled Lévy operator through the model's read-out, offset and prior,
    (n_draws, B, M), normalised units, heads drawn independently."""
    op = fitted.levy.operator(batch)
    # the share s(q) under the correction bound scales the read-out (LevyModel.bound_factor):
    # a function of the operator's expectation, so the draws scale by it too
    share = 1.0
    if bool(torch.isfinite(fitted.levy.correction_bound).any()):  # a bound only on rolling origins
        expected = levy_attention(op.q, op.k, op.v, kappa=op.kappa, key_weight=op.key_weight,
                                  phi=fitted.model_config.phi, decay=op.decay, readout=op.readout, prior=op.prior)
        share = fitted.levy.bound_factor(expected.mean[..., 0].sum(dim=1), batch.qry_channel)  # (B, M)
    gen = torch.Generator().manual_seed(seed)
    draws = sample_levy_attention(op.q, op.k, op.v, kappa=op.kappa, key_weight=op.key_weight,
                                  phi=fitted.model_config.phi, n_draws=n_draws, generator=gen, decay=op.decay,
                                  readout=op.readout, prior=op.prior)  # (n, B, H, M, 1)
    return (share * draws.sum(dim=2)[..., 0] + op.offset).numpy()


def _sampler_crps(fitted: FittedModel, batches: list[tuple[Batch, list[np.ndarray]]], df: pd.DataFrame,
                  n_draws: int, max_queries: int) -> dict[str, Any]:
    """Fair ensemble CRPS of ``n_draws`` draws of the sampled operator per query (spread
    scaled by the same ``c``), beside the closed-form Gaussian CRPS on the same queries.

    Drawing costs O(n_draws · K) Poisson counts per query, so at most ``max_queries`` test
    queries (a seeded random subset of whole series) are drawn.
    """
    c = fitted.levy_calibration.scale_
    order = np.random.default_rng(fitted.train_config.seed).permutation(len(batches))
    offsets = np.concatenate([[0], np.cumsum([int(b.qry_mask.sum()) for b, _ in batches])])
    rows, ensembles, n = [], [], 0
    for i in order:
        if n >= max_queries:
            break
        batch = batches[i][0]
        # within a batch, keep whole series until the budget is reached
        keep = int(np.searchsorted(np.cumsum(batch.qry_mask.sum(1).numpy()), max_queries - n, "right"))
        keep = max(1, min(keep, batch.qry_mask.shape[0]))
        sub = Batch(*(x[:keep] if x is not None else None for x in batch))
        draws = sampler_draws(fitted, sub, n_draws, seed=int(i))[:, sub.qry_mask.numpy() > 0]  # (n_draws, m)
        part = df.iloc[offsets[i]:offsets[i] + draws.shape[1]]
        mean = part["mean_norm"].to_numpy()
        ensembles.append((mean[None, :] + c * (draws - mean[None, :])).T)
        rows.append(part)
        n += draws.shape[1]
    drawn = pd.concat(rows)
    y, mean, sigma = (drawn[c_].to_numpy() for c_ in ("y_norm", "mean_norm", "sigma_norm"))
    return {"crps": metrics.crps_ensemble(y, np.concatenate(ensembles), fair=True), "draws": n_draws,
            "n_queries": int(len(y)),
            "closed_form_crps_same_queries": metrics.crps_gaussian(y, mean, fitted.levy_calibration.predict_std(sigma))}


def timed(work: Callable[[], Any], *, min_total: float | None = None, max_runs: int = 15) -> tuple[Any, float]:
    """``work()`` and its wall time. A run shorter than ``min_total`` (default
    `TIMING_MIN_SECONDS`, 0.25 s) is repeated (up to ``max_runs``, same seeded result) and
    the median reported: a split of a few hundred queries takes milliseconds, where one timing
    is mostly scheduler noise."""
    min_total = TIMING_MIN_SECONDS if min_total is None else min_total
    times: list[float] = []
    result: Any = None
    while True:
        t0 = time.perf_counter()
        out = work()
        times.append(time.perf_counter() - t0)
        result = out if result is None else result
        if sum(times) >= min_total or len(times) >= max_runs:
            return result, float(np.median(times))


def evaluate(fitted: FittedModel, data: Observations | ModelData, *, mc_passes: int | None = None,
             sampler_draws: int = 50, sampler_queries: int = 4000) -> tuple[dict[str, Any], pd.DataFrame]:
    """Score the Lévy closed form, MC-Dropout, the last-value baseline, the softmax twin and
    the 50-draw sampler on the test split (every series when the data is new). On rolling
    origins, also the adaptive conformal walk over the test origins (``adaptive_*`` keys,
    ``guarantee``; ``levy_core.calibration.over_time.backtest``).

    Returns the ``evaluate`` JSON dict and the per-query frame (normalised and original units).
    The dict's ``coverage_note`` is [`evaluation_note`][levy_core.pipeline.evaluation.evaluation_note]'s ``CoverageNote.to_dict()``: its
    ``text`` says in plain words when the Lévy 90 % band's coverage lies outside its
    per-series standard-error window (None within it).
    """
    data = as_model_data(fitted, data)
    ids = data.series_in("test")
    if not ids:
        raise DataError("no test series with both context and observations to predict")
    result, pred = evaluate_episodes(fitted, data.builder, ids, mc_passes=mc_passes, sampler_draws=sampler_draws,
                                     sampler_queries=sampler_queries)
    if fitted.split.mode == "origin":  # rolling origins: the band that holds over time, walked in time order
        origins = data.clock.origins
        walked, pred = backtest({"levy": fitted.levy_calibration, "mc": fitted.mc_calibration}, pred,
                                np.array([origins[m][1] for m in pred["series_id"]], dtype=np.float64),
                                gamma=walked_gamma(fitted))
        for key, name in (("levy", "levy"), ("mc", "mc_dropout")):
            if key in walked and name in result:
                result[name].update(walked[key])
        channels = pred["channel"].to_numpy()
        for column in [c for c in pred.columns if "_adaptive_90_norm" in c]:  # the walk's bands, data units
            pred[column.removesuffix("_norm")] = fitted.scaler.inverse_value(pred[column].to_numpy(), channels)
        result["guarantee"] = GUARANTEE
    result["coverage_note"] = evaluation_note(data, pred).to_dict()
    return result, pred


def evaluation_note(data: ModelData, pred: pd.DataFrame, level: float = 0.9,
                    band: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> CoverageNote:
    """[`coverage_note`][levy_core.calibration.coverage.coverage_note] of the Lévy band at ``level`` on
    ``evaluate``'s per-query frame ``pred`` (``n`` rows, ``series_id`` in model space): by
    default its 90 % band in data units against ``y_true`` — the adaptive walk's on rolling
    origins, split conformal's otherwise — or ``band = (y, lower, upper)``, each (n,), in
    any one unit. The standard error is over the user's series, or over the model's
    episodes (windows, forecast origins) when the queries come from one series."""
    adaptive = "lower_adaptive_90" in pred
    if band is None:
        lo, hi = ("lower_adaptive_90", "upper_adaptive_90") if adaptive else ("lower_90", "upper_90")
        band = (pred["y_true"].to_numpy(np.float64), pred[lo].to_numpy(np.float64), pred[hi].to_numpy(np.float64))
    model_ids = pred["series_id"].astype(str).tolist()
    users = data.clock.user_series(model_ids)
    one_series = len(set(users)) < 2 and data.clock.windowed
    unit = ("forecast origins" if isinstance(data.clock, OriginClock) else "windows") if one_series else "series"
    return coverage_note(*band, level=level, groups=model_ids if one_series else users, unit=unit,
                         what="test queries")


def walked_gamma(fitted: FittedModel) -> float:
    """The step the fit walked its test origins at (recorded in its ACI state): ``evaluate``
    re-walks at it, so a model saved before the step was scaled by the origins' overlap
    reports the walk its own band came from; `origin_gamma` of its plan otherwise."""
    for by_level in fitted.adaptive.values():
        for state in by_level.values():
            return float(state.gamma)
    return origin_gamma(fitted.split.origin_plan)


def sampler_check(fitted: FittedModel, data: Observations | ModelData, *, n_draws: int = 50,
                  max_queries: int = 4000) -> dict[str, Any]:
    """The ``sampler_50`` entry of [`evaluate`][levy_core.pipeline.evaluation.evaluate] alone: the fair ensemble CRPS of
    ``n_draws`` draws of the sampled operator on at most ``max_queries`` test queries, beside
    the closed form's CRPS on the same queries (what ``evaluate(..., sampler_draws=0)``
    leaves out; the same numbers, for a caller that shows the check on demand)."""
    if n_draws < 2 or max_queries < 1:
        raise ValueError(f"the sampler check needs at least 2 draws and 1 query, got {n_draws} and {max_queries}")
    data = as_model_data(fitted, data)
    ids = data.series_in("test")
    if not ids:
        raise DataError("no test series with both context and observations to predict")
    batches = [data.builder.batch(chunk) for chunk in chunks(ids)]
    df = observed_queries(fitted, data.builder, ids, 0, batches=batches)
    return _sampler_crps(fitted, batches, df, n_draws, max_queries)


def _flatten(parts: list[np.ndarray], batches: list[tuple[Batch, list[np.ndarray]]]) -> np.ndarray:
    """(B, M) padded arrays → the real queries in series order."""
    return np.concatenate([arr[batch.qry_mask.numpy() > 0] for arr, (batch, _) in zip(parts, batches, strict=True)])


def evaluate_episodes(fitted: FittedModel, builder: EpisodeBuilder, ids: list[str], *, mc_passes: int | None = None,
                      sampler_draws: int = 50, sampler_queries: int = 4000) -> tuple[dict[str, Any], pd.DataFrame]:
    """``evaluate`` on the fixed episodes ``ids`` of a prepared ``EpisodeBuilder``."""
    T = fitted.mc_passes if mc_passes is None else mc_passes
    if T == 1 or T < 0:
        raise ValueError(f"MC-Dropout needs at least 2 passes (or 0 to skip it), got {T}")
    batches = [builder.batch(chunk) for chunk in chunks(ids)]
    use_mc = fitted.twin is not None and T >= 2
    # warm both models up on the first batch so neither timing pays one-off kernel set-up
    run_pass(fitted, batches[0][0])
    if use_mc:
        fitted.twin.mc_dropout(batches[0][0], 2)
    levy_parts, levy_seconds = timed(lambda: [run_pass(fitted, b) for b, _ in batches])
    df = observed_queries(fitted, builder, ids, 0, batches=batches, results=levy_parts)
    seconds = {"levy": levy_seconds, "mc": math.nan, "last_value": 0.0}
    if use_mc:
        mc_parts, seconds["mc"] = timed(
            lambda: [fitted.twin.mc_dropout(b, T, generator_seed=fitted.train_config.seed) for b, _ in batches])
        df["mc_mean_norm"] = _flatten([m.numpy() for m, _ in mc_parts], batches)
        df["mc_std_norm"] = _flatten([s.numpy() for _, s in mc_parts], batches)
    if fitted.last_value is not None:
        df["lv_mean_norm"], df["lv_std_norm"] = fitted.last_value.predict(builder, ids)
    y = df["y_norm"].to_numpy()
    result: dict[str, Any] = {"n_test": int(len(df))}
    for p in fitted.predictives(df):
        name = {"levy": "levy", "mc": "mc_dropout", "last_value": "last_value"}[p.method.key]
        result[name] = method_metrics(y, p, seconds[p.method.key])
    if "mc_dropout" in result:
        result["mc_dropout"]["passes"] = T
        # what the sampling-based uncertainty costs per unit of the closed form's
        result["mc_dropout"]["cost_vs_levy"] = seconds["mc"] / max(seconds["levy"], 1e-9)
    if fitted.twin is not None:
        fitted.twin.eval()
        with torch.no_grad():
            soft = _flatten([fitted.twin(b).mean.numpy() for b, _ in batches], batches)
        result["softmax"] = {"mse": metrics.mean_squared_error(y, soft), "mae": metrics.mean_absolute_error(y, soft)}
    if sampler_draws:
        result["sampler_50"] = _sampler_crps(fitted, batches, df, sampler_draws, sampler_queries)
    pred = in_original_units(fitted, df, 0.9)
    for p in fitted.predictives(pred):  # beside the normalised scores: each channel in its own units
        name = {"levy": "levy", "mc": "mc_dropout", "last_value": "last_value"}[p.method.key]
        result[name]["per_channel_data_units"] = per_channel_data_units(fitted, pred, p)
    return result, pred.rename(columns={"lower_conf": "lower_90", "upper_conf": "upper_90"})
