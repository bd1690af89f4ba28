"""Screen: would the offset's own errors over the whole history widen the band where it under-covers?

On the fresh and development sets of ``benchmarks/anchors.py`` the Lévy band covers less
and less with the lead (0.85 / 0.79 / 0.71 in the first / middle / last third of the
horizon, pooled over both): the per-lead spread ``s(h)`` is fitted on the latest rolling
origins, one step apart, a few horizons of history, which often saw errors grow more
slowly than the test windows did. The offset, however, can be scored at many more origins
spread over the whole history. This screen asks whether that history foresees the test
windows' errors, before anything is built.

For each (series, end, channel) of a set:

1. the fit runs up to its offset choice (``offset_study.capture``); the chosen offset (the
   shipped spec, members of a combination averaged) then forecasts one horizon from up to
   ``ORIGINS`` origins spread evenly over the last two thirds of the training part, each
   from its own past; its errors are pooled by third of the horizon: their RMS and the 90 %
   quantile of their magnitude (data units);
2. the saved Lévy predictions of that end (``anchors.py --save-predictions``) are re-scored
   with their half-width ``w`` changed per third, the mean untouched:

   * ``growth_floor``: ``w · max(1, g_hist / g_band)`` (the history's RMS growth from the
     first third, ``g_hist``, against the band's own, ``g_band``): the band grows at least as
     the history's errors did;
   * ``growth_sqrt``: ``w · max(1, sqrt(g_hist / g_band))``;
   * ``growth_prior``: ``w · sqrt(½ + ½ (g_hist / g_band)²)``: each third shrunk half-way to
     the history's shape, narrower where the history grew less;
   * ``quantile_floor``: ``max(w, q90_hist)``: never narrower than the history's 90 % error;
   * ``quantile_floor_80``: ``max(w, 0.8 · q90_hist)``;
   * ``quantile_mix``: ``sqrt(½ w² + ½ q90_hist²)``;
   * ``phase``: ``w · r(φ)``, where ``r²`` is the offset's mean squared error over the
     history in each of ``PHASE_BINS`` bins of the phase of the longest candidate period
     seen three times (shrunk to 1 with weight ``n / (n + 30)``), divided by its mean over
     the phases of the calibration window (the last ``CALIBRATION_STEPS`` sampling steps and
     a horizon before the end): a band wider in the season's more variable part.

It is a screen, not a refit: the calibration scale and the adaptive walk are not re-run
with the changed spread (a refit would re-scale part of any change away). Output: 90 %
coverage by third and pooled, per series coverage, and CRPS ÷ the shipped band's per
series with their geometric mean. Log of the 2026-12-04 run:
``benchmarks/results/band_floor_2026-12-04.txt``.

Usage (single-threaded; the anchors extras; DIR from ``anchors.py --save-predictions``)::

    OMP_NUM_THREADS=1 python benchmarks/studies/band_floor.py --set fresh --predictions DIR [--ends 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from levy_core.offsets import base_forecast as bf

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.studies import offset_study  # noqa: E402

anchors, capture = offset_study.anchors, offset_study.capture

ORIGINS = 40  # history origins the chosen offset is scored from
PHASE_BINS = 12
CALIBRATION_STEPS = 120  # about the rolling origins a one-series fit calibrates on
THIRDS = 3
VARIANTS = ("shipped", "growth_floor", "growth_sqrt", "growth_prior", "quantile_floor", "quantile_floor_80",
            "quantile_mix", "phase")


def third_of(lead_share: np.ndarray) -> np.ndarray:
    """The third of the horizon (0, 1, 2) of each lead, as a share of the horizon in (0, 1]."""
    return np.minimum((THIRDS * np.asarray(lead_share)).astype(int), THIRDS - 1)


def phase_of(times: np.ndarray, period: float) -> np.ndarray:
    return ((np.asarray(times) % period) / period * PHASE_BINS).astype(int) % PHASE_BINS


def history_errors(case, k: int) -> dict[str, dict[str, np.ndarray]]:
    """Per channel, the chosen offset's errors over the history, by third of the horizon:
    ``rms`` and ``q90`` (data units), each (3,), NaN in a third without queries; with a
    period, ``phase_ratio`` (PHASE_BINS,) normalised over the calibration window's phases,
    ``period`` and ``last`` (the training part's last time, the fit's hours)."""
    train, test, end = anchors.split(case, k)
    got = capture(case, train, test)
    past, spec, scaler = got["past"], got["spec"], got["scaler"]
    horizon = anchors._horizon_days(case, end) * 24.0
    out = {}
    for channel, method in spec.methods.items():
        g = past[past["channel"] == channel].sort_values("time")
        p = bf.ChannelPast(g["time"].to_numpy(np.float64), g["value"].to_numpy(np.float64))
        start = p.t[0] + (p.t[-1] - p.t[0]) / 3
        usable = p.t[(p.t >= start) & (p.t + horizon <= p.t[-1])]
        if len(usable) < 5:
            continue
        origins = usable[np.unique(np.linspace(0, len(usable) - 1, min(ORIGINS, len(usable))).astype(int))]
        members = spec.members[channel] if method == "combination" else [(method, spec.periods.get(channel, 0.0))]
        squared: list[list[float]] = [[] for _ in range(THIRDS)]
        phases, pooled = [], []
        for origin in origins:
            t, y = p.before(origin + 1e-9)  # the origin's own observation is known
            ahead = (p.t > origin) & (p.t <= origin + horizon)
            tq, yq = p.t[ahead], p.y[ahead]
            forecast = np.mean([bf.bounded(t, y, bf.forecast(
                m, t, y, float(t[-1]), tq, period=period, harmonics=spec.harmonics, gap=spec.gap,
                order=spec.orders.get(channel, 0), gp=spec.gp.get(channel),
                smoothing_parameters=(spec.holt if m == "holt" else spec.smoothing).get(channel)))
                for m, period in members], axis=0)
            which = third_of((tq - origin) / horizon)
            phases.append(tq)
            pooled.append((forecast - yq) ** 2)
            for j in range(THIRDS):
                squared[j] += list((forecast[which == j] - yq[which == j]) ** 2)
        span = float(scaler.maximum[channel] - scaler.minimum[channel])
        out[channel] = {"rms": np.array([np.sqrt(np.mean(s)) * span if s else np.nan for s in squared]),
                        "q90": np.array([np.quantile(np.sqrt(s), 0.9) * span if s else np.nan for s in squared]),
                        # the training part's last time in the fit's hours (any channel's), and as a date
                        "last": float(got["user_frame"]["time"].max()), "train_end": train["time"].max()}
        periods = [x for x in spec.harmonics if 3 * x <= p.t[-1] - p.t[0]]
        if periods:
            period, e2 = max(periods), np.concatenate(pooled)
            which = phase_of(np.concatenate(phases), period)
            count = np.bincount(which, minlength=PHASE_BINS)
            raw = np.bincount(which, weights=e2, minlength=PHASE_BINS) / np.maximum(count, 1) / e2.mean()
            ratio = (count * raw + 30.0) / (count + 30.0)
            window = p.t[p.t > p.t[-1] - CALIBRATION_STEPS * spec.gap - horizon]
            out[channel].update(period=period, phase_ratio=ratio / np.mean(ratio[phase_of(window, period)]))
    return out


def half_width(variant: str, width: np.ndarray, which: np.ndarray, hist: dict[str, np.ndarray] | None,
               hours: np.ndarray) -> np.ndarray:
    """The changed half-width of one (series, end, channel)'s queries (n,) in lead order,
    ``hours`` after the training part's last observation."""
    if hist is None or variant == "shipped":
        return width
    if variant == "phase":
        if "period" not in hist:
            return width
        return width * np.sqrt(hist["phase_ratio"][phase_of(hist["last"] + hours, hist["period"])])
    band = np.array([np.mean(width[which == j]) if np.any(which == j) else np.nan for j in range(THIRDS)])
    ratio = np.nan_to_num((hist["rms"] / hist["rms"][0]) / (band / band[0]), nan=1.0)[which]
    q90 = np.nan_to_num(hist["q90"])[which]
    return {"growth_floor": width * np.maximum(1.0, ratio),
            "growth_sqrt": width * np.maximum(1.0, np.sqrt(ratio)),
            "growth_prior": width * np.sqrt(0.5 + 0.5 * ratio ** 2),
            "quantile_floor": np.maximum(width, q90),
            "quantile_floor_80": np.maximum(width, 0.8 * q90),
            "quantile_mix": np.sqrt(0.5 * width ** 2 + 0.5 * q90 ** 2)}[variant]


def screen(which_set: str, predictions: pd.DataFrame, ends: int, names: Sequence[str] | None) -> pd.DataFrame:
    """One row per (series, end, variant, third): coverage, mean CRPS, queries."""
    levy = predictions[predictions["method"] == "levy"].sort_values(["series", "end", "channel", "time"])
    rows = []
    for case in anchors.load_cases(names, which=which_set, say=lambda _: None):
        for k in range(1, ends + 1):
            hist = history_errors(case, k)
            for channel, q in levy[(levy["series"] == case.name) & (levy["end"] == k)].groupby("channel"):
                h = hist.get(channel) or (hist.get("value") if len(case.channels) == 1 else None)
                n = len(q)
                which = third_of(np.arange(n) / n)  # queries in time order: equal thirds of the window
                y, mean = q["y"].to_numpy(np.float64), q["mean"].to_numpy(np.float64)
                width = ((q["hi"] - q["lo"]) / 2).to_numpy(np.float64)
                hours = ((q["time"] - h["train_end"]) / pd.Timedelta(hours=1)).to_numpy(np.float64) if h else None
                for variant in VARIANTS:
                    w = half_width(variant, width, which, h, hours)
                    crps = anchors.interval_crps(y, mean, mean - w, mean + w)
                    for j in range(THIRDS):
                        sel = which == j
                        rows.append({"series": case.name, "end": k, "variant": variant, "third": j,
                                     "coverage": float(np.mean(np.abs(y - mean)[sel] <= w[sel])),
                                     "crps": float(crps[sel].mean()), "n": int(sel.sum())})
            print(f"{case.name} end {k}", flush=True)
    return pd.DataFrame(rows)


def tables(rows: pd.DataFrame) -> list[str]:
    cov = rows.groupby(["variant", "third"])["coverage"].mean().unstack()[list(range(THIRDS))]
    cov.columns = ["first third", "middle third", "last third"]
    cov["pooled"] = rows.groupby("variant")["coverage"].mean()
    crps = rows.groupby(["series", "variant"])["crps"].mean().unstack()[list(VARIANTS)]
    ratio = crps.div(crps["shipped"], axis=0)
    per_series = rows.groupby(["series", "variant"])["coverage"].mean().unstack()[list(VARIANTS)]
    summary = pd.DataFrame({"CRPS ÷ shipped, geometric mean": np.exp(np.log(ratio).mean()),
                            "worst series": ratio.max(), "better (> 1 %)": (ratio < 0.99).sum(),
                            "worse (> 1 %)": (ratio > 1.01).sum()})
    return ["90 % coverage by third of the horizon (mean over series and ends)", cov.loc[list(VARIANTS)].round(3).to_string(),
            "", "CRPS ÷ the shipped band's (mean over ends)", summary.loc[list(VARIANTS)].round(3).to_string(),
            "", ratio.round(3).to_string(), "", "90 % coverage per series", per_series.round(2).to_string()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=tuple(anchors.SETS), default="fresh")
    parser.add_argument("--predictions", type=Path, required=True, metavar="DIR",
                        help="a directory written by anchors.py --save-predictions (Lévy rows of the same set)")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME")
    parser.add_argument("--ends", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="also write the tables here")
    args = parser.parse_args(argv)
    rows = screen(args.set, anchors.load_predictions(args.predictions), args.ends, args.only)
    if rows.empty:
        print("no Lévy predictions of this set in the directory", file=sys.stderr)
        return 1
    text = "\n".join(tables(rows))
    return anchors.emit(text, args.out)


if __name__ == "__main__":
    sys.exit(main())
