"""Where the band falls short: coverage by third of the horizon, split by what the fit can see.

``FittedModel.band_note`` speaks when a forecast on rolling origins finds no season and a
channel's lag-one autocorrelation is at least ``PERSISTENT_AUTOCORRELATION``. This checks
the rule on the saved predictions of ``benchmarks/anchors.py`` (all three sets): for each
(series, end) it computes, on the training part, the candidate periods and each channel's
lag-one autocorrelation as the fit does, flags the window, and reports every row's 90 %
coverage by third of the horizon (each window's queries in time order, three equal counts;
the mean over windows), flagged and not. Log: ``benchmarks/results/band_by_persistence_2026-12-04.txt``.

Usage (the anchors extras; DIRs from ``anchors.py --save-predictions``, one per set)::

    python benchmarks/studies/band_by_persistence.py --anchors DIR --dev DIR --fresh DIR [--ends-anchors 6]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from levy_core.offsets.seasonality import candidate_periods, lag_one_autocorrelation, median_gap
from levy_core.pipeline.modelfile import PERSISTENT_AUTOCORRELATION

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import anchors  # noqa: E402


def flagged(train: pd.DataFrame) -> bool:
    """No candidate period and some channel at least PERSISTENT_AUTOCORRELATION (the fit's rule)."""
    seconds = train["time"].values.astype("datetime64[s]").astype(np.int64)
    frame = train.assign(series_id="s", time=(seconds - seconds.min()) / 3600.0)
    if candidate_periods(frame):
        return False
    rho = [lag_one_autocorrelation(g["time"].to_numpy(float), g["value"].to_numpy(float),
                                   median_gap(g["time"].to_numpy(float)) or 1.0) for _, g in frame.groupby("channel")]
    return max(rho) >= PERSISTENT_AUTOCORRELATION


def windows(which: str, predictions: pd.DataFrame, ends: int) -> pd.DataFrame:
    rows = []
    for case in anchors.load_cases(None, which=which, say=lambda _: None):
        for k in range(1, ends + 1):
            train, _, _ = anchors.split(case, k)
            flag = flagged(train)
            part = predictions[(predictions["series"] == case.name) & (predictions["end"] == k)]
            for method, g in part.sort_values("time", kind="stable").groupby("method"):
                third = np.minimum(3 * np.arange(len(g)) // len(g), 2)
                covered = ((g["lo"] <= g["y"]) & (g["y"] <= g["hi"])).to_numpy()
                rows += [{"set": which, "series": case.name, "end": k, "method": method, "flagged": flag, "third": j,
                          "coverage": float(covered[third == j].mean())} for j in range(3) if np.any(third == j)]
    return pd.DataFrame(rows)


def table(rows: pd.DataFrame) -> str:
    cov = rows.groupby(["flagged", "method", "third"])["coverage"].mean().unstack()
    lines = ["| windows | method | first third | middle third | last third |", "|---|---|---|---|---|"]
    for (flag, method), r in cov.iterrows():
        if method in anchors.METHODS:
            lines.append(f"| {'flagged' if flag else 'not flagged'} | {anchors.LABELS.get(method, method)} | "
                         + " | ".join(f"{r.get(j, np.nan):.3f}" for j in range(3)) + " |")
    for flag in (True, False):
        names = sorted(rows.loc[rows["flagged"] == flag, "series"].unique())
        lines.append(f"{'flagged' if flag else 'not flagged'} at some end: {', '.join(names)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("anchors", "dev", "fresh"):
        parser.add_argument(f"--{name}", type=Path, required=True, metavar="DIR")
    parser.add_argument("--ends-anchors", type=int, default=6)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = pd.concat([windows(w, anchors.load_predictions(getattr(args, w)), args.ends_anchors if w == "anchors" else 3)
                      for w in ("anchors", "dev", "fresh")], ignore_index=True)
    text = table(rows)
    return anchors.emit(text, args.out)


if __name__ == "__main__":
    sys.exit(main())
