"""Why the one-series band covers less at the end of the data than over its own test origins
(issue 51), and what widening it would cost.

For every (series, end point) of the anchors sets (``anchors.py``'s cases and ends), one Lévy
fit with the defaults, as ``anchors.py`` runs it, and from inside the fit:

- the adaptive walk's final state at 90 % (``α_T`` and its quantile ``q_T``) and its pool of
  scores ``|y − ŷ| / σ``: the calibration origins' then the test origins', in time order;
- at the end point, each query's score on the same scale, ``|y − ŷ| / (half-width / q_T)``.

Reported per set: the band's coverage (mean over (series, end) pairs) and by third of each
window; the same split by whether the window overlaps the Great Recession (NBER: December
2007 to June 2009, dates fixed before this study looked); the pairs covered below 0.6; and
what a wider end band would give: the pool's quantile at 92.5 / 95 / 97.5 % or the largest
test-walk score in place of ``q_T``, with the CRPS (of the Gaussian implied by the 90 %
interval, as ``anchors.py`` scores it) as the geometric mean over series of the ratio to the
shipped band's.

Usage (the anchors extras environment)::

    python -m benchmarks.studies.end_band --capture DIR --sets dev fresh anchors unseen rclassics
    python -m benchmarks.studies.end_band --from DIR --sets dev fresh anchors unseen rclassics
"""

from __future__ import annotations

import argparse
import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

import benchmarks.anchors as anchors

Z90 = float(stats.norm.ppf(0.95))
RECESSION = (pd.Timestamp("2007-12-01"), pd.Timestamp("2009-06-30"))  # NBER's peak and trough months
ENDS = (1, 2, 3)


def capture(set_name: str) -> list[dict]:
    """One fit per (series, end) of ``set_name``, with the walk's state read from inside it."""
    import levy_core.pipeline.recipe as recipe
    from levy_core.calibration.over_time import channel_scores

    seen: dict = {}
    original = recipe.walk_test_origins

    def walk(fitted, builder, test_ids, origin_of, *, mc_passes=0):
        original(fitted, builder, test_ids, origin_of, mc_passes=0)
        state = fitted.adaptive["levy"]["0.9"]
        seen.update(alpha_T=float(state.alpha_), q_T=float(state.quantile()),
                    pool=np.array(list(state._pool.in_time)), n_cal=len(channel_scores(fitted.levy_calibration)[0]))

    return fit_each_end(set_name, walk, seen)


def fit_each_end(set_name: str, walk, seen: dict, extra=None) -> list[dict]:
    """One ``anchors.py`` Lévy fit per (series, end) of ``set_name``, with
    ``recipe.walk_test_origins`` replaced by ``walk`` (which fills ``seen`` from inside the fit):
    a row per fit with the end's targets, the band's mean and half-width, ``seen`` and
    ``extra(case, test, end)``'s entries. A fit Lévy refuses is reported, and the run goes on."""
    import levy_core.pipeline.recipe as recipe

    original = recipe.walk_test_origins
    recipe.walk_test_origins = walk
    rows = []
    try:
        for case in anchors.load_cases(None, lambda _: None, set_name):
            for k in ENDS:
                train, test, end = anchors.split(case, k)
                if test.empty or train.empty:
                    continue
                seen.clear()
                try:
                    band = anchors.run_levy(case, train, test, end, lambda _: None)
                except Exception as exc:  # as anchors.py: a fold Lévy refuses is reported, the run goes on
                    print(f"{case.name} end {k}: {type(exc).__name__}: {exc}", flush=True)
                    continue
                rows.append(dict(series=case.name, end=k, y=test["value"].to_numpy(np.float64),
                                 mean=band["mean"].to_numpy(), half=(band["hi"] - band["lo"]).to_numpy() / 2,
                                 **(extra(case, test, end) if extra else {}), **seen))
                print(f"{set_name} {case.name} end {k}", flush=True)
    finally:
        recipe.walk_test_origins = original
    return rows


def windows(set_name: str) -> dict[tuple[str, int], tuple[pd.Timestamp, pd.Timestamp]]:
    """Each (series, end)'s forecast window: the end point and its last query's time."""
    out = {}
    for case in anchors.load_cases(None, lambda _: None, set_name):
        for k in ENDS:
            train, test, end = anchors.split(case, k)
            if not test.empty:
                out[(case.name, k)] = (pd.Timestamp(end), pd.Timestamp(test["time"].max()))
    return out


def gaussian_crps(y: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    z = (y - mean) / sd
    return sd * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi))


def conformal_quantile(scores: np.ndarray, level: float) -> float:
    ordered = np.sort(scores)
    k = int(np.ceil(level * (ordered.size + 1)))
    return float(ordered[-1] if k > ordered.size else ordered[k - 1])


def rules(row: dict) -> dict[str, float]:
    """The end band's score quantile: shipped (``q_T``) and the wider alternatives."""
    pool, tests = row["pool"], row["pool"][row["n_cal"]:]
    out = {"shipped (q_T)": row["q_T"]}
    for level in (0.925, 0.95, 0.975):
        out[f"pool quantile {level:g}"] = conformal_quantile(pool, level)
    out["largest test-walk score"] = float(tests.max()) if tests.size else row["q_T"]
    return out


def pair_rows(set_name: str, rows: list[dict], spans: dict) -> pd.DataFrame:
    out = []
    for row in rows:
        sigma = row["half"] / row["q_T"]
        score = np.abs(row["y"] - row["mean"]) / sigma
        n = score.size
        third = np.minimum(3 * np.arange(n) // n, 2)
        start, stop = spans[(row["series"], row["end"])]
        base = gaussian_crps(row["y"], row["mean"], row["half"] / Z90).mean()
        for rule, q in rules(row).items():
            crps = gaussian_crps(row["y"], row["mean"], q * sigma / Z90).mean()
            out.append({"set": set_name, "series": row["series"], "end": row["end"], "rule": rule,
                        "recession": bool(start <= RECESSION[1] and stop >= RECESSION[0]),
                        "coverage": float(np.mean(score <= q)), "crps_ratio": crps / base if base > 0 else 1.0,
                        **{f"third {t + 1}": float(np.mean(score[third == t] <= q)) for t in range(3)}})
    return pd.DataFrame(out)


def tables(frame: pd.DataFrame) -> str:
    cols = ["coverage", "third 1", "third 2", "third 3"]
    shipped = frame[frame["rule"] == "shipped (q_T)"]
    parts = ["## the shipped band: coverage, mean over (series, end) pairs",
             shipped.groupby("set")[cols].mean().assign(pairs=shipped.groupby("set").size()).round(3).to_string(),
             "\n## split by whether the window overlaps the Great Recession (Dec 2007 - Jun 2009)",
             shipped.groupby(["set", "recession"])[cols].mean().assign(
                 pairs=shipped.groupby(["set", "recession"]).size()).round(3).to_string(),
             "\n## pairs covered below 0.6",
             shipped[shipped["coverage"] < 0.6][["set", "series", "end", "recession", "coverage"]].round(3).to_string(index=False),
             "\n## wider end bands: coverage and CRPS ÷ shipped (geometric mean over series)"]
    per_series = frame.groupby(["set", "rule", "series"])["crps_ratio"].mean()
    gm = per_series.groupby(["set", "rule"]).apply(lambda r: float(np.exp(np.log(r).mean())))
    wide = frame.groupby(["set", "rule"])[cols].mean().join(gm.rename("CRPS ÷ shipped"))
    parts.append(wide.round(3).to_string())
    tuned = frame[frame["set"].isin(["dev", "anchors", "fresh"])]
    gm35 = tuned.groupby(["rule", "series"])["crps_ratio"].mean().groupby("rule").apply(
        lambda r: float(np.exp(np.log(r).mean())))
    parts += ["\n## the 35 series (dev, anchors, fresh): CRPS ÷ shipped, geometric mean", gm35.round(4).to_string()]
    return "\n".join(parts)


def capture_parser(description: str) -> argparse.ArgumentParser:
    """``--capture DIR`` (fit, save each set's rows as ``DIR/SET.pkl``) or ``--from DIR``, and ``--sets``."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--capture", type=Path, metavar="DIR", help="fit, and save each set's rows as DIR/SET.pkl")
    where.add_argument("--from", dest="source", type=Path, metavar="DIR", help="the tables from saved rows")
    parser.add_argument("--sets", nargs="+", default=["dev", "fresh", "anchors", "unseen", "rclassics"],
                        choices=tuple(anchors.SETS))
    return parser


def save_captures(directory: Path, sets: Sequence[str], capture_set) -> None:
    """Each set's rows from ``capture_set(name)``, pickled as ``directory/NAME.pkl``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in sets:
        (directory / f"{name}.pkl").write_bytes(pickle.dumps(capture_set(name)))


def main(argv: Sequence[str] | None = None) -> int:
    args = capture_parser(__doc__).parse_args(argv)
    if args.capture is not None:
        save_captures(args.capture, args.sets, capture)
        return 0
    frames = []
    for name in args.sets:
        rows = pickle.loads((args.source / f"{name}.pkl").read_bytes())  # our own rows, written by --capture
        frames.append(pair_rows(name, rows, windows(name)))
    print(tables(pd.concat(frames, ignore_index=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
