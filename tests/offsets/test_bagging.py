"""levy_core.offsets.bagging: the origins' overlap, the moving-block resamples (against the
bootstrap's known moments), and the weights of a bagged choice."""

from __future__ import annotations

import numpy as np
import pytest

from levy_core.offsets.bagging import bagged_weights, block_resamples, overlap_lag


def test_overlap_lag_counts_the_later_origins_inside_each_window() -> None:
    origins = np.arange(0.0, 40.0)  # monthly origins, each forecasting 12 months ahead
    assert overlap_lag(origins, origins + 12) == 11
    assert overlap_lag(origins, origins + 1) == 0  # one step ahead: no later origin inside
    # windows cut at a block's end (as the fit's episodes are): the median over origins
    ends = np.repeat([10.0, 20.0, 30.0, 40.0], 10)
    assert overlap_lag(origins, ends) == int(np.median(np.maximum(ends - origins - 1, 0)))
    shuffled = np.random.default_rng(2).permutation(40)  # any order of origins
    assert overlap_lag(origins[shuffled], origins[shuffled] + 12) == 11
    assert overlap_lag(np.zeros(0), np.zeros(0)) == 0
    with pytest.raises(ValueError, match="1-D of one length"):
        overlap_lag(np.zeros(3), np.zeros(2))


def test_block_resamples_are_contiguous_blocks_that_sum_to_n_and_repeat_under_the_seed() -> None:
    counts = block_resamples(50, 4, draws=200)
    assert counts.shape == (200, 50) and np.all(counts.sum(axis=1) == 50)
    np.testing.assert_array_equal(counts, block_resamples(50, 4, draws=200))
    assert not np.array_equal(counts, block_resamples(50, 4, draws=200, seed=1))
    one = block_resamples(10, 9, draws=5)  # a block as long as the data: every origin once
    np.testing.assert_array_equal(one, np.ones((5, 10)))
    with pytest.raises(ValueError, match="need n >= 1"):
        block_resamples(0, 1)


def test_without_overlap_the_resamples_are_the_plain_bootstrap() -> None:
    """lag 0: blocks of one origin, so each origin's count is Binomial(n, 1/n): mean 1,
    variance npq = 1 − 1/n. Tolerances: five standard errors over 4,000 draws, of the mean
    (sqrt(npq / draws)) and of one origin's sample variance (sqrt((μ₄ − (npq)²) / draws), μ₄ =
    npq(1 + 3(n − 2)pq) the binomial's fourth central moment), the larger bound for their mean
    over origins."""
    n, draws = 20, 4000
    p = 1 / n
    npq = n * p * (1 - p)
    mu4 = npq * (1 + 3 * (n - 2) * p * (1 - p))
    counts = block_resamples(n, 0, draws=draws)
    assert abs(counts.mean(axis=0) - 1).max() < 5 * np.sqrt(npq / draws)
    assert counts.var(axis=0).mean() == pytest.approx(npq, abs=5 * np.sqrt((mu4 - npq**2) / draws))


def test_bagged_weights_split_a_tie_and_keep_a_clear_winner_whole() -> None:
    rng = np.random.default_rng(0)
    n = 40
    a = rng.gamma(2.0, 1.0, n)
    errors_of = {("a", 0.0): a, ("b", 0.0): a[::-1].copy(), ("c", 0.0): 10 * a}

    def rule(mse_of):  # the lowest error wins
        return [min(errors_of, key=lambda k: mse_of([k]))]

    tie = bagged_weights(lambda m: errors_of[m[0]], np.ones(n), lag=0, rule=rule)
    assert set(tie) == {("a", 0.0), ("b", 0.0)} and sum(tie.values()) == pytest.approx(1.0)
    assert 0.1 < tie[("a", 0.0)] < 0.9
    errors_of[("b", 0.0)] = 3 * a
    clear = bagged_weights(lambda m: errors_of[m[0]], np.ones(n), lag=3, rule=rule)
    assert clear == {("a", 0.0): pytest.approx(1.0)}


def test_a_pick_of_several_shares_its_weight_among_them() -> None:
    n = 12
    errors = {("a", 0.0): np.ones(n), ("b", 0.0): np.ones(n)}
    got = bagged_weights(lambda m: errors[m[0]], np.ones(n), lag=2, rule=lambda mse_of: [("a", 0.0), ("b", 0.0)])
    assert got == {("a", 0.0): pytest.approx(0.5), ("b", 0.0): pytest.approx(0.5)}
