"""What one query drew on: its attention weights, and draws of the sampled operator."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import torch

from levy_core import metrics
from levy_core.data import DataError, Observations
from levy_core.episodes import transforms
from levy_core.model.batch import Batch
from levy_core.pipeline.evaluation import sampler_draws
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import run_pass
from levy_core.pipeline.prepared import ModelData, as_model_data

__all__ = ["attention_weights", "operator_draws", "query_crps", "width_factors"]


def _one_query(fitted: FittedModel, data: ModelData, series_id: str, channel: str, time_: float) -> Batch:
    builder = data.builder
    if series_id not in builder.series:
        raise DataError(f"unknown series {series_id!r}")
    if channel not in builder.channel_index:
        raise DataError(f"unknown channel {channel!r}")
    return builder.query_batch([(series_id, np.array([time_]), np.array([builder.channel_index[channel]]))])


@torch.no_grad()
def attention_weights(fitted: FittedModel, data: Observations | ModelData, series_id: str, channel: str,
                      time_: float) -> pd.DataFrame:
    """Which context observations one query drew on: the Lévy weights ``p_i`` among the
    observations per head and averaged over heads, with each observation's time, channel and
    value (original units); ``df.attrs["data_share"]`` holds each head's share of the data
    in its whole measure (the rest is its prior)."""
    data = as_model_data(fitted, data)
    batch = _one_query(fitted, data, series_id, channel, time_)
    weights, share = fitted.levy.attention_weights(batch)  # (1, H, 1, N), (1, H, 1)
    p = weights[0, :, 0, :].numpy()  # (H, N), among the observations
    s = data.builder.series[series_id]
    ctx, _ = data.builder.split_indices(series_id)
    names = np.array([fitted.channels[i] for i in s.channel[ctx]])
    df = pd.DataFrame({"time": s.time[ctx], "channel": names,
                       "value": fitted.scaler.inverse_value(s.value[ctx], names)})
    for h in range(p.shape[0]):
        df[f"weight_head{h}"] = p[h, :len(ctx)]
    df["weight"] = p[:, :len(ctx)].mean(0)
    df.attrs["data_share"] = share[0, :, 0].tolist()  # per head: the observations' share of Λ
    return df


@torch.no_grad()
def operator_draws(fitted: FittedModel, data: Observations | ModelData, series_id: str, channel: str,
                   time_: float, *, n_draws: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Draws of the sampled Lévy operator at one query (original units) beside its closed form.

    Returns ``draws (n_draws,)``, ``mean``, ``sigma`` (closed-form σ̂), ``rmsd`` (of the
    draws around ``mean``) with its Monte-Carlo standard error ``rmsd_se`` (delta method),
    ``rmsd_relative_gap = rmsd/σ̂ − 1`` and ``rmsd_z = |rmsd − σ̂| / rmsd_se`` (the identity
    predicts a gap within a few standard errors), the calibration scale ``scale_c``, the
    scaled draws ``mean + c(draw - mean)`` and the channel's ``transform``. On a log / log1p
    channel every value here is in the transformed units (``g(v)``, where the model works and
    the identity holds; [`query_crps`][levy_core.pipeline.diagnostics.query_crps] scores there too); otherwise in the data's units.
    """
    data = as_model_data(fitted, data)
    batch = _one_query(fitted, data, series_id, channel, time_)
    res = run_pass(fitted, batch)
    draws_n = sampler_draws(fitted, batch, n_draws, seed)[:, 0, 0]  # (n,)
    scale = float(fitted.scaler.scale_of(np.array([channel]))[0])  # the linear map: data or g(v) units
    lo = fitted.scaler.minimum[channel]
    mean_n, sigma_n = float(res["mean_norm"][0, 0]), float(res["sigma_norm"][0, 0])
    mean, draws = mean_n * scale + lo, draws_n * scale + lo
    c = fitted.calibration_for(series_id).scale_  # the scale this series' band takes
    sq = (draws - mean) ** 2
    rmsd, sigma = float(np.sqrt(np.mean(sq))), sigma_n * scale
    rmsd_se = float(np.std(sq) / (2 * max(rmsd, 1e-300) * math.sqrt(len(sq))))  # delta method
    return {"draws": draws, "mean": mean, "sigma": sigma, "rmsd": rmsd, "rmsd_se": rmsd_se,
            "rmsd_relative_gap": rmsd / max(sigma, 1e-300) - 1, "rmsd_z": abs(rmsd - sigma) / max(rmsd_se, 1e-300),
            "scale_c": c, "scaled_draws": mean + c * (draws - mean), "transform": fitted.scaler.transform_of(channel)}


def query_crps(draws: dict[str, Any], y_true: float, n_sampler: int = 50) -> dict[str, float]:
    """CRPS at one query of ``operator_draws``: the closed-form scaled Gaussian beside the
    first ``n_sampler`` scaled draws (fair ensemble CRPS); ``y_true`` in the data's units (on
    a log / log1p channel it is transformed first: both are scored in the transformed units,
    as the draws are)."""
    c = float(draws["scale_c"])
    y = float(transforms.forward(np.array([y_true]), draws.get("transform", "none"))[0])
    closed = metrics.crps_gaussian_per_point([y], [draws["mean"]], [c * draws["sigma"]])[0]
    ens = metrics.crps_ensemble_per_point([y], np.asarray(draws["scaled_draws"])[None, :n_sampler], fair=True)[0]
    return {"closed_form": float(closed), "sampler": float(ens)}


def width_factors(query: pd.Series, reference: pd.DataFrame) -> dict[str, float | str]:
    """Why one query's σ̂ differs from the typical query of ``reference``: with the
    scale-free terms of ``log σ̂`` (``evidence_term``, ``disagreement_term_norm`` of a
    prediction frame), ``ratio = σ̂ / median σ̂ = evidence · disagreement``, each factor the
    exponential of the query's term minus the reference median; ``reason`` names the term
    that moved σ̂ most in its direction ("evidence" or "disagreement"): the one that grew
    more when σ̂ is wider, the one that shrank more when it is narrower."""
    de = float(query["evidence_term"]) - float(np.median(reference["evidence_term"]))
    dd = float(query["disagreement_term_norm"]) - float(np.median(reference["disagreement_term_norm"]))
    return {"ratio": float(np.exp(de + dd)), "evidence": float(np.exp(de)), "disagreement": float(np.exp(dd)),
            "reason": "evidence" if (de > dd if de + dd > 0 else de < dd) else "disagreement"}
