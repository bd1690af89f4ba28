"""One series on its log (issue 51, exploratory): every (series, end) of the anchors sets fitted
with ``transform="log"`` where all its training values are > 0 (``"none"`` elsewhere), against
the shipped fit's rows from ``end_band.py --capture`` (the same fits without the transform).

Per set: the 90 % band's coverage (mean over (series, end) pairs, and by third of each window)
with and without the log, and the CRPS (of the Gaussian implied by the 90 % interval, as
``anchors.py`` scores it) as the geometric mean over series of the ratio log ÷ shipped.

Usage (the anchors extras environment)::

    python -m benchmarks.studies.one_series_log --capture DIR --sets dev fresh anchors unseen rclassics
    python -m benchmarks.studies.one_series_log --from DIR --shipped END_BAND_DIR --sets ...
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

import benchmarks.anchors as anchors
from benchmarks.studies.end_band import ENDS, Z90, capture_parser, gaussian_crps, save_captures


def capture(set_name: str) -> list[dict]:
    from levy_core import LevyForecaster

    rows = []
    for case in anchors.load_cases(None, lambda _: None, set_name):
        for k in ENDS:
            train, test, end = anchors.split(case, k)
            if test.empty or train.empty:
                continue
            fit_df, queries = anchors.levy_frames(case, train, test)
            positive = bool((train["value"] > 0).all())
            try:
                f = LevyForecaster(seed=anchors.LEVY_SEED, horizon=case.horizon_text,
                                   transform="log" if positive else "none").fit(fit_df)
                pred = f.predict(queries, level=[90])
            except Exception as exc:  # as anchors.py: a fold Lévy refuses is reported, the run goes on
                print(f"{case.name} end {k}: {type(exc).__name__}: {exc}", flush=True)
                continue
            rows.append(dict(series=case.name, end=k, positive=positive, y=test["value"].to_numpy(np.float64),
                             mean=pred["Lévy"].to_numpy(np.float64), lo=pred["Lévy-lo-90"].to_numpy(np.float64),
                             hi=pred["Lévy-hi-90"].to_numpy(np.float64)))
    return rows


def compare(set_name: str, logged: list[dict], shipped: list[dict]) -> pd.DataFrame:
    before = {(r["series"], r["end"]): r for r in shipped}
    out = []
    for r in logged:
        b = before.get((r["series"], r["end"]))
        if b is None:
            continue
        n = r["y"].size
        third = np.minimum(3 * np.arange(n) // n, 2)
        inside_log = (r["lo"] <= r["y"]) & (r["y"] <= r["hi"])
        inside = np.abs(b["y"] - b["mean"]) <= b["half"]
        crps_log = gaussian_crps(r["y"], r["mean"], (r["hi"] - r["lo"]) / 2 / Z90).mean()
        crps = gaussian_crps(b["y"], b["mean"], b["half"] / Z90).mean()
        out.append({"set": set_name, "series": r["series"], "end": r["end"], "positive": r["positive"],
                    "coverage shipped": inside.mean(), "coverage log": inside_log.mean(),
                    **{f"log third {t + 1}": inside_log[third == t].mean() for t in range(3)},
                    "crps_ratio": crps_log / crps if crps > 0 else 1.0})
    return pd.DataFrame(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = capture_parser(__doc__)
    parser.add_argument("--shipped", type=Path, metavar="DIR", help="end_band.py --capture's folder")
    args = parser.parse_args(argv)
    if args.capture is not None:
        save_captures(args.capture, args.sets, capture)
        return 0
    if args.shipped is None:
        parser.error("--from needs --shipped")
    frame = pd.concat([compare(name, pickle.loads((args.source / f"{name}.pkl").read_bytes()),
                               pickle.loads((args.shipped / f"{name}.pkl").read_bytes())) for name in args.sets],
                      ignore_index=True)
    cols = ["coverage shipped", "coverage log", "log third 1", "log third 2", "log third 3"]
    per_series = frame.groupby(["set", "series"])["crps_ratio"].mean()
    gm = per_series.groupby("set").apply(lambda r: float(np.exp(np.log(r).mean())))
    print(frame.groupby("set")[cols].mean().join(gm.rename("CRPS log ÷ shipped")).round(3).to_string())
    tuned = per_series[per_series.index.get_level_values("set").isin(["dev", "anchors", "fresh"])]
    print(f"\nthe 35 series (dev, anchors, fresh): CRPS log ÷ shipped {float(np.exp(np.log(tuned).mean())):.4f}")
    print("\nper series: CRPS log ÷ shipped, and coverage")
    print(frame.groupby(["set", "series"])[["positive", "coverage shipped", "coverage log", "crps_ratio"]]
          .mean().round(3).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
