"""How much of an accuracy table is the test split's luck: a bootstrap over test stays.

The protocol's MSE is averaged within each variable, then across variables, so a variable
with 5 test queries (Cholesterol) weighs as much as heart rate's 20,000, and one stay can
move it by per cents. Resampling whole stays (with replacement, their queries kept
together) gives each forecaster's MSE a 95 % interval, and the *paired* ratio to a
reference forecaster (the same resampled stays for both) says whether a difference between
two forecasters is larger than the split's own noise. ``scipy.stats.bootstrap`` does the
resampling; this module only turns a resample of stays into the protocol's score.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import bootstrap


def stay_bootstrap(predictions: dict[str, np.ndarray], target: np.ndarray, channel: np.ndarray, stay: np.ndarray,
                   reference: str, *, averages: dict[str, list[str]] | None = None, n_resamples: int = 2000,
                   seed: int = 0) -> pd.DataFrame:
    """Per forecaster: the protocol's MSE, its 95 % percentile interval over stay resamples,
    and the paired ratio to ``reference``'s MSE minus 1 with its interval.

    ``predictions`` maps a forecaster's name to its prediction per test query (n,);
    ``target``, ``channel`` and ``stay`` are per query too. ``averages`` adds rows whose score
    is the mean of some forecasters' scores (a model's mean over training seeds), resampled
    with them; ``reference`` may name one. A resample that draws no query of a variable
    averages over the variables it has (what the protocol does on any split).
    """
    averages = averages or {}
    if reference not in predictions and reference not in averages:
        raise ValueError(f"reference {reference!r} is not one of the forecasters {sorted(predictions)} "
                         f"or averages {sorted(averages)}")
    names = list(predictions)
    for label, members in averages.items():
        if not members or any(m not in predictions for m in members):
            raise ValueError(f"average {label!r} needs forecasters among {sorted(predictions)}, got {members}")
    member_index = [[names.index(m) for m in members] for members in averages.values()]
    # per (stay, variable): the count of queries and each forecaster's sum of squared errors
    cells = pd.DataFrame({"s": stay, "c": channel, **{f"e{i}": (predictions[n] - target) ** 2
                                                       for i, n in enumerate(names)}})
    grouped = cells.groupby(["s", "c"], sort=True)
    sums = grouped.sum().reset_index()
    counts = grouped.size().to_numpy().astype(float)
    stays, stay_of_cell = np.unique(sums["s"].to_numpy(), return_inverse=True)
    variables, variable_of_cell = np.unique(sums["c"].to_numpy(), return_inverse=True)
    errors = sums[[f"e{i}" for i in range(len(names))]].to_numpy()  # (cells, forecasters)
    ref = (names + list(averages)).index(reference)

    def scores(stay_draw: np.ndarray) -> np.ndarray:
        weight = np.bincount(stay_draw, minlength=len(stays)).astype(float)[stay_of_cell]  # (cells,)
        n = np.bincount(variable_of_cell, weight * counts, len(variables))
        seen = n > 0
        mse = np.array([(np.bincount(variable_of_cell, weight * errors[:, j], len(variables))[seen] / n[seen]).mean()
                        for j in range(len(names))])
        mse = np.concatenate([mse, [mse[idx].mean() for idx in member_index]])
        return np.concatenate([mse, mse / mse[ref] - 1.0])

    point = scores(np.arange(len(stays)))
    result = bootstrap((np.arange(len(stays)),), scores, n_resamples=n_resamples, method="percentile",
                       vectorized=False, paired=False, rng=np.random.default_rng(seed))
    lo, hi = result.confidence_interval.low, result.confidence_interval.high
    names = names + list(averages)
    k = len(names)
    return pd.DataFrame({"forecaster": names, "mse": point[:k], "mse_low": lo[:k], "mse_high": hi[:k],
                         "vs_reference": point[k:], "vs_reference_low": lo[k:], "vs_reference_high": hi[k:]})


def print_table(table: pd.DataFrame, reference: str) -> None:
    """``stay_bootstrap``'s table as markdown; ``reference`` names the paired column."""
    print(f"| forecaster | test MSE | 95 % interval | vs {reference} | 95 % interval |")
    print("|---|---|---|---|---|")
    for row in table.itertuples():
        print(f"| {row.forecaster} | {row.mse:.3e} | {row.mse_low:.3e}–{row.mse_high:.3e} | "
              f"{100 * row.vs_reference:+.1f} % | {100 * row.vs_reference_low:+.1f} to "
              f"{100 * row.vs_reference_high:+.1f} % |")
