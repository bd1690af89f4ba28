"""`levy rank` over 3,383 PhysioNet set-A stays: scoring time and whole-command time.

1. Fits (or reuses, with ``--model``) a model on the bundled 300-patient sample.
2. Writes two CSVs of set-A stays that the model never saw: up to 3,383 stays and 10 stays.
3. Times ``levy rank`` on each as a subprocess (median of ``--reps`` runs, interleaved) and
   parses its final line ``scored N series in X.XX s`` (the scoring time, without start-up
   and CSV parsing). The table's stay counts are those N, and each run fails unless N is
   the number of stays written to its file.

With ``--baseline REV``, ``levy rank`` of the whole package at git revision REV (extracted
with ``git archive``) scores the big file alternately with this checkout's, and the ratio of
their scoring medians is printed: this machine's speed drifts by tens of per cent within an
hour, which a ratio of interleaved runs cancels and an absolute time does not.

Usage::

    python benchmarks/rank.py --data-dir PATH/TO/physionet2012 [--reps 5] [--model DIR] [--baseline REV]
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


def run(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, int]:
    """Run one ``levy rank``: (whole-command seconds, scoring seconds, series scored)."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=cwd)
    wall = time.perf_counter() - t0
    match = re.search(r"scored (\d+) series in ([\d.]+) s", proc.stdout)
    if not match:
        raise RuntimeError(f"unexpected output: {proc.stdout!r} {proc.stderr!r}")
    return wall, float(match.group(2)), int(match.group(1))


def rank_stays(cmd: list[str], n_written: int, cwd: Path | None = None) -> tuple[float, float, int]:
    """``run(cmd)``, refusing a run that scored a different number of series than the
    ``n_written`` stays its file holds (a dropped or split stay would skew the timing)."""
    wall, scoring, n = run(cmd, cwd)
    if n != n_written:
        raise RuntimeError(f"levy rank scored {n} series but {n_written} stays were written: {' '.join(cmd)}")
    return wall, scoring, n


def model_on_the_sample(model: Path | None, where: Path) -> Path:
    """``model`` if given, else ``levy fit`` on the bundled sample into ``where/model``."""
    if model is not None:
        return model
    model = where / "model"
    subprocess.run([sys.executable, "-m", "levy_core", "fit", str(SAMPLE), "--out", str(model), "--quiet"],
                   check=True)
    return model


def unseen_stays(data_dir: Path, n: int) -> pd.DataFrame:
    """The rows of the first ``n`` set-A stays (by id) that the bundled sample does not hold."""
    full = pd.read_csv(data_dir / "set-a-long.csv.gz")
    seen = set(pd.read_csv(SAMPLE)["patient_id"].unique())
    unseen = [p for p in sorted(full["patient_id"].unique()) if p not in seen][:n]
    return full[full["patient_id"].isin(unseen)]


def package_at(rev: str, where: Path) -> Path:
    """The repository at ``rev`` extracted under ``where`` (its ``levy_core`` importable from there)."""
    where.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], capture_output=True, check=True, cwd=REPO).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def baseline_ratio(rev: str, model: Path, path: Path, n_written: int, reps: int, where: Path) -> None:
    """Scoring ``path`` with ``levy rank`` at ``rev`` and with this checkout, alternately."""
    root = package_at(rev, where / "baseline")
    base = ["env", f"PYTHONPATH={root}", sys.executable, "-m", "levy_core"]
    here = [sys.executable, "-m", "levy_core"]
    # both run from `where`: `-m` puts the working directory first on the path
    found = subprocess.run(base[:2] + [sys.executable, "-c", "import levy_core; print(levy_core.__file__)"],
                           capture_output=True, text=True, check=True, cwd=where).stdout.strip()
    if not found.startswith(str(root)):
        raise RuntimeError(f"the baseline imported {found}, not the package at {rev}")
    times: dict[str, list[float]] = {rev: [], "this checkout": []}
    for _ in range(reps):
        for name, levy in ((rev, base), ("this checkout", here)):
            times[name].append(rank_stays(levy + ["rank", str(model), str(path), "--out", str(where / "r.csv")],
                                          n_written, cwd=where)[1])
    for name, seconds in times.items():
        print(f"  {name}: scoring median {statistics.median(seconds):.2f} s (min {min(seconds):.2f})")
    print(f"  ratio of medians, this checkout / {rev}: "
          f"{statistics.median(times['this checkout']) / statistics.median(times[rev]):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--baseline", default=None, help="git revision to time alternately with this checkout")
    args = parser.parse_args()
    levy = [sys.executable, "-m", "levy_core"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = model_on_the_sample(args.model, tmp)
        stays = unseen_stays(args.data_dir, 3383)
        first_ten = stays["patient_id"].drop_duplicates().sort_values().iloc[:10]
        files = {"big": (tmp / "rank_big.csv", stays),
                 "small": (tmp / "rank_10.csv", stays[stays["patient_id"].isin(first_ten)])}
        written = {}
        for name, (path, rows) in files.items():
            rows.to_csv(path, index=False)
            written[name] = int(rows["patient_id"].nunique())
        results: dict[str, list[tuple[float, float, int]]] = {"big": [], "small": []}
        rank_stays(levy + ["rank", str(model), str(files["small"][0]), "--out", str(tmp / "r.csv")],
                   written["small"])  # warm the file cache
        for _ in range(args.reps):
            for name, (path, _) in files.items():
                cmd = levy + ["rank", str(model), str(path), "--out", str(tmp / "r.csv")]
                results[name].append(rank_stays(cmd, written[name]))
        n_big, n_small = results["big"][0][2], results["small"][0][2]
        print(f"levy rank, median of {args.reps} interleaved runs "
              f"({len(files['big'][1])} rows for {n_big:,} stays)")
        print("\n| stays | scoring (`scored … in X s`) | whole command |")
        print("|---|---|---|")
        for res in results.values():
            print(f"| {res[0][2]:,} | {statistics.median(s for _, s, _ in res):.2f} s "
                  f"(min {min(s for _, s, _ in res):.2f}) | {statistics.median(w for w, _, _ in res):.2f} s |")
        extra = statistics.median(w for w, _, _ in results["big"]) - statistics.median(w for w, _, _ in results["small"])
        print(f"\nwhole command, {n_big:,} stays minus {n_small:,} stays: {extra:.2f} s")
        if args.baseline:
            print(f"\n{n_big:,} stays, `levy rank` at {args.baseline} and this checkout alternately, {args.reps} runs each:")
            baseline_ratio(args.baseline, model, files["big"][0], written["big"], args.reps, tmp)


if __name__ == "__main__":
    main()
