"""Shared by the benchmarks: which signal ranks the errors, and what happens far from the data.

* ``signal_table``: for σ̂, for √tr Σ alone (disagreement) and for √φ(Λ) alone (evidence),
  the risk–coverage area (squared error kept when trusting the most confident x %,
  integrated over x; lower is better) and Spearman(signal, |error|) within each channel,
  averaged over channels with at least ``min_queries`` queries (the paper's ablation).
* ``far_from_data``: every (series, channel) of a fitted model's test stays queried just
  after its history and at 10× and 100× the history length beyond it: median σ̂ ratios and
  the share of (series, channel) whose n_eff at least halved.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr

from levy_core import metrics
from levy_core.episodes.tasks import EpisodeBuilder
from levy_core.model.batch import Batch
from levy_core.operator.attention import log_phi


def within_channel_spearman(y: np.ndarray, mean: np.ndarray, signal: np.ndarray, channel: np.ndarray,
                            min_queries: int = 50) -> float:
    """Spearman(signal, |y − mean|) inside each channel, averaged over channels."""
    df = pd.DataFrame({"err": np.abs(y - mean), "s": signal, "c": channel})
    values = [spearmanr(g["s"], g["err"])[0] for _, g in df.groupby("c") if len(g) >= min_queries]
    values = [v for v in values if np.isfinite(v)]
    return float(np.mean(values)) if values else float("nan")


def signal_table(pred: pd.DataFrame, phi: str) -> pd.DataFrame:
    """Rows σ̂, √trΣ, √φ(Λ) for the Lévy predictions in ``pred`` (normalised columns
    ``y_norm, mean_norm, sigma_norm, disagreement_norm, log_evidence, channel``)."""
    y, mean, ch = pred["y_norm"].to_numpy(), pred["mean_norm"].to_numpy(), pred["channel"].to_numpy()
    log_ev = torch.as_tensor(pred["log_evidence"].to_numpy(), dtype=torch.float64)
    signals = {
        "σ̂ (both)": pred["sigma_norm"].to_numpy(),
        "√tr Σ (disagreement alone)": np.sqrt(pred["disagreement_norm"].to_numpy()),
        "√φ(Λ) (evidence alone)": np.exp(0.5 * log_phi(log_ev, phi).numpy()),
    }
    rows = []
    for name, s in signals.items():
        rows.append({"signal": name, "risk_coverage_area": metrics.risk_coverage_area(y, mean, s),
                     "spearman_pooled": metrics.spearman_sigma_abs_error(y, mean, s),
                     "spearman_within_channel": within_channel_spearman(y, mean, s, ch)})
    return pd.DataFrame(rows)


@torch.no_grad()
def far_from_data(model, builder: EpisodeBuilder, ids: list[str], history: float,
                  multiples: tuple[float, ...] = (0.02, 1.0, 10.0, 100.0)) -> pd.DataFrame:
    """Query every observed (series, channel) of ``ids`` at ``end + m·history`` for each
    multiple ``m`` (``end``: the series' last context time). Returns one row per
    (series, channel) with σ̂ and mean n_eff at each multiple."""
    rows = []
    for start in range(0, len(ids), 64):
        chunk = ids[start:start + 64]
        items = []
        for sid in chunk:
            s = builder.series[sid]
            ctx, _ = builder.split_indices(sid)
            if not len(ctx):
                continue
            end = float(s.time[ctx].max())
            chans = np.unique(s.channel[ctx])
            t = np.concatenate([np.full(len(chans), end + m * history) for m in multiples])
            c = np.tile(chans, len(multiples))
            items.append((sid, t, c, chans))
        if not items:
            continue
        batch: Batch = builder.query_batch([(sid, t, c) for sid, t, c, _ in items])
        out = model(batch)
        for b, (sid, _, _, chans) in enumerate(items):
            n = len(chans)
            sig = out.sigma[b, :n * len(multiples)].view(len(multiples), n).numpy()
            neff = out.n_eff[b, :, :n * len(multiples)].mean(0).view(len(multiples), n).numpy()
            for j, ch in enumerate(chans):
                row = {"series_id": sid, "channel": int(ch)}
                for i, m in enumerate(multiples):
                    row[f"sigma_{m:g}"], row[f"n_eff_{m:g}"] = float(sig[i, j]), float(neff[i, j])
                rows.append(row)
    return pd.DataFrame(rows)


def print_far_from_data(df: pd.DataFrame, label: str, multiples: tuple[float, ...] = (0.02, 1.0, 10.0, 100.0)) -> None:
    base = multiples[0]
    print(f"\nFar from the data ({label}; {len(df)} (series, channel); queried at end + m × history):")
    print("| m | median σ̂ / σ̂ just after | share of (series, channel) with σ̂ above its value just after | "
          "share with n_eff at most half its value just after |")
    print("|---|---|---|---|")
    for m in multiples[1:]:
        ratio = df[f"sigma_{m:g}"] / df[f"sigma_{base:g}"]
        halved = df[f"n_eff_{m:g}"] <= 0.5 * df[f"n_eff_{base:g}"]
        print(f"| {m:g} | {ratio.median():.2f} | {(ratio > 1).mean():.3f} | {halved.mean():.3f} |")
    grow = df[f"sigma_{multiples[-1]:g}"] / df[f"sigma_{multiples[-2]:g}"]
    print(f"median σ̂({multiples[-1]:g}×) / σ̂({multiples[-2]:g}×) = {grow.median():.3f} "
          f"(share above 1: {(grow > 1).mean():.3f})")
