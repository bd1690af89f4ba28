"""Flags you can trust: ``levy_core.decisions.watch`` on held-out data, with nothing injected and with
injected spikes and level shifts, beside a per-channel z-score on the last value and
MC-Dropout's band; and what ``levy watch`` costs on 100,000 observations.

Two data sets:

* PhysioNet 2012 set A (``--data-dir``): a model fitted on the bundled 300-stay sample
  (``levy fit``'s defaults: forecast, cut-off 24 h; ``--max-seconds`` per model), the
  watch calibrated on ``--n-cal`` other stays (one-step-ahead scores replayed as the watch
  does, ``calibrate_watch``) and tested on ``--n-test`` further stays (none in the sample,
  none in the calibration stays; seeded draws).
* Synthetic (``levy_core.data.synthetic``, known process): fitted on 60 series, calibrated on 60
  others, tested on ``--n-synthetic`` further ones.

Every method scores the same observations: those whose channel was observed before in the
series (the z-score needs a last value), in time order, each from the observations strictly
before it; each is calibrated on the calibration stays' same observations.

* Lévy: :func:`levy_core.decisions.watch.watch`, the conformal p-value of ``|y − ŷ| / spread``
  against the calibration stays' one-step-ahead scores of the same channel.
* MC-Dropout: the same fit's twin, ``--mc-passes`` passes (mean and standard deviation in
  place of ``ŷ`` and σ̂), scored and calibrated the same way (``watch(..., mc_passes=T)``).
* z-score: ``z = (y − last value of the channel) / s_c``, ``s_c`` the RMS of ``y − last``
  of the channel on the calibration stays; Gaussian two-sided p-value ``2 (1 − Φ(|z|))``.

Flagged: ``p ≤ α``. With nothing injected the flag rate is the false-alarm rate; flags within
a series are correlated (neighbouring steps share their context), series are independent,
so its standard error is the ratio estimator's between-series one,
``sqrt(Σ_s (f_s − r n_s)² / (S (S − 1))) / n̄`` (:meth:`levy_core.decisions.watch.WatchTally.standard_error`),
and the window ``r ± 2 s.e.`` is said to hold when it contains α. The threshold itself is set on
a finite sample of calibration series, whose exceedance share at α varies between series in
the same way: that second, independent part of the variance is added (the calibration
observations' own p-values, the same between-series formula), ``s.e.² = s.e._test² +
s.e._cal²``.

Injections (seeded, one per test series, on a channel with at least 12 observations there,
at one of its observations with at least one before and ten after): a **spike**, that one
value moved by ``4 σ_c``, and separately a **level shift**, that value and every later one of
the channel moved by ``2 σ_c`` (random sign); ``σ_c`` is the channel's pooled within-series
standard deviation on the calibration stays. A spike is detected when its observation is
flagged; a level shift when one of the channel's first ten shifted observations is, the
delay being the number of shifted observations before the first flag (0: the first one). Each
share is shown beside the same share on the data with nothing injected (chance flags).

Cost: ``levy watch MODEL DATA --calibration CAL --out FLAGS.csv`` on a synthetic file of
about ``--replay-obs`` observations and on one a tenth of it, in a subprocess each: wall time,
observations per second, peak resident memory (``getrusage`` of the child); ``levy rank`` on
the same file beside it as a ratio.

Usage::

    python benchmarks/watch.py --data-dir PATH/TO/physionet2012 [--n-cal 100] [--n-test 100]
        [--n-synthetic 60] [--mc-passes 10] [--max-seconds 150] [--replay-obs 100000] [--seed 0]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

from levy_core.data import from_frame
from levy_core.data.synthetic import make_synthetic
from levy_core.decisions.watch import WatchCalibration, WatchTally, calibrate_watch, watch
from levy_core.pipeline.recipe import fit, size_name
from levy_core.training.train import TrainConfig

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.physionet import load_protocol_frame  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
STATIC = ["Age", "Gender", "Height", "ICUType"]
ALPHAS = (0.01, 0.05)
SPIKE, SHIFT, WINDOW = 4.0, 2.0, 10
KEY = ["series_id", "channel", "time"]
ZSCORE = "z-score (last value, fitted s_c)"


def seen_before(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (sorted by series, time) with ``last``: the channel's previous value in the
    series (NaN at its first observation)."""
    out = frame.sort_values(KEY, kind="stable").copy()
    out["last"] = out.groupby(["series_id", "channel"])["value"].shift(1)
    return out


def channel_spread(frame: pd.DataFrame) -> pd.Series:
    """σ_c: the channel's pooled within-series standard deviation."""
    var = frame.groupby(["series_id", "channel"])["value"].agg(["var", "size"])
    var = var[var["size"] >= 3]
    return var.groupby("channel")["var"].mean().pow(0.5)


def common(rows: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """Scored rows of observations whose channel was observed before in the series."""
    known = seen_before(frame)
    known = known.loc[known["last"].notna(), KEY]
    return rows.merge(known, on=KEY, how="inner")


def restricted(cal_rows: pd.DataFrame, cal_frame: pd.DataFrame, source: str) -> tuple[WatchCalibration, pd.DataFrame]:
    """The calibration from the calibration stays' scores of the common observations, and
    those rows with their own p-values against it (for the calibration's share of the s.e.)."""
    kept = common(cal_rows, cal_frame)
    cal = WatchCalibration.of_scores(kept["score"].to_numpy(), kept["channel"].to_numpy(), source)
    p, _ = cal.p_values(kept["score"].to_numpy(), kept["channel"].to_numpy())
    return cal, kept.assign(p_value=p)


def zscore_rows(frame: pd.DataFrame, spread: pd.Series) -> pd.DataFrame:
    """The z-score's p-value at every observation with a last value of its channel."""
    f = seen_before(frame)
    f = f[f["last"].notna()].copy()
    s = np.maximum(f["channel"].map(spread).fillna(float(spread.median())).to_numpy(), 1e-12)
    change = f["value"].to_numpy() - f["last"].to_numpy()
    z = np.where(change == 0, 0.0, change / s)  # a channel that never moved in calibration: any move flags
    f["p_value"] = 2 * norm.sf(np.abs(z))
    return f[[*KEY, "p_value"]].reset_index(drop=True)


def tally_of(rows: pd.DataFrame, alpha: float) -> WatchTally:
    tally = WatchTally(alpha)
    tally.add(rows.assign(flagged=rows["p_value"] <= alpha))
    return tally


def rate_line(rows: pd.DataFrame, alpha: float, cal_rows: pd.DataFrame | None) -> str:
    """The flag rate, its s.e. and the window ``r ± 2 s.e.``. The s.e. has two independent
    parts: the test series' (between-series, as ``WatchTally``) and the calibration's — the
    threshold is set on a finite sample of calibration series, whose own exceedance share
    at α varies between series the same way (``cal_rows``: the calibration observations
    with their p-values against the calibration; None: the test part only)."""
    tally = tally_of(rows, alpha)
    r, se_test = tally.flag_rate, tally.standard_error()
    se_cal = tally_of(cal_rows, alpha).standard_error() if cal_rows is not None else 0.0
    se = math.hypot(se_test, se_cal)
    inside = r - 2 * se <= alpha <= r + 2 * se
    return (f"{r:.4f} ± {se:.4f} (test {se_test:.4f}, cal. {se_cal:.4f}) [{r - 2 * se:.4f}, {r + 2 * se:.4f}] "
            f"{'holds' if inside else 'NOT'}")


def inject(frame: pd.DataFrame, seed: int, spread: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The spiked and shifted copies of ``frame`` and the injections (series, channel, time of
    the injected observation, the channel's next WINDOW - 1 times)."""
    rng = np.random.default_rng([seed, 7])
    spiked, shifted = frame.copy(), frame.copy()
    rows = []
    for sid, g in frame.groupby("series_id", sort=True):
        counts = g["channel"].value_counts()
        ok = sorted(c for c, n in counts.items() if n >= WINDOW + 2 and c in spread.index and spread[c] > 0)
        if not ok:
            continue
        channel = ok[int(rng.integers(len(ok)))]
        times = np.sort(g.loc[g["channel"] == channel, "time"].to_numpy())
        at = int(rng.integers(1, len(times) - WINDOW))
        sign = 1.0 if rng.random() < 0.5 else -1.0
        mine = (frame["series_id"] == sid) & (frame["channel"] == channel)
        spiked.loc[mine & (frame["time"] == times[at]), "value"] += sign * SPIKE * spread[channel]
        shifted.loc[mine & (frame["time"] >= times[at]), "value"] += sign * SHIFT * spread[channel]
        rows.append({"series_id": sid, "channel": channel, "times": times[at:at + WINDOW]})
    return spiked, shifted, pd.DataFrame(rows)


def detection(rows: pd.DataFrame, injections: pd.DataFrame, alpha: float, window: int) -> tuple[float, float, float]:
    """Share of injections flagged within the first ``window`` injected observations, its
    binomial s.e., and the median delay (observations before the first flag) of those."""
    p = rows.set_index(KEY)["p_value"]
    hits, delays = [], []
    for inj in injections.itertuples():
        keys = [(inj.series_id, inj.channel, t) for t in inj.times[:window]]
        flags = [bool(p.get(k, 1.0) <= alpha) for k in keys]
        hits.append(any(flags))
        if any(flags):
            delays.append(flags.index(True))
    share = float(np.mean(hits)) if hits else math.nan
    se = math.sqrt(share * (1 - share) / len(hits)) if hits else math.nan
    return share, se, float(np.median(delays)) if delays else math.nan


def evaluate(name: str, fitted, cal: pd.DataFrame, test: pd.DataFrame, mc_passes: int, seed: int) -> None:
    """Every table for one data set (printed)."""
    t0 = time.perf_counter()
    cal_obs, test_obs = from_frame(cal), from_frame(test)
    spread = channel_spread(cal_obs.frame)
    lv_cal = calibrate_watch(fitted, cal_obs)
    cal_rows = watch(fitted, cal_obs, alpha=0.5, calibration=lv_cal).frame
    methods = {"Lévy": (0, *restricted(cal_rows, cal_obs.frame, "Lévy, calibration stays"))}
    if mc_passes and fitted.twin is not None:
        mc_cal_rows = watch(fitted, cal_obs, alpha=0.5, calibration=lv_cal, mc_passes=mc_passes).frame
        methods[f"MC-Dropout T={mc_passes}"] = (mc_passes, *restricted(mc_cal_rows, cal_obs.frame, "MC"))
    z_cal = seen_before(cal_obs.frame).dropna(subset=["last"])
    z_spread = (z_cal["value"] - z_cal["last"]).pow(2).groupby(z_cal["channel"]).mean().pow(0.5)
    cal_p = {m: rows for m, (_, _, rows) in methods.items()}
    cal_p[ZSCORE] = zscore_rows(cal_obs.frame, z_spread)
    spiked, shifted, injections = inject(test_obs.frame, seed, spread)
    variants = {"none": test_obs.frame, "spike": spiked, "shift": shifted}
    results: dict[str, dict[str, pd.DataFrame]] = {}
    for method, (passes, calibration, _) in methods.items():
        results[method] = {v: common(watch(fitted, from_frame(f), alpha=0.01, calibration=calibration,
                                           mc_passes=passes).frame, f) for v, f in variants.items()}
    results[ZSCORE] = {v: zscore_rows(f, z_spread) for v, f in variants.items()}
    # Lévy on every observation it scores, and against the fit's own (forecast) scores
    all_rows = watch(fitted, test_obs, alpha=0.01, calibration=lv_cal).frame
    own_rows = watch(fitted, test_obs, alpha=0.01).frame
    all_cal = cal_rows.assign(p_value=lv_cal.p_values(cal_rows["score"].to_numpy(), cal_rows["channel"].to_numpy())[0])
    n_obs = len(results["Lévy"]["none"])
    print(f"\n## {name}: {cal_obs.n_series} calibration series, {test_obs.n_series} test series, {n_obs:,} scored "
          f"observations (channel seen before); {len(injections)} injections of each kind "
          f"({time.perf_counter() - t0:.0f} s)")
    print("\nNothing injected: flag rate ± s.e. (its test-series and calibration-series parts, each between "
          "series) [r ± 2 s.e.], and whether α lies inside")
    print("| method | " + " | ".join(f"α = {a}" for a in ALPHAS) + " |")
    print("|---|" + "---|" * len(ALPHAS))
    for method, by in results.items():
        print(f"| {method} | " + " | ".join(rate_line(by["none"], a, cal_p[method]) for a in ALPHAS) + " |")
    print(f"| Lévy, every observation it scores ({len(all_rows):,}) | "
          + " | ".join(rate_line(all_rows, a, all_cal) for a in ALPHAS) + " |")
    print("| Lévy against the fit's own forecast scores (no watch calibration) | "
          + " | ".join(rate_line(own_rows, a, None) for a in ALPHAS) + " |")
    print(f"\nInjected ({SPIKE:g} σ_c spikes; {SHIFT:g} σ_c level shifts, detected within {WINDOW} observations): "
          "share detected ± s.e. (chance: the same share with nothing injected), median delay")
    print("| method | α | spike detected | spike chance | shift detected | shift chance | shift delay |")
    print("|---|---|---|---|---|---|---|")
    for method, by in results.items():
        for a in ALPHAS:
            sp, sp_se, _ = detection(by["spike"], injections, a, 1)
            sp0, _, _ = detection(by["none"], injections, a, 1)
            sh, sh_se, delay = detection(by["shift"], injections, a, WINDOW)
            sh0, _, _ = detection(by["none"], injections, a, WINDOW)
            print(f"| {method} | {a} | {sp:.3f} ± {sp_se:.3f} | {sp0:.3f} | {sh:.3f} ± {sh_se:.3f} | {sh0:.3f} | "
                  f"{delay:g} |")


def physionet(args: argparse.Namespace) -> None:
    full = load_protocol_frame(args.data_dir)
    full = full[~full["channel"].isin(STATIC)]
    sample = pd.read_csv(REPO / "sample_data" / "physionet2012_sample.csv.gz")
    sample = sample.rename(columns={"patient_id": "series_id", "time_hours": "time", "parameter": "channel"})
    sample["series_id"] = sample["series_id"].astype(str)
    t0 = time.perf_counter()
    fitted = fit(from_frame(sample[["series_id", "channel", "time", "value"]]),
                          train=TrainConfig(seed=args.seed, max_seconds=args.max_seconds), mc_passes=args.mc_passes)
    print(f"PhysioNet: fitted on the bundled sample ({sample['series_id'].nunique()} stays) in "
          f"{time.perf_counter() - t0:.0f} s ({size_name(fitted.model_config)}, cut-off "
          f"{fitted.task.cutoff_text()})")
    pool = sorted(set(full["series_id"]) - set(sample["series_id"]))
    drawn = np.random.default_rng([args.seed, 3]).choice(pool, size=args.n_cal + args.n_test, replace=False).tolist()
    keep = full[full["channel"].isin(set(fitted.channels))]
    cal = keep[keep["series_id"].isin(set(drawn[:args.n_cal]))]
    test = keep[keep["series_id"].isin(set(drawn[args.n_cal:]))]
    evaluate("PhysioNet 2012, held-out stays", fitted, cal, test, args.mc_passes, args.seed)


def synthetic(args: argparse.Namespace, tmp: Path) -> tuple[Path, Path]:
    data = make_synthetic(n_series=120 + args.n_synthetic, seed=args.seed).observations
    ids = sorted(data["series_id"].unique(), key=lambda s: int(s.lstrip("s")))
    fit_frame = data[data["series_id"].isin(set(ids[:60]))]
    t0 = time.perf_counter()
    fitted = fit(from_frame(fit_frame), train=TrainConfig(seed=args.seed, max_seconds=args.max_seconds),
                          mc_passes=args.mc_passes)
    print(f"\nSynthetic: fitted on 60 series in {time.perf_counter() - t0:.0f} s "
          f"({size_name(fitted.model_config)}, cut-off {fitted.task.cutoff_text()})")
    cal = data[data["series_id"].isin(set(ids[60:120]))]
    if "synthetic" not in args.skip:
        evaluate("Synthetic (levy_core.data.synthetic), held-out series", fitted, cal,
                 data[data["series_id"].isin(set(ids[120:]))], args.mc_passes, args.seed)
    # the replay needs the Lévy model only; without the twin the file also loads when the
    # twin's calibration scale is out of load_model's range (seen once: c = 2.6e6 under load)
    model = dataclasses.replace(fitted, twin=None, mc_calibration=None).save(tmp / "synthetic_model")
    cal_csv = tmp / "cal.csv"
    cal.to_csv(cal_csv, index=False)
    return model, cal_csv


def child(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of ``python -m levy_core ARGV`` (a fresh child)."""
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "w = time.perf_counter() - t; sys.stderr.write(r.stderr[-2000:]); "
            "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024); sys.exit(r.returncode)")
    proc = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "levy_core", *argv],
                          capture_output=True, text=True, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if proc.returncode:
        raise SystemExit(f"levy {' '.join(argv)} failed:\n{proc.stderr}")
    wall, rss = proc.stdout.split()[-2:]
    return float(wall), float(rss)


def cost(args: argparse.Namespace, model: Path, cal_csv: Path, tmp: Path) -> None:
    per_series = 200  # observations per synthetic series, at most about
    print(f"\n## Cost: levy watch on synthetic files (--chunk-series {args.chunk_series}, OMP_NUM_THREADS=1; load "
          f"average before {os.getloadavg()[0]:.2f})")
    print("| observations | series | levy watch s | obs/s | peak RSS MiB | levy rank s (same file) | watch / rank |")
    print("|---|---|---|---|---|---|---|")
    runs = []
    for n_obs in (args.replay_obs // 10, args.replay_obs):
        n_series = max(2, math.ceil(n_obs / per_series))
        big = make_synthetic(n_series=n_series, seed=args.seed + 11).observations
        keep = sorted(big["series_id"].unique(), key=lambda s: int(s.lstrip("s")))
        for k in range(2, len(keep) + 1):  # the fewest whole series holding n_obs observations
            if big["series_id"].isin(set(keep[:k])).sum() >= n_obs:
                break
        big = big[big["series_id"].isin(set(keep[:k]))]
        n_series = k
        path = tmp / f"replay_{n_obs}.csv"
        big.to_csv(path, index=False)
        chunks = ["--chunk-series", str(args.chunk_series), "--quiet"]
        wall, rss = child(["watch", str(model), str(path), "--calibration", str(cal_csv), "--alpha", "0.01",
                           "--out", str(tmp / "flags.csv"), *chunks])
        rank_wall, _ = child(["rank", str(model), str(path), "--out", str(tmp / "rank.csv"), *chunks])
        print(f"| {len(big):,} | {n_series} | {wall:.1f} | {len(big) / wall:,.0f} | {rss:.0f} | {rank_wall:.1f} | "
              f"{wall / rank_wall:.1f} |")
        runs.append((len(big), wall, rss))
    (n1, w1, r1), (n2, w2, r2) = runs
    print(f"marginal rate (start-up and model loading excluded): {(n2 - n1) / (w2 - w1):,.0f} observations/s; "
          f"peak memory {r2:.0f} MiB at {n2:,} observations against {r1:.0f} MiB at {n1:,} (chunks of "
          f"{args.chunk_series} series: memory is that of one chunk, not of the file); load average after: {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="PhysioNet 2012 (set-a-long.csv.gz); none: skip")
    parser.add_argument("--n-cal", type=int, default=100)
    parser.add_argument("--n-test", type=int, default=100)
    parser.add_argument("--n-synthetic", type=int, default=60)
    parser.add_argument("--mc-passes", type=int, default=10)
    parser.add_argument("--max-seconds", type=float, default=150.0, help="training budget per model")
    parser.add_argument("--replay-obs", type=int, default=100_000)
    parser.add_argument("--chunk-series", type=int, default=100, help="levy watch / rank --chunk-series in the cost runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip", nargs="*", default=[], choices=["physionet", "synthetic", "cost"])
    args = parser.parse_args()
    print(f"python {' '.join(sys.argv)}  (load average {os.getloadavg()[0]:.2f}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    tmp = Path(tempfile.mkdtemp(prefix="levy-watch-"))
    if args.data_dir is not None and "physionet" not in args.skip:
        physionet(args)
    if "synthetic" not in args.skip or "cost" not in args.skip:
        model, cal_csv = synthetic(args, tmp)
        if "cost" not in args.skip:
            cost(args, model, cal_csv, tmp)
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
