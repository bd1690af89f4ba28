"""One series, forecast past its end, as a new user would: through the CLI, at date-times.

For the bundled single series and three real single series that ship with statsmodels
(Nile, yearly 1871–1970; sunspots, yearly 1700–2008; Mauna Loa CO₂, weekly 1958–2001 with
missing weeks), each run:

1. writes the series as a CSV of date-times and values, and the same file without its last
   part (the "future");
2. ``levy fit TRAIN.csv --task forecast --horizon H`` (H = the future's length: a fit on one
   series runs on rolling forecast origins and walks adaptive conformal over its test ones);
3. ``levy predict MODEL TRAIN.csv --queries FUTURE.csv`` with the future's own date-times,
   once with the default band (adaptive conformal) and once with ``--band conformal``;
4. ``levy evaluate MODEL TRAIN.csv`` for the backtest over the fit's own test origins (the
   adaptive walk's and split conformal's 90 % coverage, many origins rather than one);
5. scores the predictions against what happened: coverage of the 90 % bands, the mean
   absolute error beside carrying the last value forward and beside the seasonal naive
   forecast (the value one season before, from the training part) where the series is
   seasonal, and how the band's width grows with the horizon (Spearman(horizon, width), and
   the mean width over the last quarter of the future over that of the first quarter).

Usage::

    python benchmarks/studies/single_series.py [--epochs 40] [--max-seconds 120] [--only nile co2]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats

REPO = Path(__file__).resolve().parent.parent
LEVY = [sys.executable, "-m", "levy_core"]


@dataclass(frozen=True)
class Case:
    name: str
    frame: pd.DataFrame  # columns time (UTC date-times), channel, value
    future: pd.Timedelta  # the last part, forecast from the rest
    horizon: str  # the same, as `levy fit --horizon` reads it
    season: pd.Timedelta | None  # seasonal naive's lag; None: not seasonal


def _yearly(values: pd.Series, years: pd.Series, channel: str) -> pd.DataFrame:
    times = pd.to_datetime(years.astype(int).astype(str) + "-07-01", utc=True)
    return pd.DataFrame({"time": times, "channel": channel, "value": values.to_numpy(np.float64)})


def cases() -> list[Case]:
    nile = sm.datasets.nile.load_pandas().data
    sun = sm.datasets.sunspots.load_pandas().data
    co2 = sm.datasets.co2.load_pandas().data.dropna()  # weekly, with missing weeks dropped
    co2_frame = pd.DataFrame({"time": pd.to_datetime(co2.index, utc=True), "channel": "co2",
                              "value": co2["co2"].to_numpy(np.float64)})
    sensor = pd.read_csv(REPO / "sample_data" / "single_series.csv")
    sensor["time"] = pd.to_datetime(sensor.pop("timestamp"), utc=True, format="ISO8601")
    sensor = sensor.melt(id_vars="time", var_name="channel", value_name="value").dropna()
    return [
        Case("bundled sensor (2 channels, 14 days)", sensor, pd.Timedelta(hours=48), "48h", pd.Timedelta(hours=24)),
        Case("Nile (yearly flow)", _yearly(nile["volume"], nile["year"], "volume"), pd.Timedelta(days=3652),
             "10y", None),
        Case("sunspots (yearly)", _yearly(sun["SUNACTIVITY"], sun["YEAR"], "sunspots"), pd.Timedelta(days=10958),
             "30y", pd.Timedelta(days=4018)),  # the ~11-year cycle
        Case("Mauna Loa CO2 (weekly)", co2_frame, pd.Timedelta(days=731), "2y", pd.Timedelta(days=364)),
    ]


def run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return proc.stderr


def seasonal_naive(train: pd.DataFrame, test: pd.DataFrame, season: pd.Timedelta) -> np.ndarray:
    """The value one (or k) seasons before each test time, the latest observed in training."""
    out = np.empty(len(test))
    for i, (t, ch) in enumerate(zip(test["time"], test["channel"], strict=True)):
        part = train[train["channel"] == ch]
        lag = t - season
        while lag > part["time"].max():
            lag -= season
        out[i] = part["value"].to_numpy()[np.abs((part["time"] - lag).dt.total_seconds().to_numpy()).argmin()]
    return out


def origin_coverage(backtest: pd.DataFrame) -> np.ndarray:
    """Each test origin's own coverage by the adaptive 90 % band (``levy evaluate
    --predictions`` on rolling origins), oldest first."""
    y = backtest["y_true"]
    inside = (backtest["lower_adaptive_90"] <= y) & (y <= backtest["upper_adaptive_90"])
    return inside.groupby(backtest["origin"]).mean().to_numpy(np.float64)


def score(case: Case, work: Path, epochs: int, max_seconds: float, fold: int = 0,
          fit_args: tuple[str, ...] = ()) -> dict:
    """One fit and its future; ``fold`` k > 0 drops the last k futures first (an earlier
    forecast origin, the same protocol)."""
    end = case.frame["time"].max() - fold * case.future
    frame = case.frame[case.frame["time"] <= end]
    train = frame[frame["time"] <= end - case.future].reset_index(drop=True)
    test = frame[frame["time"] > end - case.future].reset_index(drop=True)
    multi = case.frame["channel"].nunique() > 1
    wide = train.pivot_table(index="time", columns="channel", values="value").reset_index()
    wide["time"] = wide["time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    wide.to_csv(work / "train.csv", index=False)
    queries = test[["time", "channel"]] if multi else test[["time"]]
    queries.assign(time=test["time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")).to_csv(work / "future.csv", index=False)
    t0 = time.perf_counter()
    fit_log = run([*LEVY, "fit", str(work / "train.csv"), "--task", "forecast", "--horizon", case.horizon,
                   "--no-twin", "--epochs", str(epochs), "--max-seconds", str(max_seconds), "--quiet",
                   "--out", str(work / "model"), *fit_args])
    season = re.search(r"seasonal offset ([0-9.e+]+) h", fit_log)
    fit_seconds = time.perf_counter() - t0
    preds = {}
    for band in ("auto", "conformal"):
        run([*LEVY, "predict", str(work / "model"), str(work / "train.csv"), "--queries", str(work / "future.csv"),
             "--band", band, "--out", str(work / f"pred_{band}.csv")])
        preds[band] = pd.read_csv(work / f"pred_{band}.csv")
    run([*LEVY, "evaluate", str(work / "model"), str(work / "train.csv"), "--json", str(work / "eval.json"),
         "--mc-passes", "0", "--predictions", str(work / "eval.csv")])
    per_origin = origin_coverage(pd.read_csv(work / "eval.csv"))
    backtest = json.loads((work / "eval.json").read_text())["levy"]
    y = test["value"].to_numpy()
    pred = preds["auto"]
    assert len(pred) == len(test) and (pd.to_datetime(pred["time"], utc=True) == test["time"]).all()
    last = train.sort_values("time").groupby("channel")["value"].last()
    lv = test["channel"].map(last).to_numpy()
    width = (pred["upper"] - pred["lower"]).to_numpy()
    horizon = (test["time"] - train["time"].max()).dt.total_seconds().to_numpy()
    quarter = max(1, len(test) // 4)
    order = np.argsort(horizon)
    row = {"series": case.name, "n_train": len(train), "n_future": len(test), "fit_s": fit_seconds,
           "coverage_adaptive": float(np.mean((pred["lower"] <= y) & (y <= pred["upper"]))),
           "coverage_conformal": float(np.mean((preds["conformal"]["lower"] <= y) & (y <= preds["conformal"]["upper"]))),
           "mae_levy": float(np.mean(np.abs(y - pred["mean"]))), "mae_last_value": float(np.mean(np.abs(y - lv))),
           "width_spearman": float(stats.spearmanr(horizon, width).statistic),
           "backtest_origins": backtest["test_origins"], "backtest_adaptive_90": backtest["adaptive_coverage"]["0.9"],
           "backtest_conformal_90": backtest["conformal_coverage"]["0.9"],
           "width_growth": float(width[order[-quarter:]].mean() / width[order[:quarter]].mean()),
           "season_used_h": float(season.group(1)) if season else 0.0,
           # one future's coverage is one draw: how often a single backtest origin's own
           # coverage falls in 0.80–0.97, and how widely it spreads
           "origins_in_range": float(np.mean((per_origin >= 0.80) & (per_origin <= 0.97))),
           "origin_coverage_sd": float(per_origin.std())}
    if multi:  # which channel wins or loses: Lévy's and last value's MAE per channel
        err = pd.DataFrame({"channel": test["channel"], "levy": np.abs(y - pred["mean"]), "lv": np.abs(y - lv)})
        row["mae_by_channel"] = {ch: (round(float(g["levy"].mean()), 4), round(float(g["lv"].mean()), 4))
                                 for ch, g in err.groupby("channel")}
    if case.season is not None:
        row["mae_seasonal_naive"] = float(np.mean(np.abs(y - seasonal_naive(train, test, case.season))))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--max-seconds", type=float, default=120.0)
    parser.add_argument("--only", nargs="*", default=None, help="substrings of the case names to run")
    parser.add_argument("--folds", type=int, default=1, help="also forecast from the k-1 earlier end points "
                        "(each drops one more future): one origin's coverage is one correlated draw")
    parser.add_argument("--fit-args", default="", help="extra `levy fit` arguments, e.g. '--season none'")
    args = parser.parse_args()
    rows = []
    for case in cases():
        if args.only and not any(s.lower() in case.name.lower() for s in args.only):
            continue
        for fold in range(args.folds):
            with tempfile.TemporaryDirectory() as tmp:
                row = score(case, Path(tmp), args.epochs, args.max_seconds, fold, tuple(args.fit_args.split()))
            row["fold"] = fold
            rows.append(row)
            print(row, flush=True)
    print_tables(rows)


def print_tables(rows: list[dict]) -> None:
    """The tables (benchmarks/results/single_series_notes_2026-12-01.md) from the benchmark's rows: over the end points when there are
    several (``fold`` > 0), then the last future's."""
    folds = pd.DataFrame(rows)
    if folds["fold"].max() > 0:
        print("\n| series | futures | 90 % coverage of each future, adaptive | mean | split conformal, mean | "
              "test origins whose own coverage is in 0.80–0.97, mean | season used (h) | "
              "MAE Lévy / last value / seasonal naive, mean |")
        print("|---|---|---|---|---|---|---|---|")
        for name, g in folds.groupby("series", sort=False):
            naive = (f"{g['mae_seasonal_naive'].mean():.4g}" if "mae_seasonal_naive" in g
                     and g["mae_seasonal_naive"].notna().all() else "–")
            print(f"| {name} | {len(g)} | {' / '.join(f'{c:.2f}' for c in g['coverage_adaptive'])} | "
                  f"{g['coverage_adaptive'].mean():.3f} | {g['coverage_conformal'].mean():.3f} | "
                  f"{g['origins_in_range'].mean():.2f} | {' / '.join(f'{v:g}' for v in g['season_used_h'])} | "
                  f"{g['mae_levy'].mean():.4g} / {g['mae_last_value'].mean():.4g} / {naive} |")
        rows = [r for r in rows if r["fold"] == 0]
    print("\n| series | train / future points | future: 90 % coverage, adaptive / split conformal | "
          "backtest (test origins): 90 % coverage, adaptive / split conformal | MAE Lévy | MAE last value | "
          "MAE seasonal naive | width vs horizon: Spearman, last/first quarter | fit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        naive = f"{r['mae_seasonal_naive']:.4g}" if "mae_seasonal_naive" in r else "–"
        print(f"| {r['series']} | {r['n_train']} / {r['n_future']} | {r['coverage_adaptive']:.3f} / "
              f"{r['coverage_conformal']:.3f} | {r['backtest_adaptive_90']:.3f} / {r['backtest_conformal_90']:.3f} "
              f"({r['backtest_origins']} origins) | {r['mae_levy']:.4g} | {r['mae_last_value']:.4g} | {naive} | "
              f"{r['width_spearman']:.2f}, ×{r['width_growth']:.2f} | {r['fit_s']:.0f} s |")


if __name__ == "__main__":
    main()
