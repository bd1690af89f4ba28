"""What goes into a model and what comes out: padded episodes ([`Batch`][levy_core.model.batch.Batch]), the
per-query prediction ([`ModelOutput`][levy_core.model.batch.ModelOutput]) and the Lévy layer's inputs
([`OperatorInputs`][levy_core.model.batch.OperatorInputs]), shapes in each field's comment."""

from __future__ import annotations

from typing import NamedTuple

from torch import Tensor

from levy_core.operator.attention import LevyPrior, TimeDecay

__all__ = ["Batch", "ModelOutput", "OperatorInputs"]


class Batch(NamedTuple):
    """Padded episodes. B series, N context observations, M queries (padding: mask 0)."""

    ctx_time: Tensor  # (B, N) hours
    ctx_channel: Tensor  # (B, N) int64
    ctx_value: Tensor  # (B, N) normalised value
    ctx_mask: Tensor  # (B, N) 1 real, 0 padding
    qry_time: Tensor  # (B, M)
    qry_channel: Tensor  # (B, M) int64
    qry_mask: Tensor  # (B, M)
    target: Tensor | None = None  # (B, M) normalised target, when known
    offset: Tensor | None = None  # (B, M) a deterministic offset b(q) computed outside (NaN: the model's own)


class ModelOutput(NamedTuple):
    """Per-query prediction in normalised units (the pipeline converts to target units)."""

    mean: Tensor  # (B, M)
    sigma: Tensor | None  # (B, M) σ̂ (Lévy) — None for the twin
    log_evidence: Tensor | None  # (B, H, M) per head: log Λ of the whole measure (data + prior)
    disagreement: Tensor | None  # (B, H, M) per head, normalised units²
    n_eff: Tensor | None  # (B, H, M) per head: the observations' share of Λ, in fully compatible observations
    evidence_term: Tensor | None = None  # (B, M) ½ log of the trΣ-weighted mean φ(Λ_h): log σ̂'s evidence share
    disagreement_term: Tensor | None = None  # (B, M) ½ log Σ_h trΣ_h: its disagreement share


class OperatorInputs(NamedTuple):
    """Everything ``levy_attention`` (or the sampler) needs for one batch, per head.

    ``ŷ = offset + Σ_h levy_attention(q, k, v, ...).mean[..., 0]``."""

    q: Tensor  # (B, H, M, hd) index-space queries
    k: Tensor  # (B, H, N, hd) index-space keys
    v: Tensor  # (B, H, N, R) values
    kappa: Tensor  # (1, H, 1, 1)
    key_weight: Tensor  # (B, H, N): padding mask · e^{-κ_h} (so Λ counts fully compatible observations)
    decay: TimeDecay  # query (B, 1, M) and key (B, 1, N) times, ℓ (1, H, 1, 1)
    readout: Tensor  # (B, H, M, 1, R)
    prior: LevyPrior  # log mass (B, H, M), mean (B, H, M, 1), variance (B, H, M)
    offset: Tensor  # (B, M) deterministic offset b(q)
