"""Argument checks of the Lévy operator, shared by ``levy_attention`` and the sampler.

Every check raises ``ValueError`` naming the argument, its shape and what it must be.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:  # annotations only: attention imports this module
    from levy_core.attention import LevyPrior, TimeDecay

__all__ = ["as_kappa", "check_inputs", "check_options"]


def check_inputs(q: Tensor, k: Tensor, v: Tensor, key_weight: Tensor | None, phi: str) -> None:
    """Shape and option checks shared by ``levy_attention`` and the sampler (``ValueError``)."""
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
    if key_weight is not None and torch.any(key_weight < 0):
        raise ValueError("key_weight must be non-negative (0 masks a key)")


def check_options(q: Tensor, k: Tensor, v: Tensor, decay: TimeDecay | None, readout: Tensor | None,
                  prior: LevyPrior | None) -> None:
    """Shapes of the options: decay times (Q and K), read-out (..., Q, P, D), prior (Q)."""
    if decay is not None:
        if decay.query_time.shape[-1] != q.shape[-2] or decay.key_time.shape[-1] != k.shape[-2]:
            raise ValueError(
                f"decay times must have shapes (..., Q={q.shape[-2]}) and (..., K={k.shape[-2]}), got "
                f"{tuple(decay.query_time.shape)} and {tuple(decay.key_time.shape)}"
            )
        ell = torch.as_tensor(decay.length_scale)
        if not torch.all(ell > 0) or not torch.all(torch.isfinite(ell)):
            raise ValueError("length_scale must be finite and > 0")
    if readout is not None and (readout.dim() < 3 or readout.shape[-1] != v.shape[-1]
                                or readout.shape[-3] != q.shape[-2]):
        raise ValueError(f"readout must have shape (..., Q={q.shape[-2]}, P, D={v.shape[-1]}), "
                         f"got {tuple(readout.shape)}")
    if prior is not None:
        out_dim = readout.shape[-2] if readout is not None else v.shape[-1]
        if prior.mean.shape[-1] != out_dim or prior.log_mass.shape[-1] != q.shape[-2]:
            raise ValueError(f"prior needs log_mass (..., Q={q.shape[-2]}), mean (..., Q, {out_dim}) and "
                             f"variance (..., Q); got {tuple(prior.log_mass.shape)}, {tuple(prior.mean.shape)}")


def as_kappa(kappa: float | Tensor, ref: Tensor) -> Tensor:
    """``κ`` as a tensor broadcastable to (..., 1, 1); ``ValueError`` unless finite and > 0."""
    kappa_t = torch.as_tensor(kappa, dtype=ref.dtype, device=ref.device)
    if not torch.all(kappa_t > 0) or not torch.all(torch.isfinite(kappa_t)):
        raise ValueError("kappa must be finite and > 0")
    if kappa_t.dim() == 0:
        kappa_t = kappa_t.reshape(1, 1)
    return kappa_t  # broadcastable to (..., 1, 1)
