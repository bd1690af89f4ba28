"""`levy rank`'s scoring at another revision beside this one, in one process, alternately.

The machine's speed drifts (and it may be shared), so a change to the scoring path is
measured as a ratio: ``levy_core/pipeline/ranking.py`` and ``levy_core/episodes/scaling.py`` at ``--rev``
(read with ``git show``) are loaded as modules of their own, and the scoring of the same
3,383 set-A stays (``score_series``: preparing the episodes and the passes, after a
warm-up) alternates between that revision and this one ``--reps`` times. Both must rank
the stays in the same order with trust scores equal to float rounding. Beside the wall
time, the process's CPU time is reported: with one thread it is the work done, which
other processes on a shared machine disturb far less than the wall time.

Usage::

    python benchmarks/studies/rank_speed.py --data-dir PATH/TO/physionet2012 --rev REV [--model DIR] [--reps 7]
        [--threads 1] [--batch-series 128]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import MethodType

import numpy as np
import torch

from levy_core.data import read_csv
from levy_core.pipeline import ranking
from levy_core.pipeline.modelfile import load_model

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.rank import model_on_the_sample, unseen_stays  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def module_at(rev: str, name: str, where: Path):
    """``levy_core/<name>.py`` at ``rev``, imported as a module of its own."""
    source = subprocess.run(["git", "show", f"{rev}:levy_core/{name}.py"], capture_output=True, text=True,
                            check=True, cwd=REPO).stdout
    path = where / f"{name}_at_rev.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"{name}_at_rev", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"{name}_at_rev"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--rev", required=True)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-series", type=int, default=None, help="this revision's batch (default its own)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = model_on_the_sample(args.model, tmp)
        path = tmp / "stays.csv"
        unseen_stays(args.data_dir, 3383).to_csv(path, index=False)
        fitted = load_model(model)
        obs = read_csv(path)
        old_ranking, old_scaling = module_at(args.rev, "ranking", tmp), module_at(args.rev, "scaling", tmp)
    scaler = fitted.scaler
    old_methods = {name: MethodType(getattr(old_scaling.ChannelScaler, name), scaler)
                   for name in ("_lookup", "check_range")}

    def before():
        vars(scaler).update(old_methods)  # the revision's scaling on this model's scaler
        try:
            return old_ranking.score_series(fitted, obs)
        finally:
            for name in old_methods:
                vars(scaler).pop(name)

    def after():
        kwargs = {} if args.batch_series is None else {"batch_series": args.batch_series}
        return ranking.score_series(fitted, obs, **kwargs)

    ranking.warm_up(fitted)
    times: dict[str, list[float]] = {args.rev: [], "this revision": []}
    cpu: dict[str, list[float]] = {args.rev: [], "this revision": []}
    scores = {}
    print(f"python benchmarks/studies/rank_speed.py --rev {args.rev} --reps {args.reps} --threads {args.threads}"
          + (f" --batch-series {args.batch_series}" if args.batch_series else "")
          + f"; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} before", flush=True)
    for _ in range(args.reps):
        for name, run in ((args.rev, before), ("this revision", after)):
            t0, c0 = time.perf_counter(), time.process_time()
            frame, _ = run()
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            scores[name] = ranking.order_by_trust(frame)
    a, b = scores[args.rev], scores["this revision"]
    diff = np.abs(a.set_index("series_id")["trust_score"] - b.set_index("series_id")["trust_score"])
    rel = (diff / b.set_index("series_id")["trust_score"].abs()).max()
    same_order = a["series_id"].tolist() == b["series_id"].tolist()
    for name, seconds in times.items():
        print(f"  {name}: scoring {len(b):,} stays, median {statistics.median(seconds):.3f} s "
              f"(min {min(seconds):.3f}; {', '.join(f'{s:.2f}' for s in seconds)}); CPU time median "
              f"{statistics.median(cpu[name]):.3f} s (min {min(cpu[name]):.3f})")
    print(f"  ratio of medians, this revision / {args.rev}: "
          f"{statistics.median(times['this revision']) / statistics.median(times[args.rev]):.3f} (wall), "
          f"{statistics.median(cpu['this revision']) / statistics.median(cpu[args.rev]):.3f} (CPU); trust scores "
          f"equal to {rel:.1e} (relative), same order: {same_order}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} after")


if __name__ == "__main__":
    main()
