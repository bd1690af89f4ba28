"""Band or mean: which half of Lévy's forecast decides each comparison with another row?

The single-series bar counts the series where Lévy's CRPS is at or below the GP's. CRPS
scores the mean and the band together (here a Gaussian implied by the 90 % interval, as
``benchmarks/anchors.py`` scores every row), so a loss can come from either. From saved
predictions (``anchors.py --save-predictions``) this re-scores, per series, Lévy's CRPS ÷
the other row's (``--against``, default the GP) with:

* ``as run``: Lévy's mean and band;
* ``best scale``: Lévy's half-widths times the one factor in ``SCALES`` that minimises that
  series' CRPS (an oracle: chosen on the scored windows themselves, so a bound on what any
  re-sizing of the band could buy);
* ``its band``: Lévy's mean inside the other row's half-widths;
* ``its mean``: the other row's mean inside Lévy's half-widths.

A series that stays above 1 under ``best scale`` loses on its mean, whatever the band;
one that falls below 1 under ``its mean`` would be won by the other row's point forecast
alone. Each column's count of series at or below 1 is the bar's count under that change.
Log of the 2026-12-04 run: ``benchmarks/results/band_or_mean_2026-12-04.txt``.

Usage (the anchors extras; DIRs from ``anchors.py --save-predictions``)::

    python benchmarks/studies/band_or_mean.py DIR [DIR ...] [--against gp] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import anchors  # noqa: E402

SCALES = np.round(np.arange(0.5, 1.51, 0.05), 2)  # factors on Lévy's half-width tried by the oracle
COLUMNS = ("as run", "best scale", "its band", "its mean")


def _crps(mean: np.ndarray, half: np.ndarray, y: np.ndarray) -> float:
    return float(anchors.interval_crps(y, mean, mean - half, mean + half).mean())


def _window_mean(rows: pd.DataFrame, mean: np.ndarray, half: np.ndarray) -> float:
    """CRPS averaged per end point, then over ends (as the benchmark's series table)."""
    ends = rows["end"].to_numpy()
    y = rows["y"].to_numpy(np.float64)
    return float(np.mean([_crps(mean[ends == e], half[ends == e], y[ends == e]) for e in np.unique(ends)]))


def ratios(predictions: pd.DataFrame, against: str = "gp") -> pd.DataFrame:
    """Per series (rows), Lévy's CRPS ÷ ``against``'s under each of :data:`COLUMNS`, and the
    oracle's factor (``scale``), on the queries both rows forecast; series where either row
    is missing are left out."""
    keys = ["series", "end", "channel", "time", "y"]
    cols = [*keys, "mean", "lo", "hi"]
    pairs = predictions.loc[predictions["method"] == "levy", cols].merge(
        predictions.loc[predictions["method"] == against, cols], on=keys, suffixes=("_l", "_o"))
    out = []
    for series, g in pairs.groupby("series", sort=True):
        m_l, m_o = g["mean_l"].to_numpy(np.float64), g["mean_o"].to_numpy(np.float64)
        h_l = (g["hi_l"] - g["lo_l"]).to_numpy(np.float64) / 2
        h_o = (g["hi_o"] - g["lo_o"]).to_numpy(np.float64) / 2
        base = _window_mean(g, m_o, h_o)
        scaled = [_window_mean(g, m_l, c * h_l) for c in SCALES]
        best = int(np.argmin(scaled))
        out.append({"series": series, "as run": _window_mean(g, m_l, h_l) / base, "best scale": scaled[best] / base,
                    "scale": float(SCALES[best]), "its band": _window_mean(g, m_l, h_o) / base,
                    "its mean": _window_mean(g, m_o, h_l) / base})
    return pd.DataFrame(out).set_index("series") if out else pd.DataFrame(columns=[*COLUMNS, "scale"])


def table(r: pd.DataFrame, against: str) -> str:
    label = anchors.LABELS.get(against, against)
    lines = [f"Lévy's CRPS ÷ {label}'s, per series (mean over end points)", "",
             "| series | as run | best scale (factor) | its band | its mean |", "|---|---|---|---|---|"]
    for s, row in r.iterrows():
        lines.append(f"| {s} | {row['as run']:.3f} | {row['best scale']:.3f} ({row['scale']:.2f}) | "
                     f"{row['its band']:.3f} | {row['its mean']:.3f} |")
    lines.append("| at or below 1 | " + " | ".join(f"{int((r[c] <= 1).sum())} of {len(r)}" for c in COLUMNS) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    parser.add_argument("--against", default="gp", help="the other row's method key (default: gp)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    preds = pd.concat([anchors.load_predictions(d) for d in args.dirs], ignore_index=True)
    text = table(ratios(preds, args.against), args.against)
    return anchors.emit(text, args.out)


if __name__ == "__main__":
    sys.exit(main())
