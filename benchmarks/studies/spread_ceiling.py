"""How well can any spread rank the errors on the unseen panels? (issue 51; protocol in
``benchmarks/results/NOTES.md``, 2026-12-07 13:55 UTC, written before the first run.)

On the draws and the shipped fit of ``benchmarks/band_per_query.py``, the risk–coverage ratio
(against the per-channel constant) and the within-channel Spearman of: σ̂ (each channel's RMS
factor from the calibration series); a learned spread ``sqrt(E[e² | x])`` (gradient-boosted
trees on what a query knows) fitted on the calibration series' queries; the same learner
cross-fitted on the unseen queries themselves (5 folds of whole series: an optimistic ceiling);
and |e| itself (the perfect ranking).

Usage::

    python -m benchmarks.studies.spread_ceiling --panel pbc
    python -m benchmarks.studies.spread_ceiling --panel physionet --data-dir PATH --seed S
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import torch
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import GroupKFold

from benchmarks.band_per_query import LEVEL, PANELS, channel_constant, draw, load, panel_arguments
from levy_core.calibration.query_scale import CONTEXT_COLUMNS, fit_query_scale
from levy_core.data import from_frame
from levy_core.episodes.tasks import TaskConfig
from levy_core.metrics.conditional import (
    group_rms_factors,
    risk_coverage_ratio,
    within_group_spearman,
)
from levy_core.pipeline.predict import observed_queries
from levy_core.pipeline.recipe import assemble, prepare_fit, resolve_size, train_levy_model
from levy_core.pipeline.user_frames import predict_user_queries
from levy_core.training.train import TrainConfig

LEARNER = {"loss": "poisson", "max_iter": 200, "learning_rate": 0.05, "max_leaf_nodes": 15,
           "min_samples_leaf": 50, "random_state": 0}


def features(frame: pd.DataFrame, channel_codes: dict[str, int], to_sd: np.ndarray) -> np.ndarray:
    """What a query knows, shape (n, 13): σ̂'s terms, log σ̂ in sd units (``to_sd`` (n,): the
    model unit's size in sd units at the query's mean, the delta method on a log channel), the
    leads, the channel's context in the series, how far the forecast moves from the channel's
    last value (sd units), and the channel's code (categorical, last column)."""
    gap_c = frame["gap_channel"].to_numpy(np.float64)
    seen = np.isfinite(gap_c)
    near = np.nan_to_num(frame["near_value"].to_numpy(np.float64))
    mean = frame["mean_norm"].to_numpy(np.float64)
    cols = [frame["evidence_term"], frame["disagreement_term_norm"], np.log(frame["spread_norm"] * to_sd + 1e-12),
            frame["log_evidence"], np.log1p(np.maximum(frame["gap_any"].to_numpy(np.float64), 0.0)),
            np.log1p(np.where(seen, np.maximum(gap_c, 0.0), 1e6)), seen.astype(float),
            near, np.nan_to_num(frame["own_spread"].to_numpy(np.float64)),
            np.nan_to_num(frame["own_step"].to_numpy(np.float64)), np.where(seen, np.abs(mean - near) * to_sd, 0.0), np.log(to_sd),
            frame["channel"].astype(str).map(channel_codes).to_numpy()]
    return np.column_stack([np.asarray(c, np.float64) for c in cols])

# column groups of `features` (the channel's code, the last column, is always added)
ABLATIONS = {"channel only": [], "σ̂ (log, sd units)": [2], "σ̂'s two terms and log σ̂": [0, 1, 2, 3],
             "the leads and whether the channel was seen": [4, 5, 6],
             "the channel's own context (last value, spread, step, the forecast's move, level)": [7, 8, 9, 10, 11],
             "σ̂ and the leads": [2, 4, 5, 6], "σ̂ and the channel's own context": [2, 7, 8, 9, 10, 11],
             "everything but σ̂'s terms": [4, 5, 6, 7, 8, 9, 10, 11]}


def learner(n_features: int) -> HistGradientBoostingRegressor:
    mask = np.zeros(n_features, bool)
    mask[-1] = True
    return HistGradientBoostingRegressor(categorical_features=mask, **LEARNER)


def shipped_fit(args: argparse.Namespace) -> tuple:
    """The draw ``args`` names (``--panel``, ``--data-dir``, ``--seed``) and the fit
    ``band_per_query.py`` ships on it: ``(spec, train, ctx_obs, in_hours, queries, data, fitted)``
    (the panel, the training file, the unseen context, the queries in hours and as drawn, the
    fit's data and the fitted model, training seed 0)."""
    spec = PANELS[args.panel]
    full = load(args.panel, args.data_dir)
    train, context, queries = draw(args.panel, full, spec, args.seed)
    hours = 24.0 if spec.unit == "days" else 1.0
    obs, ctx_obs = from_frame(train, time_unit=spec.unit), from_frame(context, time_unit=spec.unit)
    in_hours = queries[["series_id", "channel", "time"]].assign(time=queries["time"] * hours).reset_index(drop=True)
    data = prepare_fit(obs.frame, TaskConfig("forecast", cutoff=spec.history * hours), seed=0)
    cfg = data.model_config(resolve_size("auto", obs.n_series), "rate")
    fitted = assemble(data, cfg, TrainConfig(seed=0), train_levy_model(data, cfg, TrainConfig(seed=0)))
    return spec, train, ctx_obs, in_hours, queries, data, fitted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    panel_arguments(parser)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--explore", action="store_true",
                        help="also the learner fitted on more of the training file (after the first run: exploratory)")
    parser.add_argument("--ablation", action="store_true",
                        help="also the ceiling from groups of the features (which of them carry it)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    spec, train, ctx_obs, in_hours, queries, data, fitted = shipped_fit(args)
    test = predict_user_queries(fitted, ctx_obs, in_hours, level=LEVEL)
    cal = observed_queries(fitted, data.builder, data.calibration_ids)

    sd_by_channel = train.groupby("channel")["value"].std()
    codes = {c: i for i, c in enumerate(sorted(map(str, fitted.channels)))}
    scaler = fitted.scaler
    t_channels = in_hours["channel"].to_numpy()
    c_channels = cal["channel"].to_numpy()
    sd_t = pd.Series(t_channels).map(sd_by_channel).to_numpy(np.float64)
    sd_c = pd.Series(c_channels).map(sd_by_channel).to_numpy(np.float64)
    y_t = queries["value"].to_numpy(np.float64) / sd_t
    m_t = test["mean"].to_numpy(np.float64) / sd_t
    y_c = scaler.inverse_value(cal["y_norm"].to_numpy(np.float64), c_channels) / sd_c
    m_c = scaler.inverse_value(cal["mean_norm"].to_numpy(np.float64), c_channels) / sd_c
    keep_t = np.isfinite(sd_t) & (sd_t > 0) & np.isfinite(y_t) & np.isfinite(m_t)
    keep_c = np.isfinite(sd_c) & (sd_c > 0) & np.isfinite(y_c) & np.isfinite(m_c)

    constant = channel_constant(train, spec.history, t_channels, sd_t)  # the per-channel constant, as band_per_query.py

    # σ̂ as the page ranks it: each channel's RMS factor on the calibration series, delta method to sd units
    k = group_rms_factors(cal["y_norm"], cal["mean_norm"], cal["spread_norm"], cal["channel"])
    to_sd = scaler.scale_at(test["mean_norm"].to_numpy(np.float64), t_channels) / sd_t
    sigma = test["spread_norm"].to_numpy(np.float64) * pd.Series(t_channels).map(k).fillna(1.0).to_numpy() * to_sd

    to_sd_c = scaler.scale_at(cal["mean_norm"].to_numpy(np.float64), c_channels) / sd_c
    x_t, x_c = features(test, codes, to_sd), features(cal, codes, to_sd_c)
    fit_c = learner(x_c.shape[1]).fit(x_c[keep_c], (y_c - m_c)[keep_c] ** 2)
    learned = np.sqrt(np.maximum(fit_c.predict(x_t), 1e-12))
    ceiling = np.full(len(test), np.nan)
    series = in_hours["series_id"].to_numpy()
    idx = np.flatnonzero(keep_t)
    for tr, te in GroupKFold(n_splits=5).split(idx, groups=series[idx]):
        model = learner(x_t.shape[1]).fit(x_t[idx[tr]], (y_t - m_t)[idx[tr]] ** 2)
        ceiling[idx[te]] = np.sqrt(np.maximum(model.predict(x_t[idx[te]]), 1e-12))

    extra = {}
    if args.explore:  # the same learner on more held-out or in-sample queries of the training file
        for name, ids in (("stopping and calibration series", data.stop_ids + data.calibration_ids),
                          ("every training-file series (in-sample errors on most)",
                           data.train_ids + data.stop_ids + data.calibration_ids),
                          ("training and stopping series, never the calibration ones (in-sample errors on most)",
                           data.train_ids + data.stop_ids)):
            more = observed_queries(fitted, data.builder, list(dict.fromkeys(ids)))
            mc = more["channel"].to_numpy()
            sd_m = pd.Series(mc).map(sd_by_channel).to_numpy(np.float64)
            y_m = scaler.inverse_value(more["y_norm"].to_numpy(np.float64), mc) / sd_m
            mm = scaler.inverse_value(more["mean_norm"].to_numpy(np.float64), mc) / sd_m
            ok = np.isfinite(sd_m) & (sd_m > 0) & np.isfinite(y_m) & np.isfinite(mm)
            x_m = features(more, codes, scaler.scale_at(more["mean_norm"].to_numpy(np.float64), mc) / sd_m)
            fit_m = learner(x_m.shape[1]).fit(x_m[ok], (y_m - mm)[ok] ** 2)
            extra[f"learned spread, fitted on the {name} ({len(set(more['series_id']))} series; exploratory)"] = \
                np.sqrt(np.maximum(fit_m.predict(x_t), 1e-12))
            if "never the calibration" in name:  # the linear map s(q) on the same queries
                index = {c: i for i, c in enumerate(fitted.channels)}
                qs = fit_query_scale(more["channel"].map(index).to_numpy(), more["y_norm"].to_numpy(),
                                     more["mean_norm"].to_numpy(), more["evidence_term"].to_numpy(),
                                     more["disagreement_term_norm"].to_numpy(),
                                     {k: more[k].to_numpy() for k in CONTEXT_COLUMNS},
                                     n_channels=len(fitted.channels), series=more["series_id"].to_numpy())

                def mapped(frame: pd.DataFrame, qs=qs, index=index) -> np.ndarray:
                    return qs.spread(frame["channel"].map(index).to_numpy(), frame["evidence_term"].to_numpy(),
                                     frame["disagreement_term_norm"].to_numpy(),
                                     {k: frame[k].to_numpy() for k in CONTEXT_COLUMNS})
                k_map = group_rms_factors(cal["y_norm"], cal["mean_norm"], pd.Series(mapped(cal)), cal["channel"])
                extra[f"the map s(q), fitted on the {name} (ridge {qs.ridge_strength:g}; exploratory)"] = (
                    mapped(test) * pd.Series(t_channels).map(k_map).fillna(1.0).to_numpy() * to_sd)
    y, m, ch = y_t[keep_t], m_t[keep_t], t_channels[keep_t]
    print(f"{spec.name}, draw seed {args.seed}: {int(keep_t.sum())} unseen queries, {int(keep_c.sum())} calibration "
          f"queries ({len(data.calibration_ids)} series)")
    print("| spread | risk–coverage ÷ constant | Spearman within channel |")
    print("|---|---|---|")
    for name, s in (("σ̂ (shipped, RMS-scaled)", sigma), ("learned spread, fitted on calibration series", learned),
                    ("learned spread, cross-fitted on the unseen series (ceiling)", ceiling), *extra.items(),
                    ("per-channel constant", constant), ("|e| (perfect ranking)", np.abs(y_t - m_t))):
        s = s[keep_t]
        print(f"| {name} | {risk_coverage_ratio(y, m, s, constant[keep_t]):.3f} | "
              f"{within_group_spearman(y, m, s, ch):.3f} |")
    if args.ablation:
        print("\nthe ceiling (cross-fitted on the unseen series) from groups of the features, the channel always in:")
        print("| features | risk–coverage ÷ constant | Spearman within channel |")
        print("|---|---|---|")
        for name, cols in ABLATIONS.items():
            sub = x_t[:, [*cols, x_t.shape[1] - 1]]
            s = np.full(len(test), np.nan)
            for tr, te in GroupKFold(n_splits=5).split(idx, groups=series[idx]):
                model = learner(sub.shape[1]).fit(sub[idx[tr]], (y_t - m_t)[idx[tr]] ** 2)
                s[idx[te]] = np.sqrt(np.maximum(model.predict(sub[idx[te]]), 1e-12))
            print(f"| {name} | {risk_coverage_ratio(y, m, s[keep_t], constant[keep_t]):.3f} | "
                  f"{within_group_spearman(y, m, s[keep_t], ch):.3f} |")


if __name__ == "__main__":
    main()
