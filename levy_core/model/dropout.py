"""Dropout for MC-Dropout passes: masks from a caller's ``torch.Generator`` (never the
global RNG, never the module's train/eval mode), and a Transformer encoder layer run with
every training-mode dropout done by such a mask."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["encoder_layer", "generator_dropout"]


def generator_dropout(x: Tensor, p: float, generator: torch.Generator, shared: tuple[int, ...] = ()) -> Tensor:
    """Inverted dropout whose mask comes from ``generator`` alone (never the global RNG, never
    the module's train/eval mode): what MC-Dropout passes use, so concurrent calls on one
    shared model cannot disturb each other. ``shared``: dimensions along which one mask is
    reused — the query positions of a pass, so that each pass is a smooth function of the
    query's time (each query's own mask, and so its mean and spread, is distributed as
    without sharing; only the draws of neighbouring queries become common, and the band no
    longer jitters between grid points by the Monte-Carlo error of T passes)."""
    if p <= 0:
        return x
    keep = 1.0 - p
    shape = tuple(1 if i in shared else n for i, n in enumerate(x.shape))
    mask = torch.rand(shape, generator=generator, device=x.device, dtype=x.dtype) < keep
    return x * mask / keep


def encoder_layer(layer: nn.TransformerEncoderLayer, x: Tensor, drop: Callable[[Tensor], Tensor]) -> Tensor:
    """``layer(x)`` (pre-norm, batch first, no mask) with every dropout of training mode —
    attention weights, both residual branches, the feed-forward — done by ``drop``."""
    attn = layer.self_attn
    B, L, d = x.shape
    h = attn.num_heads
    qkv = F.linear(layer.norm1(x), attn.in_proj_weight, attn.in_proj_bias).view(B, L, 3, h, d // h)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, h, L, d/h)
    weights = drop(torch.softmax(q @ k.transpose(-2, -1) * (d // h) ** -0.5, dim=-1))
    x = x + drop(attn.out_proj((weights @ v).transpose(1, 2).reshape(B, L, d)))
    return x + drop(layer.linear2(drop(layer.activation(layer.linear1(layer.norm2(x))))))
