"""A spread learned on out-of-fold errors of the training file (issue 51; exploratory, then a
confirmation registered in ``benchmarks/results/NOTES.md`` before it ran).

``loglinear_spread.py`` and ``spread_ceiling.py --explore`` learn a spread from the training
file's training and stopping series, whose errors are mostly in-sample: the network was fitted
on them, so their errors are smaller and follow σ̂ differently from a new series'. Here the
same learners are fitted on **out-of-fold** errors instead: the training series are cut into
``K`` folds of whole series; for each fold a network of the shipped size and recipe (same
scaler and transforms, same calibration and test series, seed 0) is fitted on the other
folds' training and stopping series, and predicts the fold's series from their context
before the cut-off, as a new series would be. The learners see those errors and features
(never the calibration or test series, so split conformal on them stays valid), and are
applied to the shipped network's features on the unseen queries.

Rows: σ̂ as shipped; the Poisson GLM of ``loglinear_spread.py`` (eight features plus channel
intercepts) fitted in-sample and out-of-fold; the gradient-boosted trees of
``spread_ceiling.py`` fitted in-sample and out-of-fold. Each spread is scaled per channel by
its RMS factor on the calibration series and scored on the unseen queries like
``loglinear_spread.py``.

Usage::

    python -m benchmarks.studies.crossfit_spread --panel physionet --data-dir PATH --seed S
    python -m benchmarks.studies.crossfit_spread --panel pbc [--seed S] [--folds K]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import torch
from sklearn.linear_model import PoissonRegressor

from benchmarks.band_per_query import channel_constant, panel_arguments
from benchmarks.studies.loglinear_spread import ALPHA, design, in_sd_units, print_rows, study_frames
from benchmarks.studies.spread_ceiling import learner
from levy_core.data import from_frame
from levy_core.episodes.tasks import Split
from levy_core.pipeline.predict import observed_queries
from levy_core.pipeline.recipe import assemble, prepare_fit, resolve_size, train_levy_model
from levy_core.training.train import TrainConfig


def out_of_fold(train: pd.DataFrame, spec, data, fitted, folds: int, sd_by_channel: pd.Series,
                codes: dict[str, int]) -> dict:
    """Every training and stopping series predicted by a network that never saw it, as
    ``in_sd_units`` frames concatenated (the ``K`` fold networks' own features)."""
    obs = from_frame(train, time_unit=spec.unit)
    split = data.split
    pool = list(dict.fromkeys(data.train_ids + data.stop_ids))
    order = [pool[i] for i in np.random.default_rng(0).permutation(len(pool))]
    parts = []
    for k in range(folds):
        held = set(order[k::folds])
        fold_split = Split("series", split.seed, [s for s in split.train if s not in held], list(split.calibration),
                           list(split.test), stopping=[s for s in split.stopping if s not in held])
        fold_data = prepare_fit(obs.frame, fitted.task, seed=0, split=fold_split, scaler=fitted.scaler)
        cfg = fold_data.model_config(resolve_size("auto", obs.n_series), "rate")
        fold_fit = assemble(fold_data, cfg, TrainConfig(seed=0), train_levy_model(fold_data, cfg, TrainConfig(seed=0)))
        ids = [s for s in order[k::folds] if s in fold_data.builder.series]
        parts.append(in_sd_units(fold_fit, observed_queries(fold_fit, fold_data.builder, ids), sd_by_channel, codes))
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    panel_arguments(parser)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    frames = study_frames(args)
    spec, train, data, fitted = frames.spec, frames.train, frames.data, frames.fitted
    codes, test, keep, cal, inside = frames.codes, frames.test, frames.keep, frames.cal, frames.inside
    sd_by_channel = frames.sd_by_channel
    oof = out_of_fold(train, spec, data, fitted, args.folds, sd_by_channel, codes)
    n_codes = len(codes)

    spreads = {"σ̂ (shipped)": (test["sigma"], cal["sigma"])}
    for label, part in (("in-sample", inside), ("out-of-fold", oof)):
        ok = part["ok"]
        d_fit = design(part["x"][ok])
        centre, scale = d_fit.mean(0), d_fit.std(0) + 1e-9

        def inputs(frame: dict, centre=centre, scale=scale) -> np.ndarray:
            z = (design(frame["x"]) - centre) / scale
            return np.hstack([z, np.eye(n_codes)[frame["x"][:, -1].astype(int)]])
        target = (part["y"] - part["mean"])[ok] ** 2
        glm = PoissonRegressor(alpha=ALPHA, max_iter=500).fit(inputs(part)[ok], target)
        print(f"GLM {label} coefficients (standardised: log σ̂, gap any, gap channel, seen, own spread, own step, "
              "the move, log to_sd): " + ", ".join(f"{c:+.3f}" for c in glm.coef_[:8]))
        spreads[f"log-linear, {label} ({int(ok.sum())} queries)"] = (
            np.sqrt(glm.predict(inputs(test))), np.sqrt(glm.predict(inputs(cal))))
        trees = learner(part["x"].shape[1]).fit(part["x"][ok], target)
        spreads[f"trees, {label}"] = (np.sqrt(np.maximum(trees.predict(test["x"]), 1e-12)),
                                      np.sqrt(np.maximum(trees.predict(cal["x"]), 1e-12)))

    constant = channel_constant(train, spec.history, test["channel"], test["sd"])
    print(f"{spec.name}, draw seed {args.seed}: {int(keep.sum())} unseen queries; {args.folds} folds of "
          f"{len(set(data.train_ids + data.stop_ids))} training and stopping series; scaled on "
          f"{int(cal['ok'].sum())} calibration queries")
    print_rows(spreads, test, cal, keep, constant)

if __name__ == "__main__":
    main()
