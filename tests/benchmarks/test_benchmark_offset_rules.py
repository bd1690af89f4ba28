"""benchmarks/studies/offset_rules.py: the selection rules behind the 2026-12-04 and 2026-12-05 logs, on
records whose right pick is known."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.studies import offset_rules as rules

LAST, LEVEL, HARM, AR = ("last", 0.0), ("level", 0.0), ("harmonic", 0.0), ("autoregressive", 0.0)


def records(errors: dict, n: int = 4, origins: int = 5, seed: int = 0) -> list:
    """Scored records whose candidate ``key`` misses each query by ``errors[key]`` (a number,
    or a function of the lead share)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(origins):
        y = rng.normal(size=n)
        lead = np.linspace(0.0, 1.0, n)
        out.append(({k: y + (e(lead) if callable(e) else e) for k, e in errors.items()}, y, lead))
    return out


def test_the_shipped_rule_keeps_the_simplest_unless_another_is_clearly_better() -> None:
    assert rules.margin(records({LAST: 1.0, LEVEL: 1.005})) == [LAST]  # within the 2 % margin
    assert rules.margin(records({LAST: 1.0, HARM: 0.5, AR: 2.0})) == [HARM]
    # errors that cancel in the mean of the best three: the combination wins
    assert sorted(rules.margin(records({LAST: 1.0, HARM: -1.0, AR: 1.5}))) == sorted([LAST, HARM, AR])


def test_the_absolute_error_rule_picks_what_most_queries_favour_where_squares_favour_one_big_miss() -> None:
    """One candidate is exact on three queries of four and misses the fourth by 4; the other
    misses every query by 1.2: squared error prefers the second (4 against 1.44 per query),
    absolute error the first (1 against 1.2)."""
    miss = {HARM: lambda lead: np.where(lead == 1.0, 4.0, 0.0), LAST: 1.2}
    assert rules.margin(records(miss)) == [LAST]
    assert rules.RULES["shipped_mae"](records(miss)) == [HARM]


def test_robust_losses_ignore_one_extreme_origin() -> None:
    """Ten origins: HARM misses one of them by 10 and is exact elsewhere; LAST misses every
    query by 1. Squared error over all origins prefers LAST (10 against 1 per query); without
    the worst tenth of origins, or by the median origin, HARM (0 against 1)."""
    recs = records({HARM: 0.0, LAST: 1.0}, origins=10)
    recs[3] = ({HARM: recs[3][1] + 10.0, LAST: recs[3][1] + 1.0}, recs[3][1], recs[3][2])
    assert rules.margin(recs) == [LAST]
    for name in ("shipped_trim10", "shipped_median"):
        assert rules.RULES[name](recs) == [HARM], name
    assert rules.trimmed_mse(recs, [HARM]) == 0.0
    assert rules.median_mse(recs, [LAST]) == pytest.approx(1.0)


def test_a_trimmed_combination_averages_only_the_indistinguishable() -> None:
    recs = records({LAST: 1.0, LEVEL: 1.1, HARM: 1.2, AR: 3.0})  # squared errors 1, 1.21, 1.44, 9
    assert rules.trimmed(recs, 0.1) == [LAST]
    assert rules.trimmed(recs, 0.3) == [LAST, LEVEL]
    assert rules.trimmed(recs, 0.5) == [LAST, LEVEL, HARM]
    assert rules.trimmed(recs, 10.0) == [LAST, LEVEL, HARM]  # at most three
    assert rules.trimmed(recs, 10.0, cap=4) == [LAST, LEVEL, HARM, AR]


def test_a_choice_per_lead_bucket_finds_the_candidate_each_lead_prefers() -> None:
    recs = records({HARM: lambda lead: np.where(lead < 0.5, 0.0, 2.0), AR: lambda lead: np.where(lead < 0.5, 2.0, 0.0)})
    assert rules.by_lead(recs, 2) == [[HARM], [AR]]
    forecasts = {HARM: np.zeros(4), AR: np.ones(4)}
    np.testing.assert_array_equal(rules.predict("lead2", recs, forecasts, np.linspace(0, 1, 4)), [0, 0, 1, 1])


@pytest.mark.parametrize(("rule", "expected"), [("median5", 1.0), ("top3", 2.0 / 3)])
def test_median_and_mean_picks_forecast_from_the_best_scored(rule: str, expected: float) -> None:
    recs = records({LAST: 0.0, LEVEL: 0.1, HARM: 0.2, AR: 5.0})
    forecasts = {LAST: np.zeros(2), LEVEL: np.ones(2), HARM: np.ones(2), AR: np.full(2, 100.0)}
    np.testing.assert_allclose(rules.predict(rule, recs, forecasts, np.zeros(2)), expected)


def test_greedy_selection_adds_the_candidate_whose_errors_cancel_the_best_ones() -> None:
    recs = records({LAST: 1.0, LEVEL: 1.5, HARM: -1.2, AR: 3.0})
    picked = rules.greedy(recs)
    assert picked[0] == LAST and HARM in picked  # the opposite error, not the next best
    assert rules.mse(recs, picked) < 0.1 * rules.mse(recs, [LAST])
    assert rules.greedy(records({LAST: 1.0, LEVEL: 2.0})) == [LAST]  # nothing lowers the error
    # the margin rule keeps the shipped pick unless the ensemble is clearly better
    assert rules.greedy_margin(records({LAST: 1.0, LEVEL: 2.0})) == rules.margin(records({LAST: 1.0, LEVEL: 2.0}))
    assert rules.mse(recs, rules.greedy_margin(recs)) <= rules.mse(recs, rules.margin(recs))


def test_seasonless_rules_combine_only_without_a_period() -> None:
    plain = records({LAST: 1.0, LEVEL: 1.1, ("holt", 0.0): 1.2, ("damped_trend", 0.0): 1.3, HARM: 3.0})
    assert rules.seasonless(plain)
    assert rules.RULES["top3_seasonless"](plain) == [LAST, LEVEL, ("holt", 0.0)]
    assert rules.RULES["shd_seasonless"](plain) == [LEVEL, ("holt", 0.0), ("damped_trend", 0.0)]
    seasonal = records({LAST: 1.0, LEVEL: 1.1, ("seasonal", 24.0): 0.2, HARM: 1.2})
    assert not rules.seasonless(seasonal)
    assert rules.RULES["top3_seasonless"](seasonal) == rules.margin(seasonal) == [("seasonal", 24.0)]


@pytest.mark.parametrize("lag", [0, 1, 5, 11])
def test_the_diebold_mariano_t_matches_statsmodels_hac_standard_error(lag) -> None:
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(lag)
    n = 60
    noise = rng.normal(size=n + lag)  # a moving sum: correlated over `lag` origins, as overlapping windows
    a = np.convolve(noise, np.ones(lag + 1), mode="valid") + 0.3 + rng.normal(size=n) ** 2
    b = rng.normal(size=n) ** 2
    fit = sm.OLS(a - b, np.ones((n, 1))).fit(cov_type="HAC", cov_kwds={"maxlags": lag, "use_correction": False})
    assert rules.loss_difference_t(a, b, lag) == pytest.approx(float(fit.params[0] / fit.bse[0]), rel=1e-10)


def test_overlapping_windows_make_the_same_gap_less_certain() -> None:
    rng = np.random.default_rng(0)
    d = np.convolve(rng.normal(size=132), np.ones(12) / 12, mode="valid") - 0.1  # (121,), correlated
    base = np.ones_like(d)
    assert rules.loss_difference_t(base + d, base, 0) < rules.loss_difference_t(base + d, base, 11) < 0
    old = np.array([1.0, 2.0, 3.0, 4.0])
    assert rules.loss_difference_t(old - 0.5, old, 2) == -np.inf
    assert rules.loss_difference_t(old, old, 2) == 0.0
    assert rules.loss_difference_t(old[:3], old[:3], 50) == rules.loss_difference_t(old[:3], old[:3], 2)
    with pytest.raises(ValueError, match="one length"):
        rules.loss_difference_t(old, old[:3], 0)
    with pytest.raises(ValueError, match="finite"):
        rules.loss_difference_t(np.array([1.0, np.nan]), np.ones(2), 0)


def test_the_shipped_rule_is_the_margin_rule_bagged_over_the_origins() -> None:
    """A clear winner keeps all the weight; two candidates that swap places from origin to
    origin share it, and the held-out forecast is their weighted mean."""
    clear = records({LAST: 1.0, HARM: 0.5, AR: 2.0}, origins=12)
    assert rules.bagged(clear, lag=2) == {HARM: pytest.approx(1.0)}
    rng = np.random.default_rng(3)
    swap = []
    for i in range(16):
        y = rng.normal(size=4)
        swap.append(({LAST: y + (1.0 if i % 2 else 0.2), LEVEL: y + (0.2 if i % 2 else 1.0), AR: y + 3.0}, y,
                     np.linspace(0.0, 1.0, 4)))
    split = rules.bagged(swap, lag=0)
    assert set(split) <= {LAST, LEVEL} and sum(split.values()) == pytest.approx(1.0) and len(split) == 2
    forecasts = {LAST: np.zeros(3), LEVEL: np.ones(3), AR: np.full(3, 9.0)}
    np.testing.assert_allclose(rules.predict("shipped", swap, forecasts, np.zeros(3)), np.full(3, split[LEVEL]))


def test_the_dm_rule_keeps_the_simpler_pick_unless_the_gap_is_beyond_chance() -> None:
    # the level 3 % better on every origin (no variance): beyond chance at any z
    steady = records({LAST: 1.0, LEVEL: 0.97}, origins=12)
    assert rules.shipped_dm(steady, lag=3, z=1.645) == [LEVEL]
    # the same pooled gap from one lucky origin: the margin alone takes it, the bar does not
    rng = np.random.default_rng(5)
    lucky = []
    for i in range(12):
        y = rng.normal(size=4)
        lucky.append(({LAST: y + 1.0, LEVEL: y + (0.5 if i == 0 else 1.0)}, y, np.linspace(0, 1, 4)))
    assert rules.margin(lucky) == [LEVEL]
    assert rules.shipped_dm(lucky, lag=3, z=1.645) == [LAST]  # one origin alone gives t ≈ −1


def test_leaving_the_last_value_takes_a_gap_beyond_chance() -> None:
    rng = np.random.default_rng(7)
    lucky = []  # the level ahead of the last value on one origin only; the harmonic steadily ahead
    for i in range(12):
        y = rng.normal(size=4)
        lucky.append(({LAST: y + 1.0, LEVEL: y + (0.2 if i == 0 else 1.0), HARM: y + 2.0}, y, np.linspace(0, 1, 4)))
    assert rules.margin(lucky) == [LEVEL]
    assert rules.leave_last_dm(lucky, lag=3, z=1.645) == [LAST]
    steady = records({LAST: 1.0, LEVEL: 0.9, HARM: 0.5}, origins=12)
    assert rules.leave_last_dm(steady, lag=3, z=1.645) == rules.margin(steady) == [HARM]
