"""benchmarks/common/intervals.py: the accuracy table's stay bootstrap (a benchmark helper, tested
because the PhysioNet benchmark page's intervals come from it)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.common import intervals


def queries(n_stays: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Targets, variables and stays of a small test split (a rare variable included)."""
    rng = np.random.default_rng(seed)
    stay = np.repeat(np.arange(n_stays), 6)
    channel = rng.integers(0, 4, len(stay))
    channel[::25] = 4  # a rare variable: few queries, as Cholesterol has
    return rng.normal(size=len(stay)), channel, stay


def test_the_point_estimate_is_the_protocol_mse() -> None:
    y, c, s = queries()
    pred = y + np.random.default_rng(1).normal(size=len(y))
    table = intervals.stay_bootstrap({"a": pred, "b": np.zeros_like(y)}, y, c, s, reference="b", n_resamples=200)
    by_hand = np.mean([np.mean((pred - y)[c == k] ** 2) for k in np.unique(c)])
    assert table.loc[0, "mse"] == pytest.approx(by_hand, rel=1e-12)
    assert (table["mse_low"] <= table["mse"]).all() and (table["mse"] <= table["mse_high"]).all()
    assert table.loc[1, ["vs_reference", "vs_reference_low", "vs_reference_high"]].tolist() == [0.0, 0.0, 0.0]


def test_ratios_are_paired() -> None:
    """Errors exactly √2 times the reference's on every query: the ratio is +100 % on every
    resample (a zero-width interval) though each MSE alone varies from resample to resample."""
    y, c, s = queries()
    ref = y + np.random.default_rng(2).normal(size=len(y))
    worse = y + np.sqrt(2.0) * (ref - y)
    table = intervals.stay_bootstrap({"ref": ref, "worse": worse}, y, c, s, reference="ref", n_resamples=300)
    row = table.set_index("forecaster").loc["worse"]
    assert row["vs_reference_low"] == pytest.approx(1.0, rel=1e-9)
    assert row["vs_reference_high"] == pytest.approx(1.0, rel=1e-9)
    assert row["mse_high"] - row["mse_low"] > 0.1 * row["mse"]


def test_identical_stays_leave_no_sampling_noise() -> None:
    y0, c0, _ = queries(n_stays=1)
    n = 30
    y, c, s = np.tile(y0, n), np.tile(c0, n), np.repeat(np.arange(n), len(y0))
    table = intervals.stay_bootstrap({"a": y + 0.5, "b": y - 1.0}, y, c, s, reference="b", n_resamples=100)
    assert np.allclose(table["mse_low"], table["mse"]) and np.allclose(table["mse_high"], table["mse"])
    assert table.loc[0, "mse"] == pytest.approx(0.25)


def test_averages_are_the_mean_of_their_members() -> None:
    y, c, s = queries()
    rng = np.random.default_rng(3)
    preds = {f"m{i}": y + rng.normal(size=len(y)) for i in range(3)}
    table = intervals.stay_bootstrap(preds, y, c, s, reference="mean", averages={"mean": ["m0", "m1", "m2"]},
                                     n_resamples=200).set_index("forecaster")
    assert table.loc["mean", "mse"] == pytest.approx(table.loc[["m0", "m1", "m2"], "mse"].mean(), rel=1e-12)
    assert table.loc["mean", "vs_reference"] == 0.0
    assert table.loc["mean", "mse_low"] < table.loc["mean", "mse"] < table.loc["mean", "mse_high"]


def test_the_same_seed_gives_the_same_intervals() -> None:
    y, c, s = queries()
    preds = {"a": y + 1.0, "b": y * 0.5}
    first = intervals.stay_bootstrap(preds, y, c, s, reference="a", n_resamples=100, seed=7)
    assert first.equals(intervals.stay_bootstrap(preds, y, c, s, reference="a", n_resamples=100, seed=7))


def test_unknown_names_are_refused() -> None:
    y, c, s = queries()
    with pytest.raises(ValueError, match="reference 'z'"):
        intervals.stay_bootstrap({"a": y}, y, c, s, reference="z")
    with pytest.raises(ValueError, match="average 'avg'"):
        intervals.stay_bootstrap({"a": y}, y, c, s, reference="a", averages={"avg": ["a", "missing"]})
