"""What calibrating a panel's band for new series adds to a fit: the seconds of
``new_series_calibrators`` (one more pass over the calibration and test series, with the
MC-Dropout passes) against the whole fit, on draw 0 of Framingham and of PhysioNet.

Usage::

    python -m benchmarks.studies.new_series_cost --data-dir PATH/TO/physionet2012
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

import levy_core.pipeline.recipe as recipe
from benchmarks.band_per_query import PANELS, draw, load
from levy_core.data import from_frame
from levy_core.episodes.tasks import TaskConfig
from levy_core.training.train import TrainConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, help="PhysioNet 2012 set A (without it: Framingham only)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for panel in ("framingham", "physionet") if args.data_dir else ("framingham",):
        spec = PANELS[panel]
        train, _, _ = draw(panel, load(panel, args.data_dir), spec, 0)
        hours = 24.0 if spec.unit == "days" else 1.0
        t0 = time.perf_counter()
        data = recipe.prepare_fit(from_frame(train, time_unit=spec.unit).frame,
                                  TaskConfig("forecast", cutoff=spec.history * hours), seed=0)
        cfg = data.model_config(recipe.resolve_size("auto", train["series_id"].nunique()), "rate")
        levy = recipe.train_levy_model(data, cfg, TrainConfig(seed=0))
        twin = recipe.train_twin_model(data, cfg, TrainConfig(seed=0))
        spent: dict[str, float] = {}
        original = recipe.new_series_calibrators

        def timed(*a, original=original, spent=spent, **k):  # the same function, timed where assemble calls it
            start = time.perf_counter()
            out = original(*a, **k)
            spent["new"] = time.perf_counter() - start
            return out

        recipe.new_series_calibrators = timed
        try:
            recipe.assemble(data, cfg, TrainConfig(seed=0), levy, twin, mc_passes=20)
        finally:
            recipe.new_series_calibrators = original
        whole = time.perf_counter() - t0
        print(f"{spec.name}, draw 0: the whole fit {whole:.1f} s, of which the band for new series "
              f"{spent['new']:.1f} s ({100 * spent['new'] / whole:.1f} %)")


if __name__ == "__main__":
    main()
