"""Draws of the sampled Lévy operator: the Poisson random measure made explicit.

Used to check the closed form (``σ̂`` is the exact RMS deviation of these draws) and for
the 50-draw sampler baseline. Costs O(n_draws · Q · K) memory per chunk: keep it for small
batches or diagnostics, never on the training path.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from levy_core.attention import Phi, _as_kappa, _check_inputs, _log_weights

__all__ = ["sample_levy_attention"]

_CHUNK_ELEMENTS = 2**24  # counts per chunk (n_draws_chunk · batch · Q · K)


def _intensity(q: Tensor, k: Tensor, kappa: Tensor, key_weight: Tensor | None) -> Tensor:
    """Log intensities ``log λ_i = κ cos(q, k_i) + log w_i``, shape (..., Q, K)."""
    scores = kappa * (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1))
    log_w = _log_weights(key_weight, scores)
    return scores if log_w is None else scores + log_w.unsqueeze(-2)


def _poisson(rate: Tensor, generator: torch.Generator | None) -> Tensor:
    return torch.poisson(rate, generator=generator)


def _truncated_counts(log_lam: Tensor, n: int, generator: torch.Generator | None) -> Tensor:
    """Independent ``N_i ~ Poisson(λ_i)`` conditioned on ``Σ N_i ≥ 1`` (exactly).

    Let ``T`` be the first atom with a positive count. Given ``N ≥ 1``,
    ``P(T = j) ∝ e^{-Λ_{<j}} (1 - e^{-λ_j})``; ``N_T`` is zero-truncated Poisson(λ_T),
    atoms before ``T`` are 0 and atoms after ``T`` are unconditioned Poisson(λ_i).

    log_lam : (..., Q, K). Returns counts (n, ..., Q, K).
    """
    lam = log_lam.exp()
    before = torch.cumsum(lam, -1) - lam  # Λ_{<j}, (..., Q, K)
    # log(1 - e^{-λ}) = log(-expm1(-λ)); -inf for λ = 0 (masked keys are never first).
    log_first = -before + torch.log(-torch.expm1(-lam))
    gumbel = -torch.log(-torch.log(torch.rand((n, *lam.shape), generator=generator, dtype=lam.dtype,
                                              device=lam.device).clamp_min(1e-300)))
    first = torch.argmax(log_first + gumbel, dim=-1, keepdim=True)  # (n, ..., Q, 1)
    lam_n = lam.expand(n, *lam.shape)
    counts = _poisson(lam_n, generator)
    idx = torch.arange(lam.shape[-1], device=lam.device)
    counts = torch.where(idx < first, torch.zeros_like(counts), counts)
    # Zero-truncated Poisson at T: first arrival time τ ~ Exp(λ) truncated to [0, 1],
    # then 1 + Poisson(λ(1 - τ)) more arrivals in (τ, 1].
    lam_t = torch.gather(lam_n, -1, first)  # (n, ..., Q, 1)
    u = torch.rand(lam_t.shape, generator=generator, dtype=lam.dtype, device=lam.device)
    tau = -torch.log1p(u * torch.expm1(-lam_t)) / lam_t
    n_t = 1.0 + _poisson((lam_t * (1.0 - tau)).clamp_min(0.0), generator)
    return counts.scatter(-1, first, n_t)


def sample_levy_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    kappa: float | Tensor,
    key_weight: Tensor | None = None,
    phi: Phi = "rate",
    n_draws: int,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Draw the sampled Lévy operator ``n_draws`` times.

    With independent counts ``N_i ~ Poisson(λ_i)`` at the atoms (``λ_i = w_i e^{κ cos}``):

    * ``phi="rate"``: ``m + (1/Λ) Σ_i N_i (v_i - m)``;
    * ``phi="count"``: ``Σ_i N_i v_i / N`` conditioned on ``N = Σ N_i ≥ 1``.

    Their mean is ``levy_attention(...).mean`` and their RMS deviation around it is
    ``levy_attention(..., phi=phi).sigma``.

    Parameters
    ----------
    q : (..., Q, E); k : (..., K, E); v : (..., K, D); kappa, key_weight, phi :
        as in ``levy_attention``.
    n_draws : int
        Number of independent draws.
    generator : torch.Generator, optional
        Makes the draws reproducible.

    Returns
    -------
    Tensor, shape (n_draws, ..., Q, D)
    """
    _check_inputs(q, k, v, key_weight, phi)
    if n_draws < 1:
        raise ValueError("n_draws must be >= 1")
    kappa_t = _as_kappa(kappa, q)
    log_lam = _intensity(q, k, kappa_t, key_weight)  # (..., Q, K)
    if not torch.isfinite(torch.logsumexp(log_lam, -1)).all() or (
        key_weight is not None and (key_weight <= 0).all(-1).any()
    ):
        raise ValueError("every query needs at least one unmasked key to be sampled")
    log_total = torch.logsumexp(log_lam, -1, keepdim=True)  # log Λ, (..., Q, 1)
    p = torch.exp(log_lam - log_total)  # (..., Q, K)
    mean = p @ v  # (..., Q, D)
    per_chunk = max(1, _CHUNK_ELEMENTS // max(1, log_lam.numel()))
    draws = []
    for start in range(0, n_draws, per_chunk):
        n = min(per_chunk, n_draws - start)
        if phi == "rate":
            counts = _poisson(log_lam.exp().expand(n, *log_lam.shape), generator)  # (n, ..., Q, K)
            # m + (Σ N_i v_i - N m) / Λ
            weighted = counts @ v  # (n, ..., Q, D)
            total = counts.sum(-1, keepdim=True)
            draws.append(mean + (weighted - total * mean) * torch.exp(-log_total))
        elif phi == "count":
            counts = _truncated_counts(log_lam, n, generator)
            draws.append((counts @ v) / counts.sum(-1, keepdim=True))
        else:  # pragma: no cover - _check_inputs already refused it
            raise ValueError(phi)
    return torch.cat(draws, 0)


