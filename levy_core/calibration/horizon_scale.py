"""A band sized for each lead time: the calibrated spread ``c · s(h) · σ̂`` on rolling origins.

``σ̂`` is the exact RMS deviation of the sampled operator; how far the forecast actually
misses also depends on how far ahead it looks, and the two need not grow alike. A
classical offset (a seasonal profile, a trend) misses by about as much one step ahead as a
season ahead, while ``σ̂`` grows as the evidence thins with the lead: one global scale ``c``
then makes the band too wide at long leads and too narrow at short ones. A fit on rolling
origins therefore measures, on held-out episodes, the RMS of the normalised error
``(y − ŷ)/σ̂`` in bins of the lead ``h`` (time since the origin), and keeps the ratio of
each bin to the pooled RMS, shrunk towards 1 where a bin holds few queries: ``s(h)``,
interpolated between bin centres and flat beyond. The band's spread is ``s(h)·σ̂`` (the
``spread_norm`` column); its calibration (``c``, split and adaptive conformal) follows as
before. ``σ̂`` itself, its evidence and disagreement, are untouched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["HorizonScale", "fit_horizon_scale"]

MAX_BINS = 6
MIN_PER_BIN = 30  # a bin's ratio is shrunk towards 1 with weight n / (n + MIN_PER_BIN)
MAX_KNOTS = 64
FACTOR_RANGE = (1e-3, 1e3)


@dataclass(frozen=True)
class HorizonScale:
    """``s(h)`` at increasing leads (hours since the origin), linear between them and flat
    beyond.

    Attributes
    ----------
    leads : tuple of float
    factors : tuple of float
        The spread's multiplier at each lead, > 0.
    """

    leads: tuple[float, ...]
    factors: tuple[float, ...]

    def __post_init__(self) -> None:
        n = len(self.leads)
        if not 1 <= n <= MAX_KNOTS or len(self.factors) != n:
            raise ValueError(f"horizon scale: 1 to {MAX_KNOTS} leads with one factor each")
        if not all(isinstance(x, (int, float)) and math.isfinite(x) and abs(x) <= 1e9 for x in self.leads):
            raise ValueError("horizon scale: leads must be finite hours")
        if any(b <= a for a, b in zip(self.leads, self.leads[1:], strict=False)):
            raise ValueError("horizon scale: leads must increase")
        lo, hi = FACTOR_RANGE
        if not all(isinstance(f, (int, float)) and lo <= f <= hi for f in self.factors):
            raise ValueError(f"horizon scale: factors must lie in [{lo:g}, {hi:g}]")

    def factor(self, lead: np.ndarray) -> np.ndarray:
        """``s(h)`` at ``lead`` (any shape, hours), the same shape."""
        lead = np.asarray(lead, np.float64)
        return np.interp(lead, self.leads, self.factors).reshape(lead.shape)

    def to_dict(self) -> dict:
        return {"leads": list(self.leads), "factors": list(self.factors)}

    @classmethod
    def from_dict(cls, data: dict) -> HorizonScale:
        if set(data) != {"leads", "factors"}:
            raise ValueError("horizon scale: expected exactly the keys 'leads' and 'factors'")
        return cls(tuple(float(x) for x in data["leads"]), tuple(float(x) for x in data["factors"]))


def fit_horizon_scale(lead: np.ndarray, y: np.ndarray, mean: np.ndarray, sigma: np.ndarray) -> HorizonScale | None:
    """``s(h)`` from held-out queries: their lead (hours since the origin), truth, mean and
    ``σ̂``, each (n,). None with fewer than ``2 · MIN_PER_BIN`` usable queries (one scale
    then fits all leads)."""
    lead, y, mean, sigma = (np.asarray(a, np.float64) for a in (lead, y, mean, sigma))
    ok = np.isfinite(lead) & np.isfinite(y) & np.isfinite(mean) & np.isfinite(sigma) & (sigma > 0)
    lead, ratio2 = lead[ok], ((y[ok] - mean[ok]) / sigma[ok]) ** 2
    if len(lead) < 2 * MIN_PER_BIN or not np.mean(ratio2) > 0:
        return None
    pooled = float(np.mean(ratio2))
    n_bins = int(min(MAX_BINS, len(lead) // MIN_PER_BIN))
    edges = np.unique(np.quantile(lead, np.linspace(0, 1, n_bins + 1)))
    if len(edges) < 3:
        return None
    which = np.clip(np.searchsorted(edges, lead, side="right") - 1, 0, len(edges) - 2)
    leads, factors = [], []
    for b in range(len(edges) - 1):
        members = which == b
        n = int(members.sum())
        if not n:
            continue
        weight = n / (n + MIN_PER_BIN)
        ratio = weight * float(np.mean(ratio2[members])) / pooled + (1 - weight)
        centre = float(np.median(lead[members]))
        if leads and centre <= leads[-1]:
            continue
        leads.append(centre)
        factors.append(float(np.clip(math.sqrt(ratio), *FACTOR_RANGE)))
    return HorizonScale(tuple(leads), tuple(factors)) if leads else None
