"""How much better or worse than each other row is Lévy, on average over series, and how sure is that?

The issue's bar counts series: Lévy's CRPS at or below the GP's on two thirds of them. A count
treats a 1 % loss like a 50 % one, and on ten series one flip moves it by a tenth. Beside it
this script gives the size: per row, the geometric mean over series of Lévy's CRPS ÷ the
row's (each series' CRPS the mean over its end points, as ``benchmarks/anchors.py`` scores
them), and the share of series at or below; for each, a 5–95 % range from a two-level
bootstrap (the series of each set drawn with replacement, then each drawn series' end points,
the same for both rows: the comparison stays paired). Per set, and pooled over the sets given.

Nothing is refitted: it reads the per-query predictions of ``anchors.py --save-predictions``.

Usage (the anchors extras; one DIR per set)::

    python benchmarks/pooled.py anchors=DIR dev=DIR fresh=DIR [--draws 1000] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import anchors  # noqa: E402

ROWS = ("gp", "prophet", "ets", "seasonal_naive", "last")


def window_crps(predictions: pd.DataFrame) -> pd.DataFrame:
    """Each (series, end point) window's mean CRPS (rows), per method (columns)."""
    return anchors.fold_scores(predictions).pivot_table(index=["series", "end"], columns="method", values="crps",
                                                        sort=False)


def paired_crps(crps: pd.DataFrame, other: str) -> dict[str, np.ndarray]:
    """Per series where both ran: its end points' mean CRPS (:func:`window_crps`), Lévy's and
    ``other``'s, (ends, 2)."""
    if "levy" not in crps or other not in crps:
        return {}
    both = crps[["levy", other]].dropna()
    return {str(s): g.to_numpy(np.float64) for s, g in both.groupby(level="series", sort=False)}


def summary(sets: Sequence[dict[str, np.ndarray]], rng: np.random.Generator | None = None) -> tuple[float, float, int]:
    """The geometric mean over series of Lévy's CRPS ÷ the row's, the share of series at or below,
    and the count of series; with ``rng`` for one bootstrap draw (series within each set, then
    each series' end points)."""
    logs: list[float] = []
    for paired in sets:
        names = list(paired)
        if rng is not None and names:
            names = [names[i] for i in rng.integers(0, len(names), len(names))]
        for name in names:
            ends = paired[name]
            if rng is not None:
                ends = ends[rng.integers(0, len(ends), len(ends))]
            levy, row = ends.mean(axis=0)
            logs.append(float(np.log(levy / row)))
    if not logs:
        return float("nan"), float("nan"), 0
    logs_arr = np.asarray(logs)
    return float(np.exp(logs_arr.mean())), float(np.mean(logs_arr <= 0)), len(logs_arr)


def table(predictions: dict[str, pd.DataFrame], *, draws: int = 1000, seed: int = 0) -> str:
    """One line per (row, set) and per row pooled over every set given."""
    rng = np.random.default_rng(seed)
    crps = {name: window_crps(p) for name, p in predictions.items()}  # scored once, compared with every row
    lines = ["| Lévy ÷ | set | series | geometric mean of the CRPS ratio | 5–95 % | share at or below | 5–95 % |",
             "|---|---|---|---|---|---|---|"]
    for other in ROWS:
        per_set = {name: paired_crps(c, other) for name, c in crps.items()}
        groups = [([name], [per_set[name]]) for name in per_set]
        if len(per_set) > 1:
            groups.append((list(per_set), list(per_set.values())))
        for names, sets in groups:
            ratio, share, n = summary(sets)
            if n == 0:
                continue
            boot = np.array([summary(sets, rng)[:2] for _ in range(draws)])
            lo_r, hi_r = np.percentile(boot[:, 0], [5, 95])
            lo_s, hi_s = np.percentile(boot[:, 1], [5, 95])
            label = " + ".join(names) if len(names) > 1 else names[0]
            lines.append(f"| {anchors.LABELS.get(other, other)} | {label} | {n} | {ratio:.3f} | {lo_r:.3f}–{hi_r:.3f} | "
                         f"{share:.2f} ({round(share * n)} of {n}) | {lo_s:.2f}–{hi_s:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", metavar="NAME=DIR", help="a set's name and its --save-predictions folder")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    predictions = {}
    for item in args.sets:
        name, sep, folder = item.partition("=")
        if not sep or not name or not folder:
            parser.error(f"each set as NAME=DIR, got {item!r}")
        predictions[name] = anchors.load_predictions(Path(folder))
    return anchors.emit(table(predictions, draws=args.draws), args.out)


if __name__ == "__main__":
    sys.exit(main())
