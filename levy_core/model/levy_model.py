"""The forecaster: an encoder of the series, then one Lévy cross-attention; and its twin.

Both models share one backbone (``Backbone``) and differ only in the cross-attention:

1. **Channel state.** Per (series, channel) the context gives deterministic summaries: the
   last observed value and its time, the mean, the count. The **offset** ``b(q)`` of a
   query is the last observed value of its channel (decayed towards its level where the
   fit found mean reversion, ``reversion``; the channel's training mean where the channel
   was never observed): the model predicts the change from it, which it must beat.
2. **Observation tokens** encode (lag to the end of the context, channel, value, value
   relative to its channel's last value and mean). **Channel tokens** pool them per
   channel with the summaries and pass through ``channel_layers`` self-attention layers
   across channels: a patient's state, learnt across its channels. Each observation's
   value vector adds its channel's token.
3. **Cross-attention** from the queries to the observations in the (time × channel) index
   space: compatibility ``κ_h (cos(P c_q, P c_i) − 1)`` over learned channel codes (tied
   projection) times a Gaussian time decay ``exp(−(t_q − t_i)²/(2ℓ_h²))``, so with unit key
   weights ``Λ_h`` *is* the number of fully compatible nearby observations (``n_eff``) and
   it falls monotonically away from the data. Values are ``R = value_rank`` numbers per
   head; the **read-out depends on the query** (its channel's token and its horizon):
   ``u_{h,i}(q) = a_h(q) · v_{h,i}``. A **prior measure** per (head, query channel) — mass
   ``Λ_0``, mean, variance — is superposed on the data's: far from any observation the
   prediction returns to ``b(q) +`` the prior mean and the spread to the prior's.

* ``LevyModel``: the cross-attention is ``levy_attention`` with all of the above; the
  prediction ``ŷ(q) = b(q) + Σ_h m_h(q)`` and ``σ̂(q)² = Σ_h tr Σ_{U,h}(q) φ(Λ_h(q))`` are
  exact for the sampled operator (docs/levy-math-model.md: offset, query read-out, prior).
* ``SoftmaxTwin``: the same backbone, offset, read-out and prior atom, with a
  scaled-dot-product softmax over the same (decayed) index space and dropout. In eval mode
  it is the deterministic "softmax" baseline; with dropout active, T passes give MC-Dropout.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor, nn

from levy_core.model.batch import Batch, ModelOutput, OperatorInputs
from levy_core.model.config import ModelConfig
from levy_core.model.cross_heads import CrossHeads, bound_factor
from levy_core.model.encoder import Backbone
from levy_core.model.softmax_twin import SoftmaxTwin
from levy_core.operator.attention import (
    KAPPA_MAX,
    KAPPA_MIN,
    LevyPrior,
    TimeDecay,
    levy_attention,
    log_intensity,
    log_sigma_terms,
)

__all__ = ["LevyModel", "build_model"]


class LevyModel(nn.Module):
    """Backbone + one multi-head Lévy cross-attention with offset, query read-out and prior."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.backbone = Backbone(cfg, dropout=0.0)
        self.heads = CrossHeads(cfg)
        self.log_kappa = nn.Parameter(torch.full((cfg.num_heads,), math.log(cfg.kappa_init)))
        # γ_c per query channel, in (0, 1]: the learned correction's share, fitted after
        # training on the early-stopping episodes (``levy_core.training.train.fit_correction_scale``);
        # a linear, query-dependent read-out scale, so σ̂ stays exact. Not a weight: kept in
        # model.json, outside the safetensors file.
        self.register_buffer("correction_scale", torch.ones(cfg.n_channels), persistent=False)
        # the largest correction |γ_c Σ_h m_h| held-out episodes validated, per channel (inf:
        # none); a query whose correction would exceed it keeps the share s(q) that reaches it
        self.register_buffer("correction_bound", torch.full((cfg.n_channels,), math.inf), persistent=False)

    def bound_factor(self, correction: Tensor, channels: Tensor) -> Tensor:
        """The share ``s(q) = min(1, B_c / |correction|)`` of each query's correction (B, M)
        kept under the channel's bound ``B_c``. It is a function of the query and context
        alone (the correction is the operator's expectation, not a draw), so scaling the
        read-out by it is item 2 of docs/levy-math-model.md: mean correction and σ̂ scale by
        ``s``, the disagreement by ``s²``, the evidence not at all."""
        return bound_factor(correction, self.correction_bound[channels])

    @property
    def kappa(self) -> Tensor:
        """Per-head channel-compatibility scale, shape (H,), clamped to ``[KAPPA_MIN, KAPPA_MAX]``."""
        return self.log_kappa.exp().clamp(KAPPA_MIN, KAPPA_MAX)

    def operator(self, batch: Batch) -> OperatorInputs:
        """The Lévy layer's inputs for ``batch``: what ``forward``, the sampler and the
        diagnostics all use, so none of them re-derives the model."""
        enc = self.backbone.encode(batch)
        q, k, v, readout = self.heads.project(enc)
        kappa = self.kappa.view(1, -1, 1, 1)
        # λ_i = w_i e^{κ(cos − 1)}: Λ counts fully compatible observations (n_eff)
        key_weight = batch.ctx_mask.unsqueeze(1) * torch.exp(-self.kappa).view(1, -1, 1)  # (B, H, N)
        decay = TimeDecay(batch.qry_time.unsqueeze(1), batch.ctx_time.unsqueeze(1), self.heads.length_scale())
        logit, mean, var = self.heads.prior_tables(enc, batch.qry_channel)
        gamma = self.correction_scale[batch.qry_channel].unsqueeze(1)  # (B, 1, M)
        readout = readout * gamma.unsqueeze(-1).unsqueeze(-1)  # the atoms' output values scale by γ …
        prior = LevyPrior(logit, (mean * gamma).unsqueeze(-1), var * gamma.pow(2))  # … the prior's too
        return OperatorInputs(q, k, v, kappa, key_weight, decay, readout, prior, enc.offset)

    def forward(self, batch: Batch, impl: Literal["fused", "reference"] = "fused") -> ModelOutput:
        op = self.operator(batch)
        # training tolerates an overflowing batch (its step is skipped); a prediction refuses it
        out = levy_attention(op.q, op.k, op.v, kappa=op.kappa, key_weight=op.key_weight, phi=self.cfg.phi,
                             impl=impl, decay=op.decay, readout=op.readout, prior=op.prior,
                             check_finite=not self.training)
        correction = out.mean[..., 0].sum(dim=1)  # (B, M)
        share = self.bound_factor(correction, batch.qry_channel)  # (B, M), 1 where within the bound
        mean = op.offset + share * correction
        sigma = share * out.sigma.pow(2).sum(dim=1).sqrt()  # heads: independent measures, variances add
        disagreement = out.disagreement * share.unsqueeze(1).pow(2)
        evidence_term, disagreement_term = log_sigma_terms(sigma, disagreement.sum(dim=1))
        return ModelOutput(mean=mean, sigma=sigma, log_evidence=out.log_evidence, disagreement=disagreement,
                           n_eff=torch.exp(out.log_data_evidence), evidence_term=evidence_term,
                           disagreement_term=disagreement_term)

    @torch.no_grad()
    def attention_weights(self, batch: Batch) -> tuple[Tensor, Tensor]:
        """Which observations each query drew on: per head the weights ``p_i`` among the
        context observations (B, H, M, N), summing to 1, and the observations' share of the
        whole measure (B, H, M) (the rest is the prior's)."""
        op = self.operator(batch)
        # masked keys get weight exactly 0 (log_intensity scores them at a finite floor)
        log_lam = log_intensity(op.q, op.k, op.kappa, op.key_weight, op.decay)  # (B, H, M, N)
        log_data = torch.logsumexp(log_lam, -1)
        share = torch.exp(log_data - torch.logaddexp(log_data, op.prior.log_mass))
        return torch.softmax(log_lam, -1), share


def build_model(kind: Literal["levy", "softmax"], cfg: ModelConfig) -> nn.Module:
    """Factory used by training and loading."""
    if kind == "levy":
        return LevyModel(cfg)
    if kind == "softmax":
        return SoftmaxTwin(cfg)
    raise ValueError(f"model kind must be 'levy' or 'softmax', got {kind!r}")
