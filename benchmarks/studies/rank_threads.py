"""`levy rank`'s scoring pass on one thread, one OpenMP team over the cores, or one batch per core.

In one process, alternately ``--reps`` times, on the same 3,383 prepared set-A stays
(``benchmarks/rank.py``'s stays; ``score_series`` after a warm-up):

- ``1 thread``: one intra-op thread, one batch at a time;
- ``team of N``: N intra-op threads (an OpenMP team per operator), one batch at a time
  (the pass before ``levy_core.runtime.threads``);
- ``N workers``: N batches side by side, one intra-op thread each (the pass now).

Wall and CPU time (all threads) are printed, and whether the scores are bit-identical.
OpenMP's waiting threads sleep (``OMP_WAIT_POLICY=PASSIVE``, as the ``levy`` command sets
it) unless ``--spin`` (OpenMP's default, as before).

Usage::

    python benchmarks/studies/rank_threads.py --data-dir PATH/TO/physionet2012 [--model DIR] [--reps 5] [--threads 2] [--spin]
"""

from __future__ import annotations

import os
import sys

if "--spin" not in sys.argv:  # before torch loads its OpenMP runtime
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from levy_core.data import read_csv  # noqa: E402
from levy_core.pipeline import ranking  # noqa: E402
from levy_core.pipeline.modelfile import load_model

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.rank import model_on_the_sample, unseen_stays  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--spin", action="store_true", help="OpenMP's default wait policy (spinning)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = model_on_the_sample(args.model, Path(tmp))
        path = Path(tmp) / "stays.csv"
        unseen_stays(args.data_dir, 3383).to_csv(path, index=False)
        fitted = load_model(model)
        obs = read_csv(path)
    n = args.threads
    variants = {"1 thread": (1, 1), f"team of {n}": (n, 1), f"{n} workers": (n, n)}
    wall: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    frames = {}
    ranking.warm_up(fitted)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"python benchmarks/studies/rank_threads.py --reps {args.reps} --threads {n}{' --spin' if args.spin else ''} "
          f"(OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}); load average {load} before", flush=True)
    for _ in range(args.reps):
        for name, (threads, workers) in variants.items():
            torch.set_num_threads(threads)
            t0, c0 = time.perf_counter(), time.process_time()
            frame, _ = ranking.score_series(fitted, obs, workers=workers)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            frames[name] = frame.sort_values("series_id").reset_index(drop=True)
    first = next(iter(frames.values()))
    for name in variants:
        print(f"  {name}: wall median {statistics.median(wall[name]):.2f} s "
              f"({', '.join(f'{x:.2f}' for x in wall[name])}), CPU median {statistics.median(cpu[name]):.2f} s; "
              f"scores identical to 1 thread: {frames[name].equals(first)}")
    print(f"  load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} after")


if __name__ == "__main__":
    main()
