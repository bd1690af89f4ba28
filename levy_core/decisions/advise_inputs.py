"""The arguments of `levy_core.decisions.advise.advise`, checked and resolved: the series
(its end episode), the horizon, the target channels, the candidate measurements and the
seeded draws; unknown names and times outside ``[now, now + horizon]`` raise ``DataError``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from levy_core.data import DataError
from levy_core.decisions.advise_scenarios import AdvisedSeries
from levy_core.episodes.origins import OriginClock
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.prepared import ModelData
from levy_core.pipeline.user_units import duration_of, time_of

__all__ = ["FALLBACK_HORIZON", "Candidate", "advice_horizon", "advised_series", "candidate_pairs", "known_channel",
           "normal_draws", "one_figure", "target_channels"]

FALLBACK_HORIZON = 24.0  # hours, for a model fitted without a horizon

Candidate = str | tuple[str, float]


def advised_series(fitted: FittedModel, data: ModelData, series_id: str | None) -> AdvisedSeries:
    """The end episode of ``series_id`` (may be None when the data hold one series); DataError
    for an unknown series or one with no observation."""
    users = [str(s) for s in pd.unique(data.obs.frame["series_id"])]
    if series_id is None:
        if len(users) != 1:
            raise DataError(f"the data hold {len(users)} series: name one (series_id=…, --series), e.g. "
                            f"{', '.join(users[:5])}")
        series_id = users[0]
    series_id = str(series_id)
    if series_id not in users:
        raise DataError(f"unknown series {series_id!r}: the data hold {', '.join(users[:8])}"
                        + (" …" if len(users) > 8 else ""))
    builder = data.builder
    model_id, origin = data.clock.end_episode(series_id, set(builder.series))
    s = builder.series[model_id]
    if not len(s.time):
        raise DataError(f"series {series_id!r} has no observation to advise from")
    origins = isinstance(data.clock, OriginClock)
    return AdvisedSeries(series_id, model_id, float(origin), s.time.astype(np.float64), s.channel.astype(np.int64),
                   s.value.astype(np.float64), float(s.time.max()), data.clock.plan.history if origins else None,
                   builder.base if origins else None)


def advice_horizon(fitted: FittedModel, horizon: float | None) -> float:
    """``horizon`` in hours (default: the fit's, else ``FALLBACK_HORIZON``); ValueError unless positive."""
    if horizon is None:
        horizon = fitted.task.horizon if fitted.task.horizon else FALLBACK_HORIZON
    if isinstance(horizon, bool) or not isinstance(horizon, (int, float)) or not (math.isfinite(horizon)
                                                                                   and horizon > 0):
        raise ValueError(f"horizon must be a positive number of hours, got {horizon!r}")
    return float(horizon)


def known_channel(fitted: FittedModel, channel: str, what: str) -> str:
    """``channel`` as a string; DataError naming ``what`` when the model does not know it."""
    if str(channel) not in fitted.channels:
        raise DataError(f"unknown channel {channel!r} among the {what}: the model knows "
                        f"{', '.join(fitted.channels[:12])}" + (" …" if len(fitted.channels) > 12 else ""))
    return str(channel)


def target_channels(fitted: FittedModel, series: AdvisedSeries, targets: Sequence[str] | None) -> list[str]:
    """The target channels, each once (default: every channel the series has observed)."""
    if targets is None:
        return [fitted.channels[c] for c in np.unique(series.channel)]
    if isinstance(targets, str):
        targets = [targets]
    names = list(dict.fromkeys(known_channel(fitted, c, "targets") for c in targets))
    if not names:
        raise ValueError("the target set is empty: name at least one channel whose band should narrow "
                         "(or leave targets out for every channel the series has observed)")
    return names


def candidate_pairs(fitted: FittedModel, series: AdvisedSeries, candidates: Sequence[Candidate] | None,
                     at: Sequence[float] | None, horizon: float) -> list[tuple[str, float]]:
    """The candidate measurements as distinct ``(channel, hours after now)`` pairs, each within
    ``[0, horizon]``: a named channel at every time of ``at`` (default: now, an eighth and a
    quarter of the horizon ahead), an explicit pair as given."""
    times = [0.0, one_figure(horizon / 8), one_figure(horizon / 4)] if at is None else [float(a) for a in at]
    if not times:
        raise ValueError("at is empty: give at least one time to measure at (0 = now)")
    items: Sequence[Candidate] = fitted.channels if candidates is None else candidates
    if isinstance(items, str):
        items = [items]
    pairs: list[tuple[str, float]] = []
    for item in items:
        if isinstance(item, tuple):
            pairs.append((known_channel(fitted, item[0], "candidates"), float(item[1])))
        else:
            pairs += [(known_channel(fitted, item, "candidates"), a) for a in times]
    if not pairs:
        raise ValueError("the candidate set is empty: name at least one channel to consider measuring")
    now = series.origin + series.now
    for channel, ahead in pairs:
        if not math.isfinite(ahead):
            raise DataError(f"candidate {channel} has a time that is not a number ({ahead})")
        if ahead < 0:
            raise DataError(f"candidate {channel} at {time_of(fitted, now + ahead)} lies {duration_of(fitted, -ahead)} "
                            f"before the series' last observation ({time_of(fitted, now)}), inside the data the model "
                            "already has: advice is about measurements from now on (0 = now)")
        if ahead > horizon * (1 + 1e-9):
            raise DataError(f"candidate {channel} {duration_of(fitted, ahead)} ahead lies past the "
                            f"{duration_of(fitted, horizon)} horizon of the targets: measure within it, or lengthen "
                            "the horizon")
    return list(dict.fromkeys(pairs))


def one_figure(hours: float) -> float:
    """One significant figure (4.19 h → 4 h): default candidate times a person would name."""
    return float(f"{hours:.1g}")


def normal_draws(n: int, draws: int, seed: int) -> np.ndarray:
    """(n, draws) standard normal draws, antithetic pairs (z, −z); one draw is the mean (0)."""
    if draws == 1:
        return np.zeros((n, 1))
    rng = np.random.default_rng(seed)
    half = rng.standard_normal((n, (draws + 1) // 2))
    return np.concatenate([half, -half], axis=1)[:, :draws]
