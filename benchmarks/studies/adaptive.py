"""Calibration over time on one drifting series: split conformal, recency-weighted, ACI.

The series of ``tests/calibration/test_adaptive.py``: ``y = m(t) + σ(t) d(t) ε`` where the mean ``m``
and spread ``σ`` are right during calibration (the first ``n_cal`` points, ``d = 1``) but
ignore a drift ``d`` that grows linearly to ``end_scale`` over the ``n_test`` test points
(walked one query a step, in time order). For each level: long-run coverage over the test
part, its binomial s.e., the mean width of the finite bands and the share of infinite ones,
and for ACI its long-run gap ``|mean err - α|`` against Gibbs & Candès' deterministic bound.

A second table does the same on a series whose noise jumps x1 -> x3 late in the calibration
part (at 80 %) and stays there: the case recency weights are for. On the drifting series
their calibration part is all pre-drift, so they cannot help there (they take no test scores).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/studies/adaptive.py [--seed 0] [--gamma 0.005]``.
Takes about a second.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from levy_core.calibration.adaptive import AdaptiveConformal
from levy_core.calibration.recency import RecencyWeightedConformal
from levy_core.calibration.scores import normalised_scores
from levy_core.calibration.split_conformal import SplitConformal

LEVELS = (0.8, 0.9, 0.95)


def drifting(n_cal: int, n_test: int, seed: int, end_scale: float = 3.0):
    """Times, targets, predicted means and spreads of the drifting series (see the docstring)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_cal + n_test, dtype=float)
    mean = np.sin(2 * np.pi * t / 100)
    sigma = 1 + 0.5 * np.sin(2 * np.pi * t / 37) ** 2
    drift = np.where(t < n_cal, 1.0, 1 + (end_scale - 1) * (t - n_cal) / n_test)
    return t, mean + sigma * drift * rng.standard_normal(t.size), mean, sigma


def jumping(n_cal: int, n_test: int, seed: int, big: float = 3.0):
    """Same outputs for the series whose noise jumps to ``big`` at 80 % of the calibration part."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_cal + n_test, dtype=float)
    mean = np.cos(t / 30.0)
    return t, mean + np.where(t < 0.8 * n_cal, 1.0, big) * rng.standard_normal(t.size), mean, np.ones(t.size)


def summary(y: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[float, float, float]:
    """Coverage, mean width of the finite bands, share of infinite bands."""
    width = upper - lower
    finite = np.isfinite(width)
    mean_width = float(np.mean(width[finite])) if finite.any() else math.inf
    return float(np.mean((lower <= y) & (y <= upper))), mean_width, float(np.mean(~finite))


def rows(series, n_cal: int, n_test: int, seed: int, gamma: float, decay: float):
    t, y, mu, sg = series(n_cal, n_test, seed)
    c, e = slice(0, n_cal), slice(n_cal, None)
    scores, floor = normalised_scores(y[c], mu[c], sg[c])
    split = SplitConformal().conformalize(y[c], mu[c], sg[c])
    for level in LEVELS:
        recency = RecencyWeightedConformal(level, decay).conformalize(scores, sigma_floor=floor)
        aci = AdaptiveConformal(level, gamma).conformalize(scores, sigma_floor=floor)
        result = aci.run(y[e], mu[e], sg[e], order=t[e])
        bands = {"split conformal": split.predict_interval(mu[e], sg[e], level),
                 f"recency-weighted (decay {decay})": recency.predict_interval(mu[e], sg[e]),
                 f"ACI (γ {gamma})": (result.lower, result.upper)}
        for name, (lower, upper) in bands.items():
            cov, width, inf = summary(y[e], lower, upper)
            aci_cols = (f"{result.long_run_miscoverage_gap:.4f} | {result.bound:.4f}"
                        if name.startswith("ACI") else "- | -")
            yield level, name, cov, width, inf, aci_cols


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-cal", type=int, default=1000)
    ap.add_argument("--n-test", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gamma", type=float, default=0.005)
    ap.add_argument("--decay", type=float, default=0.99)
    args = ap.parse_args()
    titles = {drifting: "Drifting series: noise x1 in the {n_cal} calibration points, drifting x1 -> x3 "
                        "over the {n_test} test points (σ ignores it), seed {seed}",
              jumping: "Jumping series: noise x1 -> x3 at 80 % of the {n_cal} calibration points, x3 in "
                       "the {n_test} test points (σ ignores it), seed {seed}"}
    for series, title in titles.items():
        print("\n" + title.format(n_cal=args.n_cal, n_test=args.n_test, seed=args.seed))
        print("| level | method | coverage | binomial s.e. | mean width (finite) | infinite bands | "
              "ACI gap | ACI bound |")
        print("|---|---|---|---|---|---|---|---|")
        for level, name, cov, width, inf, aci_cols in rows(series, args.n_cal, args.n_test, args.seed,
                                                            args.gamma, args.decay):
            se = math.sqrt(level * (1 - level) / args.n_test)
            print(f"| {level:.2f} | {name} | {cov:.4f} | {se:.4f} | {width:.3f} | {inf:.2%} | {aci_cols} |")


if __name__ == "__main__":
    main()
