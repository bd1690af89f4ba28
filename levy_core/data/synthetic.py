"""A multichannel, irregularly sampled data set whose generating process is known.

Every series ``i`` is drawn from its own generator, ``numpy.random.default_rng([seed, i])``,
so a series does not change when ``n_series`` does, and its noiseless signal can be
recomputed at any time with `synthetic_truth_at`.

The process, over ``0 <= t <= 48`` hours (``U`` uniform)
---------------------------------------------------------
Latent
    ``z(t) = A sin(2π t / P + φ)`` with ``A ~ U(0.8, 1.5)``, ``P ~ U(16, 32)`` h,
    ``φ ~ U(0, 2π)``.
Channels (mean, noise standard deviation)
    * ``smooth``  -- ``5 + z(t)``; noise std ``0.05`` (small).
    * ``coupled`` -- ``20 + 4 tanh(z(t)) + B sin(2π t / P₂ + φ₂)`` with
      ``B ~ U(0.5, 1.5)``, ``P₂ ~ U(4, 8)`` h, ``φ₂ ~ U(0, 2π)``; heteroscedastic noise
      whose std grows with time, ``0.1 + 0.02 t`` (0.1 at 0 h, 1.06 at 48 h).
    * ``noisy``   -- ``100 + 10 z(t)``; noise std ``6`` (large next to its swing of
      8 to 15).
    Noise is Gaussian and independent across observations.
Sampling
    2 to 4 gaps (count uniform), each ``U(3, 6)`` h long, split the 48 h into dense
    stretches of at least 1.5 h (stretch lengths Dirichlet(3, ..., 3) of the remaining
    time, redrawn until all are long enough; boundaries rounded to 0.01 h). Inside the
    stretches event times form a Poisson process whose rate is set so that a series
    expects a target count ``~ U(195, 255)`` observations (about 3--5 events per hour);
    times are rounded to 1e-4 h and repeats dropped. At each event each channel is
    observed independently with probability 0.7 (smooth), 0.5 (coupled), 0.4 (noisy);
    an event where none came up observes one channel chosen at random. No channel is
    observed strictly inside a gap. Series then hold about 150--300 observations.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = [
    "CHANNELS",
    "HORIZON_HOURS",
    "SyntheticData",
    "make_synthetic",
    "series_name",
    "synthetic_truth_at",
]

CHANNELS: tuple[str, ...] = ("smooth", "coupled", "noisy")
"""Channel names, in generation order."""
HORIZON_HOURS: float = 48.0
"""Every series lives on ``[0, HORIZON_HOURS]``."""

_OBS_PROB = np.array([0.7, 0.5, 0.4])  # per channel, at each event
_MIN_STRETCH = 1.5  # hours of dense sampling between gaps, at least
_TIME_DECIMALS = 4  # event times rounded to 1e-4 h (0.36 s)


class SyntheticData(NamedTuple):
    """What `make_synthetic` returns (unpacks as ``obs, truth, gaps``).

    Attributes
    ----------
    observations : pandas.DataFrame
        ``series_id, channel, time, value``, sorted by ``(series_id, time, channel)``.
    truth : pandas.DataFrame
        Row for row beside ``observations``: ``series_id, channel, time, mean,
        noise_std`` -- the noiseless signal and the true noise std at that time.
    gaps : pandas.DataFrame
        ``series_id, start, end``: intervals (hours) with no observation of any channel
        strictly inside.
    """

    observations: pd.DataFrame
    truth: pd.DataFrame
    gaps: pd.DataFrame


def series_name(index: int) -> str:
    """Series id of series ``index``: ``"s00"``, ``"s01"``, ..., ``"s100"``."""
    return f"s{index:02d}"


def _series_index(series_id: str) -> int:
    if not (series_id.startswith("s") and series_id[1:].isdigit()):
        raise ValueError(f"not a synthetic series id: {series_id!r} (expected e.g. 's07')")
    return int(series_id[1:])


def _params(rng: np.random.Generator) -> dict[str, float]:
    """Signal parameters of one series (drawn first from its generator)."""
    return {
        "amplitude": float(rng.uniform(0.8, 1.5)),
        "period": float(rng.uniform(16.0, 32.0)),
        "phase": float(rng.uniform(0.0, 2 * np.pi)),
        "amplitude2": float(rng.uniform(0.5, 1.5)),
        "period2": float(rng.uniform(4.0, 8.0)),
        "phase2": float(rng.uniform(0.0, 2 * np.pi)),
    }


def _mean_and_std(
    p: dict[str, float], channel: str, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Noiseless signal and noise std of ``channel`` at times ``t`` (hours)."""
    z = p["amplitude"] * np.sin(2 * np.pi * t / p["period"] + p["phase"])
    if channel == "smooth":
        return 5.0 + z, np.full_like(t, 0.05)
    if channel == "coupled":
        mean = (
            20.0
            + 4.0 * np.tanh(z)
            + p["amplitude2"] * np.sin(2 * np.pi * t / p["period2"] + p["phase2"])
        )
        return mean, 0.1 + 0.02 * t
    if channel == "noisy":
        return 100.0 + 10.0 * z, np.full_like(t, 6.0)
    raise ValueError(f"unknown synthetic channel {channel!r}; expected one of {CHANNELS}")


def synthetic_truth_at(
    series_id: str, channel: str, times: np.ndarray, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The true mean and noise std of one series and channel at any times.

    Parameters
    ----------
    series_id : str
        A synthetic series id such as ``"s07"``.
    channel : str
        One of `CHANNELS`.
    times : ndarray of float, shape (n,)
        Hours.
    seed : int
        The seed passed to `make_synthetic`.

    Returns
    -------
    mean, noise_std : ndarray of float64, shape (n,)
    """
    rng = np.random.default_rng([seed, _series_index(series_id)])
    t = np.asarray(times, dtype=np.float64)
    return _mean_and_std(_params(rng), channel, t)


def _stretches(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Dense stretches ``[a_j, b_j]`` and the gaps between them, as (n, 2) arrays."""
    n_gaps = int(rng.integers(2, 5))
    gap_len = rng.uniform(3.0, 6.0, size=n_gaps)
    dense_total = HORIZON_HOURS - gap_len.sum()
    while True:
        dense = dense_total * rng.dirichlet(np.full(n_gaps + 1, 3.0))
        if dense.min() >= _MIN_STRETCH:
            break
    # alternate dense, gap, dense, ..., dense
    lengths = np.empty(2 * n_gaps + 1)
    lengths[0::2] = dense
    lengths[1::2] = gap_len
    edges = np.round(np.concatenate([[0.0], np.cumsum(lengths)]), 2)
    edges[-1] = HORIZON_HOURS
    bounds = np.stack([edges[:-1], edges[1:]], axis=1)  # (2 n_gaps + 1, 2)
    return bounds[0::2], bounds[1::2]


def _one_series(seed: int, index: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng([seed, index])
    p = _params(rng)
    dense, gaps = _stretches(rng)
    target = rng.uniform(195.0, 255.0)
    expected_channels = _OBS_PROB.sum() + np.prod(1 - _OBS_PROB)  # per event
    dense_hours = float((dense[:, 1] - dense[:, 0]).sum())
    rate = target / (expected_channels * dense_hours)  # events per hour
    times = []
    for a, b in dense:
        n = rng.poisson(rate * (b - a))
        times.append(rng.uniform(a, b, size=n))
    t = np.unique(np.round(np.concatenate(times), _TIME_DECIMALS))  # sorted, distinct
    observed = rng.random((t.size, len(CHANNELS))) < _OBS_PROB  # (T, C)
    none = ~observed.any(axis=1)
    observed[np.flatnonzero(none), rng.integers(0, len(CHANNELS), size=int(none.sum()))] = True

    sid = series_name(index)
    parts = []
    for c, name in enumerate(CHANNELS):
        tc = t[observed[:, c]]
        mean, std = _mean_and_std(p, name, tc)
        value = mean + std * rng.standard_normal(tc.size)
        parts.append(
            pd.DataFrame(
                {
                    "series_id": sid,
                    "channel": name,
                    "time": tc,
                    "value": value,
                    "mean": mean,
                    "noise_std": std,
                }
            )
        )
    frame = pd.concat(parts, ignore_index=True)
    gap_frame = pd.DataFrame({"series_id": sid, "start": gaps[:, 0], "end": gaps[:, 1]})
    return frame, gap_frame


def make_synthetic(n_series: int = 40, seed: int = 0) -> SyntheticData:
    """Draw the synthetic data set (process in the module docstring).

    Parameters
    ----------
    n_series : int
        Number of series, ids ``series_name(0) .. series_name(n_series - 1)``.
    seed : int
        Base seed; series ``i`` uses ``numpy.random.default_rng([seed, i])``.

    Returns
    -------
    SyntheticData
        ``(observations, truth, gaps)``; unpack as a 3-tuple.
    """
    if n_series < 1:
        raise ValueError(f"n_series must be at least 1, got {n_series}")
    frames, gap_frames = zip(*(_one_series(seed, i) for i in range(n_series)), strict=True)
    full = pd.concat(frames, ignore_index=True)
    full = full.sort_values(["series_id", "time", "channel"], kind="stable", ignore_index=True)
    full["series_id"] = full["series_id"].astype(str)
    full["channel"] = full["channel"].astype(str)
    observations = full[["series_id", "channel", "time", "value"]].copy()
    truth = full[["series_id", "channel", "time", "mean", "noise_std"]].copy()
    gaps = pd.concat(gap_frames, ignore_index=True)
    gaps["series_id"] = gaps["series_id"].astype(str)
    return SyntheticData(observations=observations, truth=truth, gaps=gaps)
