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
  exact for the sampled operator (docs/levy-math.md: offset, query read-out, prior).
* ``SoftmaxTwin``: the same backbone, offset, read-out and prior atom, with a
  scaled-dot-product softmax over the same (decayed) index space and dropout. In eval mode
  it is the deterministic "softmax" baseline; with dropout active, T passes give MC-Dropout.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from levy_core.model.dropout import encoder_layer, generator_dropout
from levy_core.model.reversion import reverted_last
from levy_core.operator.attention import (
    KAPPA_MAX,
    KAPPA_MIN,
    LevyPrior,
    TimeDecay,
    levy_attention,
    log_intensity,
    log_sigma_terms,
)

__all__ = ["CONFIG_BOUNDS", "Batch", "ModelConfig", "ModelOutput", "OperatorInputs", "LevyModel", "SoftmaxTwin",
           "build_model", "generator_dropout"]

#: Inclusive bounds on every size of a ``ModelConfig``, checked before anything is built (a ``model.json``
#: is input). Generous: the largest preset is d_model 96, 8 heads of 16, 2 + 1 layers; all at their caps,
#: a model has about 60 M parameters (240 MB in float32; the twin as many), built in seconds.
CONFIG_BOUNDS: dict[str, tuple[int, int]] = {
    "n_channels": (1, 100_000),
    "d_model": (2, 512),  # and even: the layers' self-attention has 2 heads
    "d_time": (2, 64),
    "d_channel": (1, 64),
    "num_heads": (1, 32),
    "head_dim": (1, 128),
    "value_rank": (1, 32),
    "channel_layers": (0, 8),
    "context_layers": (0, 8),
}


@dataclass
class ModelConfig:
    """Hyper-parameters shared by the Lévy model and its twin (one architecture, any size)."""

    n_channels: int  # number of distinct channels (embedding table size)
    time_scale: float = 48.0  # hours mapped to 1.0 in the time features; length scales are in this unit
    d_model: int = 32  # width of observation and channel tokens
    d_time: int = 8  # encoder time features of an observation's lag (1 linear + d_time-1 periodic)
    d_channel: int = 8  # channel embedding size (encoder) and index-space channel code size
    num_heads: int = 4  # cross-attention heads
    head_dim: int = 16  # per-head size of the (tied) index-space projection: cosines live here
    value_rank: int = 4  # per-head value size R; the query's read-out maps R numbers to the output
    channel_layers: int = 1  # self-attention layers over the channel tokens (patient state across channels)
    context_layers: int = 0  # softmax self-attention layers over the observations themselves (0: none)
    dropout: float = 0.1  # twin only: dropout rate (MC-Dropout at inference)
    kappa_init: float = 4.0  # Lévy only: initial channel-compatibility scale per head
    length_scale_min: float = 0.01  # shortest time decay ℓ, in time_scale units (clamp)
    length_scale_max: float = 1.0  # longest ℓ, in time_scale units: how far evidence reaches at most
    phi: Literal["rate", "count"] = "rate"  # Lévy only: which sampled operator σ̂ describes
    season: float = 0.0  # hours; > 0: the offset is the value one season before the query (seasonal naive)

    def __post_init__(self) -> None:
        for name, (lo, hi) in CONFIG_BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not lo <= value <= hi:
                raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
        if self.d_model % 2:
            raise ValueError(f"d_model must be even (the layers' self-attention has 2 heads), got {self.d_model}")
        for name in ("time_scale", "dropout", "kappa_init", "length_scale_min", "length_scale_max", "season"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")
        if not KAPPA_MIN <= self.kappa_init <= KAPPA_MAX:
            raise ValueError(f"kappa_init must lie in [{KAPPA_MIN}, {KAPPA_MAX}], got {self.kappa_init}")
        if self.phi not in ("rate", "count"):
            raise ValueError(f"phi must be 'rate' or 'count', got {self.phi!r}")
        if not 0 < self.length_scale_min <= self.length_scale_max:
            raise ValueError("need 0 < length_scale_min <= length_scale_max")
        if self.time_scale <= 0 or not math.isfinite(self.time_scale):
            raise ValueError("time_scale must be finite and > 0")
        if not (math.isfinite(self.season) and self.season >= 0):
            raise ValueError("season must be finite and >= 0 (0: no seasonal offset)")

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


class ChannelState(NamedTuple):
    """Deterministic per-(series, channel) summaries of the context, each (B, C)."""

    last_value: Tensor
    last_time: Tensor
    mean_value: Tensor
    count: Tensor
    now: Tensor  # (B, 1) the last context time of each series


def channel_state(batch: Batch, n_channels: int) -> ChannelState:
    """Last value (ties at the last time averaged), its time, mean and count per channel."""
    B = batch.ctx_time.shape[0]
    real = batch.ctx_mask > 0
    ch, t, x = batch.ctx_channel, batch.ctx_time, batch.ctx_value
    zeros = t.new_zeros(B, n_channels)
    count = zeros.scatter_add(1, ch, real.to(t.dtype))
    total = zeros.scatter_add(1, ch, torch.where(real, x, torch.zeros_like(x)))
    mean = total / count.clamp_min(1.0)
    masked_t = torch.where(real, t, torch.full_like(t, -math.inf))
    last_time = zeros.fill_(-math.inf).scatter_reduce(1, ch, masked_t, reduce="amax")
    is_last = real & (t == torch.gather(last_time, 1, ch))
    n_last = t.new_zeros(B, n_channels).scatter_add(1, ch, is_last.to(t.dtype))
    last = t.new_zeros(B, n_channels).scatter_add(1, ch, torch.where(is_last, x, torch.zeros_like(x)))
    last = last / n_last.clamp_min(1.0)
    now = masked_t.max(dim=1, keepdim=True).values
    now = torch.where(torch.isfinite(now), now, torch.zeros_like(now))  # a series with no context
    last_time = torch.where(count > 0, last_time, now.expand_as(last_time))
    return ChannelState(last, last_time, mean, count, now)


def seasonal_offset(batch: Batch, state: ChannelState, season: float, fallback: Tensor) -> Tensor:
    """The seasonal naive forecast of each query, (B, M): the value of its channel observed
    nearest to ``τ = t_q − k·season`` (the latest such time at or before the context's end,
    ``k ≥ 1``), when one lies within an eighth of a season of ``τ``; ``fallback`` elsewhere
    (queries inside the context, or no observation near ``τ``). Deterministic given the
    context, so it is an offset the variance identity allows. Materialises (B, M, N) scalars,
    never values."""
    ahead = batch.qry_time - state.now  # (B, M)
    k = torch.ceil(ahead / season).clamp_min(1.0)
    tau = batch.qry_time - k * season
    same = (batch.ctx_channel.unsqueeze(1) == batch.qry_channel.unsqueeze(2)) & (batch.ctx_mask.unsqueeze(1) > 0)
    dist = torch.where(same, (batch.ctx_time.unsqueeze(1) - tau.unsqueeze(2)).abs(),
                       torch.full_like(same, math.inf, dtype=batch.ctx_time.dtype))  # (B, M, N)
    nearest, index = dist.min(dim=-1)
    value = torch.gather(batch.ctx_value, 1, index)
    usable = (ahead > 0) & (nearest <= season / 8)
    return torch.where(usable, value, fallback)


class TimeEmbedding(nn.Module):
    """mTAN-style learned time features for the encoder: one linear and d-1 periodic.

    Used only for what an observation *says* (its lag), never for compatibility: periodic
    features in the index space would make evidence recur with time."""

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


class Encoded(NamedTuple):
    """What the backbone hands the cross-attention (B series, N observations, M queries)."""

    query_code: Tensor  # (B, M, d_channel) index-space channel codes of the queries
    key_code: Tensor  # (B, N, d_channel) of the observations
    values: Tensor  # (B, N, d_model) contextualised observation vectors
    query_features: Tensor  # (B, M, d_model) the query's channel token and horizon: drives its read-out
    query_state: Tensor  # (B, M, d_model) the query's channel token alone (no horizon)
    staleness: Tensor  # (B, M) time since the query's channel was last observed, in time_scale units
    offset: Tensor  # (B, M) b(q): last value of the query's channel (the channel's training mean if none)


class Backbone(nn.Module):
    """Channel state, observation and channel tokens, query features (shared by both models)."""

    def __init__(self, cfg: ModelConfig, dropout: float = 0.0) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.time = TimeEmbedding(cfg.d_time, cfg.time_scale)
        self.channel = nn.Embedding(cfg.n_channels, cfg.d_channel)
        self.index_channel = nn.Embedding(cfg.n_channels, cfg.d_channel)
        with torch.no_grad():  # unit-norm channel codes: same channel ⇒ cos 1
            self.index_channel.weight.copy_(F.normalize(self.index_channel.weight, dim=-1))
        # offset of a channel the series has not observed: the channel's training mean (set by the
        # fit; 0.5 of the min-max range until then). Not trained: Adam's normalised steps carried a
        # default only never-observed queries move to outliers (unseen stays: 3 °C, pH 5.9)
        self.register_buffer("default", torch.full((cfg.n_channels,), 0.5))
        # the last value's mean reversion per channel (``reversion``; rate 0: none), in model.json
        self.register_buffer("revert_rate", torch.zeros(cfg.n_channels), persistent=False)
        self.register_buffer("revert_to_series", torch.zeros(cfg.n_channels), persistent=False)
        # observation: lag features, channel, value, value − channel's last, value − channel's mean
        self.observation = nn.Sequential(nn.Linear(cfg.d_time + cfg.d_channel + 3, d), nn.GELU(), nn.Linear(d, d))
        # channel token: pooled observations + summaries (last, mean, log count, staleness, observed)
        self.channel_in = nn.Linear(d + cfg.d_channel + 5, d)
        self.channel_mix = nn.ModuleList(
            nn.TransformerEncoderLayer(d, nhead=2, dim_feedforward=2 * d, dropout=dropout, batch_first=True,
                                       norm_first=True)
            for _ in range(cfg.channel_layers))
        self.context = nn.ModuleList(
            nn.TransformerEncoderLayer(d, nhead=2, dim_feedforward=2 * d, dropout=0.0, batch_first=True,
                                       norm_first=True)
            for _ in range(cfg.context_layers))
        self.value_out = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d))
        # query: its channel's token + horizon since the context's end and since its channel's last value
        self.query_in = nn.Sequential(nn.Linear(d + 4, d), nn.GELU(), nn.Linear(d, d))
        self.dropout = nn.Dropout(dropout)

    def offset(self, batch: Batch, state: ChannelState) -> Tensor:
        """``b(q)``: the last observed value of the query's channel, (B, M), decayed towards
        its level where the fit found mean reversion (``reversion``) — or, with a season, the
        value one season before the query where the context has it."""
        qc = batch.qry_channel
        seen = torch.gather(state.count, 1, qc) > 0
        last = torch.gather(state.last_value, 1, qc)
        if bool((self.revert_rate > 0).any()):
            since_last = (batch.qry_time - torch.gather(state.last_time, 1, qc)) / self.cfg.time_scale
            last = reverted_last(last, since_last, torch.gather(state.mean_value, 1, qc), self.default[qc],
                                 self.revert_rate[qc], self.revert_to_series[qc])
        offset = torch.where(seen, last, self.default[qc])
        if self.cfg.season > 0:
            offset = seasonal_offset(batch, state, self.cfg.season, offset)
        if batch.offset is not None:  # a classical forecaster's value (levy_core.offsets.base_forecast) where it has one
            offset = torch.where(torch.isfinite(batch.offset), batch.offset, offset)
        return offset

    def encode(self, batch: Batch, generator: torch.Generator | None = None) -> Encoded:
        """The backbone's pass; with ``generator``, dropout masks from it whatever the mode
        (MC-Dropout), otherwise the modules' own dropout (active in training mode only)."""
        cfg, tau = self.cfg, self.cfg.time_scale
        p = self.dropout.p

        def drop(x: Tensor) -> Tensor:
            return self.dropout(x) if generator is None else generator_dropout(x, p, generator)

        state = channel_state(batch, cfg.n_channels)
        real = (batch.ctx_mask > 0).to(batch.ctx_value.dtype)
        ch = batch.ctx_channel
        lag = state.now - batch.ctx_time  # (B, N) ≥ 0 for real observations
        x = batch.ctx_value
        rel_last = x - torch.gather(state.last_value, 1, ch)
        rel_mean = x - torch.gather(state.mean_value, 1, ch)
        obs = torch.cat([self.time(lag), self.channel(ch), x.unsqueeze(-1), rel_last.unsqueeze(-1),
                         rel_mean.unsqueeze(-1)], dim=-1)  # (B, N, d_time + d_channel + 3)
        tokens = drop(self.observation(obs)) * real.unsqueeze(-1)  # (B, N, d)

        B, C, d = x.shape[0], cfg.n_channels, cfg.d_model
        pooled = tokens.new_zeros(B, C, d).scatter_add(1, ch.unsqueeze(-1).expand(-1, -1, d), tokens)
        pooled = pooled / state.count.clamp_min(1.0).unsqueeze(-1)
        observed = (state.count > 0).to(x.dtype)
        staleness = (state.now - state.last_time) / tau
        summary = torch.stack([state.last_value * observed, state.mean_value * observed,
                               torch.log1p(state.count), staleness, observed], dim=-1)  # (B, C, 5)
        codes = self.channel.weight.unsqueeze(0).expand(B, -1, -1)
        channel_tokens = self.channel_in(torch.cat([pooled, codes, summary], dim=-1))  # (B, C, d)
        for layer in self.channel_mix:
            channel_tokens = layer(channel_tokens) if generator is None else encoder_layer(layer, channel_tokens, drop)

        values = tokens + torch.gather(channel_tokens, 1, ch.unsqueeze(-1).expand(-1, -1, d))
        # a series with no observation attends over its padding (every key masked would be
        # NaN): finite vectors that the cross-attention then weighs 0 (key weight 0)
        padding = (batch.ctx_mask <= 0) & (batch.ctx_mask > 0).any(dim=1, keepdim=True)
        for layer in self.context:
            values = drop(layer(values, src_key_padding_mask=padding))  # no dropout inside: any mode
        values = drop(self.value_out(values))

        qc = batch.qry_channel
        horizon = (batch.qry_time - state.now) / tau
        since_last = (batch.qry_time - torch.gather(state.last_time, 1, qc)) / tau
        q_tok = torch.gather(channel_tokens, 1, qc.unsqueeze(-1).expand(-1, -1, d))
        q_feat = torch.cat([q_tok, horizon.unsqueeze(-1), since_last.unsqueeze(-1),
                            torch.log1p(horizon.abs()).unsqueeze(-1), torch.log1p(since_last.abs()).unsqueeze(-1)],
                           dim=-1)
        query = self.query_in(q_feat)  # (B, M, d): one mask per pass across the queries
        query_features = self.dropout(query) if generator is None else generator_dropout(query, p, generator, (1,))
        return Encoded(self.index_channel(qc), self.index_channel(ch), values, query_features, q_tok,
                       since_last, self.offset(batch, state))


class CrossHeads(nn.Module):
    """Per-head projections of the cross-attention, shared in shape by both operators."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        H, R = cfg.num_heads, cfg.value_rank
        self.cfg, self.num_heads, self.value_rank = cfg, H, R
        self.index_proj = nn.Linear(cfg.d_channel, H * cfg.head_dim)  # tied: queries and keys share it
        self.value_proj = nn.Linear(cfg.d_model, H * R)
        self.readout_proj = nn.Linear(cfg.d_model, H * R)
        with torch.no_grad():  # start at "carry the last value forward": corrections ≈ 0
            self.readout_proj.weight.mul_(0.1)
            self.readout_proj.bias.zero_()
        # length scales spread geometrically over the allowed range, one per head
        lo, hi = math.log(max(cfg.length_scale_min, 0.02)), math.log(min(cfg.length_scale_max, 0.5))
        self.log_length = nn.Parameter(torch.linspace(lo, max(lo, hi), H))
        self.prior_logit = nn.Parameter(torch.zeros(H, cfg.n_channels))  # log Λ_0 (Lévy) / prior logit (twin)
        self.prior_mean = nn.Parameter(torch.zeros(H, cfg.n_channels))
        self.prior_spread = nn.Parameter(torch.full((H, cfg.n_channels), -3.0))  # log var_0 (Lévy only)
        # The prior's spread may depend on the query — atoms whose values depend on q but not
        # on the draw keep the identity exact: on the series' state of its channel (how
        # volatile this patient's heart rate is), and it grows with the time since that
        # channel was last seen, as a power with a learned exponent ≥ 0 (so σ̂ never shrinks
        # by walking away from the data). Its mean may not depend on the context (one
        # constant per channel): the prior cannot become a forecaster of its own.
        self.prior_spread_proj = nn.Linear(cfg.d_model, H)
        self.prior_growth = nn.Parameter(torch.zeros(H))  # softplus → exponent of the staleness
        with torch.no_grad():
            self.prior_spread_proj.weight.mul_(0.1)
            self.prior_spread_proj.bias.zero_()

    def split(self, x: Tensor, width: int) -> Tensor:
        B, L, _ = x.shape
        return x.view(B, L, self.num_heads, width).transpose(1, 2)  # (B, H, L, width)

    def length_scale(self) -> Tensor:
        """Per-head ℓ in hours, (1, H, 1, 1), clamped to the configured range."""
        cfg = self.cfg
        ell = self.log_length.exp().clamp(cfg.length_scale_min, cfg.length_scale_max) * cfg.time_scale
        return ell.view(1, -1, 1, 1)

    def project(self, enc: Encoded) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Index-space queries/keys (B, H, ·, hd), values (B, H, N, R), read-outs (B, H, M, 1, R)."""
        hd = self.cfg.head_dim
        q = self.split(self.index_proj(enc.query_code), hd)
        k = self.split(self.index_proj(enc.key_code), hd)
        v = self.split(self.value_proj(enc.values), self.value_rank)
        a = self.split(self.readout_proj(enc.query_features), self.value_rank)
        return q, k, v, a.unsqueeze(-2)

    def prior_tables(self, enc: Encoded, qry_channel: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Per query and head: prior logit, mean (B, H, M) and variance (B, H, M)."""
        def pick(table: Tensor) -> Tensor:
            return table[:, qry_channel].transpose(0, 1)  # (H, B, M) → (B, H, M)
        growth = F.softplus(self.prior_growth).view(1, -1, 1) * torch.log1p(enc.staleness.clamp_min(0)).unsqueeze(1)
        log_var = pick(self.prior_spread) + self.prior_spread_proj(enc.query_state).transpose(1, 2) + growth
        return pick(self.prior_logit), pick(self.prior_mean), log_var.clamp(-30.0, 30.0).exp()


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
        read-out by it is item 2 of docs/levy-math.md: mean correction and σ̂ scale by
        ``s``, the disagreement by ``s²``, the evidence not at all."""
        return _bound_factor(correction, self.correction_bound[channels])

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


def _bound_factor(correction: Tensor, bound: Tensor) -> Tensor:
    """``min(1, bound / |correction|)``, elementwise, 1 where the bound is infinite (none
    fitted), with finite gradients everywhere (training runs with no bound)."""
    size = correction.abs()
    finite = torch.where(torch.isinf(bound), torch.ones_like(bound), bound)
    return torch.where(size > bound, finite / size.clamp_min(1e-30), torch.ones_like(size))


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
        correction; MC-Dropout passes the deterministic pass's, see [`mc_dropout`][levy_core.model.levy_model.SoftmaxTwin.mc_dropout])."""
        offset, correction = self._correction(batch, generator)
        if share is None:
            share = _bound_factor(correction, self.correction_bound[batch.qry_channel])
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
            share = _bound_factor(deterministic, self.correction_bound[batch.qry_channel])
        draws = torch.stack([self.forward(batch, generator, share).mean for _ in range(passes)])  # (T, B, M)
        return draws.mean(0), draws.std(0, correction=1)


def build_model(kind: Literal["levy", "softmax"], cfg: ModelConfig) -> nn.Module:
    """Factory used by training and loading."""
    if kind == "levy":
        return LevyModel(cfg)
    if kind == "softmax":
        return SoftmaxTwin(cfg)
    raise ValueError(f"model kind must be 'levy' or 'softmax', got {kind!r}")
