"""Does the band hold per query, not only on average? Coverage within groups of queries and
how well a spread ranks errors against knowing the channel alone.

- [`coverage_by_quantile`][levy_core.metrics.conditional.coverage_by_quantile] -- coverage of a band within the quantile bins of any per-query
  key (the band's own width: "size-stratified coverage", Angelopoulos & Bates 2021; the
  evidence; the lead), each with its standard error over series (the correlated queries of
  one series count once) and the worst bin's distance from the level in those errors;
- [`risk_coverage_ratio`][levy_core.metrics.conditional.risk_coverage_ratio] -- the area under the risk–coverage curve of a spread
  (Geifman & El-Yaniv 2017) divided by that of a reference spread on the same errors, e.g. a
  per-channel constant: below 1, the spread ranks errors better than the reference does;
- [`within_group_spearman`][levy_core.metrics.conditional.within_group_spearman] -- the rank correlation of spread and absolute error inside
  each group (channel), averaged with the groups' sizes as weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from levy_core.metrics.selective import risk_coverage_area, spearman_sigma_abs_error

__all__ = ["CoverageBins", "coverage_by_quantile", "group_rms_factors", "risk_coverage_ratio", "within_group_spearman"]


@dataclass(frozen=True)
class CoverageBins:
    """Coverage of a band in the quantile bins of a key.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per bin, in increasing order of the key: ``bin`` (1..k), ``key_low``,
        ``key_high`` (the key's range in the bin), ``n`` (queries), ``n_series``,
        ``coverage``, ``se`` (standard error over series: the spread of each series'
        own coverage in the bin over √(series); 0 with one series), ``z`` ((coverage − level)
        / se; ±inf when se is 0 and coverage ≠ level).
    level : float
    """

    table: pd.DataFrame
    level: float

    def worst(self) -> pd.Series:
        """The bin farthest from the level in absolute coverage."""
        return self.table.loc[(self.table["coverage"] - self.level).abs().idxmax()]

    def within(self, tolerance: float = 0.03, z: float = 3.0) -> bool:
        """Whether every bin is within ``tolerance`` of the level or within ``z`` standard errors."""
        gap = (self.table["coverage"] - self.level).abs()
        return bool(((gap <= tolerance) | (self.table["z"].abs() <= z)).all())


def coverage_by_quantile(y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike, key: ArrayLike,
                         series: ArrayLike, *, level: float, n_bins: int = 5,
                         within: ArrayLike | None = None) -> CoverageBins:
    """Coverage of the band ``[lower, upper]`` within the ``n_bins`` quantile bins of ``key``.

    Parameters
    ----------
    y_true, lower, upper, key : array-like, shape (n,)
        ``key``: what the bins are cut on (e.g. the band's width, ``n_eff``, the lead); ties
        go to one bin (ranks, so bins are of near-equal size even with many equal keys).
    series : array-like, shape (n,)
        Each query's series: the standard error is taken over series.
    level : float
        The band's nominal coverage, for ``z``.
    n_bins : int, default 5
    within : array-like, shape (n,), optional
        Cut the bins within each group (e.g. the width within each channel: a wide channel does
        not fill the top bin); the bin of a query is then its quantile inside its group.

    Returns
    -------
    CoverageBins
    """
    y, lo, hi, k = (np.asarray(a, np.float64) for a in (y_true, lower, upper, key))
    sid = np.asarray(series, dtype=object).astype(str)
    n = y.size
    if not (lo.size == hi.size == k.size == sid.size == n) or n == 0:
        raise ValueError("y_true, lower, upper, key and series must be non-empty and of one length")
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1, got {n_bins}")
    inside = ((y >= lo) & (y <= hi)).astype(np.float64)
    frame = pd.DataFrame({"key": k, "inside": inside, "series": sid,
                          "group": "" if within is None else np.asarray(within, dtype=object).astype(str)})
    rank = frame.groupby("group")["key"].rank(method="first", pct=True).to_numpy()
    frame["bin"] = np.minimum((rank * n_bins - 1e-9).astype(int), n_bins - 1) + 1
    rows = []
    for b, part in frame.groupby("bin", sort=True):
        per_series = part.groupby("series")["inside"].mean()
        cov = float(part["inside"].mean())
        se = float(per_series.std(ddof=1) / np.sqrt(len(per_series))) if len(per_series) > 1 else 0.0
        z = (cov - level) / se if se > 0 else (0.0 if cov == level else float(np.sign(cov - level)) * np.inf)
        rows.append({"bin": int(b), "key_low": float(part["key"].min()), "key_high": float(part["key"].max()),
                     "n": len(part), "n_series": len(per_series), "coverage": cov, "se": se, "z": z})
    return CoverageBins(pd.DataFrame(rows), level)


def group_rms_factors(y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike, groups: ArrayLike) -> dict[str, float]:
    """Per group, the factor ``k`` that makes ``k · sigma`` the root-mean-square error:
    ``sqrt(mean(((y − mean) / sigma)²))`` over the group's points (all (n,), ``sigma > 0``).

    A spread ranks errors *within* a channel by itself; *across* channels its ranking is only
    as good as its channels' relative sizes. Fitted on calibration points, these factors put
    every method's spread (and a per-channel constant's) on one footing before the
    risk–coverage curve compares them: each channel's spread predicts its root-mean-square
    error, the quantity a squared-error risk adds up. A spread of 0 is floored at 1e-6 of the
    median positive one, as the calibrators floor it."""
    y, mu, s = (np.asarray(a, np.float64) for a in (y_true, mean, sigma))
    if not (mu.size == s.size == y.size):
        raise ValueError("y_true, mean and sigma must have one length")
    positive = s[s > 0]
    if positive.size == 0:
        raise ValueError("every sigma is 0 or missing: there is no spread to scale")
    s = np.maximum(np.nan_to_num(s, nan=0.0), 1e-6 * float(np.median(positive)))  # the calibrators' floor
    ratio2 = pd.Series(((y - mu) / s) ** 2).groupby(np.asarray(groups, dtype=object).astype(str)).mean()
    return {str(k): float(np.sqrt(v)) if v > 0 else 1.0 for k, v in ratio2.items()}


def risk_coverage_ratio(y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike, reference_sigma: ArrayLike) -> float:
    """Area under the risk–coverage curve (squared error kept when keeping the most confident
    share, averaged over shares) of ``sigma``, divided by that of ``reference_sigma``, all (n,).
    Below 1: ``sigma`` keeps smaller errors first than the reference does."""
    reference = risk_coverage_area(y_true, mean, reference_sigma)
    if not reference > 0:
        raise ValueError("the reference spread's risk–coverage area is 0: every error is 0")
    return float(risk_coverage_area(y_true, mean, sigma) / reference)


def within_group_spearman(y_true: ArrayLike, mean: ArrayLike, sigma: ArrayLike, groups: ArrayLike) -> float:
    """Spearman's correlation of ``sigma`` with ``|y − mean|`` inside each group (e.g. each
    channel), averaged over groups weighted by their sizes; all (n,). 0 where undefined."""
    y, mu, s = (np.asarray(a, np.float64) for a in (y_true, mean, sigma))
    g = np.asarray(groups, dtype=object).astype(str)
    total, weight = 0.0, 0
    for label in np.unique(g):
        own = g == label
        if own.sum() >= 3:
            total += own.sum() * spearman_sigma_abs_error(y[own], mu[own], s[own])
            weight += int(own.sum())
    return total / weight if weight else 0.0
