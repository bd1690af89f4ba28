"""A log-linear spread on what a query knows, fitted on the training file (issue 51; exploratory,
then a confirmation registered in ``benchmarks/results/NOTES.md`` before it ran).

``spread_ceiling.py`` found that, on PhysioNet, gradient-boosted trees of the squared error on
what a query knows rank the unseen stays' errors far better than σ̂ when they are fitted on the
training file's own series. Trees need a saved form a model file can carry safely; a log-linear
model is a short table of coefficients, like the map ``s(q)`` already saved in ``model.json``.
This study fits one: a Poisson GLM (scikit-learn's ``PoissonRegressor``, log link, ``alpha``
1e-3) of the squared error in each channel's sd units on eight standardised features —
log σ̂ (sd units), log(1 + hours to the nearest observation of any channel / of the queried
channel), whether the channel was seen, log of the channel's own spread and mean step in the
series, log of how far the forecast moves from the channel's last value, log of the model
unit's size in sd units (the delta method on a log channel) — plus one intercept per channel,
on the training and stopping series' queries (in-sample errors on most; the calibration
series never touch it, so split conformal stays valid). Ablations drop feature groups.

Every spread is scaled per channel by its RMS factor on the calibration series, as
``band_per_query.py`` ranks them, and scored on the unseen queries: the risk–coverage ratio
against the per-channel constant, within-channel Spearman, the Gaussian CRPS in sd units
(mean over channels) and the 90 % Gaussian coverage.

Usage::

    python -m benchmarks.studies.loglinear_spread --panel physionet --data-dir PATH --seed S
    python -m benchmarks.studies.loglinear_spread --panel pbc [--seed S]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from scipy import stats
from sklearn.linear_model import PoissonRegressor

from benchmarks.band_per_query import LEVEL, channel_constant, panel_arguments
from benchmarks.studies.spread_ceiling import features, learner, shipped_fit
from levy_core.metrics.conditional import (
    group_rms_factors,
    risk_coverage_ratio,
    within_group_spearman,
)
from levy_core.pipeline.predict import observed_queries
from levy_core.pipeline.user_frames import predict_user_queries

ALPHA = 1e-3
Z90 = float(stats.norm.ppf(0.95))
# columns of `design`: log σ̂, gap any, gap channel, seen, own spread, own step, the move, log to_sd
ABLATIONS = {"log-linear (all eight)": list(range(8)), "  without the move": [0, 1, 2, 3, 4, 5, 7],
             "  without own spread and step": [0, 1, 2, 3, 6, 7], "  σ̂ and the leads only": [0, 1, 2, 3, 7]}


def design(x: np.ndarray) -> np.ndarray:
    """The GLM's eight columns from `spread_ceiling.features`' (n, 13), finite and clipped."""
    cols = [x[:, 2], x[:, 4], np.minimum(x[:, 5], 12.0), x[:, 6], np.log(x[:, 8] + 1e-3), np.log(x[:, 9] + 1e-3),
            np.log(x[:, 10] + 1e-2), x[:, 11]]
    return np.clip(np.nan_to_num(np.column_stack(cols), nan=0.0, posinf=20.0, neginf=-20.0), -20.0, 20.0)


def glm_inputs(x: np.ndarray, centre: np.ndarray, scale: np.ndarray, n_codes: int,
               cols: list[int] | None = None) -> np.ndarray:
    """The GLM's inputs from `spread_ceiling.features`' (n, 13): `design`'s columns (``cols`` of
    them; all by default) standardised by ``centre`` and ``scale``, then one indicator per channel."""
    z = (design(x) - centre) / scale
    return np.hstack([z if cols is None else z[:, cols], np.eye(n_codes)[x[:, -1].astype(int)]])


def in_sd_units(fitted, frame: pd.DataFrame, sd_by_channel: pd.Series, codes: dict[str, int]) -> dict:
    """A frame of `observed_queries` or predictions as the study reads it: truth, mean and σ̂ in
    sd units, the features, and which rows are usable."""
    ch = frame["channel"].to_numpy()
    sd = pd.Series(ch).map(sd_by_channel).to_numpy(np.float64)
    scaler = fitted.scaler
    mean_norm = frame["mean_norm"].to_numpy(np.float64)
    to_sd = scaler.scale_at(mean_norm, ch) / sd
    out = {"channel": ch, "sd": sd, "to_sd": to_sd, "x": features(frame, codes, to_sd),
           "mean": scaler.inverse_value(mean_norm, ch) / sd,
           "sigma": frame["spread_norm"].to_numpy(np.float64) * to_sd}
    if "y_norm" in frame:
        out["y"] = scaler.inverse_value(frame["y_norm"].to_numpy(np.float64), ch) / sd
        out["ok"] = np.isfinite(sd) & (sd > 0) & np.isfinite(out["y"]) & np.isfinite(out["mean"])
    return out


def gaussian_crps(y: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    z = (y - mean) / sd
    return sd * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi))


def rms_scaled(s_test: np.ndarray, s_cal: np.ndarray, test: dict, cal: dict) -> np.ndarray:
    """A spread at the unseen queries (n,) times its channel's RMS factor on the usable
    calibration queries (`group_rms_factors`); a channel the calibration lacks takes the median."""
    ok = cal["ok"]
    factor = pd.Series(group_rms_factors(cal["y"][ok], cal["mean"][ok], s_cal[ok], cal["channel"][ok]))
    return s_test * pd.Series(test["channel"]).astype(str).map(factor).fillna(float(factor.median())).to_numpy()


def print_rows(spreads: dict[str, tuple[np.ndarray, np.ndarray]], test: dict, cal: dict, keep: np.ndarray,
               constant: np.ndarray) -> None:
    """One markdown row per spread (name -> (at the unseen queries, at the calibration queries)):
    each scaled by its channel's RMS factor on the calibration queries, then the risk–coverage
    ratio against ``constant``, within-channel Spearman, Gaussian CRPS and 90 % coverage."""
    print("| spread | risk–coverage ÷ constant | Spearman within channel | Gaussian CRPS (sd units) | 90 % coverage |")
    print("|---|---|---|---|---|")
    y, m, ch = test["y"], test["mean"], test["channel"]
    for name, (s_test, s_cal) in spreads.items():
        sd = rms_scaled(s_test, s_cal, test, cal)
        per = pd.DataFrame({"ch": ch, "crps": gaussian_crps(y, m, sd), "cov": np.abs(y - m) <= Z90 * sd})[keep]
        print(f"| {name} | {risk_coverage_ratio(y[keep], m[keep], sd[keep], constant[keep]):.3f} | "
              f"{within_group_spearman(y[keep], m[keep], sd[keep], ch[keep]):.3f} | "
              f"{per.groupby('ch')['crps'].mean().mean():.4f} | {per['cov'].mean():.3f} |")


def bootstrap_rows(spreads: dict[str, tuple[np.ndarray, np.ndarray]], test: dict, cal: dict, keep: np.ndarray,
                   constant: np.ndarray, series: np.ndarray, repeats: int, rng: np.random.Generator) -> None:
    """Each spread's risk–coverage ratio and within-channel Spearman with a 95 % percentile
    interval over ``repeats`` resamples of the unseen series (with replacement; the calibration
    scale kept), and how much of the squared error its largest 1 % of queries carry."""
    y, m, ch = test["y"][keep], test["mean"][keep], test["channel"][keep]
    sid, const = series[keep], constant[keep]
    e2 = (y - m) ** 2
    top = np.sort(e2)[::-1][: max(1, len(e2) // 100)].sum() / e2.sum()
    print(f"\nthe largest 1 % of the {len(e2)} unseen queries carry {top:.1%} of the squared error; "
          f"95 % intervals over {repeats} resamples of the {len(np.unique(sid))} unseen series:")
    print("| spread | ratio (95 % interval) | Spearman (95 % interval) |")
    print("|---|---|---|")
    rows_of = pd.Series(np.arange(len(sid))).groupby(sid).apply(lambda r: r.to_numpy())
    names = rows_of.index.to_numpy()
    draws = [np.concatenate(rows_of.loc[rng.choice(names, size=len(names))].to_numpy()) for _ in range(repeats)]
    for name, (s_test, s_cal) in spreads.items():
        sd = rms_scaled(s_test, s_cal, test, cal)[keep]
        ratios = [risk_coverage_ratio(y[r], m[r], sd[r], const[r]) for r in draws]
        rhos = [within_group_spearman(y[r], m[r], sd[r], ch[r]) for r in draws]
        print(f"| {name} | {risk_coverage_ratio(y, m, sd, const):.3f} ({np.quantile(ratios, 0.025):.3f}–"
              f"{np.quantile(ratios, 0.975):.3f}) | {within_group_spearman(y, m, sd, ch):.3f} "
              f"({np.quantile(rhos, 0.025):.3f}–{np.quantile(rhos, 0.975):.3f}) |")


@dataclass(frozen=True)
class StudyFrames:
    """The shipped fit on a draw and its queries as the spread studies read them
    (``in_sd_units`` dicts): the unseen queries with their truth (``test``, usable where
    ``keep``), the calibration series' (``cal``) and the training and stopping series' (``inside``)."""

    spec: object
    train: pd.DataFrame
    in_hours: pd.DataFrame
    data: object
    fitted: object
    sd_by_channel: pd.Series
    codes: dict[str, int]
    test: dict
    keep: np.ndarray
    cal: dict
    inside: dict


def study_frames(args: argparse.Namespace) -> StudyFrames:
    """`spread_ceiling.shipped_fit` on the draw ``args`` names, read in each channel's sd units."""
    spec, train, ctx_obs, in_hours, queries, data, fitted = shipped_fit(args)
    sd_by_channel = train.groupby("channel")["value"].std()
    codes = {c: i for i, c in enumerate(sorted(map(str, fitted.channels)))}
    test = in_sd_units(fitted, predict_user_queries(fitted, ctx_obs, in_hours, level=LEVEL), sd_by_channel, codes)
    test["y"] = queries["value"].to_numpy(np.float64) / test["sd"]
    keep = np.isfinite(test["sd"]) & (test["sd"] > 0) & np.isfinite(test["y"]) & np.isfinite(test["mean"])
    cal = in_sd_units(fitted, observed_queries(fitted, data.builder, data.calibration_ids), sd_by_channel, codes)
    inside = in_sd_units(fitted, observed_queries(fitted, data.builder, list(dict.fromkeys(data.train_ids + data.stop_ids))),
                         sd_by_channel, codes)
    return StudyFrames(spec, train, in_hours, data, fitted, sd_by_channel, codes, test, keep, cal, inside)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    panel_arguments(parser)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--blend", action="store_true",
                        help="also the trees of spread_ceiling.py on the same rows and their geometric mean with the GLM")
    parser.add_argument("--bootstrap", type=int, default=0,
                        help="also each row's ratio and Spearman with a 95 %% interval over this many resamples of "
                             "the unseen series, and the share of the squared error in the largest 1 %%")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    frames = study_frames(args)
    spec, train, in_hours, data = frames.spec, frames.train, frames.in_hours, frames.data
    codes, test, keep, cal, fit = frames.codes, frames.test, frames.keep, frames.cal, frames.inside
    ok = fit["ok"]
    d_fit = design(fit["x"][ok])
    centre, scale = d_fit.mean(0), d_fit.std(0) + 1e-9
    n_codes = len(codes)

    def inputs(part: dict, cols: list[int], rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        return glm_inputs(part["x"][rows], centre, scale, n_codes, cols)

    spreads = {"σ̂ (shipped)": (test["sigma"], cal["sigma"])}
    target = (fit["y"] - fit["mean"])[ok] ** 2
    for name, cols in ABLATIONS.items():
        glm = PoissonRegressor(alpha=ALPHA, max_iter=500).fit(inputs(fit, cols, ok), target)
        spreads[name] = (np.sqrt(glm.predict(inputs(test, cols))), np.sqrt(glm.predict(inputs(cal, cols))))
        if name.startswith("log-linear"):
            print("coefficients (standardised: log σ̂, gap any, gap channel, seen, own spread, own step, the move, "
                  "log to_sd): " + ", ".join(f"{c:+.3f}" for c in glm.coef_[:8]))
    if args.blend:  # the trees of spread_ceiling.py on the same rows, and the geometric mean with the GLM
        trees = learner(fit["x"].shape[1]).fit(fit["x"][ok], target)
        spreads["trees"] = tuple(np.sqrt(np.maximum(trees.predict(part["x"]), 1e-12)) for part in (test, cal))
        glm_test, glm_cal = spreads["log-linear (all eight)"]
        spreads["sqrt(GLM · trees)"] = (np.sqrt(glm_test * spreads["trees"][0]), np.sqrt(glm_cal * spreads["trees"][1]))

    constant = channel_constant(train, spec.history, test["channel"], test["sd"])
    print(f"{spec.name}, draw seed {args.seed}: {int(keep.sum())} unseen queries; fitted on {int(ok.sum())} "
          f"queries of {len(data.train_ids) + len(data.stop_ids)} training and stopping series; scaled on "
          f"{int(cal['ok'].sum())} calibration queries")
    print_rows(spreads, test, cal, keep, constant)
    if args.bootstrap:
        bootstrap_rows(spreads, test, cal, keep, constant, in_hours["series_id"].astype(str).to_numpy(),
                       args.bootstrap, np.random.default_rng(args.seed))


if __name__ == "__main__":
    main()
