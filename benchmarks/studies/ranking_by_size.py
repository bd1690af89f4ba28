"""Does σ̂ rank the unseen stays' errors better when the training file is larger? (issue 51;
protocol in ``benchmarks/results/NOTES.md`` before the first run.)

On PhysioNet 2012 set A, a fixed set of 400 unseen stays (drawn by ``--seed``) and nested
training files of ``--sizes`` stays drawn from the rest (the first ``n`` of one permutation,
so each file holds the smaller ones), none of the bundled sample's stays. Each file is fitted
as ``levy fit`` fits it (``--size auto``: "medium" from 1,000 series, seed 0, the automatic
transform; a channel it takes the log of that holds a zero among the unseen stays is taken
on log1p instead, as the refusal tells a user to), and σ̂ is scored on the unseen stays'
values after the 24-hour cut-off from their context before it, as ``loglinear_spread.py``
scores it: each channel's RMS factor on the calibration series, then the risk–coverage
ratio against the per-channel constant (from that training file), within-channel Spearman,
Gaussian CRPS and 90 % coverage in each channel's sd units (the 300-stay file's sd, so
every size is scored in the same units).

Usage::

    python -m benchmarks.studies.ranking_by_size --data-dir PATH --seed S [--sizes 300,600,1200,2400]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from benchmarks.band_per_query import LEVEL, PANELS, REPO, channel_constant, load
from benchmarks.studies.loglinear_spread import in_sd_units, print_rows
from levy_core.data import from_frame
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline.predict import observed_queries
from levy_core.pipeline.recipe import assemble, prepare_fit, resolve_size, train_levy_model
from levy_core.pipeline.user_frames import predict_user_queries
from levy_core.training.train import TrainConfig


def nested_draw(full: pd.DataFrame, seed: int, sizes: list[int], n_unseen: int) -> tuple[dict[int, pd.DataFrame],
                                                                                          pd.DataFrame]:
    """Training files of each size in ``sizes`` (nested) and the unseen stays' rows."""
    sample = pd.read_csv(REPO / "sample_data" / "physionet2012_sample.csv.gz", usecols=["patient_id"])
    full = full[~full["series_id"].isin(set(sample["patient_id"].astype(str)))]
    pool = sorted(full["series_id"].unique(), key=lambda s: (len(s), s))
    unseen = set(np.random.default_rng(seed).choice(pool, size=n_unseen, replace=False).tolist())
    rest = [s for s in pool if s not in unseen]
    order = [rest[i] for i in np.random.default_rng([seed, 1]).permutation(len(rest))]
    if max(sizes) > len(order):
        raise ValueError(f"at most {len(order)} training stays are left beside the unseen ones")
    files = {n: full[full["series_id"].isin(set(order[:n]))] for n in sizes}
    return files, full[full["series_id"].isin(unseen)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--sizes", default="300,600,1200,2400")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    spec = PANELS["physionet"]
    sizes = sorted(int(s) for s in args.sizes.split(","))
    files, unseen = nested_draw(load("physionet", args.data_dir), args.seed, sizes, spec.n_unseen)
    sd_by_channel = files[sizes[0]].groupby("channel")["value"].std()
    for n in sizes:
        train = files[n]
        new = unseen[unseen["channel"].isin(set(train["channel"]))]
        context, queries = new[new["time"] <= spec.history], new[new["time"] > spec.history]
        obs, ctx_obs = from_frame(train, time_unit="hours"), from_frame(context, time_unit="hours")
        in_hours = queries[["series_id", "channel", "time"]].reset_index(drop=True)
        task = TaskConfig("forecast", cutoff=spec.history)
        data = prepare_fit(obs.frame, task, seed=0)
        zeros = set(new.loc[new["value"] <= 0, "channel"])
        swap = {c: "log1p" for c, kind in data.scaler.transforms.items() if kind == "log" and c in zeros}
        if swap:
            data = prepare_fit(obs.frame, task, seed=0, transform=swap)
        started = time.perf_counter()
        size = resolve_size("auto", obs.n_series)
        cfg = data.model_config(size, "rate")
        fitted = assemble(data, cfg, TrainConfig(seed=0), train_levy_model(data, cfg, TrainConfig(seed=0)))
        seconds = time.perf_counter() - started
        codes = {c: i for i, c in enumerate(sorted(map(str, fitted.channels)))}
        test = in_sd_units(fitted, predict_user_queries(fitted, ctx_obs, in_hours, level=LEVEL), sd_by_channel, codes)
        test["y"] = queries["value"].to_numpy(np.float64) / test["sd"]
        keep = np.isfinite(test["sd"]) & (test["sd"] > 0) & np.isfinite(test["y"]) & np.isfinite(test["mean"])
        cal = in_sd_units(fitted, observed_queries(fitted, data.builder, data.calibration_ids), sd_by_channel, codes)
        constant = channel_constant(train, spec.history, test["channel"], test["sd"])
        print(f"\n## {n} training stays, seed {args.seed}: size {size!r}, {len(data.train_ids)} fitting / "
              f"{len(data.calibration_ids)} calibration stays, log1p instead of log for {sorted(swap) or 'none'}; "
              f"{int(keep.sum())} unseen queries; fit {seconds:.0f} s")
        print_rows({f"σ̂, {n} stays": (test["sigma"], cal["sigma"])}, test, cal, keep, constant)


if __name__ == "__main__":
    main()
