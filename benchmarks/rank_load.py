"""`levy rank` of 3,383 PhysioNet set-A stays alone and beside one `levy fit`: does it hold?

Two processes that each use every core oversubscribe them; with OpenMP's default wait
policy the waiting threads spin and the scoring pass slows several-fold (issue 24: ×5.6
beside one fit on 2 cores). This measures the scoring time (``levy rank``'s last line,
``scored N series in X s``: episodes and passes, no reading) and the whole command:

1. **alone**: ``levy rank`` of the 3,383 stays (``benchmarks/rank.py``'s stays: set-A stays
   the bundled sample never held; written as Parquet, so that reading, which the scoring
   time leaves out anyway, keeps the benchmark short) as a subprocess, each variant in
   turn, ``--reps`` times;
2. **beside a fit**: the same, while one ``levy fit`` of the first 2,000 set-A stays (a
   medium model, ``--epochs 100000``: it trains for the whole measurement) runs as another
   process; it is started once per fit setting and waited for until it trains (30 s after
   it has read its data, or its first epoch if sooner); its CPU time is sampled: the cores
   it took during each run are printed, so a fit that idled cannot pass for load.

Variants (each a setting of the rank and of the fit it runs beside; ``--variants``):

- ``before``: ``LEVY_THREADS=torch``: PyTorch's defaults as before the thread policy (an
  OpenMP team over all cores per operator, OpenMP's default spinning wait) for both, and
  the fit at the rank's priority (``--nice 0``);
- ``passive``: as ``before`` with ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads sleep);
- ``after``: the ``levy`` defaults now (``levy_core.runtime.threads``: waiting threads sleep; the
  rank scores one batch per core, each on one thread; the fit one team over the cores, at
  niceness 10: ``levy_core.runtime.priority``);
- ``fit-nice-0``: as ``after``, the fit with ``--nice 0`` (at the rank's priority: the
  defaults before ``levy fit`` lowered its own);
- ``after-1``: as ``after``, the rank with ``--threads 1``;
- ``split``: as ``after``, the rank and the fit with ``--threads 1`` each.

The ratio beside / alone is of the medians. The load average before each phase is printed:
the machine may be shared, so compare the variants with one another (they are interleaved).

Usage::

    python benchmarks/rank_load.py --data-dir PATH/TO/physionet2012 [--model DIR] [--reps 3]
        [--variants before,passive,after,fit-nice-0,after-1]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.rank import model_on_the_sample, unseen_stays  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LEVY = [sys.executable, "-m", "levy_core"]
FIT_STAYS = 2000  # the background fit's stays (the first by id): a medium model, minutes per epoch
SETTLE_SECONDS = 30.0  # after reading, the fit builds its episodes before it trains
CLEAN = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "LEVY_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class Variant:
    """One setting: environment and extra options of the rank and of the fit beside it."""

    name: str
    env: dict[str, str]
    rank_args: tuple[str, ...] = ()
    fit_args: tuple[str, ...] = ()

    @property
    def fit_key(self) -> tuple:
        return tuple(sorted(self.env.items())), self.fit_args


VARIANTS = {
    "before": Variant("before", {"LEVY_THREADS": "torch"}, fit_args=("--nice", "0")),
    "passive": Variant("passive", {"LEVY_THREADS": "torch", "OMP_WAIT_POLICY": "PASSIVE"}, fit_args=("--nice", "0")),
    "after": Variant("after", {}),
    "fit-nice-0": Variant("fit-nice-0", {}, fit_args=("--nice", "0")),
    "after-1": Variant("after-1", {}, ("--threads", "1")),
    "split": Variant("split", {}, ("--threads", "1"), ("--threads", "1")),
}


@dataclass
class Runs:
    scoring: list[float] = field(default_factory=list)
    whole: list[float] = field(default_factory=list)
    fit_cores: list[float] = field(default_factory=list)


def env_of(variant: Variant) -> dict[str, str]:
    """This process's environment without any thread setting, plus the variant's."""
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    return {**env, **variant.env}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its waited-for children (``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


class BackgroundFit:
    """``levy fit`` of ``data`` as a subprocess, restarted if it ever ends."""

    def __init__(self, data: Path, out: Path, variant: Variant) -> None:
        self.cmd = [*LEVY, "fit", str(data), "--out", str(out), "--epochs", "100000", *variant.fit_args]
        self.env, self.log = env_of(variant), out.with_suffix(".log")
        self.restarts = -1
        self.start()

    def start(self) -> None:
        self.restarts += 1
        self.log_file = self.log.open("a")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log_file, stderr=subprocess.STDOUT, env=self.env,
                                     cwd=REPO)
        # training starts once the data is read and the episodes are built: wait until the
        # data is read ("data: …"), then SETTLE_SECONDS or the first epoch's bar if sooner
        t0, read = time.time(), None
        while True:
            text = self.log.read_text()
            if read is None and "data:" in text:
                read = time.time()
            if read is not None and ("epoch" in text.split("data:")[-1] or time.time() - read > SETTLE_SECONDS):
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"the background fit ended: {text[-2000:]}")
            if time.time() - t0 > 1800:
                raise RuntimeError("the background fit did not read its data within 30 minutes")
            time.sleep(1.0)

    def check(self) -> None:
        if self.proc.poll() is not None:
            self.start()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log_file.close()


def rank_once(variant: Variant, model: Path, stays: Path, n: int, out: Path, fit: BackgroundFit | None,
              runs: Runs) -> None:
    """One ``levy rank`` in the variant's environment: its scoring and whole-command seconds
    (and, beside a fit, the cores the fit used meanwhile) appended to ``runs``."""
    cmd = [*LEVY, "rank", str(model), str(stays), "--out", str(out), "--quiet", *variant.rank_args]
    if fit is not None:
        fit.check()
        cpu0 = cpu_seconds(fit.proc.pid)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env_of(variant), cwd=REPO)
    whole = time.perf_counter() - t0
    match = re.search(r"scored (\d+) series in ([\d.]+) s", proc.stdout)
    if proc.returncode or not match or int(match.group(1)) != n:
        raise RuntimeError(f"{' '.join(cmd)}: expected 'scored {n} series', got {proc.stdout!r} {proc.stderr!r}")
    runs.scoring.append(float(match.group(2)))
    runs.whole.append(whole)
    if fit is not None:
        runs.fit_cores.append((cpu_seconds(fit.proc.pid) - cpu0) / whole)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--variants", default="before,passive,after,after-1")
    args = parser.parse_args()
    variants = [VARIANTS[v] for v in args.variants.split(",")]
    print(f"python benchmarks/rank_load.py --reps {args.reps} --variants {args.variants}; "
          f"{os.cpu_count()} CPUs, load average {load()} at the start, this process's niceness {os.nice(0)}",
          flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = model_on_the_sample(args.model, tmp)
        stays_path = tmp / "stays.parquet"
        stays = unseen_stays(args.data_dir, 3383)
        stays.to_parquet(stays_path, index=False)
        n = int(stays["patient_id"].nunique())
        fit_data = tmp / "fit.parquet"
        full = pd.read_csv(args.data_dir / "set-a-long.csv.gz")
        full[full["patient_id"].isin(sorted(full["patient_id"].unique())[:FIT_STAYS])].to_parquet(fit_data, index=False)
        del full
        alone = {v.name: Runs() for v in variants}
        beside = {v.name: Runs() for v in variants}
        rank_once(variants[0], model, stays_path, n, tmp / "r.csv", None, Runs())  # warm the file cache
        print(f"alone: load average {load()}", flush=True)
        for _ in range(args.reps):
            for v in variants:
                rank_once(v, model, stays_path, n, tmp / "r.csv", None, alone[v.name])
        groups: dict[tuple, list[Variant]] = {}
        for v in variants:
            groups.setdefault(v.fit_key, []).append(v)
        for k, group in enumerate(groups.values()):
            print(f"starting the fit beside {', '.join(v.name for v in group)}: load average {load()}", flush=True)
            fit = BackgroundFit(fit_data, tmp / f"fit{k}", group[0])
            print(f"  the fit trains (load average {load()})", flush=True)
            try:
                for _ in range(args.reps):
                    for v in group:
                        rank_once(v, model, stays_path, n, tmp / "r.csv", fit, beside[v.name])
            finally:
                fit.stop()
            if fit.restarts:
                print(f"  note: the fit ended and was restarted {fit.restarts} time(s)")
        print(f"\nload average at the end {load()}\n")
        print("| variant | scoring alone | scoring beside a fit | ratio | whole command alone / beside | "
              "fit's CPU during the runs |")
        print("|---|---|---|---|---|---|")
        for v in variants:
            a, b = alone[v.name], beside[v.name]
            sa, sb = statistics.median(a.scoring), statistics.median(b.scoring)
            print(f"| {v.name} | {sa:.2f} s ({', '.join(f'{x:.2f}' for x in a.scoring)}) | {sb:.2f} s "
                  f"({', '.join(f'{x:.2f}' for x in b.scoring)}) | ×{sb / sa:.2f} | "
                  f"{statistics.median(a.whole):.1f} s / {statistics.median(b.whole):.1f} s | "
                  f"{statistics.median(b.fit_cores):.2f} cores |")


if __name__ == "__main__":
    main()
