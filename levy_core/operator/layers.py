"""``LevyAttention``: a multi-head Lévy cross-attention layer (``torch.nn.Module``).

Projections, per-head read-out before aggregation and κ are the layer's; the operator
itself is ``levy_core.operator.attention.levy_attention``.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import torch
from torch import Tensor, nn

from levy_core.operator.attention import KAPPA_MAX, KAPPA_MIN, Phi, levy_attention, log_intensity

__all__ = ["LevyAttention", "LevyHeadsOutput"]


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

    def project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The per-head operator inputs: index-space queries (B, H, Q, head_dim), keys
        (B, H, K, head_dim) and read-out values ``u = W_{o,h} v`` (B, H, K, out_dim)."""
        q = self._heads(query, self.q_proj)
        k = self._heads(key, self.k_proj)
        u = self._heads(value, self.v_proj) @ self.readout.unsqueeze(0)  # read-out before aggregation
        return q, k, u

    @torch.no_grad()
    def weights(self, query: Tensor, key: Tensor, *, key_weight: Tensor | None = None) -> Tensor:
        """The attention weights ``p_{h,i}`` of every query over the keys, (B, H, Q, K),
        summing to 1 over keys (a query whose keys are all masked gets NaN-free zeros)."""
        q, k, _ = self.project(query, key, key.new_zeros(*key.shape[:2], self.v_proj.in_features))
        kw = key_weight.unsqueeze(1) if key_weight is not None else None
        p = torch.softmax(log_intensity(q, k, self.kappa.view(1, -1, 1, 1), kw, None), dim=-1)
        # masked keys score at a finite floor: when every key is masked the softmax would
        # spread over them, so zero them explicitly (forward gives that query no evidence)
        return p if kw is None else p * (kw > 0).unsqueeze(-2).to(p.dtype)

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
        q, k, u = self.project(query, key, value)  # (B, H, Q, hd), (B, H, K, hd), (B, H, K, out_dim)
        kappa = self.kappa.view(1, -1, 1, 1)  # (1, H, 1, 1)
        kw = key_weight.unsqueeze(1) if key_weight is not None else None  # (B, 1, K)
        out = levy_attention(q, k, u, kappa=kappa, key_weight=kw, phi=self.phi, impl=impl)
        mean = out.mean.sum(dim=1) + self.bias  # (B, Q, out_dim)
        sigma = out.sigma.pow(2).sum(dim=1).sqrt()  # (B, Q)
        n_eff = torch.exp(out.log_evidence - self.kappa.view(1, -1, 1))  # (B, H, Q)
        return LevyHeadsOutput(mean, sigma, out.mean, out.sigma, out.log_evidence, out.disagreement, n_eff)
