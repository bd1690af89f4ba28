"""The scenarios of `levy_core.decisions.advise.advise` and the one model pass over them.

A scenario is the series' end episode with one candidate measurement added (its channel,
its time, one drawn or given value) and the target queries; on rolling origins the forecast
origin moves to the measurement and the classical offset is refitted with the value in its
past (`base_offsets`). All scenarios are padded into one batch (`collate`) and run
through the Lévy model in one pass (`run_pass`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from levy_core.model.batch import Batch
from levy_core.offsets.base_forecast import BaseForecast
from levy_core.pipeline.modelfile import FittedModel

__all__ = ["AdvisedSeries", "PassOutput", "Scenario", "base_offsets", "collate", "lead_factor", "run_pass", "scenario"]


@dataclass(frozen=True)
class AdvisedSeries:
    """One series' end episode in model space (what a forecast past the data starts from)."""

    user_id: str
    model_id: str
    origin: float  # user hours of model time 0
    time: np.ndarray  # (n,) model hours
    channel: np.ndarray  # (n,) codes
    value: np.ndarray  # (n,) normalised
    now: float  # model hours of the last observation
    history: float | None  # rolling origins: the context window's length (the origin moves)
    base: BaseForecast | None  # rolling origins: the classical offset (refitted with a new value)


@dataclass(frozen=True)
class Scenario:
    """One scenario: its context (times, channel codes, normalised values; (n,) each), its
    queries (times, codes; (m,) each) and their classical offsets (m,) on rolling origins."""

    ctx_time: np.ndarray
    ctx_channel: np.ndarray
    ctx_value: np.ndarray
    q_time: np.ndarray
    q_channel: np.ndarray
    offset: np.ndarray | None


def scenario(fitted: FittedModel, series: AdvisedSeries, q_time: np.ndarray, q_code: np.ndarray, *,
         ahead: float, extra: tuple[int, float] | None, cache: dict) -> Scenario:
    """One scenario: the context (with ``extra`` = (channel code, normalised value) measured
    ``ahead`` hours after now) and the queries ``q_time`` (model hours of today's episode)."""
    t, c, v = series.time, series.channel, series.value
    shift = 0.0
    if series.history is not None and ahead > 0:  # rolling origins: the origin moves to the measurement
        shift = ahead
        keep = t >= ahead - series.history
        t, c, v = t[keep] - shift, c[keep], v[keep]
    if extra is not None:
        t = np.append(t, series.now + ahead - shift)
        c = np.append(c, extra[0])
        v = np.append(v, extra[1])
    q = q_time - shift
    offset = None
    base = series.base
    if base is not None:
        origin = series.origin + shift
        key = (shift, q.tobytes(), q_code.tobytes())  # the other channels' offsets: value-free, once per origin
        if key not in cache:
            cache[key] = base_offsets(base, series.user_id, origin, q, q_code, None)
        offset = cache[key].copy()
        mine = q_code == extra[0] if extra is not None else np.zeros(len(q), bool)
        if mine.any():  # the measured channel's forecaster refitted with the value in its past
            offset[mine] = base_offsets(base, series.user_id, origin, q[mine], q_code[mine],
                                         (extra[0], origin, extra[1]))
    return Scenario(t, c, v, q, q_code, offset)


def base_offsets(base: BaseForecast, user_id: str, origin: float, times: np.ndarray, codes: np.ndarray,
                  extra: tuple[int, float, float] | None) -> np.ndarray:
    """The offsets ``base`` gives the end episode at a (possibly moved) ``origin`` (user
    hours), with one more observation ``extra`` = (channel code, user hours, normalised value)
    in the past of its channel (then only that channel's queries should be asked):
    normalised, NaN where the channel has no past. The forecasters are ``base``'s own, run by
    a ``BaseForecast`` over this series' past, never a copy of their code."""
    keep = None if extra is None else base.channels[extra[0]]
    parts = [pd.DataFrame({"series_id": user_id, "channel": channel, "time": past.t, "value": past.y})
             for (sid, channel), past in base.past.items() if sid == user_id and keep in (None, channel)]
    if extra is not None:
        parts.append(pd.DataFrame({"series_id": [user_id], "channel": [keep], "time": [extra[1]],
                                   "value": [extra[2]]}))
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["series_id", "channel", "time", "value"])
    view = BaseForecast(base.spec, frame, {"advice": (user_id, origin)}, base.channels)
    return view.offsets("advice", times, codes)


def collate(rows: list[Scenario]) -> Batch:
    """Pad scenarios into one batch (B rows, N context, M queries)."""
    B = len(rows)
    N = max(1, max(len(r.ctx_time) for r in rows))
    M = max(1, max(len(r.q_time) for r in rows))
    ct, cc, cv, cm = np.zeros((B, N), np.float32), np.zeros((B, N), np.int64), np.zeros((B, N), np.float32), \
        np.zeros((B, N), np.float32)
    qt, qc, qm = np.zeros((B, M), np.float32), np.zeros((B, M), np.int64), np.zeros((B, M), np.float32)
    offset = np.full((B, M), np.nan, np.float32) if any(r.offset is not None for r in rows) else None
    for b, r in enumerate(rows):
        n, m = len(r.ctx_time), len(r.q_time)
        ct[b, :n], cc[b, :n], cv[b, :n], cm[b, :n] = r.ctx_time, r.ctx_channel, r.ctx_value, 1.0
        qt[b, :m], qc[b, :m], qm[b, :m] = r.q_time, r.q_channel, 1.0
        if offset is not None and r.offset is not None:
            offset[b, :m] = r.offset
    t = torch.from_numpy
    return Batch(t(ct), t(cc), t(cv), t(cm), t(qt), t(qc), t(qm), None,
                 t(offset) if offset is not None else None)


@dataclass(frozen=True)
class PassOutput:
    """One pass of the Lévy model over the scenarios, float64 numpy."""

    mean: np.ndarray  # (B, M) normalised
    spread: np.ndarray  # (B, M) the band's spread before calibration (FittedModel.band_spread)
    log_evidence: np.ndarray  # (B, H, M)
    disagreement: np.ndarray  # (B, H, M)
    context: dict[str, np.ndarray]  # (B, M) each: the query's context summaries (query_scale.query_context)


def lead_factor(fitted: FittedModel, model_time: np.ndarray) -> np.ndarray:
    """``s(h)`` of a fit on rolling origins (model time is the lead there); 1 otherwise."""
    if fitted.horizon_scale is None:
        return np.ones_like(model_time, dtype=np.float64)
    return fitted.horizon_scale.factor(model_time)


@torch.no_grad()
def run_pass(fitted: FittedModel, batch: Batch) -> PassOutput:
    """One pass of the Lévy model over ``batch`` (float64 numpy out)."""
    out = fitted.levy(batch)
    spread, context = fitted.band_spread(batch, out)
    return PassOutput(out.mean.double().numpy(), spread, out.log_evidence.double().numpy(),
                out.disagreement.double().numpy(), context)
