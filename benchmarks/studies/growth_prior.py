"""Lévy's one-series band before and after a change, from two ``anchors.py --save-predictions``
folders (issue 51: the lead's scale shrunk towards a growth prior instead of towards 1).

Per (series, end point): the CRPS of the Gaussian implied by the 90 % interval (as
``anchors.py`` scores it), averaged over the window; reported as the geometric mean of the
after / before ratios. Coverage pooled and by third of each window (its queries in time order,
cut in three equal counts), and per series.

Usage::

    python -m benchmarks.studies.growth_prior BEFORE_DIR AFTER_DIR
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy import stats

Z90 = float(stats.norm.ppf(0.95))


def gaussian_crps(y: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    z = (y - mean) / sd
    return sd * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi))


def load(directory: str) -> pd.DataFrame:
    """Lévy's rows of a saved-predictions folder, with each query's CRPS, whether the band
    covered it, and its third of the window."""
    p = pd.read_csv(f"{directory}/predictions.csv")
    p = p[p["method"] == "levy"].copy()
    p["crps"] = gaussian_crps(p["y"], p["mean"], np.maximum((p["hi"] - p["lo"]) / (2 * Z90), 1e-12))
    p["inside"] = (p["y"] >= p["lo"]) & (p["y"] <= p["hi"])
    p = p.sort_values(["series", "end", "channel", "time"])
    window = p.groupby(["series", "end", "channel"])["time"]
    p["third"] = (3 * window.cumcount() // window.transform("size")).clip(0, 2)
    return p


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args()
    a, b = load(args.before), load(args.after)
    pair = pd.concat([a.groupby(["series", "end"])["crps"].mean().rename("a"),
                      b.groupby(["series", "end"])["crps"].mean().rename("b")], axis=1).dropna()
    ratio = pair["b"] / pair["a"]
    print(f"pairs {len(pair)}; CRPS ratio after/before geometric mean {np.exp(np.log(ratio).mean()):.4f}; "
          f"median {ratio.median():.4f}; worse on {(ratio > 1.0001).sum()}, better on {(ratio < 0.9999).sum()}")
    for name, p in (("before", a), ("after", b)):
        thirds = p.groupby("third")["inside"].mean()
        print(f"{name}: pooled {p['inside'].mean():.3f}, mean of (series, end) "
              f"{p.groupby(['series', 'end'])['inside'].mean().mean():.3f}; thirds "
              + " / ".join(f"{v:.3f}" for v in thirds))
    per_series = pd.concat([a.groupby("series")["inside"].mean().rename("cov before"),
                            b.groupby("series")["inside"].mean().rename("cov after"),
                            np.exp(np.log(ratio).groupby(level=0).mean()).rename("CRPS ratio")], axis=1)
    print(per_series.round(3).to_string())


if __name__ == "__main__":
    main()
