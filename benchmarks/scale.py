"""`levy rank` at scale: bounded memory, series per second in-process and on Ray.

1. Fits (or reuses, with ``--model``) a model on the bundled 300-patient PhysioNet sample
   (``--epochs``, default 2: accuracy does not matter here, speed and memory do).
2. Generates PhysioNet-shaped Parquet files of 3,383, 10,000 and 100,000 stays, a chunk
   of stays at a time (the generator holds one chunk): each stay is a bundled patient's
   observations (37 channels, 0–48 h, irregular, ≈ 440 rows) with its times jittered by up
   to ±15 min and its values by ±2 %, under a new id; rows grouped by stay.
3. Runs ``levy rank`` on each as a subprocess inside a fresh wrapper process and reads
   the wrapper's ``RUSAGE_CHILDREN`` peak resident memory (one child per wrapper, so one
   run's peak), the whole command's wall time and the ``scored N series in X s`` line;
   in-process, then ``--engine ray --workers 1`` and ``2`` (a local Ray of workers + 1
   CPUs, started by the command and not timed: ``X`` is the pipeline's wall time).
4. Times the scoring of the 3,383 stays (median of ``--reps``) and profiles one scoring
   pass (:func:`levy_core.pipeline.ranking.score_series`, cProfile), beside the paper's 1.4 s.

Usage::

    python benchmarks/scale.py [--sizes 10000 100000] [--ray-sizes 10000] [--reps 3]
                               [--model DIR] [--workdir DIR] [--out benchmarks/results/scale_DATE.txt]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data" / "physionet2012_sample.csv.gz"
PAPER_SECONDS = 1.4  # the paper's ranking of 3,383 stays
STAYS = 3383
GENERATE_CHUNK = 2000  # stays generated and written at a time
LEVY = [sys.executable, "-m", "levy_core"]

# a fresh process per measurement: RUSAGE_CHILDREN is the peak of its one child
PEAK_WRAPPER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": proc.returncode, "wall": wall, "peak_mib": peak_kib / 1024, "stdout": proc.stdout,
                  "stderr": proc.stderr[-3000:]}))
"""


def generate(path: Path, n_stays: int, seed: int = 0) -> int:
    """A PhysioNet-shaped Parquet file of ``n_stays`` stays; returns its rows."""
    sample = pd.read_csv(SAMPLE, dtype={"patient_id": str}).sort_values(["patient_id", "time_hours"], kind="stable")
    codes, patients = pd.factorize(sample["patient_id"])
    starts = np.searchsorted(codes, np.arange(len(patients)))
    lengths = np.diff(np.append(starts, len(codes)))
    time_h = sample["time_hours"].to_numpy()
    channel = sample["parameter"].to_numpy(dtype=object)
    value = sample["value"].to_numpy()
    rng = np.random.default_rng(seed)
    rows, writer = 0, None
    for first in range(0, n_stays, GENERATE_CHUNK):
        n = min(GENERATE_CHUNK, n_stays - first)
        pick = rng.integers(0, len(patients), size=n)
        counts = lengths[pick]
        idx = np.repeat(starts[pick] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        ids = np.repeat(np.array([f"stay{first + i:07d}" for i in range(n)], dtype=object), counts)
        t = np.clip(np.round((time_h[idx] + rng.uniform(-0.25, 0.25, idx.size)) * 60) / 60, 0.0, 48.0)
        v = np.round(value[idx] * (1 + rng.uniform(-0.02, 0.02, idx.size)), 3)
        table = pa.table({"patient_id": pa.array(ids, pa.string()), "time_hours": t,
                          "parameter": pa.array(channel[idx], pa.string()), "value": v})
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=200_000)
        rows += table.num_rows
    writer.close()
    return rows


def measure(cmd: list[str], threads: int) -> dict:
    """One command in a fresh wrapper: rc, wall seconds, peak RSS (MiB), output."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    proc = subprocess.run([sys.executable, "-c", PEAK_WRAPPER, *cmd], capture_output=True, text=True, check=True,
                          env=env)
    result = json.loads(proc.stdout)
    if result["rc"] != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {result['stderr']}")
    match = re.search(r"scored (\d+) series in ([\d.]+) s", result["stdout"])
    if not match:
        raise RuntimeError(f"unexpected output: {result['stdout']!r}")
    result["n"], result["seconds"] = int(match.group(1)), float(match.group(2))
    return result


def profile_scoring(model: Path, data: Path, reps: int) -> tuple[dict[int, list[float]], str]:
    """Scoring seconds of ``reps`` passes over the 3,383 stays with 1 and 2 torch threads
    (interleaved), and the profile of one pass with 1 thread."""
    import torch

    from levy_core.data.parquet import read_parquet
    from levy_core.pipeline.modelfile import load_model
    from levy_core.pipeline.ranking import score_series, warm_up

    fitted = load_model(model)
    obs = read_parquet(data)
    seconds: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(reps):
        for threads in seconds:
            torch.set_num_threads(threads)
            warm_up(fitted)
            seconds[threads].append(score_series(fitted, obs)[1])
    torch.set_num_threads(1)
    prof = cProfile.Profile()
    prof.enable()
    score_series(fitted, obs)
    prof.disable()
    text = io.StringIO()
    stats = pstats.Stats(prof, stream=text)
    stats.sort_stats("cumulative").print_stats(r"ranking.py|prepared.py|tasks.py|model.py|layers.py", 12)
    stats.sort_stats("tottime").print_stats(12)
    return seconds, "\n".join(ln for ln in text.getvalue().splitlines() if ln.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--ray-sizes", type=int, nargs="*", default=[10_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the generated files here")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each levy rank (1: steady on a "
                        "shared machine, where 2 threads swing several-fold with the other load)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "scale_2026-12-01.txt")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        lines = [f"benchmarks/scale.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                 f"load average before: {Path('/proc/loadavg').read_text().split()[:3]}"]
        model = args.model
        if model is None:
            model = work / "model"
            subprocess.run(LEVY + ["fit", str(SAMPLE), "--out", str(model), "--epochs", str(args.epochs),
                                   "--no-twin", "--quiet"], check=True)
        files = {}
        for n in sorted({STAYS, *args.sizes, *args.ray_sizes}):
            path = work / f"stays_{n}.parquet"
            t0 = time.perf_counter()
            rows = generate(path, n) if not path.exists() else pq.ParquetFile(path).metadata.num_rows
            files[n] = path
            lines.append(f"generated {n:,} stays: {rows:,} rows, {path.stat().st_size / 2**20:,.0f} MiB Parquet "
                         f"({time.perf_counter() - t0:.0f} s)")
            print(lines[-1], flush=True)
        lines += ["", f"levy rank as a subprocess, OMP_NUM_THREADS={args.threads}; 'scored': the command's own "
                  "'scored N series in X s' (in-process: scoring only; Ray: the pipeline's wall time); peak RSS of "
                  "the levy process (on Ray: the driver's; the workers are Ray's processes)",
                  "", "| stays | engine | scored | whole command | series/s (whole command) | peak RSS |",
                  "|---|---|---|---|---|---|"]
        runs = [(n, "in-process", []) for n in args.sizes]
        runs += [(n, f"Ray, {w} worker{'s' if w > 1 else ''}", ["--engine", "ray", "--workers", str(w)])
                 for n in args.ray_sizes for w in (1, 2)]
        peaks = {}
        for n, engine, extra in runs:
            r = measure(LEVY + ["rank", str(model), str(files[n]), "--out", str(work / "rank.parquet"), "--quiet",
                                *extra], args.threads)
            if r["n"] != n:
                raise RuntimeError(f"ranked {r['n']} series, {n} written")
            if engine == "in-process":
                peaks[n] = r["peak_mib"]
            lines.append(f"| {n:,} | {engine} | {r['seconds']:.1f} s | {r['wall']:.1f} s | {n / r['wall']:,.0f} | "
                         f"{r['peak_mib']:,.0f} MiB |")
            print(lines[-1], flush=True)
        if len(peaks) >= 2:
            lo, hi = min(peaks.values()), max(peaks.values())
            lines.append(f"\nin-process peak RSS, largest vs smallest file: {hi / lo - 1:+.1%} "
                         f"({'within' if hi <= 1.2 * lo else 'NOT within'} 20 %)")
        seconds, profile = profile_scoring(model, files[STAYS], args.reps)
        lines += ["", f"scoring {STAYS:,} stays in this process (score_series, after a warm-up; the paper: "
                  f"{PAPER_SECONDS} s, the goal: {PAPER_SECONDS / 2} s), {args.reps} interleaved runs:"]
        lines += [f"  {t} torch thread{'s' if t > 1 else ''}: median {statistics.median(v):.2f} s (min {min(v):.2f})"
                  for t, v in seconds.items()]
        lines += [f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}", "",
                  "one scoring pass (1 thread), cProfile:", profile]
        text = "\n".join(lines) + "\n"
        args.out.write_text(text)
        print(text)


if __name__ == "__main__":
    main()
