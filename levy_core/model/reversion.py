"""Mean reversion of the offset: the last value, decayed towards a level as it ages.

A laboratory value or a vital sign measured a day ago says less about today than one
measured an hour ago, and what it says fades towards the patient's usual level and the
population's (GRU-D's decay, Che et al. 2018, in closed form). For a query ``q`` of channel
``c`` whose channel was last seen ``Δ = t_q − t_last`` ago (in ``time_scale`` units)::

    b(q) = m(q) + (y_last − m(q)) · exp(−r_c · Δ),
    m(q) = w_c · (the series' context mean of c) + (1 − w_c) · (the channel's training mean)

with ``r_c ≥ 0`` and ``w_c ∈ [0, 1]`` fitted per channel before training
(`levy_core.training.reversion.fit_mean_reversion`). ``r_c = 0`` is the last value
carried forward, exactly. ``b(q)`` is a function of the query and the context, never of the
Poisson draw, so the Lévy layer's ``σ̂`` stays exact (``docs/levy-math-model.md``, the offset).
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["MAX_RATE", "reverted_last"]

MAX_RATE = 1e3  # per time_scale unit: a saved model's rate beyond it is refused (exp(−1e3 Δ) is 0 for Δ ≥ 0.1)


def reverted_last(last: Tensor, since_last: Tensor, series_mean: Tensor, channel_mean: Tensor, rate: Tensor,
                  to_series: Tensor) -> Tensor:
    """The last value decayed towards its level, each argument and the result (B, M).

    ``since_last`` is the query's time since its channel's last observation in
    ``time_scale`` units (a query before it, inside the context, keeps the last value),
    ``rate`` ``r_c`` and ``to_series`` ``w_c`` are the query channel's. Where ``rate`` is 0
    the result is ``last`` bit for bit."""
    level = to_series * series_mean + (1.0 - to_series) * channel_mean
    decayed = level + (last - level) * torch.exp(-rate * since_last.clamp_min(0.0))
    return torch.where(rate > 0, decayed, last)
