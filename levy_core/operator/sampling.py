"""Draws of the sampled Lévy operator: the Poisson random measure made explicit.

Used to check the closed form (``σ̂`` is the exact RMS deviation of these draws) and for
the 50-draw sampler baseline. Costs O(n_draws · Q · K) memory per chunk: keep it for small
batches or diagnostics, never on the training path.
"""

from __future__ import annotations

import torch
from torch import Tensor

from levy_core.operator.attention import LevyPrior, Phi, TimeDecay, log_intensity
from levy_core.operator.checks import (
    as_kappa,
    broadcast_shapes,
    check_inputs,
    check_options,
    nonfinite_queries,
)

__all__ = ["sample_levy_attention"]

_CHUNK_ELEMENTS = 2**24  # counts per chunk (n_draws_chunk · batch · Q · K)


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
    decay: TimeDecay | None = None,
    readout: Tensor | None = None,
    prior: LevyPrior | None = None,
) -> Tensor:
    """Draw the sampled Lévy operator ``n_draws`` times.

    With independent counts ``N_i ~ Poisson(λ_i)`` at the atoms (``λ_i = w_i e^{κ cos}``):

    * ``phi="rate"``: ``m + (1/Λ) Σ_i N_i (v_i - m)``;
    * ``phi="count"``: ``Σ_i N_i v_i / N`` conditioned on ``N = Σ N_i ≥ 1``.

    Their mean is ``levy_attention(...).mean`` and their RMS deviation around it is
    ``levy_attention(..., phi=phi).sigma``.

    Parameters
    ----------
    q : (..., Q, E); k : (..., K, E); v : (..., K, D); kappa, key_weight, phi, decay,
    readout, prior :
        as in ``levy_attention`` (with a read-out or a prior the atoms' values are
        per query, ``u_i(q) = A_q v_i``, and the prior is realised by ``LevyPrior.atoms``).
    n_draws : int
        Number of independent draws.
    generator : torch.Generator, optional
        Makes the draws reproducible.

    ``ValueError`` (naming the argument) for a NaN or ±inf input: a draw has no meaning there.

    Returns
    -------
    Tensor, shape (n_draws, ..., Q, D) (or P with a read-out)
    """
    check_inputs(q, k, v, key_weight, phi)
    check_options(q, k, v, decay, readout, prior)
    if n_draws < 1:
        raise ValueError("n_draws must be >= 1")
    kappa_t = as_kappa(kappa, q, k, v)
    nonfinite_queries(q, k, v, key_weight, decay, readout, prior, raise_error=True)
    log_lam = log_intensity(q, k, kappa_t, key_weight, decay)  # (..., Q, K)
    if key_weight is not None:  # masked atoms carry no mass at all
        log_lam = torch.where(key_weight.unsqueeze(-2) > 0, log_lam, torch.full_like(log_lam, -torch.inf))
    per_query = readout is not None or prior is not None
    if per_query:  # atoms' values per query: u_i(q) = A_q v_i, (..., Q, K, P)
        values = v.unsqueeze(-3) if readout is None else torch.einsum("...qpd,...kd->...qkp", readout, v)
        if prior is not None:
            log_prior, prior_values = prior.atoms()
            batch = broadcast_shapes(log_lam.shape[:-1], log_prior.shape[:-1])
            log_lam = torch.cat([log_lam.expand(*batch, log_lam.shape[-1]), log_prior.expand(*batch, 2)], -1)
            values = torch.cat([values.expand(*batch, *values.shape[-2:]),
                                prior_values.expand(*batch, *prior_values.shape[-2:])], -2)
    else:
        values = v
    if not torch.isfinite(torch.logsumexp(log_lam, -1)).all():
        raise ValueError("every query needs at least one unmasked key (or a prior) to be sampled")
    log_total = torch.logsumexp(log_lam, -1, keepdim=True)  # log Λ, (..., Q, 1)
    p = torch.exp(log_lam - log_total)  # (..., Q, K)

    def weigh(weights: Tensor) -> Tensor:  # Σ_i weights_i u_i: (..., Q, K) → (..., Q, D)
        if per_query:
            return (weights.unsqueeze(-1) * values).sum(-2)
        return weights @ values

    mean = weigh(p)  # (..., Q, D)
    per_chunk = max(1, _CHUNK_ELEMENTS // max(1, log_lam.numel() * (values.shape[-1] if per_query else 1)))
    draws = []
    for start in range(0, n_draws, per_chunk):
        n = min(per_chunk, n_draws - start)
        if phi == "rate":
            counts = _poisson(log_lam.exp().expand(n, *log_lam.shape), generator)  # (n, ..., Q, K)
            # m + (Σ N_i v_i - N m) / Λ
            total = counts.sum(-1, keepdim=True)
            draws.append(mean + (weigh(counts) - total * mean) * torch.exp(-log_total))
        elif phi == "count":
            counts = _truncated_counts(log_lam, n, generator)
            draws.append(weigh(counts) / counts.sum(-1, keepdim=True))
        else:  # pragma: no cover - check_inputs already refused it
            raise ValueError(phi)
    return torch.cat(draws, 0)


