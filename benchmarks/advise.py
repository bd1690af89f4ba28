"""Measure next (issue 26): does the advice hold when the measurement is really taken?

For held-out series (never trained on), the first ``--history`` hours are the data; every
channel actually measured in the next ``--window`` hours gives one candidate — its first
real measurement, at its real time. ``levy_core.decisions.advise`` predicts, before the value is
known, how much that measurement would narrow the calibrated 90 % band of the targets
(every channel the series has observed, over the next ``--horizon`` hours; the score is the
mean narrowing over the targets); then the real value is put in (``values=``, which the
tests check equals appending the observation and recomputing) and the narrowing realised
is measured on the same targets.

Reported, per data set:

* Spearman's rank correlation between predicted and realised narrowing over every
  (series, channel) pair (target ≥ 0.5), and the same for the exact evidence part alone;
* on series with at least two measured channels, how often the channel ranked first
  narrows the band more (realised) than a channel drawn at random among the others (seeded;
  target ≥ 70 %), and the share of the others it beats, averaged over series (ties half);
* the cost of advising every channel at 4 times for one series: one batched pass (timed,
  beside one plain forecast pass of the same targets, in the same process).

Data sets: PhysioNet 2012 set A (seeded draws of ``--n-train`` training stays and
``--n-eval`` other stays; static descriptors are neither targets nor candidates), and a
generated multichannel set (``levy_core.data.synthetic.make_synthetic``, series split the same
way).

Usage::

    python benchmarks/advise.py --data-dir PATH/TO/physionet2012 [--n-train 200] [--n-eval 100]
        [--epochs 40] [--max-seconds 240] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from levy_core.data import Observations, from_frame
from levy_core.data.synthetic import make_synthetic
from levy_core.decisions.advise import advise
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline import predict, recipe
from levy_core.training.train import TrainConfig

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.physionet import STATIC, load_protocol_frame  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def observations(frame: pd.DataFrame) -> Observations:
    return from_frame(frame[["series_id", "channel", "time", "value"]].reset_index(drop=True))


def fit(train: pd.DataFrame, args: argparse.Namespace, history: float):
    t0 = time.perf_counter()
    fitted = recipe.fit(observations(train), task=TaskConfig("forecast", cutoff=history),
                          train=TrainConfig(epochs=args.epochs, seed=args.seed, max_seconds=args.max_seconds),
                          size="small", train_twin=False)
    return fitted, time.perf_counter() - t0


def one_series(fitted, frame: pd.DataFrame, sid: str, args: argparse.Namespace,
               skip: set[str]) -> list[dict] | None:
    """Predicted and realised narrowing of each channel really measured after the history."""
    g = frame[frame["series_id"] == sid]
    ctx = g[g["time"] <= args.history]
    if ctx.empty:
        return None
    now = float(ctx["time"].max())
    later = g[(g["time"] > now) & (g["time"] <= now + args.window) & ~g["channel"].isin(skip)]
    first = later.sort_values("time").groupby("channel", sort=True).head(1)
    targets = sorted(set(ctx["channel"]) - skip)
    if first.empty or not targets:
        return None
    obs = observations(ctx)
    pairs = [(str(c), float(t - now)) for c, t in zip(first["channel"], first["time"], strict=True)]
    kw = dict(targets=targets, candidates=pairs, horizon=args.horizon, points=args.points)
    predicted = advise(fitted, obs, sid, draws=args.draws, seed=args.seed, **kw)
    realised = advise(fitted, obs, sid, values=first["value"].tolist(), **kw)
    p_total, p_ev, _ = predicted.per_target()
    r_total, _, _ = realised.per_target()
    return [{"series_id": sid, "channel": c, "ahead": a, "predicted": float(p_total[j].mean()),
             "evidence": float(p_ev[j].mean()), "realised": float(r_total[j].mean())}
            for j, (c, a) in enumerate(pairs)]


def ranking_checks(rows: pd.DataFrame, seed: int) -> tuple[float, float, int]:
    """(share of series whose top-ranked channel beats a random other, mean share of the
    others it beats, series counted), on series with at least two measured channels."""
    rng = np.random.default_rng(seed)
    wins, beaten, n = [], [], 0
    for _, g in rows.groupby("series_id", sort=True):
        if len(g) < 2:
            continue
        n += 1
        top = g.loc[g["predicted"].idxmax()]
        others = g.drop(index=top.name)
        pick = others.iloc[int(rng.integers(len(others)))]
        wins.append(float(top["realised"] > pick["realised"]))
        diff = top["realised"] - others["realised"].to_numpy()
        beaten.append(float(np.mean((diff > 0) + 0.5 * (diff == 0))))
    return float(np.mean(wins)) if wins else float("nan"), float(np.mean(beaten)) if beaten else float("nan"), n


def evaluate(name: str, fitted, frame: pd.DataFrame, ids: list[str], args: argparse.Namespace,
             skip: set[str]) -> pd.DataFrame:
    t0 = time.perf_counter()
    unknown = ~frame["channel"].isin(set(fitted.channels))  # channels no training series had: not asked about
    frame = frame[~unknown & frame["series_id"].isin(set(ids))]
    rows = []
    for sid in ids:
        rows += one_series(fitted, frame, sid, args, skip) or []
    rows = pd.DataFrame(rows)
    rho = spearmanr(rows["predicted"], rows["realised"]).statistic
    rho_ev = spearmanr(rows["evidence"], rows["realised"]).statistic
    share, beaten, n = ranking_checks(rows, args.seed)
    print(f"\n[{name}] {rows['series_id'].nunique()} held-out series, {len(rows)} (series, channel) measurements "
          f"in the {args.window:g} h after {args.history:g} h; targets: every observed channel over the next "
          f"{args.horizon:g} h ({args.points} points each), 90 % conformal band; {args.draws} draws "
          f"({time.perf_counter() - t0:.0f} s; {int(unknown.sum())} observations of channels the model never saw "
          "dropped)")
    print(f"  Spearman(predicted, realised narrowing) over (series, channel): {rho:.3f}   (target >= 0.5)")
    print(f"  Spearman(evidence part alone, realised):                       {rho_ev:.3f}")
    print(f"  predicted narrowing: median {rows['predicted'].median():.2f} %, realised median "
          f"{rows['realised'].median():.2f} %, mean |predicted - realised| "
          f"{(rows['predicted'] - rows['realised']).abs().mean():.2f} points")
    se = 100 * np.sqrt(share * (1 - share) / max(n, 1))
    print(f"  top-ranked channel narrows more than a random other measured channel: {100 * share:.1f} % "
          f"(± {se:.1f} standard error) of {n} series (target >= 70 %); it beats {100 * beaten:.1f} % of the "
          "others on average")
    return rows


def cost(fitted, frame: pd.DataFrame, sid: str, args: argparse.Namespace) -> None:
    """Advising every channel the model knows at 4 times for one series: passes and time."""
    ctx = observations(frame[(frame["series_id"] == sid) & (frame["time"] <= args.history)])
    passes: list[tuple[int, float]] = []
    model = fitted.levy

    def counting(batch):
        t0 = time.perf_counter()
        out = model(batch)
        passes.append((int(batch.ctx_time.shape[0]), time.perf_counter() - t0))
        return out

    at = [0.0, 1.0, 2.0, 4.0]
    fitted.levy = counting
    try:
        t0 = time.perf_counter()
        advise(fitted, ctx, sid, at=at, horizon=args.horizon, points=args.points, draws=args.draws)
        counted = time.perf_counter() - t0
    finally:
        fitted.levy = model
    best, plain = [], []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        advice = advise(fitted, ctx, sid, at=at, horizon=args.horizon, points=args.points, draws=args.draws)
        best.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        predict.predict_future(fitted, ctx, args.horizon, n_points=args.points, series_ids=[sid],
                                channels=list(advice.targets))
        plain.append(time.perf_counter() - t0)
    n_ctx = len(ctx.frame)
    print(f"\n[cost] one stay ({sid}: {n_ctx} observations in its first {args.history:g} h, "
          f"{len(advice.targets)} target channels × {args.points} times): {len(fitted.channels)} channels × "
          f"{len(at)} times = {len(advice.candidates)} candidates × {args.draws} draws; model passes: "
          f"{len(passes)} (today: batch {passes[0][0]}; every candidate × draw: batch {passes[1][0]})")
    print(f"  in a counted run of {counted:.2f} s, the batched pass took {passes[1][1]:.2f} s and today's "
          f"{passes[0][1]:.3f} s; the rest builds the {passes[1][0]} scenarios and reads the widths")
    print(f"  advise: {min(best):.2f} s (min of {args.reps}; median {np.median(best):.2f} s) against one plain "
          f"forecast of the same targets {min(plain):.3f} s (predict_future, same process, interleaved)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--n-train", type=int, default=200)
    parser.add_argument("--n-eval", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=40, help="as levy fit (early stopping may end sooner)")
    parser.add_argument("--max-seconds", type=float, default=240.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--history", type=float, default=24.0)
    parser.add_argument("--window", type=float, default=6.0, help="hours after the history a measurement counts")
    parser.add_argument("--horizon", type=float, default=12.0, help="hours the targets span")
    parser.add_argument("--points", type=int, default=12)
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--synthetic-series", type=int, default=300)
    args = parser.parse_args()
    print("python benchmarks/advise.py " + " ".join(sys.argv[1:]))

    full = load_protocol_frame(args.data_dir)
    ids = sorted(full["series_id"].unique())
    drawn = np.random.default_rng([args.seed, 26]).choice(ids, size=args.n_train + args.n_eval, replace=False)
    train_ids, eval_ids = sorted(drawn[:args.n_train].tolist()), sorted(drawn[args.n_train:].tolist())
    assert not set(train_ids) & set(eval_ids)
    fitted, seconds = fit(full[full["series_id"].isin(set(train_ids))], args, args.history)
    print(f"\nPhysioNet 2012 set A: fitted on {len(train_ids)} stays (seeded draw) in {seconds:.0f} s "
          f"({fitted.training.get('levy', {}).get('epochs_run', '?')} epochs run, best {fitted.training.get('levy', {}).get('best_epoch', '?')}); {len(eval_ids)} other stays evaluated")
    rows = evaluate("PhysioNet 2012", fitted, full, eval_ids, args, set(STATIC))
    cost(fitted, full, rows.groupby("series_id").size().idxmax(), args)

    synth = make_synthetic(n_series=args.synthetic_series, seed=args.seed + 1).observations
    sids = sorted(synth["series_id"].unique())
    n_fit = int(round(2 * len(sids) / 3))
    fitted_s, seconds = fit(synth[synth["series_id"].isin(set(sids[:n_fit]))], args, args.history)
    print(f"\nsynthetic multichannel (make_synthetic, {len(sids)} series, seed {args.seed + 1}): fitted on {n_fit} "
          f"series in {seconds:.0f} s; {len(sids) - n_fit} others evaluated")
    evaluate("synthetic multichannel", fitted_s, synth, sids[n_fit:], args, set())


if __name__ == "__main__":
    main()
