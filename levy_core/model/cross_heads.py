"""The per-head projections of the cross-attention ([`CrossHeads`][levy_core.model.cross_heads.CrossHeads]), shared in shape by
the Lévy model and its twin: the index-space codes, values, query read-outs, length scales and
the prior tables; and the correction bound's share ([`bound_factor`][levy_core.model.cross_heads.bound_factor]) both apply."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from levy_core.model.config import ModelConfig
from levy_core.model.encoder import Encoded

__all__ = ["CrossHeads", "bound_factor"]


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


def bound_factor(correction: Tensor, bound: Tensor) -> Tensor:
    """``min(1, bound / |correction|)``, elementwise, 1 where the bound is infinite (none
    fitted), with finite gradients everywhere (training runs with no bound)."""
    size = correction.abs()
    finite = torch.where(torch.isinf(bound), torch.ones_like(bound), bound)
    return torch.where(size > bound, finite / size.clamp_min(1e-30), torch.ones_like(size))
