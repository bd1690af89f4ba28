"""Shared by the benchmarks: does the conformal band hold its level, judged three ways.

1. On the fixed test split with the binomial s.e. (queries taken as independent);
2. on the same split with the per-series s.e. (queries of one series move together);
3. over ``n_splits`` random series-level re-splits of calibration + test (the guarantee
   itself: its mean sits at the level when series are exchangeable).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from levy_core import pipeline
from levy_core.coverage import group_resplit_coverage

METHODS = (("Lévy", "mean_norm", "sigma_norm"), ("MC-Dropout", "mc_mean_norm", "mc_std_norm"))


def resplit_table(cal: pd.DataFrame, test: pd.DataFrame, n_splits: int = 200, seed: int = 0) -> pd.DataFrame:
    """``group_resplit_coverage`` of each method on the pooled calibration + test queries."""
    both = pd.concat([cal, test], ignore_index=True)
    parts = []
    for name, mean_col, std_col in METHODS:
        if mean_col not in both:
            continue
        r = group_resplit_coverage(both["y_norm"], both[mean_col], both[std_col], both["series_id"].to_numpy(),
                                   levels=pipeline.LEVELS, n_splits=n_splits, seed=seed)
        parts.append(r.assign(method=name))
    return pd.concat(parts, ignore_index=True)


def print_validity(fitted: pipeline.FittedModel, cal: pd.DataFrame, test: pd.DataFrame, *, label: str,
                   calibration_series: int, n_splits: int = 200) -> pd.DataFrame:
    """Print one markdown table (per method and level) and return the merged frame."""
    checks = pipeline.coverage_checks(fitted, test, calibration_series=calibration_series)
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
