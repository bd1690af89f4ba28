"""The one-series band by third of the horizon: one adaptive walk for every lead, or one per
third (issue 51; protocol in ``benchmarks/results/NOTES.md``, written before the first run).

A fit on rolling origins walks one adaptive conformal inference (ACI) over its test origins:
every lead shares one pool of scores ``|y − ŷ| / σ`` (σ already scaled by the lead's ``s(h)``)
and one ``α_t``. Where ``s(h)`` misjudges how the error grows with the lead, the pooled
quantile covers one third of the horizon and misses another. Calibration for multi-step
forecasts usually takes each step on its own (conformal forecasting RNNs, Stankevičiūtė et al.
2021; per-step ACI). This study captures, for every (series, end) of the one-series sets, the
calibration and test origins' normalised queries with their leads and the end window's
predictions, as ``anchors.py`` fits them with the defaults, and replays offline:

- **shipped**: the library's walk (its final quantile reproduced here from the captured frames:
  a check that the replay is the library's);
- **per third**: three walks, one per third of the horizon, each from that third's
  calibration scores and over that third's test queries, the end window's queries taking
  their third's final state;
- **walk scores only**: the shipped walk, whose end band takes the quantile at ``1 − α_T`` of
  the test origins' scores alone (the calibration origins also chose the offset, its
  correction share and ``s(h)``, so their scores are in-sample for those choices).

Reported per set: the end window's coverage (mean over (series, end) pairs) overall and by
third, and CRPS (of the Gaussian implied by each 90 % band, ``anchors.py``'s scoring) ÷ the
shipped band's, geometric mean over series; and over the 35 series of the dev, anchors and
fresh sets.

Usage (the anchors extras environment)::

    python -m benchmarks.studies.lead_band --capture DIR --sets dev fresh anchors unseen rclassics
    python -m benchmarks.studies.lead_band --from DIR --sets dev fresh anchors unseen rclassics
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Sequence

import numpy as np
import pandas as pd

from benchmarks.studies.end_band import (
    Z90,
    capture_parser,
    fit_each_end,
    gaussian_crps,
    save_captures,
)
from levy_core.calibration.adaptive import AdaptiveConformal
from levy_core.calibration.over_time import channel_scores, channel_sigma, origin_gamma
from levy_core.calibration.scores import floored_sigma

LEVEL = 0.9
COLUMNS = ["y_norm", "mean_norm", "spread_norm", "channel", "time", "series_id"]


def capture(set_name: str) -> list[dict]:
    """One fit per (series, end) of ``set_name``: the calibration and test origins' queries
    (normalised, with each query's lead and calibrated σ), the walk's state and the end band."""
    import levy_core.pipeline.recipe as recipe
    from levy_core.pipeline.predict import observed_queries

    seen: dict = {}
    original = recipe.walk_test_origins

    def walk(fitted, builder, test_ids, origin_of, *, mc_passes=0):
        original(fitted, builder, test_ids, origin_of, mc_passes=0)
        cal_ids = builder.usable(fitted.split.calibration)
        frames = {}
        for role, ids in (("cal", cal_ids), ("test", test_ids)):
            frame = observed_queries(fitted, builder, ids)[COLUMNS].copy()
            frame["sigma"] = channel_sigma(fitted.levy_calibration, frame["spread_norm"].to_numpy(np.float64),
                                           frame["channel"].to_numpy())
            frame["origin"] = frame["series_id"].map(origin_of).to_numpy(np.float64)
            frames[role] = frame
        state = fitted.adaptive["levy"][str(LEVEL)]
        pooled, floor = channel_scores(fitted.levy_calibration)
        seen.update(frames=frames, alpha_T=float(state.alpha_), q_T=float(state.quantile()),
                    max_score=float(state.scores_.max()), pooled=pooled, floor=float(floor),
                    horizon=float(fitted.split.origin_plan["horizon"]), gamma=origin_gamma(fitted.split.origin_plan))

    def lead(case, test: pd.DataFrame, end) -> dict:
        share = (pd.to_datetime(test["time"]) - pd.Timestamp(end)) / (end + case.horizon - end)
        return {"lead_share": np.asarray(share, np.float64)}

    return fit_each_end(set_name, walk, seen, lead)


def third(share: np.ndarray) -> np.ndarray:
    """0, 1 or 2: the third of the horizon a lead (as a share of the horizon, in (0, 1]) lies in."""
    return np.clip(np.ceil(3 * np.asarray(share, np.float64)) - 1, 0, 2).astype(int)


def scores(frame: pd.DataFrame, floor: float) -> np.ndarray:
    """The walk's score ``|y − ŷ| / max(σ, floor)`` of each query of ``frame`` (n,)."""
    sigma = floored_sigma(frame["sigma"].to_numpy(np.float64), floor)
    return np.abs(frame["y_norm"] - frame["mean_norm"]).to_numpy(np.float64) / sigma


def end_quantile(aci: AdaptiveConformal, pool: np.ndarray | None = None) -> float:
    """The end band's score quantile as `AdaptiveConformal.next_interval(finite=True)` takes it,
    from ``pool`` in place of the walk's own when given."""
    if pool is None:
        q, largest = aci.quantile(), float(aci.scores_.max())
    else:
        q = AdaptiveConformal(LEVEL).conformalize(pool).quantile(aci.alpha_)
        largest = float(pool.max())
    return largest if math.isinf(q) else q


def replay(row: dict, cal: pd.DataFrame, test: pd.DataFrame) -> AdaptiveConformal:
    aci = AdaptiveConformal(LEVEL, row["gamma"]).conformalize(scores(cal, row["floor"]), sigma_floor=row["floor"])
    aci.run(test["y_norm"], test["mean_norm"], test["sigma"], order=test["origin"])
    return aci


def rules(row: dict) -> dict[str, np.ndarray]:
    """Each rule's score quantile for every end query (n,)."""
    cal, test = row["frames"]["cal"], row["frames"]["test"]
    n = row["y"].size
    whole = replay(row, cal, test)
    out = {"shipped": np.full(n, end_quantile(whole)),
           "walk scores only": np.full(n, end_quantile(whole, scores(test, row["floor"])))}
    per = np.empty(n)
    h = row["horizon"]
    cal_third, test_third, end_third = third(cal["time"] / h), third(test["time"] / h), third(row["lead_share"])
    for t in range(3):
        c, s = cal[cal_third == t], test[test_third == t]
        if len(c) == 0 or len(s) == 0:  # a third no origin scored: the shared walk's
            per[end_third == t] = out["shipped"][0]
            continue
        per[end_third == t] = end_quantile(replay(row, c, s))
    out["per third"] = per
    return out


def pair_rows(set_name: str, rows: list[dict]) -> pd.DataFrame:
    out = []
    for row in rows:
        sigma = row["half"] / row["q_T"]  # the end band's σ on the walk's scale
        score = np.abs(row["y"] - row["mean"]) / sigma
        thirds = third(row["lead_share"])
        base = gaussian_crps(row["y"], row["mean"], row["half"] / Z90).mean()
        for rule, q in rules(row).items():
            crps = gaussian_crps(row["y"], row["mean"], q * sigma / Z90).mean()
            out.append({"set": set_name, "series": row["series"], "end": row["end"], "rule": rule,
                        "coverage": float(np.mean(score <= q)), "crps_ratio": crps / base if base > 0 else 1.0,
                        "replay_q_matches": bool(np.isclose(end_quantile(replay(row, row["frames"]["cal"],
                                                                                row["frames"]["test"])), row["q_T"])
                                                 or math.isinf(row["q_T"])),
                        **{f"third {t + 1}": float(np.mean(score[thirds == t] <= q[thirds == t]))
                           if np.any(thirds == t) else np.nan for t in range(3)}})
    return pd.DataFrame(out)


def tables(frame: pd.DataFrame) -> str:
    cols = ["coverage", "third 1", "third 2", "third 3"]
    per_series = frame.groupby(["set", "rule", "series"])["crps_ratio"].mean()
    gm = per_series.groupby(["set", "rule"]).apply(lambda r: float(np.exp(np.log(r).mean())))
    shipped = frame[frame["rule"] == "shipped"]
    parts = [f"replay reproduces the library's end quantile on {int(shipped['replay_q_matches'].sum())} of "
             f"{len(shipped)} pairs",
             "\n## coverage (mean over (series, end) pairs), by third, and CRPS ÷ shipped (geometric mean over series)",
             frame.groupby(["set", "rule"])[cols].mean().join(gm.rename("CRPS ÷ shipped")).assign(
                 pairs=frame.groupby(["set", "rule"]).size()).round(3).to_string()]
    tuned = frame[frame["set"].isin(["dev", "anchors", "fresh"])]
    gm35 = tuned.groupby(["rule", "series"])["crps_ratio"].mean().groupby("rule").apply(
        lambda r: float(np.exp(np.log(r).mean())))
    parts += ["\n## the 35 series (dev, anchors, fresh): CRPS ÷ shipped, geometric mean", gm35.round(4).to_string()]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    args = capture_parser(__doc__).parse_args(argv)
    if args.capture is not None:
        save_captures(args.capture, args.sets, capture)
        return 0
    frames = [pair_rows(name, pickle.loads((args.source / f"{name}.pkl").read_bytes()))  # our own rows
              for name in args.sets]
    print(tables(pd.concat(frames, ignore_index=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
