"""A band sized for each lead time: the calibrated spread ``c · s(h) · σ̂`` on rolling origins.

``σ̂`` is the exact RMS deviation of the sampled operator; how far the forecast actually
misses also depends on how far ahead it looks, and the two need not grow alike. A
classical offset (a seasonal profile, a trend) misses by about as much one step ahead as a
season ahead, while ``σ̂`` grows as the evidence thins with the lead: one global scale ``c``
then makes the band too wide at long leads and too narrow at short ones. A fit on rolling
origins therefore measures, on held-out episodes, the RMS of the normalised error
``(y − ŷ)/σ̂`` in bins of the lead ``h`` (time since the origin), and keeps the ratio of
each bin to the pooled RMS, shrunk where a bin holds few queries towards the power law in
the lead that all the bins follow together (so a growth the bins agree on is kept, and one
noisy bin is not): ``s(h)``, interpolated between bin centres and flat beyond. The band's spread is ``s(h)·σ̂`` (the
``spread_norm`` column); its calibration (``c``, split and adaptive conformal) follows as
before. ``σ̂`` itself, its evidence and disagreement, are untouched.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["HorizonScale", "fit_horizon_scale"]

MAX_BINS = 6
MIN_PER_BIN = 30  # a bin's ratio is shrunk towards the growth prior with weight n / (n + MIN_PER_BIN)
MAX_KNOTS = 64
GROWTH_SLOPE = (0.0, 2.0)  # the prior's slope of log(mean square error) in log lead
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
    bins = [(float(np.median(lead[which == b])), float(np.mean(ratio2[which == b])) / pooled, int((which == b).sum()))
            for b in range(len(edges) - 1) if (which == b).any()]
    prior = _growth_prior(bins)
    leads, factors = [], []
    for centre, ratio, n in bins:
        if leads and centre <= leads[-1]:
            continue
        weight = n / (n + MIN_PER_BIN)
        leads.append(centre)
        factors.append(float(np.clip(math.sqrt(weight * ratio + (1 - weight) * prior(centre)), *FACTOR_RANGE)))
    return HorizonScale(tuple(leads), tuple(factors)) if leads else None


def _growth_prior(bins: list[tuple[float, float, int]]) -> Callable[[float], float]:
    """What a bin's ratio is shrunk towards: the line through the bins' log ratios in log lead,
    each bin weighted by its count, its slope clipped to ``GROWTH_SLOPE`` (a random walk's
    errors grow with slope 1; a season's, 0). ``bins``: (median lead, ratio, count) each.
    Shrinking towards 1 instead flattened a clear growth: on one series the bins hold ~30
    queries, and half of a 13-fold growth was shrunk away (NOTES.md, 2026-12-07 14:16 UTC)."""
    if len(bins) < 2:
        return lambda centre: 1.0
    x = np.log(np.maximum([b[0] for b in bins], 1e-9))
    y = np.log(np.maximum([b[1] for b in bins], 1e-12))
    w = np.asarray([b[2] for b in bins], np.float64)
    xm, ym = float(np.average(x, weights=w)), float(np.average(y, weights=w))
    var = float(np.average((x - xm) ** 2, weights=w))
    slope = float(np.clip(np.average((x - xm) * (y - ym), weights=w) / var, *GROWTH_SLOPE)) if var > 0 else 0.0
    return lambda centre: float(np.exp(ym + slope * (math.log(max(centre, 1e-9)) - xm)))
