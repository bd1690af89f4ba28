"""Which periods the fit tries, on every benchmark series and end point, and how often a period
test offers one to noise.

The rolling-origin offset (``levy_core.offsets.base_forecast``) tries seasonal and harmonic
candidates only at the periods :func:`levy_core.offsets.seasonality.candidate_periods` offers,
so a change to that test changes forecasts exactly where it changes the periods. Two parts:

* ``survey``: for each series of ``benchmarks/anchors.py`` (all three sets) and end point, the
  periods offered on the frame the fit's offset choice sees (the normalised past before the
  first test origin: ``offset_study.capture`` runs ``LevyForecaster(seed=0, horizon=H).fit``
  up to that choice and stops), in years. With ``--baseline FILE`` (an earlier ``--out``), the
  rows that differ are marked ``*``: the only fits a benchmark re-run has to repeat.
* ``synthetic``: how often a yearly period is offered to ``--draws`` monthly series, with and
  without a season, 30 % of points dropped or none: white noise, AR(1) at ρ = 0.5 and 0.9, a
  random walk (the false alarms), and the same AR(1) with a yearly season in its first
  harmonics (the power).

Log of 2026-12-04 (the harmonics tested together as well as one at a time):
``benchmarks/results/calendar_joint_2026-12-04.txt``.

Usage (the anchors extras)::

    OMP_NUM_THREADS=1 python benchmarks/studies/period_survey.py [--ends 6] [--draws 200] [--baseline FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from levy_core.offsets.seasonality import candidate_periods

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.studies import offset_study  # noqa: E402

anchors, capture = offset_study.anchors, offset_study.capture

YEAR = 365.2425 * 24  # hours


def years(periods: Sequence[float]) -> str:
    return "(" + ", ".join(f"{p / YEAR:.2f}" for p in periods) + ")"


def survey(ends: int, sets: Sequence[str] = ("anchors", "dev", "fresh")) -> list[str]:
    """One line per series: the periods offered at ends 1 … ``ends``, ``|``-separated."""
    lines = []
    for which in sets:
        for case in anchors.load_cases(None, which=which, say=lambda _: None):
            found = []
            for k in range(1, ends + 1):
                train, test, _ = anchors.split(case, k)
                found.append(years(candidate_periods(capture(case, train, test)["past"])))
            lines.append(f"{which:7s} {case.name:18s} " + " | ".join(found))
    return lines


def marked(lines: Sequence[str], baseline: Sequence[str]) -> list[str]:
    """``lines`` with ``* `` before those that differ from the same series' baseline line."""
    before = {" ".join(line.split()[:2]): line for line in baseline if line.strip()}
    return [("* " if before.get(" ".join(line.split()[:2])) != line else "  ") + line for line in lines]


def _ar1(rng: np.random.Generator, rho: float, n: int) -> np.ndarray:
    x, noise = np.zeros(n), rng.normal(size=n)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + noise[i]
    return x


def _season(n: int, amplitude: float) -> np.ndarray:
    months = np.arange(n)
    return amplitude * (np.sin(2 * np.pi * months / 12) + 0.5 * np.cos(4 * np.pi * months / 12))


SERIES: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "white noise": lambda rng, n: rng.normal(size=n),
    "AR(1) 0.5": lambda rng, n: _ar1(rng, 0.5, n),
    "AR(1) 0.9": lambda rng, n: _ar1(rng, 0.9, n),
    "random walk": lambda rng, n: np.cumsum(rng.normal(size=n)),
    "AR(1) 0.9 + season 1.0": lambda rng, n: _ar1(rng, 0.9, n) + _season(n, 1.0),
    "AR(1) 0.9 + season 0.7": lambda rng, n: _ar1(rng, 0.9, n) + _season(n, 0.7),
    "white noise + season 0.3": lambda rng, n: rng.normal(size=n) + _season(n, 0.3),
}


def synthetic(draws: int, test: Callable[[pd.DataFrame], Sequence[float]] = candidate_periods) -> list[str]:
    """The share of ``draws`` seeded monthly series offered a year by ``test``: 120 months
    complete, and 240 months with 30 % dropped."""
    lines = ["| series | 120 months | 240 months, 30 % dropped |", "|---|---|---|"]
    for name, make in SERIES.items():
        shares = []
        for n, drop in ((120, 0.0), (240, 0.3)):
            offered = 0
            for seed in range(draws):
                rng = np.random.default_rng(seed)
                y, keep = make(rng, n), rng.random(n) >= drop
                frame = pd.DataFrame({"series_id": "s", "channel": "v", "time": np.arange(n)[keep] * YEAR / 12,
                                      "value": y[keep]})
                offered += any(abs(p / YEAR - 1) < 1e-6 for p in test(frame))
            shares.append(offered / draws)
        lines.append(f"| {name} | {shares[0]:.3f} | {shares[1]:.3f} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ends", type=int, default=6)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--baseline", type=Path, default=None, help="an earlier --out: mark the series that differ")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    lines = survey(args.ends)
    if args.baseline is not None:
        old = [line[2:] if line[:2] in ("* ", "  ") else line
               for line in args.baseline.read_text().splitlines() if line[:2] in ("* ", "  ")]
        lines = marked(lines, old)
    else:
        lines = ["  " + line for line in lines]
    text = "\n".join(["Periods offered (years) at ends 1 … " + str(args.ends) + " on the offset choice's frame:",
                      *lines, "", f"A yearly period offered, share of {args.draws} seeded draws:",
                      *synthetic(args.draws)])
    sys.stdout.write(text + "\n")
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
