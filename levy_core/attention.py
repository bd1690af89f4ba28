"""Lévy attention: a cosine-kernel cross-attention with closed-form evidence and spread.

The operator (see ``shared/design/levy-math.md``) for a query ``q`` and keys ``k_i`` with
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
  inputs. The values carry an extra column ``||v_i||²`` (second moment) and a "null" key
  whose score is a known constant ``c`` carries a one-hot column: its weight
  ``e^c / (e^c + Λ)`` gives ``log Λ`` exactly. Memory is O(Q + K) beyond inputs/outputs.
* ``impl="reference"``: the readable version with the explicit (Q, K) weight matrix.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "KAPPA_MAX",
    "KAPPA_MIN",
    "LevyAttention",
    "LevyHeadsOutput",
    "LevyOutput",
    "levy_attention",
    "log_phi",
]

Phi = Literal["rate", "count"]

#: Largest compatibility scale the module learns. With the null key at score
#: ``log Σw - kappa`` its weight stays above e^{-2·45} ≈ 8e-40, still resolved to ~1e-6
#: relative in float32, so ``log Λ`` stays exact to float32 rounding.
KAPPA_MAX = 45.0
KAPPA_MIN = 1e-2
# A key with weight 0 gets this score: exp(-1e4) is exactly 0 in every float dtype, and
# unlike -inf it cannot produce 0 * inf = NaN inside a GEMM.
_MASKED_SCORE = -1.0e4
# Terms of the Poisson series used for φ_count below the switch to the asymptotic series.
_COUNT_SERIES_TERMS = 120
_COUNT_ASYMPTOTIC_FROM = 32.0
# PyTorch's CPU flash-attention kernel, which also returns the per-query log-sum-exp (= log Λ
# here). Private API: used only for inference on CPU, with the public null-key path as the
# fallback whenever it is missing, fails, or autograd needs the evidence's gradient.
_FLASH_CPU_WITH_LSE = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


class LevyOutput(NamedTuple):
    """Everything one Lévy attention pass returns.

    Attributes
    ----------
    mean : Tensor, shape (..., Q, D)
        ``m_q = Σ p_i v_i``, the expectation of the sampled operator.
    sigma : Tensor, shape (..., Q)
        ``σ̂(q) = sqrt(tr Σ_V(q) · φ(Λ_q))``, the exact RMS deviation of the sampled
        operator around ``mean`` (``+inf`` for a query whose keys are all masked).
    log_evidence : Tensor, shape (..., Q)
        ``log Λ_q`` (``-inf`` when every key is masked).
    disagreement : Tensor, shape (..., Q)
        ``tr Σ_V(q) = Σ p_i ||v_i - m_q||²`` (value units squared).
    """

    mean: Tensor
    sigma: Tensor
    log_evidence: Tensor
    disagreement: Tensor

    def n_eff(self, kappa: float | Tensor) -> Tensor:
        """``n_eff = Λ e^{-κ}``: how many fully compatible observations support a query.

        ``kappa`` must broadcast against ``log_evidence`` (shape (..., Q)); for a per-head
        tensor of shape (..., 1, 1) pass ``kappa.squeeze(-1)``.
        """
        return torch.exp(self.log_evidence - torch.as_tensor(kappa, dtype=self.log_evidence.dtype))

    def to_normal(self, scale: float = 1.0) -> torch.distributions.Normal:
        """Scaled Gaussian predictive ``N(mean, (scale·σ̂)²)``; only for ``D == 1`` values."""
        if self.mean.shape[-1] != 1:
            raise ValueError(
                f"to_normal() needs one value dimension (D=1), got D={self.mean.shape[-1]}; "
                "project the values to a scalar output first"
            )
        return torch.distributions.Normal(self.mean[..., 0], scale * self.sigma, validate_args=False)


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


def _check_inputs(q: Tensor, k: Tensor, v: Tensor, key_weight: Tensor | None, phi: str) -> None:
    if phi not in ("rate", "count"):
        raise ValueError(f"phi must be 'rate' or 'count', got {phi!r}")
    if q.dim() < 2 or k.dim() < 2 or v.dim() < 2:
        raise ValueError(
            f"q, k, v need at least 2 dims (..., L, features); got {tuple(q.shape)}, "
            f"{tuple(k.shape)}, {tuple(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k feature sizes differ: {q.shape[-1]} vs {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v key counts differ: {k.shape[-2]} vs {v.shape[-2]}")
    if k.shape[-2] == 0:
        raise ValueError("at least one key is needed")
    if key_weight is not None and key_weight.shape[-1] != k.shape[-2]:
        raise ValueError(
            f"key_weight must have shape (..., K) with K={k.shape[-2]}, got {tuple(key_weight.shape)}"
        )


def _as_kappa(kappa: float | Tensor, ref: Tensor) -> Tensor:
    kappa_t = torch.as_tensor(kappa, dtype=ref.dtype, device=ref.device)
    if torch.any(kappa_t <= 0):
        raise ValueError("kappa must be > 0")
    if kappa_t.dim() == 0:
        kappa_t = kappa_t.reshape(1, 1)
    return kappa_t  # broadcastable to (..., 1, 1)


def levy_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    kappa: float | Tensor,
    key_weight: Tensor | None = None,
    phi: Phi = "rate",
    impl: Literal["fused", "reference"] = "fused",
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

    Returns
    -------
    LevyOutput
        ``mean (..., Q, D)``, ``sigma (..., Q)``, ``log_evidence (..., Q)``,
        ``disagreement (..., Q)``. A query whose keys are all masked gets mean 0,
        disagreement 0, ``log_evidence = -inf`` and ``sigma = +inf``.
    """
    _check_inputs(q, k, v, key_weight, phi)
    kappa_t = _as_kappa(kappa, q)
    if key_weight is not None and torch.any(key_weight < 0):
        raise ValueError("key_weight must be non-negative (0 masks a key)")
    if impl == "fused":
        mean, disagreement, log_evidence = _fused(q, k, v, kappa_t, key_weight)
    elif impl == "reference":
        mean, disagreement, log_evidence = _reference(q, k, v, kappa_t, key_weight)
    else:
        raise ValueError(f"impl must be 'fused' or 'reference', got {impl!r}")
    return _assemble(mean, disagreement, log_evidence, phi)


def _assemble(mean: Tensor, disagreement: Tensor, log_evidence: Tensor, phi: Phi) -> LevyOutput:
    no_evidence = torch.isneginf(log_evidence)
    half_log_phi = 0.5 * log_phi(log_evidence, phi)
    # σ̂ = sqrt(trΣ) · exp(½ log φ): stays finite for Λ anywhere in float range.
    sigma = torch.sqrt(disagreement) * torch.exp(torch.where(no_evidence, torch.zeros_like(half_log_phi), half_log_phi))
    sigma = torch.where(no_evidence, torch.full_like(sigma, math.inf), sigma)
    mean = torch.where(no_evidence.unsqueeze(-1), torch.zeros_like(mean), mean)
    disagreement = torch.where(no_evidence, torch.zeros_like(disagreement), disagreement)
    return LevyOutput(mean=mean, sigma=sigma, log_evidence=log_evidence, disagreement=disagreement)


def _log_weights(key_weight: Tensor | None, like: Tensor) -> Tensor | None:
    """``log w_i`` with masked keys at a large finite negative score, shape (..., K)."""
    if key_weight is None:
        return None
    kw = key_weight.to(like.dtype)
    return torch.where(kw > 0, torch.log(kw.clamp_min(torch.finfo(like.dtype).tiny)), torch.full_like(kw, _MASKED_SCORE))


def _centre(v: Tensor, key_weight: Tensor | None) -> tuple[Tensor, Tensor]:
    """Centre values on their (weighted) key mean to avoid cancellation in ``E||v||² - ||m||²``.

    Returns ``(v - v_bar, v_bar)`` with shapes (..., K, D) and (..., 1, D).
    """
    if key_weight is None:
        v_bar = v.mean(dim=-2, keepdim=True)  # (..., 1, D)
    else:
        w = key_weight.to(v.dtype).unsqueeze(-1)  # (..., K, 1)
        total = w.sum(dim=-2, keepdim=True).clamp_min(torch.finfo(v.dtype).tiny)
        v_bar = (w * v).sum(dim=-2, keepdim=True) / total  # (..., 1, D)
    return v - v_bar, v_bar


def _reference(
    q: Tensor, k: Tensor, v: Tensor, kappa: Tensor, key_weight: Tensor | None
) -> tuple[Tensor, Tensor, Tensor]:
    scores = kappa * (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1))  # (..., Q, K)
    log_w = _log_weights(key_weight, scores)
    if log_w is not None:
        scores = scores + log_w.unsqueeze(-2)
    log_evidence = torch.logsumexp(scores, dim=-1)  # (..., Q)
    if key_weight is not None:
        all_masked = (key_weight <= 0).all(dim=-1, keepdim=True)  # (..., 1)
        log_evidence = torch.where(all_masked, torch.full_like(log_evidence, -math.inf), log_evidence)
    p = torch.softmax(scores, dim=-1)  # (..., Q, K)
    v_c, v_bar = _centre(v, key_weight)
    mean_c = p @ v_c  # (..., Q, D)
    second = p @ v_c.pow(2).sum(-1, keepdim=True)  # (..., Q, 1)
    disagreement = (second.squeeze(-1) - mean_c.pow(2).sum(-1)).clamp_min(0.0)
    return mean_c + v_bar, disagreement, log_evidence


def _fused(
    q: Tensor, k: Tensor, v: Tensor, kappa: Tensor, key_weight: Tensor | None
) -> tuple[Tensor, Tensor, Tensor]:
    E, D = q.shape[-1], v.shape[-1]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], kappa.shape[:-2],
                                   key_weight.shape[:-1] if key_weight is not None else ())
    n_q, n_k = q.shape[-2], k.shape[-2]
    dtype = q.dtype if q.dtype in (torch.float32, torch.float64) else torch.float32
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    kappa = kappa.to(dtype)
    width = max(E + 1, D + 2)  # SDPA's fast CPU kernels need equal q/k and v head sizes

    # Null key score c = log Σw − κ: then Λ/e^c ∈ [1, e^{2κ}], so the null weight
    # r = e^c/(e^c + Λ) ∈ [e^{-2κ}, 1/2] is resolved in float32 and 1 − r ≥ 1/2 is exact.
    if key_weight is None:
        log_total_w = torch.tensor(math.log(n_k), dtype=dtype, device=q.device)  # ()
    else:
        log_total_w = torch.log(key_weight.to(dtype).sum(-1).clamp_min(torch.finfo(dtype).tiny))  # (...,)
    kappa_c = kappa.clamp(max=KAPPA_MAX)
    c = log_total_w.unsqueeze(-1).unsqueeze(-1) - kappa_c  # (..., 1, 1)

    # Without autograd, temporaries are reused in place (fewer allocations and page faults):
    # the extra cost beyond SDPA stays a few passes over O((Q+K)·D) memory.
    in_place = not torch.is_grad_enabled() or not any(
        t.requires_grad for t in (q, k, v, kappa) + ((key_weight,) if key_weight is not None else ()))

    if in_place and q.device.type == "cpu" and _FLASH_CPU_WITH_LSE is not None:
        try:
            return _fused_cpu_inference(q, k, v, kappa, key_weight, batch)
        except RuntimeError:  # a kernel that refuses these inputs: take the public path
            pass

    # Each augmented tensor is written once into a fresh buffer.
    q_aug = q.new_empty(*batch, n_q, width)
    q_hat = F.normalize(q, dim=-1)
    q_aug[..., :E] = q_hat.mul_(kappa) if in_place else kappa * q_hat  # scores κ·cos
    q_aug[..., E] = 1.0  # picks the key's bias column
    q_aug[..., E + 1:] = 0.0

    k_aug = k.new_empty(*batch, n_k + 1, width)
    k_aug[..., :n_k, :E] = F.normalize(k, dim=-1)
    log_w = _log_weights(key_weight, k)
    k_aug[..., :n_k, E] = 0.0 if log_w is None else log_w  # additive log w_i
    k_aug[..., :, E + 1:] = 0.0
    k_aug[..., n_k, :E] = 0.0
    k_aug[..., n_k, E] = c[..., 0, 0]  # the null key's score

    v_c, v_bar = _centre(v, key_weight)
    v_aug = v.new_empty(*batch, n_k + 1, width)
    v_aug[..., :n_k, :D] = v_c
    v_aug[..., :n_k, D] = torch.linalg.vector_norm(v_c, dim=-1).square()  # second-moment column
    v_aug[..., :n_k, D + 1:] = 0.0
    v_aug[..., n_k, :] = 0.0
    v_aug[..., n_k, D + 1] = 1.0  # one-hot: the null key's weight

    flat = (-1, 1)  # SDPA's fast CPU path wants (N, H, L, E)
    out = F.scaled_dot_product_attention(
        q_aug.reshape(*flat, n_q, width),
        k_aug.reshape(*flat, n_k + 1, width),
        v_aug.reshape(*flat, n_k + 1, width),
        scale=1.0,
    ).reshape(*batch, n_q, width)  # (..., Q, width)

    r = out[..., D + 1]  # e^c / (e^c + Λ)
    real_mass = 1.0 - r  # Λ / (e^c + Λ) ≥ 1/2
    inv_mass = 1.0 / real_mass
    if in_place:  # SDPA's output is not needed for a backward pass: rescale it where it is
        mean_c = out[..., :D].mul_(inv_mass.unsqueeze(-1))  # (..., Q, D)
    else:
        mean_c = out[..., :D] * inv_mass.unsqueeze(-1)
    second = out[..., D] * inv_mass
    disagreement = (second - torch.linalg.vector_norm(mean_c, dim=-1).square()).clamp_min(0.0)
    tiny = torch.finfo(dtype).tiny
    log_evidence = c.squeeze(-1) + torch.log(real_mass) - torch.log(r.clamp_min(tiny))  # (..., Q)
    if key_weight is not None:
        all_masked = (key_weight <= 0).all(dim=-1, keepdim=True)
        log_evidence = torch.where(all_masked, torch.full_like(log_evidence, -math.inf), log_evidence)
    mean = mean_c.add_(v_bar) if in_place else mean_c + v_bar
    return mean, disagreement, log_evidence


def _fused_cpu_inference(
    q: Tensor, k: Tensor, v: Tensor, kappa: Tensor, key_weight: Tensor | None, batch: torch.Size
) -> tuple[Tensor, Tensor, Tensor]:
    """The fused pass with the kernel's own log-sum-exp: no null key, one column fewer.

    Values carry ``[v_i - v̄, ||v_i - v̄||²]`` and queries/keys ``[κ q̂, 1]`` / ``[k̂, log w_i]``;
    the kernel returns the weighted mean, the second moment and ``log Λ`` in one call.
    """
    E, D = q.shape[-1], v.shape[-1]
    n_q, n_k = q.shape[-2], k.shape[-2]
    width = max(E + 1, D + 1)
    q_aug = q.new_empty(*batch, n_q, width)
    q_aug[..., :E] = F.normalize(q, dim=-1).mul_(kappa)  # scores κ·cos
    q_aug[..., E] = 1.0  # picks the key's bias column
    q_aug[..., E + 1:] = 0.0
    k_aug = k.new_empty(*batch, n_k, width)
    k_aug[..., :E] = F.normalize(k, dim=-1)
    log_w = _log_weights(key_weight, k)
    k_aug[..., E] = 0.0 if log_w is None else log_w  # additive log w_i
    k_aug[..., E + 1:] = 0.0
    v_c, v_bar = _centre(v, key_weight)
    v_aug = v.new_empty(*batch, n_k, width)
    v_aug[..., :D] = v_c
    v_aug[..., D] = torch.linalg.vector_norm(v_c, dim=-1).square()  # second-moment column
    v_aug[..., D + 1:] = 0.0
    out, lse = _FLASH_CPU_WITH_LSE(q_aug.reshape(-1, 1, n_q, width), k_aug.reshape(-1, 1, n_k, width),
                                   v_aug.reshape(-1, 1, n_k, width), scale=1.0)[:2]
    out = out.reshape(*batch, n_q, width)  # (..., Q, width)
    log_evidence = lse.reshape(*batch, n_q).to(q.dtype)  # (..., Q)
    mean_c = out[..., :D]
    disagreement = (out[..., D] - torch.linalg.vector_norm(mean_c, dim=-1).square()).clamp_min(0.0)
    if key_weight is not None:
        all_masked = (key_weight <= 0).all(dim=-1, keepdim=True)
        log_evidence = torch.where(all_masked, torch.full_like(log_evidence, -math.inf), log_evidence)
    return mean_c.add_(v_bar), disagreement, log_evidence


class LevyHeadsOutput(NamedTuple):
    """Output of ``LevyAttention``: the aggregated prediction and per-head diagnostics.

    Attributes
    ----------
    mean : Tensor, shape (B, Q, D_out)
        Sum over heads of each head's aggregated (read-out) values, plus the bias.
    sigma : Tensor, shape (B, Q)
        ``sqrt(Σ_h σ̂_h²)``: heads have independent Poisson measures, so variances add.
    head_mean : Tensor, shape (B, H, Q, D_out)
    head_sigma : Tensor, shape (B, H, Q)
    log_evidence : Tensor, shape (B, H, Q)
        ``log Λ`` per head.
    disagreement : Tensor, shape (B, H, Q)
        ``tr Σ_U`` per head, in read-out units squared.
    n_eff : Tensor, shape (B, H, Q)
        ``Λ e^{-κ_h}`` per head.
    """

    mean: Tensor
    sigma: Tensor
    head_mean: Tensor
    head_sigma: Tensor
    log_evidence: Tensor
    disagreement: Tensor
    n_eff: Tensor


class LevyAttention(nn.Module):
    """Multi-head Lévy cross-attention with a linear read-out applied before aggregation.

    Each head projects queries/keys to ``head_dim`` and values to ``head_dim``; the per-head
    read-out ``W_{o,h}`` maps values into the ``out_dim`` output space *before* the
    weighted sum, so the prediction ``ŷ = Σ_h Σ_i p_{h,i} W_{o,h} v_{h,i} + b`` and its
    ``σ̂² = Σ_h tr Σ_{U,h} φ(Λ_h)`` are exact (levy-math.md, "linear read-out").

    Parameters
    ----------
    query_dim, key_dim, value_dim : int
        Feature sizes of the query, key and value inputs.
    num_heads : int
    head_dim : int
        Per-head size of the q/k/v projections.
    out_dim : int
        Size of the read-out space (1 for a scalar prediction).
    kappa_init : float
        Initial compatibility scale, clamped to ``[KAPPA_MIN, KAPPA_MAX]``.
    phi : {"rate", "count"}
    tie_query_key : bool
        Share the query and key projections (a symmetric kernel over one index space).
    """

    def __init__(
        self,
        query_dim: int,
        key_dim: int,
        value_dim: int,
        *,
        num_heads: int = 4,
        head_dim: int = 16,
        out_dim: int = 1,
        kappa_init: float = 8.0,
        phi: Phi = "rate",
        tie_query_key: bool = False,
    ) -> None:
        super().__init__()
        if tie_query_key and query_dim != key_dim:
            raise ValueError("tie_query_key needs query_dim == key_dim")
        if num_heads < 1 or head_dim < 1 or out_dim < 1:
            raise ValueError("num_heads, head_dim and out_dim must be positive")
        if not KAPPA_MIN <= kappa_init <= KAPPA_MAX:
            raise ValueError(f"kappa_init must lie in [{KAPPA_MIN}, {KAPPA_MAX}]")
        self.num_heads, self.head_dim, self.out_dim, self.phi = num_heads, head_dim, out_dim, phi
        self.q_proj = nn.Linear(query_dim, num_heads * head_dim)
        # tied: queries and keys live in one index space, so cos = 1 where they coincide
        self.k_proj = self.q_proj if tie_query_key else nn.Linear(key_dim, num_heads * head_dim)
        self.v_proj = nn.Linear(value_dim, num_heads * head_dim)
        # W_{o,h}: (H, head_dim, out_dim), applied to values before aggregation.
        self.readout = nn.Parameter(torch.randn(num_heads, head_dim, out_dim) / math.sqrt(num_heads * head_dim))
        self.bias = nn.Parameter(torch.zeros(out_dim))
        self.log_kappa = nn.Parameter(torch.full((num_heads,), math.log(kappa_init)))

    @property
    def kappa(self) -> Tensor:
        """Per-head compatibility scale, shape (H,), clamped to ``[KAPPA_MIN, KAPPA_MAX]``."""
        return self.log_kappa.exp().clamp(KAPPA_MIN, KAPPA_MAX)

    def _heads(self, x: Tensor, proj: nn.Linear) -> Tensor:
        B, L, _ = x.shape
        return proj(x).view(B, L, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, L, head_dim)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        *,
        key_weight: Tensor | None = None,
        impl: Literal["fused", "reference"] = "fused",
    ) -> LevyHeadsOutput:
        """Attend from ``query (B, Q, query_dim)`` over ``key (B, K, key_dim)`` /
        ``value (B, K, value_dim)``; ``key_weight (B, K)`` masks (0) or weights keys."""
        q = self._heads(query, self.q_proj)  # (B, H, Q, hd)
        k = self._heads(key, self.k_proj)  # (B, H, K, hd)
        v = self._heads(value, self.v_proj)  # (B, H, K, hd)
        u = v @ self.readout.unsqueeze(0)  # (B, H, K, out_dim): read-out before aggregation
        kappa = self.kappa.view(1, -1, 1, 1)  # (1, H, 1, 1)
        kw = key_weight.unsqueeze(1) if key_weight is not None else None  # (B, 1, K)
        out = levy_attention(q, k, u, kappa=kappa, key_weight=kw, phi=self.phi, impl=impl)
        mean = out.mean.sum(dim=1) + self.bias  # (B, Q, out_dim)
        sigma = out.sigma.pow(2).sum(dim=1).sqrt()  # (B, Q)
        n_eff = torch.exp(out.log_evidence - self.kappa.view(1, -1, 1))  # (B, H, Q)
        return LevyHeadsOutput(mean, sigma, out.mean, out.sigma, out.log_evidence, out.disagreement, n_eff)
