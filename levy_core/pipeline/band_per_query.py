"""The band, per query: does it hold within groups of queries, and does the spread earn its place?

Two views of a normalised prediction frame (``pipeline.evaluate``'s test split) that a
stakeholder is shown beside the overall reliability curve:

- `coverage_by_group` -- coverage of each method's conformal band within the quintiles
  of its own width (cut within each channel), of the evidence ``n_eff`` and of the lead
  (``gap_any``: hours from the query to its nearest context observation), each bin with its
  standard error over series (``metrics.coverage_by_quantile``);
- `selective_risk` -- the risk–coverage curves (mean squared error kept when keeping
  the most confident share) of each method ranked by its own conformal band's half-width,
  and of the *per-channel constant* spread (``lv_std_norm``: knowing the channel alone)
  ranking the Lévy model's errors: the reference line a spread has to beat; with each
  method's area divided by the constant's on that method's own errors.

Normalised units throughout (the model's per-channel scale, in a transformed channel's
transformed space, where every band is symmetric).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from levy_core import metrics
from levy_core.metrics.conditional import coverage_by_quantile, risk_coverage_ratio
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predictive import Predictive

__all__ = ["CONSTANT", "GROUPINGS", "SelectiveRisk", "coverage_by_group", "half_widths", "off_bins",
           "selective_risk"]

# (grouping key, what the bins are cut on, in words): the order of the panels
GROUPINGS: tuple[tuple[str, str], ...] = (
    ("width", "the band's own width (within each channel)"),
    ("evidence", "the evidence n_eff"),
    ("lead", "the lead (time to the nearest observation)"),
)
CONSTANT = "per-channel constant"  # the reference spread's name


def _uncertainty_methods(fitted: FittedModel, pred: pd.DataFrame) -> list[Predictive]:
    """Lévy and MC-Dropout (when the frame has its columns): the last-value baseline is the reference."""
    return [p for p in fitted.predictives(pred) if p.method.key != "last_value"]


def half_widths(p: Predictive, level: float) -> np.ndarray:
    """Half the width of ``p``'s conformal band at ``level``, shape (n,); an infinite band (a
    channel with too few calibration queries for the level) ranks after every finite one."""
    lo, hi = p.band((level,), "conformal").bounds(level)
    half = 0.5 * (np.asarray(hi, np.float64) - np.asarray(lo, np.float64))
    finite = np.isfinite(half)
    if not finite.all():
        top = float(half[finite].max()) if finite.any() else 1.0
        half = np.where(finite, half, 2.0 * abs(top) + 1.0)
    return half


def coverage_by_group(fitted: FittedModel, pred: pd.DataFrame, level: float = 0.9,
                      n_bins: int = 5) -> pd.DataFrame:
    """Coverage of each uncertainty method's conformal band at ``level`` in the ``n_bins``
    quantile bins of its width (within each channel), of ``n_eff`` and of the lead ``gap_any``.

    Parameters
    ----------
    fitted : FittedModel
    pred : pandas.DataFrame
        A normalised prediction frame with ``y_norm, series_id, channel``, each method's
        columns, ``n_eff`` and ``gap_any`` (a grouping whose column is missing is left out).
    level : float
    n_bins : int, default 5

    Returns
    -------
    pandas.DataFrame
        One row per (grouping, method, bin), groupings in `GROUPINGS`' order:
        ``grouping, method`` and [`CoverageBins`][levy_core.metrics.conditional.CoverageBins]' columns
        ``bin, key_low, key_high, n, n_series, coverage, se, z`` (keys: normalised width,
        ``n_eff``, hours).
    """
    y = pred["y_norm"].to_numpy(np.float64)
    series, channels = pred["series_id"].to_numpy(), pred["channel"].to_numpy()
    parts = []
    for p in _uncertainty_methods(fitted, pred):
        lo, hi = p.band((level,), "conformal").bounds(level)
        keys = {"width": (np.asarray(hi) - np.asarray(lo), channels)}
        if "n_eff" in pred:
            keys["evidence"] = (pred["n_eff"].to_numpy(np.float64), None)
        if "gap_any" in pred:
            keys["lead"] = (pred["gap_any"].to_numpy(np.float64), None)
        for grouping, _ in GROUPINGS:
            if grouping not in keys:
                continue
            key, within = keys[grouping]
            bins = coverage_by_quantile(y, lo, hi, key, series, level=level, n_bins=n_bins, within=within)
            parts.append(bins.table.assign(grouping=grouping, method=p.name))
    table = pd.concat(parts, ignore_index=True)
    order = {g: i for i, (g, _) in enumerate(GROUPINGS)}
    table = table.sort_values(["grouping", "method", "bin"], key=lambda c: c.map(order) if c.name == "grouping"
                              else c, kind="stable")
    columns = ["grouping", "method", "bin", "key_low", "key_high", "n", "n_series", "coverage", "se", "z"]
    return table[columns].reset_index(drop=True)


def off_bins(table: pd.DataFrame, level: float, *, tolerance: float = 0.03, z: float = 3.0) -> pd.DataFrame:
    """The rows of `coverage_by_group`'s table whose coverage is farther than
    ``tolerance`` from ``level`` *and* more than ``z`` standard errors from it (the bins that
    do not hold; ``CoverageBins.within``'s rule, bin by bin)."""
    gap = (table["coverage"] - level).abs()
    return table[(gap > tolerance) & (table["z"].abs() > z)]


@dataclass(frozen=True)
class SelectiveRisk:
    """Risk–coverage curves and their areas against the per-channel constant.

    Attributes
    ----------
    curves : dict[str, tuple[ndarray, ndarray]]
        Per method (``"Lévy"``, ``"MC-Dropout"``): (share kept, MSE of the kept queries), the
        method's own errors ranked by its own conformal band's half-width.
    constant : tuple[ndarray, ndarray] or None
        The Lévy model's errors ranked by the per-channel constant spread ``lv_std_norm``
        (knowing only the channel); None when the frame has no such column.
    oracle : tuple[ndarray, ndarray]
        The Lévy model's errors ranked by themselves: the best any spread could do.
    ratios : dict[str, float]
        Per method: its risk–coverage area divided by the constant's on the method's own
        errors (``metrics.risk_coverage_ratio``): below 1, its spread ranks its errors better
        than knowing the channel does. Empty without the constant.
    level : float
        The level of the bands whose half-widths rank the queries.
    """

    curves: dict[str, tuple[np.ndarray, np.ndarray]]
    constant: tuple[np.ndarray, np.ndarray] | None
    oracle: tuple[np.ndarray, np.ndarray]
    ratios: dict[str, float]
    level: float


def selective_risk(fitted: FittedModel, pred: pd.DataFrame, level: float = 0.9,
                   n_points: int = 101) -> SelectiveRisk:
    """Risk–coverage of each method ranked by its conformal band's half-width at ``level``,
    with the per-channel constant's curve and each method's area ÷ the constant's."""
    y = pred["y_norm"].to_numpy(np.float64)
    methods = _uncertainty_methods(fitted, pred)
    reference = pred["lv_std_norm"].to_numpy(np.float64) if "lv_std_norm" in pred else None
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    ratios: dict[str, float] = {}
    for p in methods:
        half = half_widths(p, level)
        curves[p.name] = metrics.risk_coverage_curve(y, p.mean, half, n_points=n_points)
        if reference is not None:
            ratios[p.name] = risk_coverage_ratio(y, p.mean, half, reference)
    levy = methods[0].mean
    constant = None if reference is None else metrics.risk_coverage_curve(y, levy, reference, n_points=n_points)
    oracle = metrics.risk_coverage_curve(y, levy, np.abs(y - levy), n_points=n_points)
    return SelectiveRisk(curves, constant, oracle, ratios, level)
