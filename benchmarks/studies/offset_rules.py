"""Offline study of the rule that picks the rolling-origin offset among the shipped candidates.

On one series the forecast is almost exactly the classical offset ``b(q)`` that
:func:`levy_core.offsets.base_forecast.choose_offsets` picks per channel, so a better pick is
a better forecast. For each (series, end) of ``benchmarks/anchors.py`` (either set):

1. ``LevyForecaster(seed=0, horizon=H).fit(train)`` runs up to the offset choice only
   (``offset_study.capture``): the arguments of :func:`levy_core.pipeline.recipe.choose` (the
   normalised past before the first test origin, the origins, the scored episodes) and the
   fit's scaler are kept, the shipped spec recorded, and the fit stopped there.
2. :func:`levy_core.offsets.base_forecast.score_candidates` (the library's own scoring, so
   every shipped candidate with its own parameters) forecasts each scored episode (the later
   half, as the fit scores them), and from the whole training part the held-out window
   ``(end, end + H]``.
3. Each rule below picks from the scored errors; the pick is scored on the held-out window.
   The shipped rule re-applied is checked against the fit's own pick.

Rules (``RULES``):

* ``shipped``: ``choose_offsets``' bagged choice (since 2026-12-05): ``margin`` on each of
  32 moving-block bootstrap resamples of the scored origins, each pick weighted by how often
  it won (``levy_core.offsets.bagging``); ``bag_argmin``: the lowest error alone on each;
* ``margin``: the simplest candidate unless another is ``SIMPLER_MARGIN`` better, then the
  mean of the best ``COMBINED`` when that is better still (the rule applied once to every
  scored origin until 2026-12-05; the other rules below vary it);
* ``top3``: always the mean of the best three;
* ``trimT`` (``trim0.5c4``: at most four): the mean of the (at most three) candidates scored
  within ``(1 + T)×`` the best's error, the best alone when none is (combine when several
  are indistinguishable, select when one dominates);
* ``leadB``: the margin rule applied separately to each of ``B`` lead buckets (equal
  shares of the horizon): e.g. the AR residual at short leads, the plain seasonal profile at
  long ones — a function of the query, so the identity allows it;
* ``medianK``: the median of the ``K`` best-scored candidates (``all``: every candidate);
* ``greedy``: ensemble selection (Caruana et al. 2004), members added with replacement while
  the scored error of their mean falls; ``greedy_margin``: it only when ``SIMPLER_MARGIN``
  better than the margin rule's pick;
* ``top3_seasonless``, ``top5_seasonless``, ``shd_seasonless``: without a candidate period,
  the mean of the best three, the best five, or the M3 competition's "Comb S-H-D" (level,
  Holt, damped trend); the margin rule otherwise;
* ``shipped_mae``: the margin rule with the mean absolute error as its loss (the CRPS the
  benchmark scores is closer to it): tried end to end twice and refused, last in
  ``benchmarks/results/offset_abs_rule_rerun_2026-12-04.txt``.
* ``shipped_trim10``, ``shipped_trim25``, ``shipped_median``: the margin rule scoring each
  candidate by its per-origin squared errors without its worst 10 % / 25 % of origins, or by
  their median (one extreme episode, El Niño's 1997–98, then no longer decides the pick):
  refused, ``benchmarks/results/offset_robust_loss_2026-12-04.txt``.
* ``dm0.5``, ``dm1``, ``dm1.645``: the margin rule where a more complex candidate (or the
  combination) must also beat the current pick beyond chance: Diebold and Mariano's ``t`` of
  the per-origin squared errors below ``−z``, with Newey and West's variance over the lag at
  which the scored windows overlap (``loss_difference_t``, ``overlap_lag``). ``dm0.5`` was run
  end to end and refused: ``benchmarks/results/offset_dm_bar_2026-12-05.txt``;
* ``last_dm1``, ``last_dm1.645``: the bar only for leaving the last value (the random walk's
  forecast): a candidate must beat the last value with ``t < −z``; the rest as the margin rule.
  Screened only (the same log).

Output: per series the held-out MAE (data units) and normalised MSE of each rule ÷ the
shipped rule's (mean over ends), their geometric means over series and how many series each
rule makes better or worse by more than 1 %. Logs of the 2026-12-04 runs:
``benchmarks/results/offset_selection_rules_2026-12-04.txt``, and for the greedy and seasonless
rules, with the whole fit re-run for the one that looked best,
``benchmarks/results/offset_rules_seasonless_2026-12-04.txt``: the offset alone does not
predict the fit.

Usage (single-threaded; the anchors extras)::

    OMP_NUM_THREADS=1 python benchmarks/studies/offset_rules.py [--set dev] [--only nile] [--ends 6] [--out FILE]
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from levy_core.offsets import base_forecast as bf
from levy_core.offsets.bagging import bagged_weights, overlap_lag
from levy_core.offsets.spec import COMBINED, HARMONIC_AR, METHODS, SEASONAL

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.studies import offset_study  # noqa: E402

# the fit stopped at its offset choice: offset_study's capture (and the anchors it loads)
anchors, capture = offset_study.anchors, offset_study.capture

Key = tuple[str, float]
Record = tuple[dict[Key, np.ndarray], np.ndarray, np.ndarray]  # forecasts, values, lead shares in [0, 1]


# ---------------------------------------------------------------------------------------
# Diebold and Mariano's test of rolling-origin losses (the ``dm`` rules)
#
# Origins closer together than the horizon forecast overlapping windows, so their losses are
# correlated: 121 monthly origins of a 12-month horizon hold about ten independent years. The
# statistic (J. Bus. Econ. Stat. 1995) is the mean per-origin loss difference over its standard
# error, the long-run variance by Newey and West's Bartlett-weighted autocovariances up to the
# lag over which the windows overlap: S = γ₀ + 2 Σ_{l≤L} (1 − l/(L+1)) γ_l, t = d̄ / sqrt(S/n).


def loss_difference_t(loss_a: np.ndarray, loss_b: np.ndarray, lag: int) -> float:
    """Diebold and Mariano's ``t`` of ``mean(loss_a − loss_b)``, per-origin losses (n,) in time
    order, Newey and West's variance up to ``lag`` (capped at n − 1). Negative: ``a`` loses
    less; ``∓inf`` where every difference is the same non-zero number, 0 where none differs."""
    a, b = np.asarray(loss_a, np.float64), np.asarray(loss_b, np.float64)
    if a.shape != b.shape or a.ndim != 1 or not len(a):
        raise ValueError(f"loss difference: two 1-D loss arrays of one length > 0, got {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("loss difference: losses must be finite")
    if lag < 0:
        raise ValueError(f"loss difference: lag must be >= 0, got {lag}")
    d = a - b
    n, mean = len(d), float(d.mean())
    centred = d - mean
    lag = min(int(lag), n - 1)
    long_run = float(centred @ centred) / n
    for k in range(1, lag + 1):
        long_run += 2 * (1 - k / (lag + 1)) * float(centred[k:] @ centred[:-k]) / n
    scale = max(float(np.abs(d).max()), 1e-300)
    if long_run <= 1e-24 * scale * scale:  # no variance beyond rounding
        return 0.0 if abs(mean) <= 1e-12 * scale else float(np.copysign(np.inf, mean))
    return mean / float(np.sqrt(long_run / n))


# ---------------------------------------------------------------------------------------
# the rules: each maps one channel's scored records to the members of its pick, or, for the
# lead rules, to one pick per lead bucket


def mse(records: Sequence[Record], members: Sequence[Key]) -> float:
    """Squared error of the mean of ``members`` over ``records``, per query."""
    se = sum(float(np.sum((np.mean([p[m] for m in members], axis=0) - y) ** 2)) for p, y, _ in records)
    return se / max(sum(len(y) for _, y, _ in records), 1)


def mae(records: Sequence[Record], members: Sequence[Key]) -> float:
    """Absolute error of the mean of ``members`` over ``records``, per query."""
    ae = sum(float(np.sum(np.abs(np.mean([p[m] for m in members], axis=0) - y))) for p, y, _ in records)
    return ae / max(sum(len(y) for _, y, _ in records), 1)


def _per_origin_mse(records: Sequence[Record], members: Sequence[Key]) -> np.ndarray:
    return np.array([float(np.mean((np.mean([p[m] for m in members], axis=0) - y) ** 2)) for p, y, _ in records])


def trimmed_mse(records: Sequence[Record], members: Sequence[Key], share: float = 0.1) -> float:
    """Mean of the per-origin squared errors of ``members``' mean, without the worst ``share``
    of origins (each candidate's own worst: one extreme episode, El Niño's 1997-98, no
    longer decides the pick)."""
    e = np.sort(_per_origin_mse(records, members))
    return float(np.mean(e[:max(1, int(np.ceil(len(e) * (1 - share))))]))


def median_mse(records: Sequence[Record], members: Sequence[Key]) -> float:
    """Median over origins of the per-origin squared error of ``members``' mean."""
    return float(np.median(_per_origin_mse(records, members)))


def margin(records: Sequence[Record], loss: Callable[[Sequence[Record], Sequence[Key]], float] = mse) -> list[Key]:
    """The rule ``choose_offsets`` applied once to every scored origin until 2026-12-05, and since
    then to each bootstrap resample (``loss``: the squared error it scores with, or another):
    a copy of the library's private ``levy_core.offsets.base_forecast._pick`` as of 2026-12-05
    (:func:`pick`)."""
    return pick(list(records[0][0]), lambda members: loss(records, members))


def pick(keys: list[Key], mse_of: Callable[[Sequence[Key]], float]) -> list[Key]:
    """The selection rule, given the mean squared error of any members (copied from the library,
    which keeps it private): the simplest candidate (``METHODS`` order) unless a more complex one
    is ``SIMPLER_MARGIN`` better, then the mean of the best ``COMBINED`` where that is better still."""
    each = {key: mse_of([key]) for key in keys}
    ordered = sorted(keys, key=lambda key: (METHODS.index(key[0]), key[1]))
    best = ordered[0]
    for key in ordered[1:]:  # a more complex candidate must be clearly better
        if each[key] < (1 - bf.SIMPLER_MARGIN) * each[best]:
            best = key
    top = sorted(keys, key=lambda key: each[key])[:COMBINED]
    if len(top) >= 2 and mse_of(top) < (1 - bf.SIMPLER_MARGIN) * each[best]:
        return top
    return [best]


def _per_origin_se(records: Sequence[Record], members: Sequence[Key]) -> np.ndarray:
    return np.array([float(np.sum((np.mean([p[m] for m in members], axis=0) - y) ** 2)) for p, y, _ in records])


def _margin_rule(records: Sequence[Record], candidates: Sequence[Key],
                 beats: Callable[[np.ndarray, Key], bool]) -> list[Key]:
    """The margin rule over ``candidates``, where each move of the pick (to a more complex
    candidate, or to the mean of the best ``COMBINED``) also needs ``beats(its per-origin
    squared errors, the current pick)``."""
    each = {key: mse(records, [key]) for key in records[0][0]}
    ordered = sorted(candidates, key=lambda key: (METHODS.index(key[0]), key[1]))
    best = ordered[0]
    for key in ordered[1:]:
        if each[key] < (1 - bf.SIMPLER_MARGIN) * each[best] and beats(_per_origin_se(records, [key]), best):
            best = key
    top = sorted(each, key=lambda key: each[key])[:COMBINED]
    if (len(top) >= 2 and mse(records, top) < (1 - bf.SIMPLER_MARGIN) * each[best]
            and beats(_per_origin_se(records, top), best)):
        return top
    return [best]


def shipped_dm(records: Sequence[Record], lag: int, z: float) -> list[Key]:
    """The margin rule where a more complex candidate (or the combination) must also be
    better beyond chance: Diebold and Mariano's ``t`` of the per-origin squared errors below
    ``−z`` (:func:`loss_difference_t`, windows overlapping over ``lag`` origins)."""
    return _margin_rule(records, list(records[0][0]), lambda losses, best: loss_difference_t(
        losses, _per_origin_se(records, [best]), lag) < -z)


def leave_last_dm(records: Sequence[Record], lag: int, z: float) -> list[Key]:
    """The margin rule, where leaving the last value (the random walk's forecast) takes a gap
    beyond chance: every candidate (and the combination) must beat the last value with
    Diebold and Mariano's ``t`` below ``−z``, besides the 2 % margin; among the rest the
    margin rule as it is."""
    last = ("last", 0.0)
    base = _per_origin_se(records, [last])

    def clear(losses: np.ndarray) -> bool:
        return loss_difference_t(losses, base, lag) < -z

    eligible = [key for key in records[0][0] if key == last or clear(_per_origin_se(records, [key]))]
    return _margin_rule(records, eligible, lambda losses, best: best != last or clear(losses))


def ranked(records: Sequence[Record]) -> list[Key]:
    each = {key: mse(records, [key]) for key in records[0][0]}
    return sorted(each, key=lambda key: each[key])


def trimmed(records: Sequence[Record], tau: float, cap: int = 3) -> list[Key]:
    """The (at most ``cap``) candidates within ``(1 + tau)×`` the best one's scored error."""
    each = {key: mse(records, [key]) for key in records[0][0]}
    best = min(each.values())
    return [key for key in ranked(records) if each[key] <= (1 + tau) * best][:cap]


def by_lead(records: Sequence[Record], buckets: int) -> list[list[Key]]:
    """The margin rule on each lead bucket's queries alone (all of them where a bucket is empty)."""
    picks = []
    for b in range(buckets):
        part = []
        for p, y, lead in records:
            inside = np.minimum((lead * buckets).astype(int), buckets - 1) == b
            if inside.any():
                part.append(({k: v[inside] for k, v in p.items()}, y[inside], lead[inside]))
        picks.append(margin(part or records))
    return picks


def greedy(records: Sequence[Record], steps: int = 5) -> list[Key]:
    """Ensemble selection (Caruana et al. 2004): from the best candidate, add (with
    replacement, so members are weighted) the one that most lowers the scored error of the
    members' mean, while one does, at most ``steps`` members."""
    members = [ranked(records)[0]]
    best = mse(records, members)
    while len(members) < steps:
        trial = {key: mse(records, members + [key]) for key in records[0][0]}
        key = min(trial, key=lambda k: trial[k])
        if not trial[key] < best:
            break
        members, best = members + [key], trial[key]
    return members


def greedy_margin(records: Sequence[Record]) -> list[Key]:
    """The margin rule's pick unless the greedy ensemble's scored error is ``SIMPLER_MARGIN`` lower."""
    ship, ensemble = margin(records), greedy(records)
    return ensemble if mse(records, ensemble) < (1 - bf.SIMPLER_MARGIN) * mse(records, ship) else ship


def seasonless(records: Sequence[Record]) -> bool:
    """No period among the candidates (no seasonal profile, no harmonic residual AR)."""
    return not any(m in SEASONAL or m in HARMONIC_AR for m, _ in records[0][0])


def when_seasonless(rule: Callable[[Sequence[Record]], list[Key]]) -> Callable[[Sequence[Record]], list[Key]]:
    """``rule`` on a channel without a period, the margin rule on the others."""
    return lambda records: rule(records) if seasonless(records) else margin(records)


def shd(records: Sequence[Record]) -> list[Key]:
    """The M3 competition's "Comb S-H-D": the mean of simple exponential smoothing (here the
    level), Holt's trend and the damped trend, those of them the channel has."""
    members = [key for key in (("level", 0.0), ("holt", 0.0), ("damped_trend", 0.0)) if key in records[0][0]]
    return members if len(members) >= 2 else margin(records)


def bagged(records: Sequence[Record], lag: int, argmin: bool = False) -> dict[Key, float]:
    """The shipped rule: :func:`margin` on moving-block bootstrap resamples of the scored
    origins, each pick weighted by how often it won (``levy_core.offsets.bagging``, the
    library's own code); ``argmin``: the lowest error alone on each resample instead.
    Candidate → weight, summing to 1."""
    keys = list(records[0][0])
    counts = np.array([len(y) for _, y, _ in records], np.float64)

    def rule(mse_of: Callable[[Sequence[Key]], float]) -> list[Key]:
        return [min(keys, key=lambda key: mse_of([key]))] if argmin else pick(keys, mse_of)

    return bagged_weights(functools.partial(_per_origin_se, records), counts, lag, rule)


RULES: dict[str, Callable[[Sequence[Record]], list[Key]]] = {
    "margin": margin,
    "top3": lambda r: ranked(r)[:3],
    **{f"trim{t:g}": functools.partial(trimmed, tau=t) for t in (0.3, 0.5, 0.75)},
    "trim0.5c4": functools.partial(trimmed, tau=0.5, cap=4),
    "greedy": greedy,
    "greedy_margin": greedy_margin,
    "top3_seasonless": when_seasonless(lambda r: ranked(r)[:3]),
    "shd_seasonless": when_seasonless(shd),
    "top5_seasonless": when_seasonless(lambda r: ranked(r)[:5]),
    "shipped_mae": functools.partial(margin, loss=mae),
    "shipped_trim10": functools.partial(margin, loss=trimmed_mse),
    "shipped_trim25": functools.partial(margin, loss=functools.partial(trimmed_mse, share=0.25)),
    "shipped_median": functools.partial(margin, loss=median_mse),
}
LEAD_RULES = {"lead2": 2, "lead3": 3}
MEDIAN_RULES = {"median5": 5, "median7": 7, "median_all": None}
DM_RULES = {"dm0.5": 0.5, "dm1": 1.0, "dm1.645": 1.645}
LAST_DM_RULES = {"last_dm1": 1.0, "last_dm1.645": 1.645}
BAG_RULES = {"shipped": False, "bag_argmin": True}


def predict(rule: str, records: Sequence[Record], forecasts: dict[Key, np.ndarray], lead: np.ndarray,
            lag: int = 0) -> np.ndarray:
    """The held-out forecast of ``rule``'s pick (``lag``: the origins' overlap, for the DM rules)."""
    if rule in BAG_RULES:
        return np.sum([w * forecasts[m] for m, w in bagged(records, lag, argmin=BAG_RULES[rule]).items()], axis=0)
    if rule in DM_RULES:
        return np.mean([forecasts[m] for m in shipped_dm(records, lag, DM_RULES[rule])], axis=0)
    if rule in LAST_DM_RULES:
        return np.mean([forecasts[m] for m in leave_last_dm(records, lag, LAST_DM_RULES[rule])], axis=0)
    if rule in LEAD_RULES:
        n = LEAD_RULES[rule]
        bucket = np.minimum((lead * n).astype(int), n - 1)
        out = np.empty(len(lead))
        for b, members in enumerate(by_lead(records, n)):
            out[bucket == b] = np.mean([forecasts[m][bucket == b] for m in members], axis=0)
        return out
    if rule in MEDIAN_RULES:
        return np.median([forecasts[m] for m in ranked(records)[:MEDIAN_RULES[rule]]], axis=0)
    return np.mean([forecasts[m] for m in RULES[rule](records)], axis=0)


ALL_RULES = [*BAG_RULES, *RULES, *LEAD_RULES, *MEDIAN_RULES, *DM_RULES, *LAST_DM_RULES]


# ---------------------------------------------------------------------------------------
# one (series, end)


def study_fold(case, k: int) -> list[dict]:
    """Per channel of one (series, end): each rule's held-out absolute and squared errors."""
    train, test, _ = anchors.split(case, k)
    got = capture(case, train, test)
    past, origins, episodes, spec = got["past"], got["origins"], got["episodes"], got["spec"]
    by_time = sorted(episodes, key=lambda m: (origins[m][1], m))
    scored = by_time[len(by_time) // 2:] if len(by_time) >= 2 * bf.MIN_SCORED_ORIGINS else by_time
    cands = bf.score_candidates(past, origins, episodes, scored, season=got["season"])
    horizon = (test["time"].max() - train["time"].max()) / pd.Timedelta(hours=1)
    leads = {str(c): [] for c in cands.records}
    for model_id in scored:  # each scored query's lead, in the order the records hold them
        for channel, q in episodes[model_id].groupby("channel", sort=False):
            leads.setdefault(str(channel), []).append((q["time"].to_numpy(np.float64) - origins[model_id][1]) / horizon)
    lag = overlap_lag(np.array([origins[m][1] for m in scored]),
                                 np.array([float(episodes[m]["time"].max()) for m in scored]))
    full = got["scaler"].transform(got["user_frame"])
    last = float(got["user_frame"]["time"].max())  # the training part's last time, in the fit's hours
    rows = []
    for channel, recs in cands.records.items():
        records = [(p, y, np.clip(lead, 0.0, 1.0)) for (p, y), lead in zip(recs, leads[channel], strict=True)]
        te = test if len(case.channels) == 1 else test[test["channel"] == channel]  # one channel: fitted as "value"
        g = full[full["channel"] == channel]
        t, y = bf.ChannelPast(g["time"].to_numpy(np.float64), g["value"].to_numpy(np.float64)).before(last)
        tq = last + ((te["time"] - train["time"].max()) / pd.Timedelta(hours=1)).to_numpy(np.float64)
        forecasts = cands.forecasts(channel, t, y, last, tq)
        lo, hi = got["scaler"].minimum[channel], got["scaler"].maximum[channel]
        truth = (te["value"].to_numpy(np.float64) - lo) / (hi - lo)
        ship = (dict(zip(map(tuple, spec.members[channel]), spec.weights[channel], strict=True))
                if spec.methods[channel] == "combination" else {(spec.methods[channel], spec.periods.get(channel, 0.0)): 1.0})
        again = bagged(records, lag)
        row = {"series": case.name, "end": k, "channel": channel, "n": len(truth), "lag": lag,
               "ship_check": set(again) == set(ship) and all(abs(again[m] - w) < 1e-9 for m, w in ship.items())}
        lead = np.clip((tq - last) / horizon, 0.0, 1.0)
        for rule in ALL_RULES:
            err = predict(rule, records, forecasts, lead, lag) - truth
            row[f"mae:{rule}"] = float(np.mean(np.abs(err)) * (hi - lo))
            row[f"mse:{rule}"] = float(np.mean(err**2))
        rows.append(row)
    return rows


def tables(rows: pd.DataFrame) -> list[str]:
    out = []
    for metric in ("mae", "mse"):
        per = rows.groupby("series", sort=False)[[f"{metric}:{r}" for r in ALL_RULES]].mean()
        per.columns = ALL_RULES
        rel = per.div(per["shipped"], axis=0)
        out += [f"Held-out {metric.upper()} per series (mean over ends and channels) ÷ the shipped rule's:",
                rel.to_string(float_format=lambda v: f"{v:.3f}"), "",
                "| rule | geometric mean over series | series better / worse (> 1 %) |", "|---|---|---|"]
        out += [f"| {r} | {float(np.exp(np.log(rel[r]).mean())):.3f} | {int((rel[r] < 0.99).sum())} / "
                f"{int((rel[r] > 1.01).sum())} |" for r in ALL_RULES]
        out.append("")
    out.append(f"Shipped rule re-applied == the fit's own pick on {int(rows['ship_check'].sum())} of {len(rows)} "
               "(series, end, channel) rows.")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME")
    parser.add_argument("--set", choices=tuple(anchors.SETS), default="anchors")
    parser.add_argument("--ends", type=int, default=6)
    parser.add_argument("--out", type=Path, default=None, help="also write the tables here")
    args = parser.parse_args(argv)
    rows = []
    for case in anchors.load_cases(args.only, which=args.set):
        for k in range(1, args.ends + 1):
            rows += study_fold(case, k)
            print(f"{case.name} end {k}", flush=True)
    text = "\n".join(tables(pd.DataFrame(rows)))
    return anchors.emit(text, args.out)


if __name__ == "__main__":
    sys.exit(main())
