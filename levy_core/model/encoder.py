"""The encoder both models share ([`Backbone`][levy_core.model.encoder.Backbone]): channel state, the offset ``b(q)``,
observation and channel tokens, and the query's features.

Per (series, channel) the context gives deterministic summaries ([`channel_state`][levy_core.model.encoder.channel_state]): the
last observed value and its time, the mean, the count. The offset of a query is the last
observed value of its channel (decayed towards its level where the fit found mean reversion;
the value one season back with a season, [`seasonal_offset`][levy_core.model.encoder.seasonal_offset]). Observation tokens encode
(lag, channel, value, value relative to its channel's last value and mean); channel tokens pool
them per channel and pass through self-attention across channels. What the cross-attention
reads is [`Encoded`][levy_core.model.encoder.Encoded].
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from levy_core.model.batch import Batch
from levy_core.model.config import ModelConfig
from levy_core.model.dropout import encoder_layer, generator_dropout
from levy_core.model.reversion import reverted_last

__all__ = ["Backbone", "ChannelState", "Encoded", "TimeEmbedding", "channel_state", "seasonal_offset"]


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
