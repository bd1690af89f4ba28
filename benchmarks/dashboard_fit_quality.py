"""The dashboard's default fit against `levy fit`'s defaults, on each bundled sample.

For every sample the dashboard offers, on the same split (seed 0) and the same task (the
dashboard's default for that data: interpolation on many series, rolling-origin forecasts
on few), three Lévy models are fitted in this process with one thread and scored on the
test split (CRPS, normalised units, as ``levy evaluate`` reports it):

* **dashboard**: the dashboard's default ``FitSettings`` (40 epochs, early stopping, the
  600 s safety cap) through ``levy_dashboard.fitting.fits.fit_configs`` — what a Refit or an upload runs;
* **levy fit**: ``levy fit``'s defaults (``TrainConfig()``: 40 epochs, no cap; size auto);
* **old 3.5 s budget** (for reference): the dashboard's previous default, 200 epochs cut
  by a 3.5 s wall-clock budget — its result depends on the machine's load.

Usage::

    python benchmarks/dashboard_fit_quality.py [--only NAME ...] [--skip-old]

Prints one row per sample and model: CRPS, its ratio to `levy fit`'s, epochs run, what
stopped training, and seconds. The requirement: dashboard within 2 % of `levy fit`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from levy_dashboard.fitting.fits import FitSettings, fit_configs  # noqa: E402

from levy_core.data import SAMPLES, read_csv  # noqa: E402
from levy_core.episodes.tasks import MIN_SERIES_FOR_SERIES_SPLIT, TaskConfig  # noqa: E402
from levy_core.pipeline.evaluation import evaluate  # noqa: E402
from levy_core.pipeline.recipe import fit  # noqa: E402
from levy_core.runtime.threads import using_threads  # noqa: E402
from levy_core.training.train import TrainConfig  # noqa: E402


def _score(obs, task: TaskConfig, train: TrainConfig, size: str) -> tuple[float, dict, float]:
    t0 = time.perf_counter()
    fitted = fit(obs, task=task, train=train, size=size, train_twin=False)
    seconds = time.perf_counter() - t0
    result, _ = evaluate(fitted, obs, mc_passes=0)
    return float(result["levy"]["crps"]), fitted.training["levy"], seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--skip-old", action="store_true", help="leave out the old 3.5 s budget row")
    args = parser.parse_args(argv)
    print(f"{'sample':36} {'model':16} {'CRPS':>8} {'ratio':>7} {'epochs':>6} {'stopped by':>10} {'seconds':>8}")
    with using_threads(1):
        for name in args.only or list(SAMPLES):
            obs = read_csv(SAMPLES[name])
            kind = "forecast" if obs.n_series < MIN_SERIES_FOR_SERIES_SPLIT else "interpolate"  # the dashboard's default
            settings = FitSettings(task=kind)
            task, train = fit_configs(settings)
            rows = {"levy fit": (TaskConfig(kind), TrainConfig(), "auto"),
                    "dashboard": (TaskConfig(**task), TrainConfig(**train), settings.size)}
            if not args.skip_old:
                rows["old 3.5 s budget"] = (TaskConfig(kind), TrainConfig(epochs=200, max_seconds=3.5), "small")
            base = None
            for label, (t, tr, size) in rows.items():
                crps, info, seconds = _score(obs, t, tr, size)
                base = crps if base is None else base
                print(f"{name:36} {label:16} {crps:8.4f} {crps / base:7.3f} {info['epochs_run']:6d} "
                      f"{info.get('stopped_by', ''):>10} {seconds:8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
