"""Lévy attention: a cosine-kernel cross-attention with closed-form evidence and spread.

The operator (see ``docs/levy-math.md``) for a query ``q`` and keys ``k_i`` with
values ``v_i`` and non-negative key weights ``w_i``::

    s_i  = kappa * cos(q, k_i)                 compatibility
    λ_i  = w_i * exp(s_i)                      Poisson intensity at the atom i
    Λ    = Σ λ_i                               evidence (reported as log Λ)
    p_i  = λ_i / Λ                             attention weights
    m    = Σ p_i v_i                           mean (what softmax attention returns)
    trΣ  = Σ p_i ||v_i - m||²                  disagreement
    σ̂    = sqrt(trΣ * φ(Λ))                    RMS deviation of the sampled operator

Two implementations return the same numbers:

* ``impl="fused"`` (default): one ``scaled_dot_product_attention`` call on augmented
  inputs. The values carry an extra column ``||v_i||²`` (or the second moments, with a
  read-out); ``log Λ`` is the CPU flash kernel's own log-sum-exp, or the weight
  ``e^c / (e^c + Λ)`` of a "null" key with a known score ``c`` (under autograd, ``c`` is the
  evidence a no-grad pass just computed). Memory is O(Q + K) beyond inputs/outputs.
* ``impl="reference"``: the readable version with the explicit (Q, K) weight matrix.

Options a model builds on (σ̂ stays exact): a Gaussian time decay of the intensity
(``TimeDecay``), a query-dependent linear read-out (``readout``) and a prior measure
superposed on the data's (``LevyPrior``).

Why a band is wide: ``log σ̂ = ½ log φ(Λ) + ½ log trΣ`` splits it into an evidence term and a
disagreement term (``log_sigma_terms``, ``LevyOutput.evidence_term``/``disagreement_term``);
[`levy_core.operator.types`][levy_core.operator.types] is the only place that split is computed.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from levy_core.operator.checks import (
    as_kappa,
    broadcast_shapes,
    check_inputs,
    check_options,
    nonfinite_queries,
    poison,
)
from levy_core.operator.flash_inputs import (
    DecayTerms,
    augment,
    decay_terms,
    flash_inputs,
    log_weights,
    second_moment_columns,
)
from levy_core.operator.phi import Phi, log_phi
from levy_core.operator.types import (
    KAPPA_MAX,
    KAPPA_MIN,
    LevyOutput,
    LevyPrior,
    TimeDecay,
    log_sigma_terms,
)

__all__ = [
    "KAPPA_MAX",
    "KAPPA_MIN",
    "LevyOutput",
    "LevyPrior",
    "TimeDecay",
    "as_kappa",
    "check_inputs",
    "levy_attention",
    "log_intensity",
    "Phi",
    "log_phi",
    "log_sigma_terms",
    "merge_prior",
]


# PyTorch's CPU flash-attention kernel, which also returns the per-query log-sum-exp (= log Λ
# here). Private API: used only for inference on CPU, with the public null-key path as the
# fallback whenever it is missing, fails, or autograd needs the evidence's gradient.
_FLASH_CPU_WITH_LSE = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


def levy_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    kappa: float | Tensor,
    key_weight: Tensor | None = None,
    phi: Phi = "rate",
    impl: Literal["fused", "reference"] = "fused",
    decay: TimeDecay | None = None,
    readout: Tensor | None = None,
    prior: LevyPrior | None = None,
    check_finite: bool = True,
) -> LevyOutput:
    """Lévy attention of queries ``q`` over keys ``k`` carrying values ``v``.

    Parameters
    ----------
    q : Tensor, shape (..., Q, E)
        Query embeddings (only their direction matters: the compatibility is a cosine).
    k : Tensor, shape (..., K, E)
        Key embeddings.
    v : Tensor, shape (..., K, D)
        Values at the keys.
    kappa : float or Tensor broadcastable to (..., 1, 1)
        Compatibility scale ``κ > 0`` (per head if a tensor).
    key_weight : Tensor, shape (..., K), optional
        Non-negative base-measure weights ``w_i``; 0 masks a key. Default: all 1.
    phi : {"rate", "count"}
        Which sampled operator ``σ̂`` is the RMS deviation of (see ``log_phi``).
    impl : {"fused", "reference"}
        ``"fused"``: one SDPA call, O(Q + K) extra memory. ``"reference"``: explicit
        (Q, K) weights, readable. Both return the same numbers.
    decay : TimeDecay, optional
        Multiplies each intensity by ``exp(−(t_q − t_i)²/(2ℓ²))`` (still one pass).
    readout : Tensor, shape (..., Q, P, D), optional
        A query-dependent linear read-out ``u_i(q) = A_q v_i``: the operator is taken on the
        read-out values, so ``mean`` is (..., Q, P) and ``disagreement = tr(A Σ_V Aᵀ)``.
        Costs D(D+1)/2 extra value columns (second moments), never a (Q, K, D) tensor.
    prior : LevyPrior, optional
        Atoms superposed on the data's (in read-out space); see ``LevyPrior``.
    check_finite : bool
        ``True`` (default): a NaN or ±inf in ``q``, ``k``, ``v``, ``key_weight``, the decay
        times, the read-out or the prior raises ``ValueError`` naming the argument.
        ``False``: they propagate instead, identically on every path: each output they reach
        is NaN (a query's own inputs poison that query, a key's its whole batch row).
        ``kappa`` (finite, > 0), ``length_scale`` and negative key weights are always checked.

    Returns
    -------
    LevyOutput
        ``mean (..., Q, D or P)``, ``sigma (..., Q)``, ``log_evidence (..., Q)`` (the whole
        measure's, prior included: ``σ̂² = tr Σ · φ(Λ)``), ``disagreement (..., Q)`` and
        ``log_data_evidence (..., Q)`` (the observations' part alone). Without a prior, a
        query whose keys are all masked gets mean 0, disagreement 0,
        ``log_evidence = -inf`` and ``sigma = +inf``.
    """
    check_inputs(q, k, v, key_weight, phi)
    check_options(q, k, v, decay, readout, prior)
    kappa_t = as_kappa(kappa, q, k, v)
    bad = nonfinite_queries(q, k, v, key_weight, decay, readout, prior, raise_error=check_finite)
    if impl == "fused":  # the CPU kernel zeroes a NaN query's row: only finite inputs take it
        moments = _fused(q, k, v, kappa_t, key_weight, decay, full=readout is not None, flash=bad is None)
    elif impl == "reference":
        moments = _reference(q, k, v, kappa_t, key_weight, decay, full=readout is not None)
    else:
        raise ValueError(f"impl must be 'fused' or 'reference', got {impl!r}")
    mean, disagreement = _read_out(moments, readout)
    out = _assemble(mean, disagreement, moments.log_evidence, phi, prior)
    return out if bad is None else poison(out, bad)


class _Moments(NamedTuple):
    """What one pass gives, per query: the first and second moments of the centred values
    under the weights ``p_i`` and the evidence."""

    mean_c: Tensor  # (..., Q, D) Σ p_i (v_i − v̄)
    v_bar: Tensor  # (..., 1, D) the values' key mean v̄ (centring avoids cancellation)
    second: Tensor  # (..., Q, 1) Σ p_i ‖v_i − v̄‖², or (..., Q, D(D+1)/2) the upper triangle of Σ p_i (v_i − v̄)(v_i − v̄)ᵀ
    log_evidence: Tensor  # (..., Q) log Λ


def _read_out(moments: _Moments, readout: Tensor | None) -> tuple[Tensor, Tensor]:
    """The mean and ``tr Σ`` (..., Q) — or, with a read-out ``A`` (..., Q, P, D), the read-out
    mean ``A m`` (..., Q, P) and ``tr(A Σ Aᵀ) = Σ_p (a_p S a_p − (a_p · m_c)²)`` straight from
    the second-moment columns ``S`` (never a (Q, D, D) matrix)."""
    mean_c, second = moments.mean_c, moments.second
    if readout is None:
        disagreement = second[..., 0] - torch.linalg.vector_norm(mean_c, dim=-1).square()
        return mean_c + moments.v_bar, disagreement.clamp_min(0.0)
    # a_i a_j in the columns' order, doubled off the diagonal (S_ij and S_ji share a column)
    pairs = torch.cat([readout[..., i:i + 1] * torch.cat([readout[..., i:i + 1], 2.0 * readout[..., i + 1:]], dim=-1)
                       for i in range(mean_c.shape[-1])], dim=-1)  # (..., Q, P, S)
    quadratic = (pairs * second.unsqueeze(-2)).sum((-2, -1))
    projected = readout @ mean_c.unsqueeze(-1)  # (..., Q, P, 1) A m_c
    mean_u = (readout @ moments.v_bar.unsqueeze(-1)).squeeze(-1) + projected.squeeze(-1)
    return mean_u, (quadratic - projected.square().sum((-2, -1))).clamp_min(0.0)


def merge_prior(mean: Tensor, disagreement: Tensor, log_evidence: Tensor,
                prior: LevyPrior) -> tuple[Tensor, Tensor, Tensor]:
    """Superpose a prior measure on the data's: the moments of the union of atoms.

    With data share ``π = Λ_d / (Λ_d + Λ_0)``: ``m = π m_d + (1−π) m_0`` and
    ``tr Σ = π (tr Σ_d + ‖m_d − m‖²) + (1−π)(var_0 + ‖m_0 − m‖²)``; ``log Λ`` adds in
    log space (a data part of ``-inf`` leaves the prior alone)."""
    log_total = torch.logaddexp(log_evidence, prior.log_mass)
    share = torch.exp(log_evidence - log_total)  # π ∈ [0, 1]; 0 when Λ_d = 0
    share = torch.where(torch.isneginf(log_evidence), torch.zeros_like(share), share)
    data_mean = torch.where(torch.isneginf(log_evidence).unsqueeze(-1), torch.zeros_like(mean), mean)
    merged = share.unsqueeze(-1) * data_mean + (1 - share).unsqueeze(-1) * prior.mean
    spread = (share * (disagreement + (data_mean - merged).pow(2).sum(-1))
              + (1 - share) * (prior.variance.clamp_min(0) + (prior.mean - merged).pow(2).sum(-1)))
    return merged, spread, log_total


def _assemble(mean: Tensor, disagreement: Tensor, log_evidence: Tensor, phi: Phi,
              prior: LevyPrior | None = None) -> LevyOutput:
    log_data = log_evidence
    if prior is not None:
        mean, disagreement, log_evidence = merge_prior(mean, disagreement, log_evidence, prior)
    no_evidence = torch.isneginf(log_evidence)
    half_log_phi = 0.5 * log_phi(log_evidence, phi)
    # σ̂ = sqrt(trΣ) · exp(½ log φ): stays finite for Λ anywhere in float range.
    sigma = torch.sqrt(disagreement) * torch.exp(torch.where(no_evidence, torch.zeros_like(half_log_phi), half_log_phi))
    sigma = torch.where(no_evidence, torch.full_like(sigma, math.inf), sigma)
    mean = torch.where(no_evidence.unsqueeze(-1), torch.zeros_like(mean), mean)
    disagreement = torch.where(no_evidence, torch.zeros_like(disagreement), disagreement)
    return LevyOutput(mean=mean, sigma=sigma, log_evidence=log_evidence, disagreement=disagreement,
                      log_data_evidence=log_data)


def _key_mean(v: Tensor, key_weight: Tensor | None) -> Tensor:
    """The values' (weighted) key mean ``v̄`` (..., 1, D)."""
    if key_weight is None:
        return v.mean(dim=-2, keepdim=True)
    w = key_weight.to(v.dtype).unsqueeze(-1)  # (..., K, 1)
    total = w.sum(dim=-2, keepdim=True).clamp_min(torch.finfo(v.dtype).tiny)
    return (w * v).sum(dim=-2, keepdim=True) / total


def _centre(v: Tensor, key_weight: Tensor | None) -> tuple[Tensor, Tensor]:
    """Centre values on their (weighted) key mean to avoid cancellation in ``E||v||² - ||m||²``.

    Returns ``(v - v_bar, v_bar)`` with shapes (..., K, D) and (..., 1, D).
    """
    v_bar = _key_mean(v, key_weight)
    return v - v_bar, v_bar


def log_intensity(q: Tensor, k: Tensor, kappa: Tensor, key_weight: Tensor | None,
                  decay: TimeDecay | None = None) -> Tensor:
    """``log λ_i(q) = κ cos(q, k_i) + log w_i − (t_q − t_i)²/(2ℓ²)``, shape (..., Q, K).

    The readable form, materialising (Q, K): the reference path, the sampler and the
    diagnostics that show which observations a query drew on."""
    scores = kappa * (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1))
    log_w = log_weights(key_weight, scores)
    if log_w is not None:
        scores = scores + log_w.unsqueeze(-2)
    if decay is not None:
        tq, tk = decay.query_time.to(scores.dtype), decay.key_time.to(scores.dtype)
        ell = torch.as_tensor(decay.length_scale, dtype=scores.dtype, device=scores.device)
        scores = scores - (tq.unsqueeze(-1) - tk.unsqueeze(-2)).pow(2) / (2 * ell.pow(2))
    return scores


def _all_masked(log_evidence: Tensor, key_weight: Tensor | None) -> Tensor:
    if key_weight is None:
        return log_evidence
    all_masked = (key_weight <= 0).all(dim=-1, keepdim=True)
    return torch.where(all_masked, torch.full_like(log_evidence, -math.inf), log_evidence)


def _reference(q: Tensor, k: Tensor, v: Tensor, kappa: Tensor, key_weight: Tensor | None,
               decay: TimeDecay | None, full: bool) -> _Moments:
    scores = log_intensity(q, k, kappa, key_weight, decay)  # (..., Q, K)
    log_evidence = _all_masked(torch.logsumexp(scores, dim=-1), key_weight)  # (..., Q)
    p = torch.softmax(scores, dim=-1)  # (..., Q, K)
    v_c, v_bar = _centre(v, key_weight)
    mean_c = p @ v_c  # (..., Q, D)
    second = p @ second_moment_columns(v_c, full)  # (..., Q, 1 or S)
    return _Moments(mean_c, v_bar, second, log_evidence)


def _nearest_key_distance(decay: TimeDecay, key_weight: Tensor | None) -> Tensor:
    """``min_i |t_q − t_i|`` over unmasked keys, (..., Q), by sorting: O((Q + K) log K)."""
    tq, tk = decay.query_time, decay.key_time
    if key_weight is not None:
        real = key_weight > 0
        batch = broadcast_shapes(tk.shape[:-1], real.shape[:-1])
        tk = torch.where(real.expand(*batch, tk.shape[-1]), tk.expand(*batch, tk.shape[-1]),
                         torch.full((), math.inf, dtype=tk.dtype, device=tk.device))
    batch = broadcast_shapes(tq.shape[:-1], tk.shape[:-1])
    tk_sorted = torch.sort(tk.expand(*batch, tk.shape[-1]).contiguous(), dim=-1).values
    tq_b = tq.expand(*batch, tq.shape[-1]).contiguous()
    pos = torch.searchsorted(tk_sorted, tq_b)
    right = torch.gather(tk_sorted, -1, pos.clamp(max=tk_sorted.shape[-1] - 1))
    left = torch.gather(tk_sorted, -1, (pos - 1).clamp(min=0))
    dist = torch.minimum((right - tq_b).abs(), (tq_b - left).abs())
    return torch.where(torch.isfinite(dist), dist, torch.zeros_like(dist))


def _fused(q: Tensor, k: Tensor, v: Tensor, kappa: Tensor, key_weight: Tensor | None,
           decay: TimeDecay | None, full: bool, flash: bool = True) -> _Moments:
    """One SDPA call on augmented inputs (the fast path; columns in ``flash_inputs.augment``).

    ``log Λ`` comes, by case: on CPU without autograd, from the flash kernel's own
    log-sum-exp; with autograd, from an explicit log-sum-exp over the (Q, K) scores (no D
    factor: a null key's weight ``r`` would put ``1/r`` in the gradient, which overflows
    where ``Λ ≫ e^c``); elsewhere, from a "null" key with score ``c(q)`` near ``log Λ``:
    ``log Λ = c + log(1 − r) − log r``.
    """
    D = v.shape[-1]
    dtype = q.dtype if q.dtype in (torch.float32, torch.float64) else torch.float32
    q, k, v, kappa = q.to(dtype), k.to(dtype), v.to(dtype), kappa.to(dtype)
    terms = decay_terms(decay, key_weight, q) if decay is not None else None
    batch = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], kappa.shape[:-2],
                             key_weight.shape[:-1] if key_weight is not None else (),
                             terms.q_col.shape[:-1] if terms is not None else (),
                             terms.k_col.shape[:-1] if terms is not None else ())
    n_q, n_k = q.shape[-2], k.shape[-2]
    S = D * (D + 1) // 2 if full else 1
    if n_q == 0:  # nothing to attend from: empty outputs of the right shapes, in the graph
        zero = (q.sum() + k.sum() + v.sum() + kappa.sum()) * 0.0
        return _Moments(q.new_zeros(*batch, 0, D) + zero, q.new_zeros(*batch, 1, D) + zero,
                        q.new_zeros(*batch, 0, S) + zero, q.new_zeros(*batch, 0) + zero)
    inputs = (q, k, v, kappa) + ((key_weight,) if key_weight is not None else ()) + (
        (torch.as_tensor(decay.length_scale),) if decay is not None else ())
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in inputs)
    v_bar = _key_mean(v, key_weight)
    centred: tuple[Tensor, Tensor] | None = None  # (v − v̄, moment columns), built when a path needs them

    def centred_values() -> tuple[Tensor, Tensor]:
        nonlocal centred
        if centred is None:
            v_c = v - v_bar
            centred = v_c, second_moment_columns(v_c, full)  # (..., K, D), (..., K, S)
        return centred

    if flash and q.device.type == "cpu" and _FLASH_CPU_WITH_LSE is not None:
        try:
            with torch.no_grad():
                if v.shape[:-2] == batch:
                    qa, ka, va = flash_inputs(q, k, v, v_bar, kappa, key_weight, terms, batch, full)
                else:  # values broadcast over the batch: the general construction
                    qa, ka, va = augment(q, k, *centred_values(), kappa, key_weight, terms, batch, None)
                out, lse = _FLASH_CPU_WITH_LSE(qa, ka, va, scale=1.0)[:2]
                out = out.reshape(*batch, n_q, -1)
                if not torch.isfinite(out[..., :D + S]).all():  # edge cases: the public path decides
                    raise RuntimeError("non-finite flash output")
                lse = lse.reshape(*batch, n_q).to(dtype)  # log Λ + the decay's query-only shift
            if not needs_grad:
                log_evidence = lse - terms.q_shift if terms is not None else lse
                return _Moments(out[..., :D], v_bar, out[..., D:D + S], _all_masked(log_evidence, key_weight))
            # autograd: a null key scored at the (constant) log Λ just computed weighs ≈ ½, so
            # log Λ = c + log(1 − r) − log r is exact and its gradient well conditioned
            v_c, moments = centred_values()
            return _null_key_pass(q, k, v_c, v_bar, moments, kappa, key_weight, terms, batch, lse)
        except RuntimeError:  # a kernel that refuses these inputs: take the public path
            pass
    v_c, moments = centred_values()

    # The null key's score c(q) = log Σw − κ − (nearest key distance)²/(2ℓ²): then
    # Λ/e^c ∈ [min w / Σw, e^{2κ}], resolved in float32 for κ ≤ KAPPA_MAX.
    if key_weight is None:
        log_total_w = torch.tensor(math.log(n_k), dtype=dtype, device=q.device)  # ()
    else:
        log_total_w = torch.log(key_weight.detach().to(dtype).sum(-1).clamp_min(torch.finfo(dtype).tiny))  # (...,)
    c = log_total_w.unsqueeze(-1) - kappa.detach().clamp(max=KAPPA_MAX).squeeze(-1)  # (..., 1)
    if terms is not None:
        ell_inv = torch.as_tensor(decay.length_scale, dtype=dtype, device=q.device).detach().pow(-2)
        ell_inv = ell_inv.squeeze(-1) if ell_inv.dim() >= 2 else ell_inv
        c = c - 0.5 * _nearest_key_distance(decay, key_weight).to(dtype).pow(2) * ell_inv + terms.q_shift.detach()
    c = c.expand(*batch, n_q)
    if needs_grad:  # first the evidence without autograd, then the pass with a null key at it
        with torch.no_grad():
            log_ev = _null_key_pass(q, k, v_c, v_bar, moments, kappa, key_weight, terms, batch, c).log_evidence
        shift = terms.q_shift.detach() if terms is not None else 0.0
        c = torch.where(torch.isfinite(log_ev), log_ev + shift, c)
    return _null_key_pass(q, k, v_c, v_bar, moments, kappa, key_weight, terms, batch, c)


def _null_key_pass(q: Tensor, k: Tensor, v_c: Tensor, v_bar: Tensor, moments: Tensor, kappa: Tensor,
                   key_weight: Tensor | None, terms: DecayTerms | None, batch: torch.Size,
                   c: Tensor) -> _Moments:
    """The public SDPA pass with a null key of score ``c`` (..., Q) (in the pass's own
    scale, before the decay's query-only shift): ``r = e^c/(e^c + Λ)`` gives
    ``log Λ = c + log(1 − r) − log r``."""
    D, S = v_c.shape[-1], moments.shape[-1]
    n_q = q.shape[-2]
    qa, ka, va = augment(q, k, v_c, moments, kappa, key_weight, terms, batch, c.detach().expand(*batch, n_q))
    out = F.scaled_dot_product_attention(qa, ka, va, scale=1.0).reshape(*batch, n_q, -1)
    r = out[..., D + S]  # e^c / (e^c + Λ)
    inv_mass = 1.0 / (1.0 - r)  # the data's share is Λ / (e^c + Λ)
    mean_c = out[..., :D] * inv_mass.unsqueeze(-1)
    second = out[..., D:D + S] * inv_mass.unsqueeze(-1)
    tiny = torch.finfo(q.dtype).tiny
    log_evidence = c.detach() + torch.log1p(-r) - torch.log(r.clamp_min(tiny))  # (..., Q)
    if terms is not None:
        log_evidence = log_evidence - terms.q_shift
    return _Moments(mean_c, v_bar, second, _all_masked(log_evidence, key_weight))
