"""levy_core.metrics against independent references on fresh random inputs.

References: properscoring (Gaussian and ensemble CRPS), MAPIE 1.x (coverage,
width), statsmodels (standard errors of coverage), scipy.stats (NLL, PIT, central intervals, Spearman), scikit-learn
(MSE, MAE) and brute-force formulas written out loop by loop. Random inputs
come from hypothesis-drawn seeds, so each run sees new data.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import properscoring as ps
import pytest
import sklearn.metrics as skm
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from mapie.metrics.regression import regression_coverage_score, regression_mean_width_score
from scipy import stats

from levy_core import metrics as M

RTOL = 1e-6
FAST = settings(max_examples=25, deadline=None)

seeds = st.integers(min_value=0, max_value=2**32 - 1)
sizes = st.integers(min_value=1, max_value=200)
levels_st = st.floats(min_value=0.01, max_value=0.99)


def gaussian_case(
    seed: int, n: int, *, zero_sigma: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Heteroscedastic targets, predictions with errors and (optionally some zero) sigmas."""
    rng = np.random.default_rng(seed)
    mean = rng.normal(0.0, 3.0, n)
    sigma = rng.lognormal(0.0, 1.0, n)
    y = mean + rng.normal(0.0, 1.0, n) * sigma * rng.uniform(0.3, 2.0, n)
    if zero_sigma:
        sigma[rng.random(n) < 0.3] = 0.0
    return y, mean, sigma


# --------------------------------------------------------------------------- errors


@FAST
@given(seed=seeds, n=sizes)
def test_mse_mae_match_sklearn(seed: int, n: int) -> None:
    y, mean, _ = gaussian_case(seed, n)
    assert M.mean_squared_error(y, mean) == pytest.approx(skm.mean_squared_error(y, mean), rel=RTOL)
    assert M.mean_absolute_error(y, mean) == pytest.approx(
        skm.mean_absolute_error(y, mean), rel=RTOL
    )


# --------------------------------------------------------------------------- CRPS / NLL


@FAST
@given(seed=seeds, n=sizes)
def test_crps_gaussian_matches_properscoring(seed: int, n: int) -> None:
    y, mean, sigma = gaussian_case(seed, n)
    ref = ps.crps_gaussian(y, mean, sigma)
    np.testing.assert_allclose(M.crps_gaussian_per_point(y, mean, sigma), ref, rtol=RTOL)
    assert M.crps_gaussian(y, mean, sigma) == pytest.approx(float(np.mean(ref)), rel=RTOL)


@FAST
@given(seed=seeds, n=sizes)
def test_crps_gaussian_zero_sigma_is_absolute_error(seed: int, n: int) -> None:
    y, mean, sigma = gaussian_case(seed, n, zero_sigma=True)
    got = M.crps_gaussian_per_point(y, mean, sigma)
    zero = sigma == 0
    np.testing.assert_array_equal(got[zero], np.abs(y - mean)[zero])
    np.testing.assert_allclose(
        got[~zero], ps.crps_gaussian(y[~zero], mean[~zero], sigma[~zero]), rtol=RTOL
    )
    # continuity: a tiny sigma is almost a point mass
    tiny = M.crps_gaussian_per_point(y, mean, np.full(n, 1e-9))
    np.testing.assert_allclose(tiny, np.abs(y - mean), atol=1e-8)


def ensemble_case(seed: int, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    loc = rng.normal(0, 2, n)
    draws = loc[:, None] + rng.lognormal(0, 0.5, n)[:, None] * rng.standard_t(5, (n, m))
    if m > 2:  # ties must not matter
        draws[:, 1] = draws[:, 0]
    y = loc + rng.normal(0, 1.5, n)
    return y, draws


@FAST
@given(seed=seeds, n=st.integers(1, 60), m=st.integers(1, 40))
def test_crps_ensemble_standard_matches_properscoring(seed: int, n: int, m: int) -> None:
    y, draws = ensemble_case(seed, n, m)
    ref = ps.crps_ensemble(y, draws)  # empirical CDF of the draws: 1/(2 m^2) pair term
    np.testing.assert_allclose(
        M.crps_ensemble_per_point(y, draws, fair=False), ref, rtol=RTOL, atol=1e-12
    )
    assert M.crps_ensemble(y, draws, fair=False) == pytest.approx(float(np.mean(ref)), rel=RTOL)


def fair_crps_bruteforce(y: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """O(n m^2): mean|X - y| - 1/(2 m (m-1)) sum_{j,k} |X_j - X_k|."""
    m = draws.shape[1]
    term1 = np.mean(np.abs(draws - y[:, None]), axis=1)
    pairs = np.abs(draws[:, :, None] - draws[:, None, :]).sum(axis=(1, 2))  # (n,)
    return term1 - pairs / (2 * m * (m - 1))


@FAST
@given(seed=seeds, n=st.integers(1, 60), m=st.integers(2, 40))
def test_crps_ensemble_fair_matches_bruteforce(seed: int, n: int, m: int) -> None:
    y, draws = ensemble_case(seed, n, m)
    ref = fair_crps_bruteforce(y, draws)
    got = M.crps_ensemble_per_point(y, draws)  # fair=True is the default
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=1e-12 * np.abs(draws).max())
    assert M.crps_ensemble(y, draws, fair=True) == pytest.approx(
        float(np.mean(ref)), rel=RTOL, abs=1e-12
    )


def test_crps_ensemble_fair_is_unbiased_for_the_gaussian_crps() -> None:
    # E[fair CRPS of m i.i.d. N(mu, s^2) draws] = closed-form CRPS; the standard
    # estimator is biased upward by E|X - X'| / (2m) = s / (m sqrt(pi)).
    rng = np.random.default_rng(12345)
    n, m, mu, s, y0 = 40_000, 4, 0.3, 1.7, 1.0
    y = np.full(n, y0)
    draws = rng.normal(mu, s, (n, m))
    fair = M.crps_ensemble_per_point(y, draws, fair=True)
    target = M.crps_gaussian([y0], [mu], [s])
    se = fair.std(ddof=1) / math.sqrt(n)
    assert abs(fair.mean() - target) < 5 * se  # 5 se: false alarm ~6e-7
    standard = M.crps_ensemble(y, draws, fair=False)
    assert abs(standard - target - s / (m * math.sqrt(math.pi))) < 5 * se


@FAST
@given(seed=seeds, n=sizes)
def test_gaussian_nll_matches_scipy_logpdf(seed: int, n: int) -> None:
    y, mean, sigma = gaussian_case(seed, n)
    ref = -np.mean(stats.norm.logpdf(y, loc=mean, scale=sigma))
    assert M.gaussian_nll(y, mean, sigma) == pytest.approx(ref, rel=RTOL)


def test_gaussian_nll_zero_sigma_uses_documented_floor() -> None:
    y, mean, sigma = np.array([1.0, 2.0]), np.array([1.0, 2.5]), np.array([0.0, 0.0])
    ref = -np.mean(stats.norm.logpdf(y, loc=mean, scale=M.NLL_SIGMA_FLOOR))
    got = M.gaussian_nll(y, mean, sigma)
    assert np.isfinite(got)
    assert got == pytest.approx(ref, rel=RTOL)


# --------------------------------------------------------------------------- intervals


@FAST
@given(seed=seeds, n=sizes, level=levels_st)
def test_central_interval_matches_scipy(seed: int, n: int, level: float) -> None:
    _, mean, sigma = gaussian_case(seed, n)
    lo_ref, hi_ref = stats.norm.interval(level, loc=mean, scale=sigma)
    lo, hi = M.central_interval(mean, sigma, level)
    np.testing.assert_allclose(lo, lo_ref, rtol=RTOL)
    np.testing.assert_allclose(hi, hi_ref, rtol=RTOL)


@FAST
@given(seed=seeds, n=sizes, level=levels_st)
def test_coverage_and_width_match_mapie(seed: int, n: int, level: float) -> None:
    y, mean, sigma = gaussian_case(seed, n)
    lo, hi = M.central_interval(mean, sigma, level)
    # put some targets exactly on a bound: both implementations count it as covered
    y = y.copy()
    y[::7] = hi[::7]
    intervals = np.stack([lo, hi], axis=1)  # (n, 2)
    assert M.interval_coverage(y, lo, hi) == pytest.approx(
        float(regression_coverage_score(y, intervals)[0]), rel=RTOL
    )
    assert M.interval_mean_width(lo, hi) == pytest.approx(
        float(regression_mean_width_score(intervals[:, :, None])[0]), rel=RTOL
    )
    inside = M.covered(y, lo, hi)  # the one rule: bounds inclusive; the coverage is its mean
    assert inside.dtype == bool and inside[::7].all()
    assert M.interval_coverage(y, lo, hi) == float(np.mean(inside))


@FAST
@given(seed=seeds, n=sizes, zero=st.booleans())
def test_calibration_curve_matches_mapie(seed: int, n: int, zero: bool) -> None:
    y, mean, sigma = gaussian_case(seed, n, zero_sigma=zero)
    levels = [0.1, 0.5, 0.8, 0.9, 0.95]
    bounds = [
        stats.norm.interval(p, loc=mean, scale=np.where(sigma > 0, sigma, 1.0)) for p in levels
    ]
    bounds = [(np.where(sigma > 0, lo, mean), np.where(sigma > 0, hi, mean)) for lo, hi in bounds]
    y_int = np.stack([np.stack(b, axis=1) for b in bounds], axis=2)  # (n, 2, L)
    ref = regression_coverage_score(y, y_int)  # (L,)
    nominal, observed = M.calibration_curve(y, mean, sigma, levels)
    np.testing.assert_array_equal(nominal, levels)
    np.testing.assert_allclose(observed, ref, rtol=RTOL)


def statsmodels_se(covered: np.ndarray, groups: np.ndarray | None) -> float:
    """s.e. of the mean of ``covered`` from an intercept-only OLS (HC0, or clustered)."""
    model = sm.OLS(covered, np.ones((covered.size, 1)))
    if groups is None:
        return float(model.fit(cov_type="HC0").bse[0])
    return float(model.fit(cov_type="cluster", cov_kwds={"groups": groups}).bse[0])


@FAST
@given(seed=seeds, n=st.integers(min_value=4, max_value=400), level=levels_st)
def test_coverage_standard_error_matches_statsmodels(seed: int, n: int, level: float) -> None:
    rng = np.random.default_rng(seed)
    y, mean, sigma = gaussian_case(seed, n)
    lo, hi = M.central_interval(mean, sigma, level)
    covered = ((lo <= y) & (y <= hi)).astype(float)
    if covered.min() == covered.max():  # a constant indicator has s.e. 0 in both
        assert M.coverage_standard_error(y, lo, hi) == 0.0
        return
    assert M.coverage_standard_error(y, lo, hi) == pytest.approx(
        statsmodels_se(covered, None), rel=RTOL
    )
    n_groups = int(rng.integers(2, max(3, n // 2)))
    codes = rng.integers(0, n_groups, n)
    codes[:2] = [0, 1]  # at least two groups
    labels = np.array([f"patient-{c}" for c in codes])  # string labels, as series ids are
    assert M.coverage_standard_error(y, lo, hi, groups=labels) == pytest.approx(
        statsmodels_se(covered, codes), rel=RTOL
    )


def test_grouped_standard_error_sees_correlated_series() -> None:
    # 200 series of 50 points each; within a series every point is covered or none is.
    rng = np.random.default_rng(3)
    hit = np.repeat(rng.random(200) < 0.9, 50)
    y = np.where(hit, 0.0, 2.0)
    lo, hi = np.full(y.size, -1.0), np.full(y.size, 1.0)
    groups = np.repeat(np.arange(200), 50)
    binomial = M.coverage_standard_error(y, lo, hi)
    grouped = M.coverage_standard_error(y, lo, hi, groups=groups)
    # perfectly correlated blocks of 50: the design effect is 50, the s.e. ratio sqrt(50)
    assert grouped / binomial == pytest.approx(math.sqrt(50 * 200 / 199), rel=1e-9)


def test_coverage_standard_error_rejects_bad_groups() -> None:
    y, lo, hi = np.zeros(4), -np.ones(4), np.ones(4)
    with pytest.raises(ValueError, match="two distinct"):
        M.coverage_standard_error(y, lo, hi, groups=["a"] * 4)
    with pytest.raises(ValueError, match="one label per point"):
        M.coverage_standard_error(y, lo, hi, groups=["a", "b"])


def interval_score_bruteforce(y, lo, hi, level) -> float:
    alpha = 1 - level
    total = 0.0
    for yi, li, ui in zip(y, lo, hi, strict=True):
        s = ui - li
        if yi < li:
            s += 2 / alpha * (li - yi)
        if yi > ui:
            s += 2 / alpha * (yi - ui)
        total += s
    return total / len(y)


@FAST
@given(seed=seeds, n=sizes, level=levels_st)
def test_interval_score_matches_bruteforce(seed: int, n: int, level: float) -> None:
    y, mean, sigma = gaussian_case(seed, n)
    lo, hi = M.central_interval(mean, sigma, level)
    ref = interval_score_bruteforce(y, lo, hi, level)
    assert M.interval_score(y, lo, hi, level=level) == pytest.approx(ref, rel=RTOL)


def test_infinite_band_scores_without_nan() -> None:
    y = np.array([0.0, 5.0, -3.0])
    lo, hi = np.full(3, -np.inf), np.full(3, np.inf)
    assert M.interval_coverage(y, lo, hi) == 1.0
    assert M.interval_mean_width(lo, hi) == np.inf
    assert M.interval_score(y, lo, hi, level=0.9) == np.inf
    # half-infinite
    assert M.interval_score(y, lo, np.zeros(3), level=0.5) == np.inf


# --------------------------------------------------------------------------- calibration


def calibration_bruteforce(y, mean, sigma, levels):
    out = []
    for p in levels:
        z = stats.norm.ppf(0.5 + p / 2)
        hits = [abs(yi - mi) <= z * si for yi, mi, si in zip(y, mean, sigma, strict=True)]
        out.append(sum(hits) / len(hits))
    return np.array(out)


@FAST
@given(seed=seeds, n=sizes)
def test_miscalibration_area_matches_bruteforce(seed: int, n: int) -> None:
    y, mean, sigma = gaussian_case(seed, n)
    grid = np.linspace(0.01, 0.99, 99)
    observed = calibration_bruteforce(y, mean, sigma, grid)
    ref = float(np.mean(np.abs(observed - grid)))
    assert M.miscalibration_area(y, mean, sigma) == pytest.approx(ref, rel=RTOL, abs=1e-12)
    nominal, got = M.calibration_curve(y, mean, sigma)
    np.testing.assert_allclose(nominal, grid)
    np.testing.assert_allclose(got, observed, rtol=RTOL)
    custom = [0.2, 0.6]
    ref2 = float(np.mean(np.abs(calibration_bruteforce(y, mean, sigma, custom) - custom)))
    assert M.miscalibration_area(y, mean, sigma, levels=custom) == pytest.approx(
        ref2, rel=RTOL, abs=1e-12
    )


def test_miscalibration_area_small_when_calibrated_large_when_not() -> None:
    rng = np.random.default_rng(7)
    n = 20_000
    mean, sigma = rng.normal(size=n), rng.lognormal(size=n)
    y = mean + sigma * rng.normal(size=n)
    # calibrated: each observed coverage has sd <= 0.5/sqrt(n) = 0.0035
    assert M.miscalibration_area(y, mean, sigma) < 0.01
    # sigma halved: observed(p) = 2 Phi(2 z_p) - 1, far from p
    grid = np.linspace(0.01, 0.99, 99)
    expected = np.mean(np.abs(2 * stats.norm.cdf(2 * stats.norm.ppf(0.5 + grid / 2)) - 1 - grid))
    assert M.miscalibration_area(y, mean, sigma / 2) == pytest.approx(expected, abs=0.01)


@FAST
@given(seed=seeds, n=sizes)
def test_sharpness_and_pit_match_references(seed: int, n: int) -> None:
    y, mean, sigma = gaussian_case(seed, n)
    assert M.sharpness(sigma) == pytest.approx(math.sqrt(sum(s * s for s in sigma) / n), rel=RTOL)
    np.testing.assert_allclose(
        M.pit_values(y, mean, sigma), stats.norm.cdf(y, loc=mean, scale=sigma), rtol=RTOL
    )


def test_pit_zero_sigma_is_point_mass_cdf() -> None:
    pit = M.pit_values([0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(pit, [0.0, 0.5, 1.0])


# --------------------------------------------------------------------------- ranking quality


@FAST
@given(seed=seeds, n=st.integers(3, 200))
def test_spearman_matches_rank_correlation(seed: int, n: int) -> None:
    y, mean, sigma = gaussian_case(seed, n)
    ranks_s = stats.rankdata(sigma)
    ranks_e = stats.rankdata(np.abs(y - mean))
    ref = float(np.corrcoef(ranks_s, ranks_e)[0, 1])
    assert M.spearman_sigma_abs_error(y, mean, sigma) == pytest.approx(ref, rel=RTOL, abs=1e-12)


def test_spearman_degenerate_cases_are_zero_not_nan() -> None:
    y, mean = np.array([1.0, 2.0, 4.0]), np.zeros(3)
    assert M.spearman_sigma_abs_error(y, mean, [1.0, 1.0, 1.0]) == 0.0  # constant sigma
    assert M.spearman_sigma_abs_error([1.0, -1.0, 1.0], mean, [1.0, 2.0, 3.0]) == 0.0  # const err
    assert M.spearman_sigma_abs_error([1.0], [0.0], [1.0]) == 0.0  # one point
    assert M.spearman_sigma_abs_error(y, mean, [0.1, 0.2, 0.3]) == pytest.approx(1.0)
    assert M.spearman_sigma_abs_error(y, mean, [0.3, 0.2, 0.1]) == pytest.approx(-1.0)


def risk_coverage_bruteforce(y, mean, sigma, n_points, loss):
    order = sorted(range(len(y)), key=lambda i: (sigma[i], i))  # stable by sigma
    err = [(y[i] - mean[i]) ** 2 if loss == "squared" else abs(y[i] - mean[i]) for i in order]
    cov, risk = [], []
    for j in range(n_points):
        c = Fraction(j, n_points - 1)
        k = max(1, math.ceil(c * len(y)))
        cov.append(float(c))
        risk.append(sum(err[:k]) / k)
    area = sum((risk[j] + risk[j + 1]) / 2 * (cov[j + 1] - cov[j]) for j in range(n_points - 1))
    return np.array(cov), np.array(risk), area


@FAST
@given(
    seed=seeds,
    n=sizes,
    n_points=st.integers(2, 150),
    loss=st.sampled_from(["squared", "absolute"]),
    ties=st.booleans(),
)
def test_risk_coverage_matches_bruteforce(
    seed: int, n: int, n_points: int, loss: str, ties: bool
) -> None:
    y, mean, sigma = gaussian_case(seed, n)
    if ties:
        sigma = np.round(sigma)  # many equal sigmas: stable order decides
    cov_ref, risk_ref, area_ref = risk_coverage_bruteforce(y, mean, sigma, n_points, loss)
    cov, risk = M.risk_coverage_curve(y, mean, sigma, n_points=n_points, loss=loss)
    np.testing.assert_allclose(cov, cov_ref, rtol=RTOL)
    np.testing.assert_allclose(risk, risk_ref, rtol=RTOL)
    area = M.risk_coverage_area(y, mean, sigma, n_points=n_points, loss=loss)
    assert area == pytest.approx(area_ref, rel=RTOL)


def test_risk_coverage_defaults_and_ordering() -> None:
    rng = np.random.default_rng(3)
    n = 2000
    mean, sigma = np.zeros(n), rng.lognormal(size=n)
    y = sigma * rng.normal(size=n)
    cov, risk = M.risk_coverage_curve(y, mean, sigma)
    assert cov.shape == risk.shape == (101,)
    assert cov[0] == 0.0 and cov[-1] == 1.0
    assert risk[-1] == pytest.approx(M.mean_squared_error(y, mean), rel=RTOL)
    # informative sigma beats reversed sigma (lower area is better)
    good = M.risk_coverage_area(y, mean, sigma)
    bad = M.risk_coverage_area(y, mean, 1.0 / sigma)
    assert good < M.mean_squared_error(y, mean) < bad


# --------------------------------------------------------------------------- sigma = 0


def test_zero_sigma_never_gives_nan() -> None:
    y, mean, sigma = gaussian_case(11, 50, zero_sigma=True)
    sigma[:3] = 0.0
    y[0] = mean[0]  # an exact hit at sigma = 0
    scalars = [
        M.crps_gaussian(y, mean, sigma),
        M.gaussian_nll(y, mean, sigma),
        M.miscalibration_area(y, mean, sigma),
        M.sharpness(sigma),
        M.spearman_sigma_abs_error(y, mean, sigma),
        M.risk_coverage_area(y, mean, sigma),
        *M.calibration_curve(y, mean, sigma, [0.5, 0.9])[1],
    ]
    assert np.all(np.isfinite(scalars))
    lo, hi = M.central_interval(mean, sigma, 0.9)
    assert lo[0] == hi[0] == mean[0]
    assert M.interval_coverage(y[:1], lo[:1], hi[:1]) == 1.0  # [m, m] covers y == m
    assert np.isfinite(M.interval_score(y, lo, hi, level=0.9))
    for arr in (M.pit_values(y, mean, sigma), *M.risk_coverage_curve(y, mean, sigma)):
        assert np.all(np.isfinite(arr))
    assert np.all(sigma[:3] == 0)


# --------------------------------------------------------------------------- bad input


def test_accepts_lists_and_tuples() -> None:
    assert M.crps_gaussian([0.0, 1.0], (0.0, 0.0), [1.0, 1.0]) == pytest.approx(
        float(np.mean(ps.crps_gaussian([0.0, 1.0], 0.0, 1.0))), rel=RTOL
    )


GAUSSIAN_FUNCS = [
    M.crps_gaussian,
    M.crps_gaussian_per_point,
    M.gaussian_nll,
    M.miscalibration_area,
    M.calibration_curve,
    M.spearman_sigma_abs_error,
    M.risk_coverage_curve,
    M.risk_coverage_area,
    M.pit_values,
]


@pytest.mark.parametrize("func", GAUSSIAN_FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("arg", ["y_true", "mean", "sigma"])
def test_nan_input_names_the_argument(func, arg: str) -> None:
    args = {"y_true": np.ones(4), "mean": np.zeros(4), "sigma": np.ones(4)}
    args[arg] = args[arg].copy()
    args[arg][2] = np.nan
    with pytest.raises(ValueError, match=arg):
        func(args["y_true"], args["mean"], args["sigma"])


@pytest.mark.parametrize("func", GAUSSIAN_FUNCS, ids=lambda f: f.__name__)
def test_shape_and_sign_errors(func) -> None:
    with pytest.raises(ValueError, match="same length"):
        func(np.ones(4), np.zeros(3), np.ones(4))
    with pytest.raises(ValueError, match="sigma must be >= 0"):
        func(np.ones(4), np.zeros(4), np.array([1.0, -1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="1-D"):
        func(np.ones((2, 2)), np.zeros((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="empty"):
        func([], [], [])
    with pytest.raises(ValueError, match="finite"):
        func([1.0, np.inf], [0.0, 0.0], [1.0, 1.0])


def test_other_bad_inputs() -> None:
    y, mean, sigma = np.ones(3), np.zeros(3), np.ones(3)
    for bad in (0.0, 1.0, -0.1, 1.5, float("nan"), [0.5, 0.9]):
        with pytest.raises(ValueError, match="level"):
            M.central_interval(mean, sigma, bad)
    with pytest.raises(ValueError, match="level"):
        M.interval_score(y, mean - 1, mean + 1, level=1.0)
    with pytest.raises(ValueError, match="levels"):
        M.calibration_curve(y, mean, sigma, [0.5, 1.0])
    with pytest.raises(ValueError, match="levels"):
        M.miscalibration_area(y, mean, sigma, levels=[0.0, 0.5])
    with pytest.raises(ValueError, match="lower must be <= upper"):
        M.interval_coverage(y, mean + 1, mean - 1)
    with pytest.raises(ValueError, match="lower"):
        M.interval_mean_width([np.nan, 0.0, 0.0], mean)
    with pytest.raises(ValueError, match="mean"):
        M.mean_squared_error(y, [0.0, np.nan, 0.0])
    with pytest.raises(ValueError, match="y_true"):
        M.interval_coverage([1.0, np.nan, 1.0], mean - 1, mean + 1)
    with pytest.raises(ValueError, match="at least 2 draws"):
        M.crps_ensemble(y, np.zeros((3, 1)))
    with pytest.raises(ValueError, match="one row per point"):
        M.crps_ensemble(y, np.zeros((4, 5)))
    with pytest.raises(ValueError, match=r"shape \(n, m\)"):
        M.crps_ensemble(y, np.zeros(3))
    with pytest.raises(ValueError, match="draws contains NaN"):
        M.crps_ensemble(y, np.full((3, 2), np.nan))
    with pytest.raises(ValueError, match="n_points"):
        M.risk_coverage_curve(y, mean, sigma, n_points=1)
    with pytest.raises(ValueError, match="loss"):
        M.risk_coverage_curve(y, mean, sigma, loss="hinge")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sigma"):
        M.sharpness([-1.0])
    with pytest.raises(ValueError, match="y_true"):
        M.crps_gaussian(["a", "b", "c"], mean, sigma)


# --------------------------------------------------------------------------- package layout


def test_package_reexports_every_public_name_of_its_modules() -> None:
    import importlib

    families = ("accuracy", "scoring_rules", "coverage", "selective", "crps_scale")
    exported: set[str] = set()
    for family in families:
        mod = importlib.import_module(f"levy_core.metrics.{family}")
        for name in mod.__all__:
            assert getattr(M, name) is getattr(mod, name), (family, name)
            obj = getattr(mod, name)
            if callable(obj):
                assert obj.__module__ == mod.__name__, (family, name)
        assert not exported & set(mod.__all__)  # each name lives in one family
        exported |= set(mod.__all__)
    assert exported == set(M.__all__)
    assert len(M.__all__) == 24 and all(callable(getattr(M, n)) for n in M.__all__
                                        if n not in ("DEFAULT_LEVELS", "NLL_SIGMA_FLOOR"))
    from levy_core.metrics import DEFAULT_LEVELS, NLL_SIGMA_FLOOR, crps_gaussian

    assert crps_gaussian is M.crps_gaussian
    np.testing.assert_array_equal(DEFAULT_LEVELS, np.linspace(0.01, 0.99, 99))
    assert NLL_SIGMA_FLOOR == 1e-12
