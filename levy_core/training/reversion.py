"""Fit the offset's mean reversion per channel, in closed form, before training.

`levy_core.model.reversion` decays a query's last value towards a level as it ages:
``b(q) = m + (y_last − m) · exp(−r_c Δ)``, ``m = w_c · (series mean) + (1 − w_c) · (training
mean)``. Here each channel's ``(r_c, w_c)`` is the pair of a small grid with the least squared
error on the fixed episodes of the training series; ``r_c = 0`` (the last value) is on the
grid and is kept unless another pair lowers the error by ``MIN_GAIN`` with at least
``MIN_QUERIES`` queries aged past their channel's last value. Two numbers per channel
fitted on every training query: on 300 ICU stays that is thousands of queries a channel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from levy_core.episodes.tasks import EpisodeBuilder
from levy_core.model.encoder import Backbone, channel_state

__all__ = ["MIN_GAIN", "MIN_QUERIES", "RATES", "TO_SERIES", "ReversionFit", "fit_mean_reversion", "install"]

#: candidate rates r_c per time_scale unit: 0 (the last value) and half-lives from 1/20 to 20 time_scales
RATES = np.concatenate([[0.0], np.log(2.0) / np.geomspace(0.05, 20.0, 14)])
TO_SERIES = (0.0, 0.5, 1.0)  # the level: the training mean, halfway, the series' own context mean
MIN_GAIN = 0.01  # a reversion must lower the channel's squared error by this share over the last value
MIN_QUERIES = 30  # queries after their channel's last value, per channel, to fit a reversion at all


@dataclass
class ReversionFit:
    """The fitted reversion of each channel (``fit_mean_reversion``).

    Attributes
    ----------
    rate : ndarray, shape (C,)
        ``r_c`` per time_scale unit, float32; 0 where the last value was kept.
    to_series : ndarray, shape (C,)
        ``w_c`` in [0, 1], float32: the level's weight on the series' own context mean.
    last_mse : float
        The last value's MSE over the episodes' aged queries (normalised units²).
    mse : float
        The fitted offset's MSE there.
    """

    rate: np.ndarray
    to_series: np.ndarray
    last_mse: float
    mse: float

    def to_dict(self) -> dict:
        """The figures a fit report shows."""
        return {"rate": [round(float(r), 6) for r in self.rate],
                "to_series": [float(w) for w in self.to_series],
                "last_mse": round(self.last_mse, 7), "mse": round(self.mse, 7)}


def fit_mean_reversion(backbone: Backbone, builder: EpisodeBuilder, ids: list[str],
                       batch_size: int = 64) -> ReversionFit:
    """Each channel's ``(r_c, w_c)`` on the fixed episodes of ``ids`` (the training series).

    Reads ``backbone.default`` (the channels' training means: set it first) and
    ``backbone.cfg.time_scale``; changes nothing. Only queries after their channel's last
    context value count (the others keep the last value whatever the rate).

    Raises
    ------
    ValueError
        When the episodes have no targets.
    """
    n_channels = backbone.cfg.n_channels
    columns: list[tuple[np.ndarray, ...]] = []
    with torch.no_grad():
        for start in range(0, len(ids), batch_size):
            batch, _ = builder.batch(ids[start:start + batch_size])
            if batch.target is None:
                raise ValueError("mean reversion: episodes need targets")
            state = channel_state(batch, n_channels)
            qc = batch.qry_channel
            since = (batch.qry_time - torch.gather(state.last_time, 1, qc)) / backbone.cfg.time_scale
            aged = (batch.qry_mask > 0) & (torch.gather(state.count, 1, qc) > 0) & (since > 0)
            aged &= torch.isfinite(batch.target)
            parts = (qc, since, torch.gather(state.last_value, 1, qc), torch.gather(state.mean_value, 1, qc),
                     backbone.default[qc], batch.target)
            columns.append(tuple(p[aged].numpy().astype(np.float64) for p in parts))
    if not columns or sum(len(c[0]) for c in columns) == 0:
        return _none(n_channels)
    ch, since, last, series_mean, channel_mean, target = (np.concatenate(c) for c in zip(*columns, strict=True))
    ch = ch.astype(np.int64)
    count = np.bincount(ch, minlength=n_channels)
    # squared error per (level weight, rate, channel)
    sse = np.empty((len(TO_SERIES), len(RATES), n_channels))
    for i, w in enumerate(TO_SERIES):
        level = w * series_mean + (1.0 - w) * channel_mean
        for j, rate in enumerate(RATES):
            pred = level + (last - level) * np.exp(-rate * since)
            sse[i, j] = np.bincount(ch, weights=(target - pred) ** 2, minlength=n_channels)
    kept = sse[0, 0]  # the last value (rate 0: every level gives it)
    flat = sse.reshape(-1, n_channels)
    best = flat.argmin(axis=0)
    best_sse = flat[best, np.arange(n_channels)]
    revert = (count >= MIN_QUERIES) & (best_sse < (1.0 - MIN_GAIN) * kept)
    i_best, j_best = np.unravel_index(best, sse.shape[:2])
    rate = np.where(revert, RATES[j_best], 0.0)
    to_series = np.where(revert, np.asarray(TO_SERIES)[i_best], 0.0)
    total = max(float(count.sum()), 1.0)
    chosen = np.where(revert, best_sse, kept)
    return ReversionFit(rate.astype(np.float32), to_series.astype(np.float32), float(kept.sum() / total),
                        float(chosen.sum() / total))


def _none(n_channels: int) -> ReversionFit:
    """No aged query: the last value everywhere."""
    zeros = np.zeros(n_channels, dtype=np.float32)
    return ReversionFit(zeros, zeros.copy(), 0.0, 0.0)


def install(backbone: Backbone, fit: ReversionFit) -> None:
    """Set ``backbone``'s reversion buffers from ``fit``."""
    backbone.revert_rate.copy_(torch.as_tensor(fit.rate))
    backbone.revert_to_series.copy_(torch.as_tensor(fit.to_series))
