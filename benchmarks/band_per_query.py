"""The band per query on panels the model never saw: coverage within groups and how well the
spread ranks errors, against a per-channel constant, MC-Dropout and a deep ensemble.

For each panel: a training file of series (a seeded draw), fitted as ``levy fit`` fits it
(forecast, the panel's cut-off, seed 0; the library's ``fit``), and other series never seen,
whose history up to the cut-off is the context and every later observation a query. Every
method is scored on the same queries, in each channel's standard-deviation units (from the
training file):

- **Lévy (shipped)**: σ̂ on the per-channel transform, calibrated per channel, split conformal
  per channel at 90 %, on the training file's calibration and test series together (what a
  fit gives new series);
- **Lévy with the map s(q)**: the same network, the per-query spread map
  (``levy_core.calibration.query_scale``) measured, not shipped;
- **Lévy as before**: no transform, σ̂ alone, calibrated on the calibration series alone;
- **MC-Dropout T=20**: the same fit's twin, calibrated the same way;
- **deep ensemble of 5**: five Lévy fits on the same split with training seeds 0–4, mean of
  the means, spread ``sqrt(mean σ_k² + var of the means)`` (each σ_k the member's own spread),
  calibrated per channel on the same calibration and test series;
- **per-channel constant**: the last value's RMS error per channel on the training file (the
  spread of "knowing the channel"): the reference line of the risk–coverage ratio;
- with ``--trees`` (measured, not shipped): the band whose spread is gradient-boosted trees'
  ``sqrt(E[e² | x])`` fitted on the training file's own series, and the per-fit choice of those
  trees or σ̂ on the stopping series (docs/benchmarks/learned-spread.md).

Reported per method: CRPS and MSE (per channel, averaged over channels), the 90 % conformal
band's coverage overall and in every quintile of its width (within channel), of ``n_eff`` and
of the lead (the distance from the query to the series' last context observation), each
with its standard error over series; the risk–coverage area ÷ the constant's; within-channel
Spearman(spread, |error|); the seconds each took.

Usage::

    python benchmarks/band_per_query.py --panel pbc [--seed 0]
    python benchmarks/band_per_query.py --panel framingham [--seed 0]
    python benchmarks/band_per_query.py --panel physionet --data-dir PATH/TO/physionet2012 --seed S
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from levy_core.calibration.calibrate import Calibrator  # noqa: E402
from levy_core.calibration.split_conformal import SplitConformal  # noqa: E402
from levy_core.data import from_frame  # noqa: E402
from levy_core.episodes.tasks import TaskConfig  # noqa: E402
from levy_core.metrics.conditional import (  # noqa: E402
    coverage_by_quantile,
    group_rms_factors,
    risk_coverage_ratio,
    within_group_spearman,
)
from levy_core.metrics.scoring_rules import crps_gaussian_per_point  # noqa: E402
from levy_core.pipeline.predict import observed_queries  # noqa: E402
from levy_core.pipeline.recipe import (  # noqa: E402
    assemble,
    band_map_split,
    prepare_fit,
    resolve_size,
    train_levy_model,
    train_twin_model,
)
from levy_core.pipeline.user_frames import predict_user_queries  # noqa: E402
from levy_core.training.train import TrainConfig  # noqa: E402

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.physionet import load_protocol_frame  # noqa: E402
from benchmarks.unseen import crps_points  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "benchmarks" / "data"
LEVEL = 0.9
ENSEMBLE = 5


@dataclass(frozen=True)
class Panel:
    name: str
    unit: str  # the data's time unit
    history: float  # the cut-off, in that unit
    n_train: int
    n_unseen: int


PANELS = {"physionet": Panel("PhysioNet 2012 set A", "hours", 24.0, 300, 400),
          "pbc": Panel("PBC follow-up", "days", 730.5, 200, 10_000),
          "framingham": Panel("Framingham exams", "days", 3000.0, 400, 600)}


def load(panel: str, data_dir: Path | None) -> pd.DataFrame:
    """The panel in the long layout ``series_id, time (its unit), channel, value``."""
    if panel == "pbc":
        frame = pd.read_csv(DATA / "pbc2_labs.csv.gz", dtype={"patient_id": str})
        return frame.rename(columns={"patient_id": "series_id", "time_days": "time"})
    if panel == "framingham":
        frame = pd.read_csv(DATA / "framingham_exams.csv.gz", dtype={"participant_id": str})
        return frame.rename(columns={"participant_id": "series_id", "time_days": "time"})
    if data_dir is None:
        raise SystemExit("--panel physionet needs --data-dir")
    frame = load_protocol_frame(data_dir)
    return frame[~frame["channel"].isin(["Age", "Gender", "Height", "ICUType"])]


def draw(panel: str, full: pd.DataFrame, spec: Panel, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Training file, unseen context and unseen queries (with their truth ``value``), as
    ``benchmarks/unseen.py`` draws them."""
    pool = sorted(full["series_id"].unique(), key=lambda s: (len(s), s) if s.isdigit() else (0, s))
    if panel == "physionet":  # none of the bundled sample's stays, as benchmarks/unseen.py --train draw
        sample = pd.read_csv(REPO / "sample_data" / "physionet2012_sample.csv.gz", usecols=["patient_id"])
        bundled = set(sample["patient_id"].astype(str))
        full = full[~full["series_id"].isin(bundled)]
        pool = sorted(set(pool) - bundled)
    drawn = np.random.default_rng([seed, 1]).choice(pool, size=min(spec.n_train, len(pool) - 1), replace=False)
    train = full[full["series_id"].isin(set(drawn.tolist()))]
    others = sorted(set(full["series_id"]) - set(train["series_id"]), key=lambda s: (len(s), s) if s.isdigit() else (0, s))
    unseen = np.random.default_rng(seed).choice(others, size=min(spec.n_unseen, len(others)), replace=False)
    new = full[full["series_id"].isin(set(unseen.tolist())) & full["channel"].isin(set(train["channel"]))]
    return train, new[new["time"] <= spec.history], new[new["time"] > spec.history]


def panel_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments every panel study takes: the panel, PhysioNet's directory, the draw."""
    parser.add_argument("--panel", choices=sorted(PANELS), required=True)
    parser.add_argument("--data-dir", type=Path, help="PhysioNet 2012 (--panel physionet)")
    parser.add_argument("--seed", type=int, default=0, help="the draw of training and unseen series")


def channel_constant(train: pd.DataFrame, history: float, channels: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """The per-channel constant spread at queries of ``channels`` (n,), in sd units (``sd``, (n,)):
    each channel's root-mean-square error of the last value before ``history`` on the training
    file's later values ("knowing the channel": the risk–coverage ratio's reference)."""
    last = train[train["time"] <= history].sort_values("time").groupby(["series_id", "channel"])["value"].last()
    later = train[train["time"] > history]
    err = later["value"].to_numpy() - later.join(last.rename("f"), on=["series_id", "channel"])["f"].to_numpy()
    rms = pd.Series(err**2).groupby(later["channel"].to_numpy()).mean().pow(0.5)
    return pd.Series(channels).map(rms).fillna(float(rms.median())).to_numpy() / sd


def combine(parts: list[pd.DataFrame], mean: str, spread: str) -> tuple[np.ndarray, np.ndarray]:
    """A deep ensemble's mean and spread from its members' frames (same rows)."""
    means = np.stack([p[mean].to_numpy(np.float64) for p in parts])
    spreads = np.stack([p[spread].to_numpy(np.float64) for p in parts])
    return means.mean(0), np.sqrt((spreads**2).mean(0) + means.var(0))


def score(name: str, q: pd.DataFrame, mean: np.ndarray, std: np.ndarray, lower: np.ndarray, upper: np.ndarray,
          sd: np.ndarray, constant: np.ndarray, seconds: float, ranking: np.ndarray, kinds: dict[str, str]) -> dict:
    """Every figure of one method on the queries ``q`` (``y_true, channel, series_id, n_eff,
    lead``): ``std`` its calibrated predictive spread (CRPS; ``kinds``: each channel's transform, a
    log-normal predictive's CRPS on a log channel), ``ranking`` its spread with each
    channel's RMS factor (sd units: the risk–coverage ratio and Spearman), all (n,). A channel
    constant on the training file (no sd units to score in) is left out, as benchmarks/unseen.py does."""
    keep = np.isfinite(sd) & (sd > 0)
    q = q[keep]
    mean, std, lower, upper, sd, constant, ranking = (a[keep] for a in (mean, std, lower, upper, sd, constant, ranking))
    y = q["y_true"].to_numpy(np.float64) / sd
    m, s, lo, hi = mean / sd, std / sd, lower / sd, upper / sd
    channel, series = q["channel"].to_numpy(), q["series_id"].to_numpy()
    # CRPS in the data's units (a log-normal predictive's on a log channel), then in sd units
    points = crps_points(q.assign(mean=mean, pred_std=std), kinds) / sd
    per = pd.DataFrame({"c": channel, "y": y, "m": m, "crps": points}).groupby("c")
    crps = per["crps"].mean().mean()
    mse = per.apply(lambda g: float(np.mean((g.y - g.m) ** 2))).mean()
    inside = (y >= lo) & (y <= hi)
    per_series = pd.Series(inside).groupby(series).mean()
    width = hi - lo
    row = {"method": name, "crps": crps, "mse": mse, "coverage": float(inside.mean()),
           "coverage_se": float(per_series.std(ddof=1) / np.sqrt(len(per_series))),
           "rc_ratio": risk_coverage_ratio(y, m, ranking, constant),
           "rc_band": risk_coverage_ratio(y, m, np.where(np.isfinite(hi - lo), hi - lo, np.nanmax(s) * 1e6), constant),
           "spearman": within_group_spearman(y, m, ranking, channel),
           "seconds": seconds}
    for key, values, within in (("width", width, channel), ("n_eff", q["n_eff"].to_numpy(), None),
                                ("lead", q["lead"].to_numpy(), None)):
        if values is None:
            continue
        bins = coverage_by_quantile(y, lo, hi, values, series, level=LEVEL, within=within)
        row[f"by_{key}"] = bins
    return row


MONDRIAN_MIN = 30  # a cell with fewer calibration queries takes the pooled quantile


def mondrian_band(cal: pd.DataFrame, test: pd.DataFrame, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mondrian split conformal (crepes' ``bins``) on ``|y − ŷ| / (k_c σ̂)`` over the 3 × 3 cells
    of the lead (``gap_any``) and ``n_eff``, cut at the calibration queries' terciles (NOTES.md,
    2026-12-07 11:45 UTC). ``cal``: calibration queries (``y_norm, mean_norm, spread_norm,
    channel, gap_any, n_eff``); ``test``: the same without ``y_norm``. Returns the test
    queries' normalised spread ``k_c σ̂`` and their cell's quantile, both (n,), and the
    calibration queries' cell quantiles (m,)."""
    k = group_rms_factors(cal["y_norm"], cal["mean_norm"], cal["spread_norm"], cal["channel"])
    floor = 1e-6 * float(np.median(cal["spread_norm"][cal["spread_norm"] > 0]))

    def spread(frame: pd.DataFrame) -> np.ndarray:
        factor = frame["channel"].astype(str).map(k).fillna(1.0).to_numpy()
        return np.maximum(frame["spread_norm"].to_numpy(np.float64), floor) * factor

    lead_edges = np.quantile(cal["gap_any"], [1 / 3, 2 / 3])
    neff_edges = np.quantile(cal["n_eff"], [1 / 3, 2 / 3])

    def cell(frame: pd.DataFrame) -> np.ndarray:
        return (np.searchsorted(lead_edges, frame["gap_any"].to_numpy(), side="right") * 3
                + np.searchsorted(neff_edges, frame["n_eff"].to_numpy(), side="right"))

    # the library's split conformal per group (a cell with fewer than MONDRIAN_MIN scores: pooled)
    conformal = SplitConformal(min_group_size=MONDRIAN_MIN).conformalize(
        cal["y_norm"].to_numpy(), cal["mean_norm"].to_numpy(), spread(cal), groups=cell(cal))
    q = {c: conformal.quantile(level, str(c)) for c in range(9)}
    return spread(test), np.array([q[c] for c in cell(test)], np.float64), np.array([q[c] for c in cell(cal)])


CHOICE_MARGIN = 0.02  # the trees replace σ̂ only when their stopping-series CRPS is this much lower (NOTES.md, 17:51 UTC)


def trees_row(fitted, data, cal: pd.DataFrame, pred: pd.DataFrame, q: pd.DataFrame, sd: np.ndarray,
              constant: np.ndarray, kinds: dict[str, str], select: bool = False, blend: bool = False,
              with_glm: bool = False) -> dict:
    """The band whose spread is ``sqrt(E[e² | x])`` from gradient-boosted trees on what a query
    knows (`studies/spread_ceiling.py`'s learner and features), fitted in the model's units (a
    log channel's log) on the training file's training and stopping series (in-sample errors on
    most), never on the calibration ones; then calibrated like σ̂: each channel's scale and split
    conformal on the calibration series. ``select``: the trees fitted on the training series
    alone, kept only if their spread's Gaussian CRPS (each channel's RMS factor) on the
    stopping series is ``CHOICE_MARGIN`` below σ̂'s, σ̂ otherwise (NOTES.md, 17:20 and 17:51 UTC).
    ``blend``: the spread is ``sqrt(σ̂ · trees)`` instead, calibrated the same way. ``with_glm``:
    ``sqrt(GLM · trees)``, the GLM of `studies/loglinear_spread.py` fitted on the same rows in the
    same units (NOTES.md, 23:53 UTC)."""
    from benchmarks.studies.spread_ceiling import features, learner

    scaler, channels = fitted.scaler, q["channel"].to_numpy()
    codes = {c: i for i, c in enumerate(sorted(map(str, fitted.channels)))}
    t0 = time.perf_counter()
    fit_ids = data.train_ids if select else list(dict.fromkeys(data.train_ids + data.stop_ids))
    fit_on = observed_queries(fitted, data.builder, fit_ids)
    err = fit_on["y_norm"].to_numpy(np.float64) - fit_on["mean_norm"].to_numpy(np.float64)
    model = learner(13).fit(features(fit_on, codes, np.ones(len(fit_on))), err ** 2)

    def spread(frame: pd.DataFrame) -> np.ndarray:
        return np.sqrt(np.maximum(model.predict(features(frame, codes, np.ones(len(frame)))), 1e-12))

    name = "Lévy, spread from trees on the training file (measured, not shipped)"
    if select:  # the trees or σ̂, whichever scores better on the stopping series (never fitted on them)
        held = observed_queries(fitted, data.builder, [s for s in data.stop_ids if s not in set(data.train_ids)])
        held_crps = {}
        for key, held_spread in (("σ̂", held["spread_norm"].to_numpy(np.float64)), ("trees", spread(held))):
            k = group_rms_factors(held["y_norm"], held["mean_norm"], pd.Series(held_spread), held["channel"])
            sigma = held_spread * held["channel"].map(k).fillna(1.0).to_numpy()
            held_crps[key] = float(np.mean(crps_gaussian_per_point(held["y_norm"], held["mean_norm"], sigma)))
        chosen = "trees" if held_crps["trees"] < (1 - CHOICE_MARGIN) * held_crps["σ̂"] else "σ̂"
        name = (f"Lévy, trees or σ̂ chosen on the stopping series: {chosen} (CRPS there σ̂ {held_crps['σ̂']:.4f}, "
                f"trees {held_crps['trees']:.4f}; measured, not shipped)")
        if chosen == "σ̂":
            def spread(frame: pd.DataFrame) -> np.ndarray:  # noqa: F811 (σ̂ itself)
                return frame["spread_norm"].to_numpy(np.float64)

    if blend:  # the geometric mean of σ̂ and the trees (NOTES.md, 18:00 UTC)
        name = "Lévy, geometric mean of σ̂ and the trees (measured, not shipped)"
        trees = spread

        def spread(frame: pd.DataFrame) -> np.ndarray:  # noqa: F811
            return np.sqrt(np.maximum(frame["spread_norm"].to_numpy(np.float64), 0.0) * trees(frame))

    if with_glm:  # the geometric mean of the log-linear GLM and the trees (NOTES.md, 23:53 UTC)
        from sklearn.linear_model import PoissonRegressor

        from benchmarks.studies.loglinear_spread import ALPHA, design, glm_inputs

        name = "Lévy, geometric mean of the GLM and the trees (measured, not shipped)"
        trees, x_fit = spread, design(features(fit_on, codes, np.ones(len(fit_on))))
        centre, width = x_fit.mean(0), x_fit.std(0) + 1e-9

        def inputs(frame: pd.DataFrame) -> np.ndarray:
            return glm_inputs(features(frame, codes, np.ones(len(frame))), centre, width, len(codes))
        glm = PoissonRegressor(alpha=ALPHA, max_iter=500).fit(inputs(fit_on), err ** 2)

        def spread(frame: pd.DataFrame) -> np.ndarray:  # noqa: F811
            return np.sqrt(np.sqrt(np.maximum(glm.predict(inputs(frame)), 1e-12)) * trees(frame))

    cal_spread, test_spread = spread(cal), spread(pred)
    band = Calibrator().fit(cal["y_norm"], cal["mean_norm"], cal_spread, groups=cal["channel"].to_numpy())
    m_norm = pred["mean_norm"].to_numpy(np.float64)
    lo, hi = band.interval(m_norm, test_spread, LEVEL, kind="conformal", groups=channels)
    std = band.predict_std(test_spread, channels)
    k = group_rms_factors(cal["y_norm"], cal["mean_norm"], pd.Series(cal_spread), cal["channel"])
    ranking = test_spread * pd.Series(channels).map(k).fillna(1.0).to_numpy() * scaler.scale_at(m_norm, channels) / sd
    return score(name, q, scaler.inverse_value(m_norm, channels), std * scaler.scale_at(m_norm, channels),
                 scaler.inverse_value(lo, channels), scaler.inverse_value(hi, channels), sd, constant,
                 time.perf_counter() - t0, ranking, kinds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    panel_arguments(parser)
    parser.add_argument("--ensemble", type=int, default=ENSEMBLE, help="members of the deep ensemble (0: none)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--glm-trees", action="store_true",
                        help="also the band from the geometric mean of the GLM and the trees (measured, not shipped)")
    parser.add_argument("--trees", action="store_true",
                        help="also the band from trees fitted on the training file's own series (measured, not shipped)")
    parser.add_argument("--train", nargs="*", default=[], metavar="FIELD=VALUE",
                        help="TrainConfig fields for every fit of this run (studies of the training objective)")
    args = parser.parse_args()
    try:
        extra = {k: int(v) if v.strip().lstrip("-").isdigit() else float(v)
                 for k, v in (item.split("=", 1) for item in args.train)}
        TrainConfig.from_dict(extra)  # unknown fields and bad values, named, before any fit
    except ValueError as exc:
        parser.error(f"--train takes FIELD=NUMBER pairs of TrainConfig: {exc}")

    def train_config(seed: int) -> TrainConfig:
        return TrainConfig.from_dict({**extra, "seed": seed})

    torch.set_num_threads(args.threads)
    spec = PANELS[args.panel]
    full = load(args.panel, args.data_dir)
    train, context, queries = draw(args.panel, full, spec, args.seed)
    hours = 24.0 if spec.unit == "days" else 1.0
    obs = from_frame(train, time_unit=spec.unit)
    ctx_obs = from_frame(context, time_unit=spec.unit)
    in_hours = queries[["series_id", "channel", "time"]].assign(time=queries["time"] * hours).reset_index(drop=True)
    truth = queries["value"].to_numpy(np.float64)

    # the fit `levy fit --cutoff H --time-unit U --seed 0` makes, through the library
    task = TaskConfig("forecast", cutoff=spec.history * hours)
    data = prepare_fit(obs.frame, task, seed=0)
    cfg = data.model_config(resolve_size("auto", obs.n_series), "rate")
    t0 = time.perf_counter()
    members = [train_levy_model(data, cfg, train_config(k)) for k in range(max(1, args.ensemble))]
    fit_seconds = time.perf_counter() - t0
    twin = train_twin_model(data, cfg, train_config(0))
    fitted = assemble(data, cfg, train_config(0), members[0], twin, mc_passes=20)
    sigma_only = assemble(data, cfg, train_config(0), members[0], learned_spread=False)  # the same network, σ̂
    mapped = assemble(data, cfg, train_config(0), members[0], band_map=True)  # the same network, the map
    # as on main before this work: no transform, σ̂ calibrated on every calibration series
    raw = prepare_fit(obs.frame, task, seed=0, transform="none")
    raw_cfg = raw.model_config(resolve_size("auto", obs.n_series), "rate")
    before = assemble(raw, raw_cfg, train_config(0), train_levy_model(raw, raw_cfg, train_config(0)),
                      learned_spread=False)
    before.new_series_calibration = None  # as before: the calibration series alone calibrate every band
    scale = mapped.query_scale
    print(f"{spec.name}, draw seed {args.seed}: {train['series_id'].nunique()} training series "
          f"({len(data.calibration_ids)} calibrate, {len(data.stop_ids)} stop), "
          f"{queries['series_id'].nunique()} unseen series, {len(queries)} queries; "
          f"{len(members)} Lévy fits {fit_seconds:.0f} s; the map "
          + (f"fitted on {scale.n_queries} held-out queries" if scale else "not fitted (too few held-out queries)"))
    if scale is not None:
        print("map coefficients: " + ", ".join(f"{k} {v:+.3f}" for k, v in scale.to_dict()["coefficients"].items())
              + f"; ridge strength {scale.ridge_strength:g} (chosen on held-out series)")
    print("transforms: " + fitted.scaler.transform_note())
    learned = fitted.learned_spread
    print("learned spread: " + (f"fitted on {learned.n_queries} training and stopping queries, {len(learned.trees.trees)} "
                                "trees" if learned else "none (below the gate: the shipped band is σ̂'s)"))

    t0 = time.perf_counter()
    pred = predict_user_queries(fitted, ctx_obs, in_hours, level=LEVEL)
    levy_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    mc = predict_user_queries(fitted, ctx_obs, in_hours, level=LEVEL, mc_passes=20)
    mc_seconds = time.perf_counter() - t0  # the MC passes and one Lévy pass, timed whole
    by_map = predict_user_queries(mapped, ctx_obs, in_hours, level=LEVEL)
    by_sigma = predict_user_queries(sigma_only, ctx_obs, in_hours, level=LEVEL)
    by_raw = predict_user_queries(before, ctx_obs, in_hours, level=LEVEL)
    all_cal = observed_queries(fitted, data.builder, data.calibration_ids, mc_passes=20)
    map_cal = observed_queries(mapped, data.builder, band_map_split(data)[1] if scale else data.calibration_ids)
    raw_cal = observed_queries(before, raw.builder, raw.calibration_ids)
    sigma_cal = observed_queries(sigma_only, data.builder, data.calibration_ids)

    channels = in_hours["channel"].to_numpy()
    kinds = {c: fitted.scaler.transform_of(c) for c in fitted.channels}
    sd_by_channel = train.groupby("channel")["value"].std()
    q = in_hours.assign(y_true=truth, n_eff=pred["n_eff"].to_numpy(), lead=pred["gap_any"].to_numpy() / hours)
    sd = q["channel"].map(sd_by_channel).to_numpy()

    def rank_spread(model, cal: pd.DataFrame, mean: str, spread: str, test_spread: np.ndarray,
                    test_mean: np.ndarray) -> np.ndarray:
        """The test spread in sd units (the delta method at the test mean on a log channel), with
        each channel's RMS factor fitted on calibration queries."""
        k = group_rms_factors(cal["y_norm"], cal[mean], cal[spread], cal["channel"])
        to_sd = model.scaler.scale_at(test_mean, channels) / sd
        return test_spread * pd.Series(channels).map(k).fillna(1.0).to_numpy() * to_sd

    constant = channel_constant(train, spec.history, q["channel"].to_numpy(), sd)

    def levy_row(name: str, model, frame: pd.DataFrame, cal: pd.DataFrame, row_kinds: dict[str, str]) -> dict:
        return score(name, q, frame["mean"].to_numpy(), frame["pred_std"].to_numpy(), frame["lower_conf"].to_numpy(),
                     frame["upper_conf"].to_numpy(), sd, constant, levy_seconds,
                     rank_spread(model, cal, "mean_norm", "spread_norm", frame["spread_norm"].to_numpy(),
                                 frame["mean_norm"].to_numpy()), row_kinds)

    rows = [levy_row("Lévy (shipped: the learned spread past its gate, else σ̂; per-channel transform)", fitted, pred,
                     all_cal, kinds),
            levy_row("Lévy, σ̂ alone (shipped before the learned spread)", sigma_only, by_sigma, sigma_cal, kinds),
            levy_row("Lévy with the map s(q) (measured, not shipped)", mapped, by_map, map_cal, kinds),
            levy_row("Lévy as before (no transform)", before, by_raw, raw_cal, {})]
    spread_m, q_m, q_m_cal = mondrian_band(all_cal, pred, LEVEL)  # the same fit, Mondrian over lead × n_eff
    m_norm = pred["mean_norm"].to_numpy(np.float64)
    rows.insert(2, score("Lévy, Mondrian over lead × n_eff (measured)", q, fitted.scaler.inverse_value(m_norm, channels),
                         spread_m * q_m / 1.6448536269514722 * fitted.scaler.scale_at(m_norm, channels),
                         fitted.scaler.inverse_value(m_norm - q_m * spread_m, channels),
                         fitted.scaler.inverse_value(m_norm + q_m * spread_m, channels), sd, constant, levy_seconds,
                         rank_spread(fitted, all_cal.assign(m_spread=all_cal["spread_norm"] * q_m_cal), "mean_norm",
                                     "m_spread", pred["spread_norm"].to_numpy() * q_m, m_norm), kinds))
    if args.trees:  # the spread of studies/spread_ceiling.py's trees on the training file (NOTES.md, 17:04 UTC)
        rows.insert(3, trees_row(fitted, data, all_cal, pred, q, sd, constant, kinds))
        rows.insert(4, trees_row(fitted, data, all_cal, pred, q, sd, constant, kinds, select=True))
        rows.insert(5, trees_row(fitted, data, all_cal, pred, q, sd, constant, kinds, blend=True))
    if args.glm_trees:  # the candidate of NOTES.md, 23:53 UTC, as a band calibrated as the shipped one for new
        # series is: on the calibration and test series together
        new_series_cal = observed_queries(fitted, data.builder, data.calibration_ids + data.test_ids)
        rows.insert(3, trees_row(fitted, data, new_series_cal, pred, q, sd, constant, kinds, with_glm=True))
    mc_p = [p for p in fitted.predictives(mc) if p.method.key == "mc"][0]
    mc_lo, mc_hi = mc_p.band((LEVEL,), "conformal").bounds(LEVEL, original=True)
    rows.append(score("MC-Dropout T=20", q, mc["mc_mean"].to_numpy(), mc["mc_std"].to_numpy(), mc_lo, mc_hi, sd,
                      constant, mc_seconds, rank_spread(fitted, all_cal, "mc_mean_norm", "mc_std_norm",
                                                        mc["mc_std_norm"].to_numpy(), mc["mc_mean_norm"].to_numpy()),
                      kinds))
    if args.ensemble > 1:
        t0 = time.perf_counter()
        fits = [fitted] + [assemble(data, cfg, train_config(k), members[k]) for k in range(1, len(members))]
        # calibrated as the shipped band for new series is: on the calibration and test series
        on_cal = [observed_queries(f, data.builder, data.calibration_ids + data.test_ids) for f in fits]
        on_test = [predict_user_queries(f, ctx_obs, in_hours, level=LEVEL) for f in fits]
        cal_mean, cal_spread = combine(on_cal, "mean_norm", "spread_norm")
        test_mean, test_spread = combine(on_test, "mean_norm", "spread_norm")
        ens = Calibrator().fit(on_cal[0]["y_norm"], cal_mean, cal_spread, groups=on_cal[0]["channel"].to_numpy())
        lo, hi = ens.interval(test_mean, test_spread, LEVEL, kind="conformal", groups=channels)
        std = ens.predict_std(test_spread, channels)
        ens_cal = on_cal[0].assign(ens_mean=cal_mean, ens_spread=cal_spread)
        scaler = fitted.scaler
        rows.append(score(f"deep ensemble of {len(fits)} Lévy fits", q, scaler.inverse_value(test_mean, channels),
                          std * scaler.scale_at(test_mean, channels), scaler.inverse_value(lo, channels),
                          scaler.inverse_value(hi, channels), sd, constant, time.perf_counter() - t0,
                          rank_spread(fitted, ens_cal, "ens_mean", "ens_spread", test_spread, test_mean), kinds))
    print("\n| method | CRPS | MSE | 90 % coverage | risk–coverage ÷ constant: RMS-scaled spread | the 90 % band's width "
          "| Spearman within channel | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['crps']:.4f} | {r['mse']:.4f} | {r['coverage']:.3f} ± {r['coverage_se']:.3f} | "
              f"{r['rc_ratio']:.3f} | {r['rc_band']:.3f} | {r['spearman']:.3f} | {r['seconds']:.2f} |")
    for key in ("width", "n_eff", "lead"):
        print(f"\ncoverage by quintile of {key}" + (" (within channel)" if key == "width" else "") +
              " (coverage ± s.e. over series; within 0.03 of 0.90 or 3 s.e.?)")
        print("| method | " + " | ".join(f"Q{i}" for i in range(1, 6)) + " | all within |")
        print("|---|" + "---|" * 6)
        for r in rows:
            bins = r[f"by_{key}"]
            cells = [f"{c:.3f} ± {s:.3f}" for c, s in zip(bins.table["coverage"], bins.table["se"], strict=True)]
            print(f"| {r['method']} | " + " | ".join(cells) + f" | {'yes' if bins.within() else 'no'} |")


if __name__ == "__main__":
    main()
