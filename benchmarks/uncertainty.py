"""Uncertainty quality and cost: Lévy closed form vs MC-Dropout (T=20) vs the 50-draw sampler.

For each data set the Lévy model and its softmax+dropout twin are fitted with the defaults
of ``levy fit`` (one seed), calibrated on the calibration split (global scale and split
conformal, the same treatment for both methods), then scored on the test split:

* CRPS and NLL of the scaled-Gaussian predictive (normalised scale);
* coverage of the central band at 50/80/90/95 %, raw (scaled Gaussian) and conformal;
* mean width of the 90 % band; Spearman(σ, |error|); risk–coverage area (squared error
  kept when trusting the top x %, lower is better);
* time to produce the uncertainty for the whole test split (one pass vs T passes, side by
  side in this process);
* whether each conformal band holds its level: on the test split with the binomial and the
  per-series standard error, and over 200 random series-level re-splits (``validity.py``).

Data sets: the bundled synthetic sample (interpolation), the bundled 300-patient PhysioNet
sample (forecast 24 h → 48 h), and, with ``--physionet-dir``, the full set A under the
t-PatchGNN split (forecast 24 h → 48 h; slow: trains on 2,400 stays).

Usage::

    python benchmarks/uncertainty.py [--physionet-dir PATH/TO/physionet2012] [--epochs 40]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from levy_core import metrics
from levy_core.data import load_sample, read_csv
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline import evaluation, predict, recipe
from levy_core.training.train import TrainConfig

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common.validity import print_channel_comparison, print_validity  # noqa: E402

LEVELS = ("0.5", "0.8", "0.9", "0.95")
validity: list[tuple] = []  # (data set, fitted, calibration predictions, test predictions)


def _risk_area(df: pd.DataFrame, mean: str, std: str) -> float:
    return metrics.risk_coverage_area(df["y_norm"], df[mean], df[std])


def score(name: str, obs, task: TaskConfig, epochs: int) -> list[dict]:
    t0 = time.perf_counter()
    fitted = recipe.fit(obs, task=task, train=TrainConfig(epochs=epochs))
    fit_s = time.perf_counter() - t0
    result, pred = evaluation.evaluate(fitted, obs, mc_passes=20, sampler_draws=50)
    cal = predict.split_predictions(fitted, obs, "calibration", mc_passes=20)
    validity.append((name, fitted, cal, pred))
    lv, mc, sm = result["levy"], result["mc_dropout"], result["sampler_50"]
    rows = []
    for label, m, mean_col, std_col in (("Lévy closed form (1 pass)", lv, "mean_norm", "sigma_norm"),
                                         ("MC-Dropout (T=20)", mc, "mc_mean_norm", "mc_std_norm"),
                                         ("last value + per-channel Gaussian spread", result["last_value"],
                                          "lv_mean_norm", "lv_std_norm")):
        rows.append({
            "data": name, "method": label, "n_test": result["n_test"], "mse": m["mse"], "crps": m["crps"],
            "nll": m["nll"],
            **{f"cov{lv_}": m["coverage"][lv_] for lv_ in LEVELS},
            **{f"conf{lv_}": m["conformal_coverage"][lv_] for lv_ in LEVELS},
            "width90": m["mean_width_90"], "spearman": m["spearman_sigma_abs_error"],
            "risk_area": _risk_area(pred, mean_col, std_col), "seconds": m["seconds"],
        })
    rows.append({"data": name, "method": f"50-draw sampler ({sm['n_queries']} queries)", "n_test": sm["n_queries"],
                 "crps": sm["crps"], "crps_closed_same": sm["closed_form_crps_same_queries"]})
    print(f"{name}: fitted in {fit_s:.0f} s; Lévy uncertainty {lv['seconds']:.3f} s vs MC-Dropout "
          f"{mc['seconds']:.3f} s → {mc['seconds'] / lv['seconds']:.1f}× cheaper; softmax twin MSE "
          f"{result['softmax']['mse']:.3e}", flush=True)
    return rows


def _fmt(x, spec=".3g") -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, spec)


def print_table(rows: list[dict]) -> None:
    print("\n| data | method | n | MSE | CRPS | NLL | cov 50/80/90/95 (raw) | cov 50/80/90/95 (conformal) "
          "| width 90 | Spearman | risk–cov. area | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "cov0.5" in r:
            raw = "/".join(_fmt(r[f"cov{lv}"], ".3f") for lv in LEVELS)
            conf = "/".join(_fmt(r[f"conf{lv}"], ".3f") for lv in LEVELS)
            print(f"| {r['data']} | {r['method']} | {r['n_test']} | {_fmt(r['mse'])} | {_fmt(r['crps'], '.4g')} | "
                  f"{_fmt(r['nll'])} | {raw} | {conf} | {_fmt(r['width90'])} | {_fmt(r['spearman'], '.3f')} | "
                  f"{_fmt(r['risk_area'])} | {_fmt(r['seconds'], '.3f')} |")
        else:
            print(f"| {r['data']} | {r['method']} | {r['n_test']} | - | {_fmt(r['crps'], '.4g')} "
                  f"(closed form on the same queries: {_fmt(r['crps_closed_same'], '.4g')}) | - | - | - | - | - | - | - |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--physionet-dir", type=Path, default=None)
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args()
    rows = []
    rows += score("synthetic (interpolate)", load_sample("Synthetic multichannel"), TaskConfig("interpolate"),
                  args.epochs)
    rows += score("PhysioNet sample, 300 stays (forecast)", load_sample("PhysioNet 2012 ICU (300 patients)"),
                  TaskConfig("forecast", cutoff=24.0), args.epochs)
    if args.physionet_dir is not None:
        obs = read_csv(args.physionet_dir / "set-a-long.csv.gz")
        rows += score("PhysioNet set A, 3,997 stays (forecast)", obs, TaskConfig("forecast", cutoff=24.0), args.epochs)
    print_table(rows)
    for name, fitted, cal, pred in validity:
        print_validity(fitted, cal, pred, label=name, calibration_series=fitted.training["n_series"]["calibration"])
        print_channel_comparison(cal, pred, label=name, min_queries=50)


if __name__ == "__main__":
    main()
