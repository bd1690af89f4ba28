"""Ranking series by trust in one batched pass."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
import pandas as pd
import torch

from levy_core.data import Observations
from levy_core.episodes.origins import OriginClock
from levy_core.episodes.tasks import EpisodeBuilder
from levy_core.model.batch import Batch
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import chunks
from levy_core.pipeline.prepared import ModelData, as_model_data
from levy_core.runtime.threads import pass_workers

__all__ = ["SCORE_COLUMNS", "order_by_trust", "rank", "score_series", "warm_up"]

# 128 series a batch: measured faster than 32, 64, 256, 512 or 1024 on 2 CPU cores (the
# batch's working set stays in cache), see benchmarks/rank.py
RANK_BATCH_SERIES = 128
SCORE_COLUMNS = ["series_id", "trust_score", "mean_sigma", "mean_log_evidence", "mean_n_eff", "mean_disagreement",
                 "n_observations", "n_queries"]
"""The columns of `score_series` (``rank`` puts ``rank`` in front)."""


@torch.no_grad()
def rank(fitted: FittedModel, data: Observations | ModelData, *, points_per_channel: int = 2,
         batch_series: int = RANK_BATCH_SERIES) -> tuple[pd.DataFrame, float]:
    """Rank series by trust in one batched pass.

    Each series is queried at ``points_per_channel`` times spread over its prediction range
    (``FittedModel.prediction_range``: after the cut-off for a forecast, its observed span
    for interpolation) for every channel it has observed in its context. The trust score is
    the mean calibrated predictive spread ``c·σ̂`` on the normalised scale (comparable across
    channels): lower = more trusted.

    Few series are ranked as the user's series: in window mode the mean over a series'
    windows, on rolling origins the forecast from its end (its last observations).

    Returns the ranked frame (columns ``rank, series_id, trust_score, mean_sigma,
    mean_log_evidence, mean_n_eff, mean_disagreement, n_observations, n_queries``) and the
    scoring time in seconds: preparing the episodes and the forward passes, after a one-series
    warm-up pass (kernel start-up) and without parsing.
    """
    warm_up(fitted)
    scores, seconds = score_series(fitted, data, points_per_channel=points_per_channel, batch_series=batch_series)
    return order_by_trust(scores), seconds


def order_by_trust(scores: pd.DataFrame, first_rank: int = 1) -> pd.DataFrame:
    """``scores`` (`SCORE_COLUMNS`) sorted by trust (score, then series id) with a
    ``rank`` column in front counting from ``first_rank``."""
    df = scores.sort_values(["trust_score", "series_id"], kind="stable").reset_index(drop=True)
    df.insert(0, "rank", np.arange(first_rank, first_rank + len(df)))
    return df


@torch.no_grad()
def score_series(fitted: FittedModel, data: Observations | ModelData, *, points_per_channel: int = 2,
                 batch_series: int = RANK_BATCH_SERIES, workers: int | None = None) -> tuple[pd.DataFrame, float]:
    """The trust score of every user series in ``data``, unsorted (what [`rank`][levy_core.pipeline.ranking.rank] ranks).

    A series' score depends on that series alone, so scoring the data in pieces of whole
    series (``levy_core.serving.chunked``, ``levy_core.serving.ray_engine``) gives the scores of the whole.
    Returns the frame (`SCORE_COLUMNS`, one row per user series) and the seconds it
    took (preparing the episodes and the forward passes; no warm-up).

    ``workers`` batches are scored side by side, each with one intra-op thread (default:
    `levy_core.runtime.threads.pass_workers`, PyTorch's thread count): the passes are many
    small operators, which one OpenMP team splits poorly and which, beside other work,
    wait on each other's threads. Each batch is computed alike whatever ``workers`` is, so
    the scores do not depend on it.
    """
    t0 = time.perf_counter()
    data = as_model_data(fitted, data)
    builder = data.builder
    ids = list(builder.series)
    if isinstance(data.clock, OriginClock):  # rolling origins: the trust of each series' forecast from its end
        ids = [data.clock.end_episode(sid)[0] for sid in sorted(set(data.clock.user_series(ids)))]
    # batches of similar context length pad (and so compute) far less: sorted by the context
    # itself (what the keys are), not the whole series, the padded keys drop by a quarter
    context = {sid: builder.split_indices(sid)[0] for sid in ids}
    ids = sorted(ids, key=lambda s: (len(context[s]), s))
    # where in each series' prediction range the queries sit (past the cut-off for a forecast)
    where = (np.linspace(0.0, 1.0, points_per_channel + 1)[1:] if fitted.task.kind == "forecast"
             else np.linspace(0.0, 1.0, points_per_channel))
    batches = chunks(ids, batch_series)
    score = partial(_score_batch, fitted, builder, context, where)
    threads = torch.get_num_threads()
    workers = min(pass_workers() if workers is None else workers, len(batches))
    if workers <= 1:
        parts = [score(chunk) for chunk in batches]
    else:
        try:
            with ThreadPoolExecutor(workers, thread_name_prefix="levy-score", initializer=torch.set_num_threads,
                                    initargs=(1,)) as pool:
                parts = list(pool.map(score, batches))
        finally:
            torch.set_num_threads(threads)  # the workers set the process's count for new threads
    seconds = time.perf_counter() - t0
    df = pd.DataFrame([row for part in parts for row in part], columns=SCORE_COLUMNS)
    if data.clock.windowed:  # the user's series, not the model's windows or episodes
        df["series_id"] = data.clock.user_series(df["series_id"].tolist())
        df = df.groupby("series_id", as_index=False).agg(
            trust_score=("trust_score", "mean"), mean_sigma=("mean_sigma", "mean"),
            mean_log_evidence=("mean_log_evidence", "mean"), mean_n_eff=("mean_n_eff", "mean"),
            mean_disagreement=("mean_disagreement", "mean"), n_observations=("n_observations", "sum"),
            n_queries=("n_queries", "sum"))
    return df, seconds


@torch.no_grad()  # grad mode is per thread: set here, where a worker runs it
def _score_batch(fitted: FittedModel, builder: EpisodeBuilder, context: dict[str, np.ndarray], where: np.ndarray,
                 chunk: list[str]) -> list[tuple]:
    """One batch's rows of `SCORE_COLUMNS`: each series queried at ``where`` in its
    prediction range for each channel of its ``context``, one pass."""
    items = []
    for sid in chunk:
        s, ctx = builder.series[sid], context[sid]
        lo, hi = fitted.prediction_range(s.time)
        t = lo + (hi - lo) * where
        chans = np.unique(s.channel[ctx]) if len(ctx) else np.unique(s.channel)
        items.append((sid, ctx, np.tile(t, len(chans)), np.repeat(chans, len(t))))
    batch = builder.collate(items)
    out = fitted.levy(batch)
    mask = batch.qry_mask  # (B, M)
    denom = mask.sum(1).clamp_min(1.0)
    n_heads = out.log_evidence.shape[1]
    per_query = (out.sigma, torch.logsumexp(out.log_evidence, dim=1) - np.log(n_heads),
                 out.n_eff.mean(dim=1), out.disagreement.sum(dim=1))  # each (B, M)
    sig, lev, nef, dsg = (((x * mask).sum(1) / denom).numpy() for x in per_query)  # each (B,)
    c = fitted.levy_calibration.scale_
    return [(sid, c * sig[b], sig[b], lev[b], nef[b], dsg[b], len(builder.series[sid].time), int(denom[b]))
            for b, sid in enumerate(chunk)]


@torch.no_grad()
def warm_up(fitted: FittedModel) -> None:
    """One tiny forward pass: thread pools and kernels are set up outside any timing."""
    n = 8
    zeros, ones = torch.zeros(1, n), torch.ones(1, n)
    channel = torch.zeros(1, n, dtype=torch.int64)
    fitted.levy(Batch(zeros, channel, zeros, ones, zeros, channel, ones))
