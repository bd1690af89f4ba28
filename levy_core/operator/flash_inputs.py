"""The fused pass's inputs: queries, keys and values augmented so that one
``scaled_dot_product_attention`` call returns the operator's first and second moments and
its evidence (the columns are laid out on ``augment``).

Apart from ``attention`` (the operator and its paths) because this is the part tuned for
memory traffic: beside the kernel itself, building these inputs is most of the operator's
time on CPU. Every function returns the same numbers as the readable form it replaces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import torch
from torch import Tensor

from levy_core.operator.checks import broadcast_shapes, check_value_range

if TYPE_CHECKING:  # annotations only
    from levy_core.operator.types import TimeDecay

__all__ = ["MASKED_SCORE", "DecayTerms", "augment", "decay_terms", "flash_inputs", "log_weights",
           "second_moment_columns", "unit_rows"]

# A key with weight 0 gets this score: exp(-1e4) is exactly 0 in every float dtype, and
# unlike -inf it cannot produce 0 * inf = NaN inside a GEMM.
MASKED_SCORE = -1.0e4


def log_weights(key_weight: Tensor | None, like: Tensor) -> Tensor | None:
    """``log w_i`` with masked keys at a large finite negative score, shape (..., K)."""
    if key_weight is None:
        return None
    kw = key_weight.to(like.dtype)
    return torch.where(kw > 0, torch.log(kw.clamp_min(torch.finfo(like.dtype).tiny)), torch.full_like(kw, MASKED_SCORE))


class DecayTerms(NamedTuple):
    """The Gaussian decay split into what SDPA can carry (times centred per row)."""

    q_col: Tensor  # (..., Q) t_q'/ℓ², multiplies the key's time column
    k_col: Tensor  # (..., K) t_i'
    k_bias: Tensor  # (..., K) −t_i'²/(2ℓ²), joins log w_i
    q_shift: Tensor  # (..., Q) t_q'²/(2ℓ²): subtract from the pass's log-sum-exp


def decay_terms(decay: TimeDecay, key_weight: Tensor | None, like: Tensor) -> DecayTerms:
    """``decay``'s exponent as the columns and shifts of ``DecayTerms``, in ``like``'s dtype."""
    tq, tk = decay.query_time.to(like.dtype), decay.key_time.to(like.dtype)
    # centre on each row's key-time mean: the factorised terms stay of the span's size
    if key_weight is None:
        ref = tk.mean(-1, keepdim=True)
    else:
        w = (key_weight > 0).to(like.dtype)
        ref = (w * tk).sum(-1, keepdim=True) / w.sum(-1, keepdim=True).clamp_min(1.0)
    inv = torch.as_tensor(decay.length_scale, dtype=like.dtype, device=like.device).pow(-2)
    inv = inv.squeeze(-1) if inv.dim() >= 2 else inv  # (..., 1)
    tq_c, tk_c = tq - ref, tk - ref
    return DecayTerms(tq_c * inv, tk_c.expand(broadcast_shapes(tk_c.shape, inv.shape[:-1] + (1,))),
                      -0.5 * tk_c.pow(2) * inv, 0.5 * tq_c.pow(2) * inv)


def second_moment_columns(v_c: Tensor, full: bool) -> Tensor:
    """``‖v‖²`` (..., K, 1) or the upper triangle of ``v vᵀ`` (..., K, D(D+1)/2), row by row
    (``v_i v_i``, ``v_i v_{i+1}``, …: the order of ``torch.triu_indices``)."""
    if not full:
        moments = torch.linalg.vector_norm(v_c, dim=-1, keepdim=True).square()
        check_value_range(v_c, moments)
        return moments
    check_value_range(v_c)  # the largest |v_i v_j| is the largest v_i²
    D = v_c.shape[-1]
    return torch.cat([v_c[..., i:i + 1] * v_c[..., i:] for i in range(D)], dim=-1)


def augment(q: Tensor, k: Tensor, v_c: Tensor, moments: Tensor, kappa: Tensor, key_weight: Tensor | None,
            terms: DecayTerms | None, batch: torch.Size,
            null_score: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    """Augmented SDPA inputs, flattened to (N, 1, L, width)::

        q: [κ q̂ | 1                       | t_q'/ℓ² | c(q)]   scores κ cos + log w_i + decay
        k: [k̂   | log w_i − t_i'²/(2ℓ²)   | t_i'    | 0   ]   (null key: [0 | 0 | 0 | 1])
        v: [v_i − v̄ | second moments | 0]                   (null key: [0 | 0 | 1])

    The time columns only with a decay, the null key and its columns only with ``null_score``.
    """
    D, S = v_c.shape[-1], moments.shape[-1]
    n_k = k.shape[-2]
    Z = 1 if null_score is not None else 0
    width = _width(q, D, S, terms, Z)
    q_aug, k_aug = _query_key_columns(q, k, kappa, key_weight, terms, batch, width, null_score)
    v_aug = v_c.new_zeros(*batch, n_k + Z, width)
    v_aug[..., :n_k, :D] = v_c
    v_aug[..., :n_k, D:D + S] = moments
    if null_score is not None:
        v_aug[..., n_k, D + S] = 1.0  # one-hot: the null key's weight
    return _flat(q_aug, k_aug, v_aug)


def _width(q: Tensor, D: int, S: int, terms: DecayTerms | None, Z: int) -> int:
    """The columns of every augmented input: SDPA's fast CPU kernels need equal q/k and v head sizes."""
    return max(q.shape[-1] + 1 + (1 if terms is not None else 0) + Z, D + S + Z)


def _query_key_columns(q: Tensor, k: Tensor, kappa: Tensor, key_weight: Tensor | None, terms: DecayTerms | None,
                       batch: torch.Size, width: int, null_score: Tensor | None) -> tuple[Tensor, Tensor]:
    """The augmented queries (..., Q, width) and keys (..., K [+ 1 null key], width) of ``augment``."""
    E, n_q, n_k = q.shape[-1], q.shape[-2], k.shape[-2]
    T, Z = (1 if terms is not None else 0), (1 if null_score is not None else 0)
    q_aug = q.new_zeros(*batch, n_q, width)
    q_aug[..., :E] = unit_rows(q) * kappa  # scores κ·cos
    q_aug[..., E] = 1.0  # picks the key's bias column
    k_aug = k.new_zeros(*batch, n_k + Z, width)
    k_aug[..., :n_k, :E] = unit_rows(k)
    log_w = log_weights(key_weight, k)
    bias = 0.0 if log_w is None else log_w
    if terms is not None:
        q_aug[..., E + 1] = terms.q_col
        k_aug[..., :n_k, E + 1] = terms.k_col
        bias = terms.k_bias + bias
    k_aug[..., :n_k, E] = bias
    if null_score is not None:
        q_aug[..., E + 1 + T] = null_score  # picks the null key
        k_aug[..., n_k, E + 1 + T] = 1.0
    return q_aug, k_aug


def _flat(q_aug: Tensor, k_aug: Tensor, v_aug: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(..., L, width) → (N, 1, L, width): SDPA's fast CPU path wants (N, H, L, E)."""
    return tuple(x.reshape(-1, 1, *x.shape[-2:]) for x in (q_aug, k_aug, v_aug))  # type: ignore[return-value]


def unit_rows(x: Tensor) -> Tensor:
    """``F.normalize(x, dim=-1)``, with the norms reduced in ``x``'s memory order: the heads'
    queries and keys are strided views of one projection, and a reduction over a strided view
    is ~7× slower on CPU than over the same numbers in order (the norm is the same)."""
    lead = sorted(range(x.dim() - 1), key=lambda d: -x.stride(d))  # outermost first
    order = [*lead, x.dim() - 1]
    norm = torch.linalg.vector_norm(x.permute(order), dim=-1, keepdim=True)
    inverse = [order.index(d) for d in range(x.dim())]
    return x / norm.permute(inverse).clamp_min(1e-12)  # F.normalize's eps


def flash_inputs(q: Tensor, k: Tensor, v: Tensor, v_bar: Tensor, kappa: Tensor, key_weight: Tensor | None,
                 terms: DecayTerms | None, batch: torch.Size, full: bool) -> tuple[Tensor, Tensor, Tensor]:
    """``augment(q, k, v − v̄, second_moment_columns(v − v̄, full), …, null_score=None)``, the
    same numbers, for the no-grad flash pass on values already of the full batch shape
    (..., K, D): the centred values and their moments are written straight into their
    columns (``out=``, so no autograd) instead of built and copied."""
    D, n_k = v.shape[-1], k.shape[-2]
    S = D * (D + 1) // 2 if full else 1
    width = _width(q, D, S, terms, 0)
    q_aug, k_aug = _query_key_columns(q, k, kappa, key_weight, terms, batch, width, None)
    v_aug = v.new_empty(*batch, n_k, width)
    v_c = v_aug[..., :D]
    torch.sub(v, v_bar, out=v_c)
    if full:  # the upper triangle of v vᵀ, row by row (second_moment_columns' order)
        check_value_range(v_c)
        start = D
        for i in range(D):
            torch.mul(v_c[..., i:i + 1], v_c[..., i:], out=v_aug[..., start:start + D - i])
            start += D - i
    else:
        torch.linalg.vector_norm(v_c, dim=-1, keepdim=True, out=v_aug[..., D:D + 1]).square_()
        check_value_range(v_c, v_aug[..., D:D + 1])
    v_aug[..., D + S:] = 0.0
    return _flat(q_aug, k_aug, v_aug)
