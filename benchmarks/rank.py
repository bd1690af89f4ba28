"""`levy rank` over 3,383 PhysioNet set-A stays: scoring time and whole-command time.

1. Fits (or reuses, with ``--model``) a model on the bundled 300-patient sample.
2. Writes two CSVs of set-A stays that the model never saw: 3,383 stays and 10 stays.
3. Times ``levy rank`` on each as a subprocess (median of ``--reps`` runs, interleaved) and
   parses its final line ``scored N series in X.XX s`` (the scoring time, without start-up
   and CSV parsing).

Usage::

    python benchmarks/rank.py --data-dir PATH/TO/physionet2012 [--reps 5] [--model DIR]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data" / "physionet2012_sample.csv.gz"


def run(cmd: list[str]) -> tuple[float, float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    match = re.search(r"scored (\d+) series in ([\d.]+) s", proc.stdout)
    if not match:
        raise RuntimeError(f"unexpected output: {proc.stdout!r} {proc.stderr!r}")
    return wall, float(match.group(2)), match.group(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--model", type=Path, default=None)
    args = parser.parse_args()
    levy = [sys.executable, "-m", "levy_core"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = args.model
        if model is None:
            model = tmp / "model"
            subprocess.run(levy + ["fit", str(SAMPLE), "--out", str(model), "--quiet"], check=True)
        full = pd.read_csv(args.data_dir / "set-a-long.csv.gz")
        seen = set(pd.read_csv(SAMPLE)["patient_id"].unique())
        unseen = [p for p in sorted(full["patient_id"].unique()) if p not in seen][:3383]
        big, small = tmp / "rank_3383.csv", tmp / "rank_10.csv"
        full[full["patient_id"].isin(unseen)].to_csv(big, index=False)
        full[full["patient_id"].isin(unseen[:10])].to_csv(small, index=False)
        results: dict[str, list[tuple[float, float]]] = {"3383": [], "10": []}
        run(levy + ["rank", str(model), str(small), "--out", str(tmp / "r.csv")])  # warm the file cache
        for _ in range(args.reps):
            for name, path in (("3383", big), ("10", small)):
                wall, scoring, n = run(levy + ["rank", str(model), str(path), "--out", str(tmp / "r.csv")])
                results[name].append((wall, scoring))
        print(f"levy rank, median of {args.reps} interleaved runs "
              f"({len(full[full['patient_id'].isin(unseen)])} rows for 3,383 stays)")
        print("\n| stays | scoring (`scored … in X s`) | whole command |")
        print("|---|---|---|")
        for name, res in results.items():
            print(f"| {name} | {statistics.median(s for _, s in res):.2f} s "
                  f"(min {min(s for _, s in res):.2f}) | {statistics.median(w for w, _ in res):.2f} s |")
        extra = statistics.median(w for w, _ in results["3383"]) - statistics.median(w for w, _ in results["10"])
        print(f"\nwhole command, 3,383 stays minus 10 stays: {extra:.2f} s")


if __name__ == "__main__":
    main()
