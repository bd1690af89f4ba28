"""`levy fit` then `levy evaluate` on each bundled sample, as a user runs them: wall times.

Usage::

    python benchmarks/samples.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLES = [
    ("physionet2012_sample.csv.gz", "forecast"),
    ("synthetic_multichannel.csv", "interpolate"),
    ("single_series.csv", "forecast"),
]


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0


def main() -> None:
    levy = [sys.executable, "-m", "levy_core"]
    print("| sample | task | `levy fit` | `levy evaluate` | Lévy MSE | softmax MSE | Lévy 90 % cov. (conformal) |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, task in SAMPLES:
            data = REPO / "sample_data" / name
            model, out = Path(tmp) / name, Path(tmp) / f"{name}.json"
            fit_s = timed(levy + ["fit", str(data), "--out", str(model), "--task", task, "--quiet"])
            eval_s = timed(levy + ["evaluate", str(model), str(data), "--json", str(out),
                                   "--predictions", str(Path(tmp) / f"{name}.pred.csv")])
            res = json.loads(out.read_text())
            print(f"| {name} | {task} | {fit_s:.1f} s | {eval_s:.1f} s | {res['levy']['mse']:.3e} | "
                  f"{res['softmax']['mse']:.3e} | {res['levy']['conformal_coverage']['0.9']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
