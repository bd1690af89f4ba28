"""A compact continuous-time model over the (time × channel) index space, and its twin.

Both models share one backbone: a learned continuous-time embedding plus a channel
embedding place queries and observations in the index space; an observation encoder turns
each observation (time, channel, value) into a value vector, with one softmax
self-attention layer over the series' observations for context; then a multi-head
cross-attention from the queries to the observations reads out the prediction.

* ``LevyModel``: the cross-attention is ``LevyAttention``. Values are projected into the
  (scalar) output space *before* aggregation, so ``ŷ`` and ``σ̂`` come out of one pass and
  obey the variance identity exactly (levy-math.md, "linear read-out").
* ``SoftmaxTwin``: the same backbone with scaled-dot-product softmax attention and dropout.
  In eval mode it is the deterministic "softmax" accuracy baseline; with dropout active at
  inference, T passes give MC-Dropout.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from levy_core.attention import LevyAttention

__all__ = ["Batch", "ModelConfig", "ModelOutput", "LevyModel", "SoftmaxTwin", "build_model"]


@dataclass
class ModelConfig:
    """Hyper-parameters shared by the Lévy model and its twin."""

    n_channels: int  # number of distinct channels (embedding table size)
    time_scale: float = 48.0  # hours mapped to 1.0 before the time embedding
    d_model: int = 32  # width of query/key/value features
    d_time: int = 16  # continuous-time embedding size (1 linear + d_time-1 periodic)
    d_channel: int = 8  # channel embedding size
    num_heads: int = 4  # cross-attention heads
    head_dim: int = 16  # per-head q/k/v size
    context_layers: int = 0  # softmax self-attention layers over a series' observations (0: none; 1 was slower and less accurate on PhysioNet)
    dropout: float = 0.1  # twin only: dropout rate (MC-Dropout at inference)
    kappa_init: float = 8.0  # Lévy only: initial compatibility scale per head
    phi: Literal["rate", "count"] = "rate"  # Lévy only: which sampled operator σ̂ describes

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown model config fields: {sorted(unknown)}")
        return cls(**data)


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


class ModelOutput(NamedTuple):
    """Per-query prediction in normalised units (the pipeline converts to target units)."""

    mean: Tensor  # (B, M)
    sigma: Tensor | None  # (B, M) σ̂ (Lévy) — None for the twin
    log_evidence: Tensor | None  # (B, H, M) per head
    disagreement: Tensor | None  # (B, H, M) per head, normalised units²
    n_eff: Tensor | None  # (B, H, M) per head


class TimeEmbedding(nn.Module):
    """mTAN-style learned continuous-time embedding: one linear and d-1 periodic features."""

    def __init__(self, dim: int, time_scale: float) -> None:
        super().__init__()
        self.time_scale = time_scale
        self.linear = nn.Linear(1, 1)
        self.periodic = nn.Linear(1, dim - 1)
        with torch.no_grad():  # periods from ~3 spans down to 1 % of the span
            self.periodic.weight.copy_(2 * math.pi * torch.logspace(-0.5, 2, dim - 1).unsqueeze(1))

    def forward(self, t: Tensor) -> Tensor:
        x = (t / self.time_scale).unsqueeze(-1)  # (..., 1)
        return torch.cat([self.linear(x), torch.sin(self.periodic(x))], dim=-1)  # (..., dim)


class FourierTime(nn.Module):
    """Index-space time features ``[cos ω_j t, sin ω_j t]`` with learned frequencies.

    The inner product of two such vectors is ``Σ_j cos(ω_j (t - t'))``: a stationary kernel
    that peaks at ``t = t'``. Queries and keys built from it start out time-local, so the
    evidence ``Λ`` of a query falls where observations are far away.
    """

    def __init__(self, dim: int, time_scale: float) -> None:
        super().__init__()
        if dim % 2:
            raise ValueError("FourierTime needs an even dimension")
        self.time_scale = time_scale
        # periods from ~3 spans down to 1 % of the span
        self.log_omega = nn.Parameter(torch.log(2 * math.pi * torch.logspace(-0.5, 2, dim // 2)))

    def forward(self, t: Tensor) -> Tensor:
        phase = (t / self.time_scale).unsqueeze(-1) * self.log_omega.exp()  # (..., dim/2)
        return torch.cat([torch.cos(phase), torch.sin(phase)], dim=-1) / math.sqrt(phase.shape[-1])


class Backbone(nn.Module):
    """Index-space embedding of queries/keys and the observation (value) encoder."""

    def __init__(self, cfg: ModelConfig, dropout: float = 0.0) -> None:
        super().__init__()
        self.time = TimeEmbedding(cfg.d_time, cfg.time_scale)
        self.index_time = FourierTime(cfg.d_time, cfg.time_scale)
        self.channel = nn.Embedding(cfg.n_channels, cfg.d_channel)
        self.index_channel = nn.Embedding(cfg.n_channels, cfg.d_channel)
        with torch.no_grad():  # unit-norm channel codes: same channel ⇒ high compatibility
            self.index_channel.weight.copy_(F.normalize(self.index_channel.weight, dim=-1))
        self.observation = nn.Sequential(nn.Linear(cfg.d_time + cfg.d_channel + 1, cfg.d_model), nn.GELU(),
                                         nn.Linear(cfg.d_model, cfg.d_model))
        self.context = nn.ModuleList(
            nn.TransformerEncoderLayer(cfg.d_model, nhead=2, dim_feedforward=2 * cfg.d_model, dropout=0.0,
                                       batch_first=True, norm_first=True)
            for _ in range(cfg.context_layers)
        )
        self.dropout = nn.Dropout(dropout)

    def position(self, time: Tensor, channel: Tensor) -> Tensor:
        """Index-space point features: (B, L) times and channels → (B, L, d_time + d_channel).

        Deliberately linear in the Fourier/channel codes (no MLP): with shared query/key
        projections the compatibility stays a kernel over (time × channel)."""
        return torch.cat([self.index_time(time), self.index_channel(channel)], dim=-1)

    def encode(self, batch: Batch) -> tuple[Tensor, Tensor, Tensor]:
        """Returns query positions (B, M, d_index), key positions (B, N, d_index), values (B, N, d)."""
        queries = self.position(batch.qry_time, batch.qry_channel)
        keys = self.position(batch.ctx_time, batch.ctx_channel)
        obs = torch.cat([self.time(batch.ctx_time), self.channel(batch.ctx_channel),
                         batch.ctx_value.unsqueeze(-1)], dim=-1)  # (B, N, d_time + d_channel + 1)
        # Dropout (twin only) acts on unit activations, not on attention weights: MC-Dropout
        # as in Gal & Ghahramani, and attention keeps SDPA's fast kernels.
        values = self.dropout(self.observation(obs))
        padding = batch.ctx_mask <= 0  # (B, N) True where padded
        for layer in self.context:
            values = self.dropout(layer(values, src_key_padding_mask=padding))
        return queries, keys, values


class LevyModel(nn.Module):
    """Backbone + multi-head ``LevyAttention`` with a scalar linear read-out."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.backbone = Backbone(cfg, dropout=0.0)
        d_index = cfg.d_time + cfg.d_channel
        self.attention = LevyAttention(d_index, d_index, cfg.d_model, num_heads=cfg.num_heads,
                                       head_dim=cfg.head_dim, out_dim=1, kappa_init=cfg.kappa_init, phi=cfg.phi,
                                       tie_query_key=True)

    def forward(self, batch: Batch) -> ModelOutput:
        queries, keys, values = self.backbone.encode(batch)
        out = self.attention(queries, keys, values, key_weight=batch.ctx_mask.to(queries.dtype))
        return ModelOutput(mean=out.mean[..., 0], sigma=out.sigma, log_evidence=out.log_evidence,
                           disagreement=out.disagreement, n_eff=out.n_eff)


class SoftmaxCrossAttention(nn.Module):
    """Standard multi-head scaled-dot-product attention with the same per-head read-out."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.h, self.hd, self.p = cfg.num_heads, cfg.head_dim, cfg.dropout
        d_index = cfg.d_time + cfg.d_channel
        self.q_proj = nn.Linear(d_index, cfg.num_heads * cfg.head_dim)
        self.k_proj = self.q_proj  # tied, as in the Lévy model: only the operator differs
        # Start as sharp as the Lévy model (logits ≈ κ_init·cos on the unit-norm index codes):
        # with W ~ N(0, σ²), E[(Wx)·(Wx')] = head_dim·σ²·x·x', and x·x' = 2 cos here. With
        # PyTorch's default (much smaller) init the twin sits at near-uniform attention and
        # learns nothing within a short budget — a strawman, not a comparison.
        with torch.no_grad():
            self.q_proj.weight.normal_(0.0, math.sqrt(cfg.kappa_init * cfg.head_dim**0.5 / (2 * cfg.head_dim)))
            self.q_proj.bias.zero_()
        self.v_proj = nn.Linear(cfg.d_model, cfg.num_heads * cfg.head_dim)
        self.readout = nn.Linear(cfg.num_heads * cfg.head_dim, 1)

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> Tensor:
        B, M, _ = queries.shape
        N = keys.shape[1]
        q = self.q_proj(queries).view(B, M, self.h, self.hd).transpose(1, 2)  # (B, H, M, hd)
        k = self.k_proj(keys).view(B, N, self.h, self.hd).transpose(1, 2)  # (B, H, N, hd)
        v = self.v_proj(values).view(B, N, self.h, self.hd).transpose(1, 2)  # (B, H, N, hd)
        # The padding mask enters as an extra key column (a bias picked by a constant query
        # column), not as attn_mask: with a mask CPU SDPA falls back to its slow math path,
        # which would make every MC-Dropout pass ~10× dearer than it needs to be.
        bias = torch.where(mask > 0, 0.0, -1e4).to(q.dtype)[:, None, :, None].expand(B, self.h, N, 1)
        q = torch.cat([q * self.hd**-0.5, q.new_ones(B, self.h, M, 1)], dim=-1)  # (B, H, M, hd + 1)
        k = torch.cat([k, bias], dim=-1)  # (B, H, N, hd + 1)
        v = torch.cat([v, v.new_zeros(B, self.h, N, 1)], dim=-1)  # (B, H, N, hd + 1)
        out = F.scaled_dot_product_attention(q, k, v, scale=1.0)[..., :self.hd]  # (B, H, M, hd)
        out = F.dropout(out.transpose(1, 2).reshape(B, M, self.h * self.hd), self.p, self.training)
        return self.readout(out)[..., 0]  # (B, M)


class SoftmaxTwin(nn.Module):
    """The same backbone with softmax attention and dropout (MC-Dropout at inference)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.backbone = Backbone(cfg, dropout=cfg.dropout)
        self.attention = SoftmaxCrossAttention(cfg)

    def forward(self, batch: Batch) -> ModelOutput:
        queries, keys, values = self.backbone.encode(batch)
        mean = self.attention(queries, keys, values, batch.ctx_mask)
        return ModelOutput(mean=mean, sigma=None, log_evidence=None, disagreement=None, n_eff=None)

    @torch.no_grad()
    def mc_dropout(self, batch: Batch, passes: int, generator_seed: int = 0) -> tuple[Tensor, Tensor]:
        """Mean and standard deviation over ``passes`` stochastic passes, each (B, M)."""
        if passes < 2:
            raise ValueError("MC-Dropout needs at least 2 passes")
        was_training = self.training
        self.train()
        state = torch.random.get_rng_state()
        torch.manual_seed(generator_seed)
        try:
            draws = torch.stack([self.forward(batch).mean for _ in range(passes)])  # (T, B, M)
        finally:
            torch.random.set_rng_state(state)
            self.train(was_training)
        return draws.mean(0), draws.std(0, correction=1)


def build_model(kind: Literal["levy", "softmax"], cfg: ModelConfig) -> nn.Module:
    """Factory used by training and loading."""
    if kind == "levy":
        return LevyModel(cfg)
    if kind == "softmax":
        return SoftmaxTwin(cfg)
    raise ValueError(f"model kind must be 'levy' or 'softmax', got {kind!r}")
