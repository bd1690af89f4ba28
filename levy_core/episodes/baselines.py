"""The trivial forecasters every table puts beside the model, scored the same way.

* **Last value carried forward, with a fitted spread**: the query's channel's last observed
  value in the context (the channel's training mean where the series never observed it),
  with a per-channel Gaussian spread — the root-mean-square of ``y − last`` over the
  training series' queries. Calibrated like the models (global scale, per-channel conformal).
* **Training mean**: each channel's mean over the training series' observations.

Both work on the normalised scale of an ``EpisodeBuilder``, query by query in the same
order as the model's predictions (``EpisodeBuilder.batch``'s real queries, series by series).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from levy_core.episodes.tasks import EpisodeBuilder, SeriesArrays

__all__ = ["LastValueForecaster", "last_by_channel", "last_values"]


def last_by_channel(s: SeriesArrays, ctx: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Each channel's last value among the positions ``ctx`` of ``s`` (``fallback[channel]``
    where none), shape (C,) as ``fallback``; the latest time wins, ties the later position."""
    last = fallback.astype(np.float64).copy()
    last_time = np.full(len(fallback), -np.inf)
    for i in ctx:  # the latest observation of each channel wins (ties: the later row)
        c = s.channel[i]
        if s.time[i] >= last_time[c]:
            last[c], last_time[c] = s.value[i], s.time[i]
    return last


def last_values(builder: EpisodeBuilder, series_id: str, fallback: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per query of the series' fixed episode: the last context value of its channel
    (``fallback[channel]`` if none) and the query's channel, each (m,)."""
    s = builder.series[series_id]
    ctx, qry = builder.split_indices(series_id)
    last = last_by_channel(s, ctx, fallback)
    return last[s.channel[qry]], s.channel[qry]


@dataclass
class LastValueForecaster:
    """Carry each channel's last value forward, with a per-channel Gaussian spread.

    Attributes
    ----------
    train_mean : ndarray, shape (C,)
        Each channel's mean over the training observations (the value where none was seen).
    spread : ndarray, shape (C,)
        RMS of ``y − last`` over the training queries of each channel (the pooled RMS for a
        channel with fewer than ``min_queries`` of them).
    """

    train_mean: np.ndarray
    spread: np.ndarray

    @classmethod
    def fit(cls, builder: EpisodeBuilder, ids: list[str], *, min_queries: int = 20) -> LastValueForecaster:
        """Fit on the fixed episodes of the training series ``ids``."""
        n_ch = len(builder.channel_index)
        sums, counts = builder.channel_sums(ids)
        if not counts.sum():
            raise ValueError("no training observations to fit the last-value forecaster on")
        mean = np.where(counts > 0, sums / np.maximum(counts, 1), sums.sum() / counts.sum())
        sq, n = np.zeros(n_ch), np.zeros(n_ch)
        for sid in ids:
            last, chan = last_values(builder, sid, mean)
            y = builder.series[sid].value[builder.split_indices(sid)[1]]
            np.add.at(sq, chan, (y - last) ** 2)
            np.add.at(n, chan, 1)
        pooled = np.sqrt(sq.sum() / n.sum()) if n.sum() else 1.0
        spread = np.where(n >= min_queries, np.sqrt(sq / np.maximum(n, 1)), pooled)
        return cls(mean, np.maximum(spread, 1e-6 * max(pooled, 1e-12)))

    def predict(self, builder: EpisodeBuilder, ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Mean and spread per query of the fixed episodes of ``ids``, concatenated (n,)."""
        means, spreads = [], []
        for sid in ids:
            last, chan = last_values(builder, sid, self.train_mean)
            means.append(last)
            spreads.append(self.spread[chan])
        if not means:
            return np.zeros(0), np.zeros(0)
        return np.concatenate(means), np.concatenate(spreads)

    def predict_after(self, builder: EpisodeBuilder, series_id: str,
                      channels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and spread at queries past the end of one series of ``builder``, every
        observation its context (as ``pipeline.predict_after_end`` forecasts from it).

        Parameters
        ----------
        builder : EpisodeBuilder
        series_id : str
            A series of ``builder`` (model space: the end episode of a fit on few series).
        channels : ndarray of int, shape (m,)
            Each query's channel code.

        Returns
        -------
        (ndarray, ndarray)
            Each (m,), normalised units: the channel's last value (its training mean where
            the series never observed it) and the channel's spread.
        """
        s = builder.series[series_id]
        last = last_by_channel(s, np.arange(len(s.time)), self.train_mean)
        channels = np.asarray(channels, np.int64)
        return last[channels], self.spread[channels]

    def to_dict(self) -> dict:
        return {"train_mean": self.train_mean.tolist(), "spread": self.spread.tolist()}

    @classmethod
    def from_dict(cls, data: dict) -> LastValueForecaster:
        mean, spread = np.asarray(data["train_mean"], float), np.asarray(data["spread"], float)
        if mean.shape != spread.shape or mean.ndim != 1:
            raise ValueError("last-value forecaster: train_mean and spread must be lists of one length")
        if not (np.isfinite(mean).all() and np.isfinite(spread).all() and (spread > 0).all()):
            raise ValueError("last-value forecaster: values must be finite and spreads > 0")
        return cls(mean, spread)
