"""The softmax twin: the Lévy model's backbone, offset, read-out and prior atom with a
scaled-dot-product softmax over the same (decayed) index space and dropout. In eval mode it
is the deterministic "softmax" baseline; with dropout active, ``T`` passes give MC-Dropout
(`SoftmaxTwin.mc_dropout`)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from levy_core.model.batch import Batch, ModelOutput
from levy_core.model.config import ModelConfig
from levy_core.model.cross_heads import CrossHeads, bound_factor
from levy_core.model.dropout import generator_dropout
from levy_core.model.encoder import Backbone

__all__ = ["SoftmaxTwin"]


class SoftmaxTwin(nn.Module):
    """The same backbone, offset, read-out and prior atom, with dot-product softmax attention
    over the same time-decayed index space and dropout (MC-Dropout at inference)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.backbone = Backbone(cfg, dropout=cfg.dropout)
        self.heads = CrossHeads(cfg)
        self.register_buffer("correction_scale", torch.ones(cfg.n_channels), persistent=False)  # as LevyModel's
        self.register_buffer("correction_bound", torch.full((cfg.n_channels,), math.inf), persistent=False)
        # as sharp as the Lévy model at the start: logits ≈ κ_init·cos on unit-norm codes
        with torch.no_grad():
            hd = cfg.head_dim
            self.heads.index_proj.weight.normal_(0.0, math.sqrt(cfg.kappa_init * hd**0.5 / (2 * hd)))
            self.heads.index_proj.bias.zero_()

    def forward(self, batch: Batch, generator: torch.Generator | None = None,
                share: Tensor | None = None) -> ModelOutput:
        """The twin's prediction. Without ``generator``: deterministic in eval mode, dropout
        from the global RNG in training mode. With one: an MC-Dropout pass, every mask drawn
        from ``generator``, in either mode (nothing of the model is changed). ``share``
        (B, M): the correction bound's share to apply (default: from this pass's own
        correction; MC-Dropout passes the deterministic pass's, see [`mc_dropout`][levy_core.model.softmax_twin.SoftmaxTwin.mc_dropout])."""
        offset, correction = self._correction(batch, generator)
        if share is None:
            share = bound_factor(correction, self.correction_bound[batch.qry_channel])
        return ModelOutput(mean=offset + share * correction, sigma=None, log_evidence=None,
                           disagreement=None, n_eff=None)

    def _correction(self, batch: Batch, generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
        """The offset and the kept correction ``γ Σ_h heads`` before any bound, each (B, M)."""
        enc = self.backbone.encode(batch, generator)
        q, k, v, readout = self.heads.project(enc)
        B, H, M, hd = q.shape
        N, R = k.shape[2], v.shape[-1]
        ell_inv = self.heads.length_scale().pow(-2).view(1, -1, 1)  # (1, H, 1)
        now = (batch.ctx_time * batch.ctx_mask).amax(1, keepdim=True)  # centre times (exact either way)
        tq, tk = (batch.qry_time - now).unsqueeze(1), (batch.ctx_time - now).unsqueeze(1)
        logit, prior_mean, _ = self.heads.prior_tables(enc, batch.qry_channel)
        # one SDPA call: q [q/√hd | 1 | t_q/ℓ² | prior logit'], k [k | bias − t_i²/(2ℓ²) | t_i | 0];
        # the prior is one more key, picked by the last column (query-only terms shift it)
        shift = 0.5 * tq.pow(2) * ell_inv  # (B, H, M): query-only part of the decay
        bias = torch.where(batch.ctx_mask > 0, 0.0, -1e4).to(q.dtype).unsqueeze(1) - 0.5 * tk.pow(2) * ell_inv
        width = max(hd + 3, R + 1)
        q_aug = q.new_zeros(B, H, M, width)
        q_aug[..., :hd] = q * hd**-0.5
        q_aug[..., hd] = 1.0
        q_aug[..., hd + 1] = tq * ell_inv
        q_aug[..., hd + 2] = logit + shift
        k_aug = k.new_zeros(B, H, N + 1, width)
        k_aug[..., :N, :hd] = k
        k_aug[..., :N, hd] = bias
        k_aug[..., :N, hd + 1] = tk.expand(B, H, N)
        k_aug[..., N, hd + 2] = 1.0
        v_aug = v.new_zeros(B, H, N + 1, width)
        v_aug[..., :N, :R] = v
        v_aug[..., N, R] = 1.0
        out = F.scaled_dot_product_attention(q_aug, k_aug, v_aug, scale=1.0)  # (B, H, M, width)
        data = (readout @ out[..., :R].unsqueeze(-1)).squeeze(-1).squeeze(-1)  # (B, H, M)
        heads = data + out[..., R] * prior_mean
        if generator is not None:
            heads = generator_dropout(heads, self.cfg.dropout, generator, (2,))  # (B, H, M): shared over M
        elif self.training and self.cfg.dropout > 0:
            keep = 1.0 - self.cfg.dropout
            mask = torch.rand(heads.shape, device=heads.device) < keep
            heads = heads * mask / keep
        return enc.offset, self.correction_scale[batch.qry_channel] * heads.sum(1)

    @torch.no_grad()
    def mc_dropout(self, batch: Batch, passes: int, generator_seed: int = 0) -> tuple[Tensor, Tensor]:
        """Mean and standard deviation over ``passes`` stochastic passes, each (B, M).

        The masks come from a ``torch.Generator`` of this call, seeded with ``generator_seed``:
        the same seed, the same masks (on CUDA the numbers to float32 rounding); neither the model
        (its train/eval mode) nor the global RNG is touched, so threads may share one model."""
        if passes < 2:
            raise ValueError("MC-Dropout needs at least 2 passes")
        generator = torch.Generator(device=batch.ctx_value.device).manual_seed(generator_seed)
        # the bound's share from the deterministic pass (as LevyModel's, from the expectation),
        # the same for every dropout pass: clipping each pass would make them agree and the
        # MC spread vanish
        share = None
        if bool(torch.isfinite(self.correction_bound).any()):
            _, deterministic = self._correction(batch, None)
            share = bound_factor(deterministic, self.correction_bound[batch.qry_channel])
        draws = torch.stack([self.forward(batch, generator, share).mean for _ in range(passes)])  # (T, B, M)
        return draws.mean(0), draws.std(0, correction=1)
