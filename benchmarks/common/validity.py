"""Shared by the benchmarks: does the conformal band hold its level, judged three ways.

1. On the fixed test split with the binomial s.e. (queries taken as independent);
2. on the same split with the per-series s.e. (queries of one series move together);
3. over ``n_splits`` random series-level re-splits of calibration + test (the guarantee
   itself: its mean sits at the level when series are exchangeable).

And per channel: the pooled conformal band (one quantile for every channel) against the
per-channel one ``levy fit`` uses, on the same calibration and test queries.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from levy_core import metrics
from levy_core.calibration.coverage import group_resplit_coverage
from levy_core.calibration.split_conformal import SplitConformal
from levy_core.forecast.verbs import LEVELS, FittedModel, FittedVerbs

METHODS = (("Lévy", "mean_norm", "sigma_norm"), ("MC-Dropout", "mc_mean_norm", "mc_std_norm"))


def resplit_table(cal: pd.DataFrame, test: pd.DataFrame, n_splits: int = 200, seed: int = 0) -> pd.DataFrame:
    """``group_resplit_coverage`` of each method on the pooled calibration + test queries."""
    both = pd.concat([cal, test], ignore_index=True)
    parts = []
    for name, mean_col, std_col in METHODS:
        if mean_col not in both:
            continue
        r = group_resplit_coverage(both["y_norm"], both[mean_col], both[std_col], both["series_id"].to_numpy(),
                                   levels=LEVELS, n_splits=n_splits, seed=seed,
                                   by=both["channel"].to_numpy())
        parts.append(r.assign(method=name))
    return pd.concat(parts, ignore_index=True)


def print_validity(fitted: FittedModel, cal: pd.DataFrame, test: pd.DataFrame, *, label: str,
                   calibration_series: int, n_splits: int = 200) -> pd.DataFrame:
    """Print one markdown table (per method and level) and return the merged frame."""
    checks = FittedVerbs(fitted).coverage_checks(test, calibration_series=calibration_series)
    resplit = resplit_table(cal, test, n_splits=n_splits)
    table = checks.merge(resplit, on=["method", "level"])
    n, g = int(table["n_test"].iloc[0]), int(table["n_series"].iloc[0])
    print(f"\n{label}: conformal coverage on the test split ({n:,} queries in {g:,} series; calibration "
          f"{len(cal):,} queries in {calibration_series:,} series) and over {n_splits} random series-level "
          "re-splits of calibration + test")
    print("| method | level | coverage | binomial s.e. | within ±3 binomial s.e. | per-series s.e. | "
          "within ±3 per-series s.e. | re-splits: mean coverage | re-splits: s.d. |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in table.itertuples():
        series = "-" if r.se_series is None or np.isnan(r.se_series) else f"{r.se_series:.4f}"
        holds = "-" if r.holds_series is None else ("yes" if r.holds_series else "**no**")
        print(f"| {r.method} | {r.level:.2f} | {r.coverage:.4f} | {r.se_binomial:.4f} | "
              f"{'yes' if r.holds_binomial else '**no**'} | {series} | {holds} | {r.mean_coverage:.4f} | "
              f"{r.sd:.4f} |")
    return table


def print_channel_comparison(cal: pd.DataFrame, test: pd.DataFrame, *, label: str, min_queries: int = 100,
                             levels: tuple[float, ...] = (0.5, 0.9, 0.95)) -> pd.DataFrame:
    """Pooled vs per-channel conformal: overall coverage, mean width (normalised) and how far
    each channel's coverage strays from the level (channels with ``min_queries`` test queries)."""
    rows = []
    for name, mean_col, std_col in METHODS:
        if mean_col not in cal:
            continue
        for kind in ("pooled", "per channel"):
            groups = None if kind == "pooled" else cal["channel"].to_numpy()
            sc = SplitConformal().conformalize(cal["y_norm"], cal[mean_col], cal[std_col], groups=groups)
            for level in levels:
                lo, hi = sc.predict_interval(test[mean_col], test[std_col], level,
                                             groups=None if kind == "pooled" else test["channel"].to_numpy())
                inside = (test["y_norm"].to_numpy() >= lo) & (test["y_norm"].to_numpy() <= hi)
                per = pd.Series(inside).groupby(test["channel"].to_numpy()).agg(["mean", "size"])
                per = per[per["size"] >= min_queries]["mean"]
                rows.append({"method": name, "band": kind, "level": level, "coverage": inside.mean(),
                             "width": metrics.interval_mean_width(lo, hi), "channel_min": per.min(),
                             "channel_max": per.max(), "channel_mad": float((per - level).abs().mean()),
                             "channels": len(per)})
    table = pd.DataFrame(rows)
    print(f"\n{label}: pooled vs per-channel conformal band on the test split (per-channel figures over the "
          f"{int(table['channels'].iloc[0])} channels with ≥ {min_queries} test queries)")
    print("| method | conformal band | level | coverage | mean width (normalised) | channel coverage min–max | "
          "mean \\|channel coverage − level\\| |")
    print("|---|---|---|---|---|---|---|")
    for r in table.itertuples():
        print(f"| {r.method} | {r.band} | {r.level:.2f} | {r.coverage:.4f} | {r.width:.4f} | "
              f"{r.channel_min:.3f}–{r.channel_max:.3f} | {r.channel_mad:.3f} |")
    return table
