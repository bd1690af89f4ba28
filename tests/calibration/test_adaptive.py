"""levy_core.calibration.adaptive, recency and scores: ACI's deterministic long-run bound on drifting data (and split conformal
failing it), MAPIE 1.6's ACI as a reference, recency-weighted conformal against split conformal
and a brute-force weighted quantile, the saved state, and argument checks."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from levy_core.calibration.adaptive import AdaptiveConformal
from levy_core.calibration.recency import RecencyWeightedConformal
from levy_core.calibration.scores import (
    NotFittedError,
    conformal_rank,
    normalised_scores,
    relative_sigma_floor,
    weighted_quantile,
)
from levy_core.calibration.split_conformal import SplitConformal

N_CAL, N_TEST = 1000, 5000


def drifting(n_cal: int, n_test: int, seed: int, end_scale: float = 3.0):
    """One series at t = 0, 1, ...: y = m(t) + σ(t) d(t) ε with a mean prediction m and a spread
    σ that are right during calibration (d = 1) but ignore the drift d, which grows linearly
    from 1 to ``end_scale`` over the test part."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_cal + n_test, dtype=float)
    mean = np.sin(2 * np.pi * t / 100)
    sigma = 1 + 0.5 * np.sin(2 * np.pi * t / 37) ** 2
    drift = np.where(t < n_cal, 1.0, 1 + (end_scale - 1) * (t - n_cal) / n_test)
    y = mean + sigma * drift * rng.standard_normal(t.size)
    return t, y, mean, sigma


def jumping(n_cal: int, jump_at: int, n_test: int, seed: int, big: float = 3.0):
    """y = m(t) + s(t) ε with s = 1 before ``jump_at`` and ``big`` after; σ = 1 ignores the jump."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_cal + n_test)
    mean = np.cos(t / 30.0)
    y = mean + np.where(t < jump_at, 1.0, big) * rng.standard_normal(t.size)
    return y, mean, np.ones(t.size)


def fitted_aci(y, mean, sigma, level=0.9, gamma=0.005, window=None) -> AdaptiveConformal:
    scores, floor = normalised_scores(y, mean, sigma)
    return AdaptiveConformal(level, gamma, window).conformalize(scores, sigma_floor=floor)


def covered(y, lower, upper) -> np.ndarray:
    return (lower <= y) & (y <= upper)


# --- ACI: the deterministic bound (Gibbs & Candès, Proposition 4.1) ------------------------------

@pytest.mark.parametrize("level", [0.8, 0.9, 0.95])
@pytest.mark.parametrize("gamma", [0.005, 0.01, 0.05])
def test_aci_meets_the_deterministic_bound_where_split_conformal_fails_it(level: float, gamma: float) -> None:
    t, y, mu, sg = drifting(N_CAL, N_TEST, seed=1)
    c, e = slice(0, N_CAL), slice(N_CAL, None)
    result = fitted_aci(y[c], mu[c], sg[c], level, gamma).run(y[e], mu[e], sg[e], order=t[e])
    assert result.n_steps == N_TEST
    # a theorem for any sequence: no slack (the bound is 0.0034 to 0.038 here; the gap's float
    # rounding is ~1e-16)
    assert result.long_run_miscoverage_gap <= result.bound
    # split conformal fitted on the early part, same test queries, same yardstick: the drift
    # takes the noise to 3x, its coverage falls to ~0.6 (gap ~0.3, ten times the largest bound)
    split = SplitConformal().conformalize(y[c], mu[c], sg[c])
    lower, upper = split.predict_interval(mu[e], sg[e], level)
    split_gap = abs(float(np.mean(~covered(y[e], lower, upper))) - (1 - level))
    assert split_gap > result.bound


def test_the_bound_holds_with_several_queries_per_origin_and_they_share_alpha() -> None:
    t, y, mu, sg = drifting(N_CAL, 3 * 2000, seed=2)
    c, e = slice(0, N_CAL), slice(N_CAL, None)
    origin = np.repeat(np.arange(2000), 3)[::-1]  # 3 queries an origin, given newest first
    result = fitted_aci(y[c], mu[c], sg[c], 0.9, 0.01).run(y[e], mu[e], sg[e], order=origin)
    assert result.n_steps == 2000  # T counts origins, not queries
    assert result.long_run_miscoverage_gap <= result.bound  # theorem: no slack
    # one α_t a step: the normalised half-width is the same for the 3 queries of an origin
    # (rtol: one division by σ, a few ulps)
    q = (result.upper - y[e] + y[e] - result.lower) / (2 * sg[e])
    finite = np.isfinite(q)
    by_origin = np.where(finite, q, 0.0).reshape(2000, 3)
    np.testing.assert_allclose(by_origin, by_origin[:, :1].repeat(3, axis=1), rtol=1e-12)
    # err_t is the step's average miss: a multiple of 1/3, and it drives the update exactly
    # (atol: the update's own rounding, one multiply-add per step)
    assert np.allclose(result.err * 3, np.round(result.err * 3), atol=1e-12)
    np.testing.assert_allclose(np.diff(np.r_[result.alpha, result.next_alpha]),
                               0.01 * (0.1 - result.err), rtol=0, atol=1e-15)


def test_alpha_telescopes_and_the_walk_is_online() -> None:
    t, y, mu, sg = drifting(N_CAL, 2000, seed=3)
    c, e = slice(0, N_CAL), slice(N_CAL, None)
    whole = fitted_aci(y[c], mu[c], sg[c], 0.9, 0.02).run(y[e], mu[e], sg[e])
    # mean(err) - α = (α_1 - α_{T+1}) / (γ T): the identity behind the bound. Tolerance: T
    # additions of terms <= γ, each rounded by ~1e-16 -> ~2000 * 1e-16 / (γ T) << 1e-12
    lhs = float(np.mean(whole.err)) - 0.1
    assert lhs == pytest.approx((whole.alpha[0] - whole.next_alpha) / (0.02 * 2000), abs=1e-12)
    # run(a) then run(b) walks exactly as run(a + b): same scores, same floating operations
    aci = fitted_aci(y[c], mu[c], sg[c], 0.9, 0.02)
    first = aci.run(y[N_CAL:2000], mu[N_CAL:2000], sg[N_CAL:2000])
    second = aci.run(y[2000:], mu[2000:], sg[2000:])
    np.testing.assert_array_equal(np.r_[first.alpha, second.alpha], whole.alpha)
    np.testing.assert_array_equal(np.r_[first.upper, second.upper], whole.upper)
    assert aci.n_steps_ == 2000


def test_the_first_step_is_split_conformal_and_extreme_alphas_give_the_papers_bands() -> None:
    t, y, mu, sg = drifting(200, 50, seed=4)
    sg = sg.copy()
    sg[[3, 10]] = 0.0  # floored the same way by both
    split = SplitConformal().conformalize(y[:200], mu[:200], sg[:200])
    aci = fitted_aci(y[:200], mu[:200], sg[:200], 0.9, 2.0)
    lo, hi = aci.next_interval(mu[200:], sg[200:])
    np.testing.assert_array_equal(np.c_[lo, hi], np.c_[split.predict_interval(mu[200:], sg[200:], 0.9)])
    # γ = 2: a miss sends α below 0 (infinite band); covered steps raise α by γα = 0.2 each,
    # past 1 after five (0.1 -> 1.1): the empty band, reported as [ŷ, ŷ] and a miss even at y = ŷ
    exact = mu[200:206].copy()
    r = aci.run(exact, mu[200:206], sg[200:206])
    np.testing.assert_allclose(r.alpha, [0.1, 0.3, 0.5, 0.7, 0.9, 1.1], atol=1e-12)
    assert r.covered[:5].all() and not r.covered[5] and r.err[5] == 1.0
    assert r.lower[5] == r.upper[5] == exact[5]
    # that miss sends α to 1.1 + 2 (0.1 - 1) = -0.7: an infinite band, covering even y = ŷ + 1e9
    r = aci.run(mu[206:207] + 1e9, mu[206:207], sg[206:207])
    assert r.alpha[0] == pytest.approx(-0.7, abs=1e-12) and r.err[0] == 0.0 and np.isposinf(r.upper[0])
    assert aci.alpha_ == pytest.approx(-0.5, abs=1e-12)  # still <= 0: the next band is infinite too
    lo, hi = aci.next_interval(mu[:2], sg[:2])
    assert np.isneginf(lo).all() and np.isposinf(hi).all() and np.isinf(aci.quantile())
    # a forecast asks for a finite band: the largest score seen (here the 1e9 miss itself)
    lo, hi = aci.next_interval(mu[:2], sg[:2], finite=True)
    largest = max(aci.scores_)
    np.testing.assert_allclose(hi - mu[:2], largest * np.maximum(sg[:2], aci.sigma_floor_), rtol=1e-12)
    assert np.isfinite(lo).all() and np.isfinite(hi).all() and largest >= 1e9 / sg[206] * (1 - 1e-9)


def test_a_query_on_the_bound_is_covered_as_in_levy_core_metrics() -> None:
    # 19 scores 1..19, level 0.9: rank ceil(20 * 0.9) = 18 -> q = 18; y = ŷ + 18 lies on the
    # upper bound, covered (lower <= y <= upper; MAPIE's strict rule would call it a miss)
    aci = AdaptiveConformal(0.9, 0.01).conformalize(np.arange(1.0, 20.0))
    result = aci.run([18.0], [0.0], [1.0])
    assert result.upper[0] == 18.0 and result.covered[0] and result.err[0] == 0.0


# --- ACI on exchangeable data -----------------------------------------------------------------

@pytest.mark.parametrize("window", [None, 500])
def test_aci_on_exchangeable_data_stays_at_the_level(window: int | None) -> None:
    rng = np.random.default_rng(5)
    n = N_CAL + N_TEST
    mu, sg = rng.normal(size=n), rng.uniform(0.5, 2.0, size=n)
    y = mu + sg * rng.standard_normal(n)
    aci = fitted_aci(y[:N_CAL], mu[:N_CAL], sg[:N_CAL], 0.9, 0.001, window)
    result = aci.run(y[N_CAL:], mu[N_CAL:], sg[N_CAL:])
    # 4 binomial s.e. of T independent Bernoulli(α) errors, sqrt(α(1-α)/T) = 0.0042 -> 0.017
    # (conservative: ACI's feedback anticorrelates the errors); the theorem's bound with this
    # small γ is 0.18, ten times looser, so this checks more than the theorem
    tolerance = 4 * math.sqrt(0.9 * 0.1 / N_TEST)
    assert abs(result.coverage - 0.9) <= tolerance
    assert np.isfinite(result.upper).all()  # α_t never fell to the infinite-band regime


# --- MAPIE 1.6 TimeSeriesRegressor(method="aci") as the reference ---------------------------------

def mapie_aci(x_cal, y_cal, sym: bool):
    """MAPIE's ACI on a prefit identity model (prediction = the only feature)."""
    from mapie.conformity_scores import AbsoluteConformityScore
    from mapie.regression import TimeSeriesRegressor
    from sklearn.base import BaseEstimator, RegressorMixin

    class Identity(RegressorMixin, BaseEstimator):
        def fit(self, X, y):
            self.fitted_ = True
            return self

        def predict(self, X):
            return np.asarray(X, dtype=float)[:, 0]

    model = TimeSeriesRegressor(Identity().fit(x_cal, y_cal), method="aci", cv="prefit",
                                conformity_score=AbsoluteConformityScore(sym=sym))
    return model.fit(x_cal, y_cal)


def walk_mapie(model, x, y, level: float, gamma: float, update: bool):
    """Per step: MAPIE's band and current α_t, then its ACI update (and score update)."""
    bands, alphas = [], []
    for i in range(len(y)):
        _, b = model.predict(x[i:i + 1], confidence_level=level, allow_infinite_bounds=True)
        bands.append(b[0, :, 0])
        alphas.append(float(model.current_alpha[round(1 - level, 2)]))
        model.adapt_conformal_inference(x[i:i + 1], y[i:i + 1], gamma=gamma, confidence_level=level)
        if update:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # update()'s API-change notice
                model.update(x[i:i + 1], y[i:i + 1])
    return np.array(bands), np.array(alphas)


def test_aci_equals_mapie_bands_and_alpha_path_with_a_rolling_window() -> None:
    # MAPIE's score |y - ŷ| is ours with σ = 1; its update() rolls a fixed-size pool, which is
    # our window = calibration size; symmetric score so its band is ŷ -+ q like ours
    pytest.importorskip("mapie")
    n_cal, n_test, level, gamma = 200, 300, 0.9, 0.01
    t, y, mu, _ = drifting(n_cal, n_test, seed=6, end_scale=1.5)
    ones = np.ones_like(y)
    model = mapie_aci(mu[:n_cal, None], y[:n_cal], sym=True)
    bands, mapie_alpha = walk_mapie(model, mu[n_cal:, None], y[n_cal:], level, gamma, update=True)
    ours = fitted_aci(y[:n_cal], mu[:n_cal], ones[:n_cal], level, gamma, window=n_cal)
    result = ours.run(y[n_cal:], mu[n_cal:], ones[n_cal:])
    # the comparison needs α_t in [1/(n+1), 1): MAPIE clips to [0, 1] and its symmetric score
    # raises instead of giving the infinite band when ceil((n+1)(1-α_t)) > n
    assert 1 / (n_cal + 1) < result.alpha.min() and result.alpha.max() < 1
    # α: MAPIE starts from round(α, 2) = 0.1, we from 1 - 0.9 = 0.09999999999999998; each of the
    # 300 updates rounds by ~1e-17 -> atol 1e-12 leaves five orders of magnitude
    np.testing.assert_allclose(result.alpha, mapie_alpha, rtol=0, atol=1e-12)
    # the bands: the same order statistic, ŷ -+ q computed the same way (atol: ~|ŷ| ulp)
    np.testing.assert_allclose(np.c_[result.lower, result.upper], bands, rtol=0, atol=1e-12)
    assert 0 < result.err.sum() < n_test  # the walk saw both misses and hits


def test_aci_update_equals_mapie_until_mapie_clips_alpha_at_zero() -> None:
    # Forced errors: 3 misses (y = 1e6, 2e6, 3e6: each beyond every earlier score, so outside
    # any finite band of either pool) then hits (y = ŷ = 0). Pools as above (window = n_cal,
    # update() after each step). γ = 0.05,
    # α = 0.1: α_t = 0.1, 0.055, 0.01, then 0.01 + 0.05 (0.1 - 1) = -0.035 for us (the paper
    # keeps it: an infinite band) and clip(-0.035, 0, 1) = 0 for MAPIE (also an infinite band).
    # Same errors throughout, so afterwards MAPIE's α is ours + 0.035, the deficit it clipped
    # away (and with it Prop. 4.1's telescoping identity). MAPIE's default asymmetric score is
    # used here because its symmetric one raises at α_t = 0.
    pytest.importorskip("mapie")
    rng = np.random.default_rng(7)
    n_cal, gamma, level = 200, 0.05, 0.9
    y_cal = rng.uniform(0.5, 1.5, n_cal) * np.where(np.arange(n_cal) % 2, 1, -1)
    x_cal = np.zeros((n_cal, 1))
    y_test = np.r_[1e6, 2e6, 3e6, np.zeros(12)]
    model = mapie_aci(x_cal, y_cal, sym=False)
    bands, mapie_alpha = walk_mapie(model, np.zeros((15, 1)), y_test, level, gamma, update=True)
    mapie_err = ~((bands[:, 0] < y_test) & (y_test < bands[:, 1]))  # MAPIE's strict rule
    assert np.isinf(bands[3]).all()  # MAPIE's band at its clipped α = 0 is infinite, as ours
    ours = AdaptiveConformal(level, gamma, window=n_cal).conformalize(np.abs(y_cal))
    result = ours.run(y_test, np.zeros(15), np.ones(15))
    np.testing.assert_array_equal(result.err, mapie_err.astype(float))
    # atol 1e-12: a handful of updates from a start 2.8e-17 apart (see the test above)
    np.testing.assert_allclose(result.alpha[:3], mapie_alpha[:3], rtol=0, atol=1e-12)
    assert result.alpha[3] == pytest.approx(-0.035, abs=1e-12) and mapie_alpha[3] == 0.0
    np.testing.assert_allclose(mapie_alpha[3:] - result.alpha[3:], 0.035, rtol=0, atol=1e-12)


# --- recency-weighted split conformal ------------------------------------------------------------

def test_decay_one_is_split_conformal() -> None:
    rng = np.random.default_rng(8)
    n = 57  # small: level 0.99 needs ceil(58 * 0.99) = 58 > 57 scores -> infinite band in both
    mu, sg = rng.normal(size=n), rng.uniform(0, 2, size=n)
    sg[[0, 5]] = 0.0  # the floor, stored the same way
    y = mu + rng.standard_normal(n)
    scores, floor = normalised_scores(y, mu, sg)
    assert floor == relative_sigma_floor(sg)
    ours = RecencyWeightedConformal(0.9, decay=1.0).conformalize(scores, sigma_floor=floor)
    split = SplitConformal().conformalize(y, mu, sg)
    m, s = rng.normal(size=20), np.r_[0.0, rng.uniform(0, 2, size=19)]
    for level in [0.1, 0.5, 0.8, 0.9, 0.95, 0.99]:  # exact: the same order statistic, same floor
        assert ours.quantile(level) == split.quantile(level)
        np.testing.assert_array_equal(np.c_[ours.predict_interval(m, s, level)],
                                      np.c_[split.predict_interval(m, s, level)])


def test_recency_weights_cover_after_a_jump_where_split_conformal_does_not() -> None:
    # noise 1 -> 3 at t = 800 of 1000 calibration points; the 2000 test points are all after it
    y, mu, sg = jumping(1000, 800, 2000, seed=9)
    c, e = slice(0, 1000), slice(1000, None)
    scores, floor = normalised_scores(y[c], mu[c], sg[c])
    recency = RecencyWeightedConformal(0.9, decay=0.99).conformalize(scores, sigma_floor=floor)
    cov_recent = float(np.mean(covered(y[e], *recency.predict_interval(mu[e], sg[e]))))
    split = SplitConformal().conformalize(y[c], mu[c], sg[c])
    cov_split = float(np.mean(covered(y[e], *split.predict_interval(mu[e], sg[e], 0.9))))
    # expected: split ~0.57 (80 % of its scores are pre-jump: q ~2.4 vs 3 * 1.645 needed),
    # recency ~0.89 (0.99^200 = 13 % of its weight is pre-jump). Each has s.d. ~ sqrt(α(1-α)/n_eff
    # + α(1-α)/n_test) = 0.022 (n_eff = Kish size 199 for recency; over 40 seeds we saw 0.028)
    sd = 0.028
    assert cov_recent - cov_split > 0.32 - 4 * math.sqrt(2) * sd  # 0.16
    assert cov_recent > 0.89 - 3 * sd
    # Kish size of w = d^k, k < n: (1 + d)/(1 - d) (1 - d^n)/(1 + d^n) (geometric sums; rel: the
    # float sums of 1000 terms, ~1e-13)
    d, n = 0.99, 1000
    assert recency.effective_size == pytest.approx((1 + d) / (1 - d) * (1 - d**n) / (1 + d**n), rel=1e-9)


def brute_weighted_quantile(scores, weights, level, test_weight):
    """The definition, literally: smallest r in the support of sum w̃_i δ_{s_i} + w̃_{n+1} δ_inf
    with cumulative mass >= level."""
    total = weights.sum() + test_weight
    for r in np.r_[np.unique(scores), np.inf]:
        mass = weights[scores <= r].sum() / total + (test_weight / total if r == np.inf else 0.0)
        if mass >= level:
            return float(r)
    raise AssertionError("unreachable: the mass at inf is 1")


def test_weighted_quantile_matches_brute_force() -> None:
    rng = np.random.default_rng(10)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        scores = np.round(rng.exponential(size=n), 1)  # ties on purpose
        weights = rng.uniform(size=n) * (rng.uniform(size=n) > 0.2)  # some zero weights
        level, tw = float(rng.uniform(0.01, 0.99)), float(rng.uniform(0.1, 2))
        # exact: a cumulative mass within 1e-12 of the level (where the slack could matter)
        # has probability ~1e-12 with these continuous weights and levels
        assert weighted_quantile(scores, weights, level, test_weight=tw) == brute_weighted_quantile(
            scores, weights, level, tw)
    # by hand: [3, 1, 2] with weights 1, test weight 1 -> thresholds 4 * level
    assert weighted_quantile([3, 1, 2], [1, 1, 1], 0.5) == 2.0
    assert weighted_quantile([3, 1, 2], [1, 1, 1], 0.75) == 3.0
    assert weighted_quantile([3, 1, 2], [1, 1, 1], 0.76) == math.inf
    # 25 * 0.28 = 7.000000000000001 in binary: the 1e-12 slack keeps the rank at 7 (not 8),
    # as SplitConformal.quantile does
    assert conformal_rank(24, 0.28) == 7
    assert weighted_quantile(np.arange(1.0, 25.0), np.ones(24), 0.28) == 7.0


# --- saved state --------------------------------------------------------------------------------

def test_aci_state_round_trips_through_json_and_continues_the_walk() -> None:
    t, y, mu, sg = drifting(300, 400, seed=11)
    aci = fitted_aci(y[:300], mu[:300], sg[:300], 0.9, 0.02, window=250)
    aci.run(y[300:500], mu[300:500], sg[300:500])
    back = AdaptiveConformal.from_dict(json.loads(json.dumps(aci.to_dict())))
    assert back.to_dict() == aci.to_dict()
    np.testing.assert_array_equal(np.c_[back.next_interval(mu[500:], sg[500:])],
                                  np.c_[aci.next_interval(mu[500:], sg[500:])])
    a, b = aci.run(y[500:], mu[500:], sg[500:]), back.run(y[500:], mu[500:], sg[500:])
    np.testing.assert_array_equal(a.alpha, b.alpha)
    np.testing.assert_array_equal(a.upper, b.upper)


def test_recency_state_round_trips_through_json() -> None:
    rw = RecencyWeightedConformal(0.8, 0.95).conformalize([0.3, 1.2, 0.7, 2.0], sigma_floor=1e-6)
    back = RecencyWeightedConformal.from_dict(json.loads(json.dumps(rw.to_dict())))
    assert back.to_dict() == rw.to_dict()
    assert back.quantile() == rw.quantile() and back.quantile(0.5) == rw.quantile(0.5)


def aci_state() -> dict:
    return fitted_aci([0.1, 0.5, 2.0, 1.0], [0.0] * 4, [1.0] * 4, 0.9, 0.01, window=10).to_dict()


@pytest.mark.parametrize(("key", "value"), [
    ("level", 1.5), ("level", "x"), ("gamma", -0.1), ("gamma", None), ("window", 0), ("window", 2.5),
    ("alpha", float("nan")), ("alpha", 3.0), ("alpha", "a"), ("n_steps", -1), ("sigma_floor", -1.0),
    ("scores", [0.1, float("nan")]), ("scores", [-1.0]), ("scores", []), ("scores", list(range(11))),
])
def test_malformed_aci_state_is_refused_naming_the_key(key: str, value) -> None:
    data = aci_state()
    data[key] = value
    with pytest.raises(ValueError, match=key):
        AdaptiveConformal.from_dict(data)


@pytest.mark.parametrize("key", ["level", "gamma", "window", "alpha", "n_steps", "sigma_floor", "scores"])
def test_aci_state_missing_a_key_is_refused_naming_it(key: str) -> None:
    data = aci_state()
    del data[key]
    with pytest.raises(ValueError, match=key):
        AdaptiveConformal.from_dict(data)


def test_malformed_state_type_version_and_unknown_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="type"):
        AdaptiveConformal.from_dict({**aci_state(), "type": "SplitConformal"})
    with pytest.raises(ValueError, match="version"):
        AdaptiveConformal.from_dict({**aci_state(), "version": 99})
    with pytest.raises(ValueError, match="extra"):
        AdaptiveConformal.from_dict({**aci_state(), "extra": 1})
    rw = RecencyWeightedConformal(0.9, 0.9).conformalize([1.0, 2.0]).to_dict()
    for key, value in [("decay", 0.0), ("decay", 1.5), ("level", 0.0), ("scores", "abc"),
                       ("sigma_floor", float("inf"))]:
        with pytest.raises(ValueError, match=key):
            RecencyWeightedConformal.from_dict({**rw, key: value})
    for key in ["decay", "level", "scores", "sigma_floor"]:
        with pytest.raises(ValueError, match=key):
            RecencyWeightedConformal.from_dict({k: v for k, v in rw.items() if k != key})


# --- argument checks ----------------------------------------------------------------------------

@pytest.mark.parametrize(("make", "name"), [
    (lambda: AdaptiveConformal(level=0.0), "level"),
    (lambda: AdaptiveConformal(level=1.0), "level"),
    (lambda: AdaptiveConformal(level=float("nan")), "level"),
    (lambda: AdaptiveConformal(gamma=0.0), "gamma"),
    (lambda: AdaptiveConformal(gamma=-0.1), "gamma"),
    (lambda: AdaptiveConformal(window=0), "window"),
    (lambda: RecencyWeightedConformal(level=1.2), "level"),
    (lambda: RecencyWeightedConformal(decay=0.0), "decay"),
    (lambda: RecencyWeightedConformal(decay=1.01), "decay"),
    (lambda: RecencyWeightedConformal(decay=float("nan")), "decay"),
    (lambda: AdaptiveConformal().conformalize([0.1, float("nan")]), "scores"),
    (lambda: AdaptiveConformal().conformalize([0.1, -0.2]), "scores"),
    (lambda: RecencyWeightedConformal().conformalize([float("nan")]), "scores"),
    (lambda: AdaptiveConformal().conformalize([1.0], sigma_floor=0.0), "sigma_floor"),
    (lambda: AdaptiveConformal().conformalize([1.0]).run([1, 2], [0, 0], [1, 1], order=[0]), "order"),
    (lambda: AdaptiveConformal().conformalize([1.0]).run([1, 2], [0, 0], [1, 0]), "sigma"),
    (lambda: AdaptiveConformal().conformalize([1.0]).run([1, np.nan], [0, 0], [1, 1]), "y_true"),
    (lambda: AdaptiveConformal().conformalize([1.0]).quantile(float("nan")), "alpha_t"),
    (lambda: AdaptiveConformal().conformalize([1.0]).quantile("0.1"), "alpha_t"),
    (lambda: weighted_quantile([1.0, 2.0], [1.0, -1.0], 0.5), "weights"),
    (lambda: weighted_quantile([1.0, 2.0], [1.0], 0.5), "weights"),
    (lambda: weighted_quantile([1.0], [1.0], 0.5, test_weight=0.0), "test_weight"),
    (lambda: normalised_scores([1.0], [0.0], [0.0]), "sigma"),
])
def test_bad_arguments_raise_value_error_naming_them(make, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        make()


def test_steps_before_conformalize_raise_not_fitted() -> None:
    for call in (lambda: AdaptiveConformal().run([1.0], [0.0], [1.0]),
                 lambda: AdaptiveConformal().next_interval([0.0], [1.0]),
                 lambda: AdaptiveConformal().to_dict(),
                 lambda: RecencyWeightedConformal().predict_interval([0.0], [1.0])):
        with pytest.raises(NotFittedError):
            call()
