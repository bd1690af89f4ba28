"""The model's hyper-parameters ([`ModelConfig`][levy_core.model.config.ModelConfig]), shared by the Lévy model and its twin,
and the bounds every size is checked against before anything is built (a ``model.json`` is input)."""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Literal

from levy_core.operator.attention import KAPPA_MAX, KAPPA_MIN

__all__ = ["CONFIG_BOUNDS", "ModelConfig"]

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
