"""φ, the Poisson variance factor of Lévy attention: ``σ̂² = tr Σ_V · φ(Λ)``.

``"rate"`` (``φ = 1/Λ``, the sampled operator normalised by its expected mass) or
``"count"`` (``φ = E[1/N | N ≥ 1]``, normalised by the realised number of atoms).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor

__all__ = ["Phi", "log_phi"]

Phi = Literal["rate", "count"]

# Terms of the Poisson series used for φ_count below the switch to the asymptotic series.
_COUNT_SERIES_TERMS = 120
_COUNT_ASYMPTOTIC_FROM = 32.0


def log_phi(log_lambda: Tensor, phi: Phi = "rate") -> Tensor:
    """``log φ(Λ)`` evaluated stably from ``log Λ``.

    ``phi="rate"``: ``φ(Λ) = 1/Λ``. ``phi="count"``: ``φ(Λ) = E[1/N | N ≥ 1]`` for
    ``N ~ Poisson(Λ)``, i.e. ``(Ei(Λ) - γ - ln Λ) / (e^Λ - 1)``. It is computed as a
    log-sum-exp of the zero-truncated Poisson series for ``Λ < 32`` and with the asymptotic
    series ``(1/Λ) Σ_k k!/Λ^k`` above (relative error < 1e-12 there), so it is finite for
    every ``Λ`` from 1e-300 to 1e300 and never evaluates ``Ei`` or ``e^Λ`` directly.

    Parameters
    ----------
    log_lambda : Tensor, any shape
    phi : {"rate", "count"}

    Returns
    -------
    Tensor, same shape and dtype as ``log_lambda``.
    """
    if phi == "rate":
        return -log_lambda
    if phi != "count":
        raise ValueError(f"phi must be 'rate' or 'count', got {phi!r}")
    work = torch.float32 if log_lambda.device.type == "mps" else torch.float64
    x = log_lambda.to(work)
    finite = torch.isfinite(x)
    xs = torch.where(finite, x, torch.zeros_like(x))
    # Small/moderate Λ: E[1/N | N ≥ 1] = Σ_k (Λ^k / k!) / k  /  Σ_k Λ^k / k!, k ≥ 1.
    k = torch.arange(1, _COUNT_SERIES_TERMS + 1, device=x.device, dtype=work)
    log_terms = xs.unsqueeze(-1) * k - torch.lgamma(k + 1)  # (..., n_terms)
    series = torch.logsumexp(log_terms - torch.log(k), -1) - torch.logsumexp(log_terms, -1)
    # Large Λ: φ ≈ (1/Λ) Σ_{k=0}^{20} k!/Λ^k (the dropped terms are O(e^{-Λ})).
    lam = torch.exp(torch.clamp(xs, min=math.log(_COUNT_ASYMPTOTIC_FROM)))
    total = torch.ones_like(lam)
    term = torch.ones_like(lam)
    for j in range(1, 21):
        term = term * j / lam
        total = total + term
    asymptotic = torch.log(total) - torch.log(lam)
    out = torch.where(xs < math.log(_COUNT_ASYMPTOTIC_FROM), series, asymptotic)
    # Λ = 0: φ → 1 (one atom if any); Λ = inf: φ → 0.
    out = torch.where(finite, out, torch.where(x < 0, torch.zeros_like(x), torch.full_like(x, -math.inf)))
    return out.to(log_lambda.dtype)
