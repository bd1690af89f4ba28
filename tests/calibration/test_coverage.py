"""levy_core.calibration.coverage: coverage checks that respect series, and series-level re-splits."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from levy_core import metrics as M
from levy_core.calibration.coverage import (
    CoverageCheck,
    coverage_check,
    coverage_note,
    group_resplit_coverage,
)
from levy_core.calibration.split_conformal import SplitConformal


def clustered_case(
    rng: np.random.Generator, n_groups: int = 200
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Series of 10..60 points; each series has a hardness the spread does not see, so the
    normalised scores of one series move together (as a patient's errors do)."""
    sizes = rng.integers(10, 61, n_groups)
    groups = np.repeat(np.arange(n_groups), sizes)
    hardness = rng.lognormal(0.0, 0.5, n_groups)[groups]
    sigma = rng.lognormal(0.0, 0.3, groups.size)
    y = rng.normal(0.0, sigma * hardness)
    return y, np.zeros_like(y), sigma, groups


# --------------------------------------------------------------------------- coverage_check


def test_coverage_check_numbers() -> None:
    rng = np.random.default_rng(0)
    y, mean, sigma, groups = clustered_case(rng, 40)
    lo, hi = M.central_interval(mean, sigma * 1.5, 0.9)
    ck = coverage_check(y, lo, hi, level=0.9, n_calibration=999, groups=groups, calibration_groups=10)
    se_test = M.coverage_standard_error(y, lo, hi, groups=groups)
    binomial_total = M.coverage_standard_error(y, lo, hi) * math.sqrt(1 + y.size / 999)
    assert se_test * math.sqrt(1 + 40 / 10) > binomial_total  # so the per-series one is used
    assert isinstance(ck, CoverageCheck)
    assert ck.coverage == M.interval_coverage(y, lo, hi)
    assert ck.se_test == se_test
    assert ck.se == pytest.approx(se_test * math.sqrt(1 + 40 / 10), rel=1e-12)
    assert ck.lower_bound == pytest.approx(0.9 - 3 * ck.se)
    assert ck.upper_bound == pytest.approx(0.9 + 1 / 1000 + 3 * ck.se) and ck.slack == 1 / 1000
    # an explicit slack (per-group conformal) replaces 1/(n_calibration + 1)
    wide = coverage_check(y, lo, hi, level=0.9, n_calibration=999, groups=groups, calibration_groups=10,
                          slack=0.02)
    assert wide.upper_bound == pytest.approx(0.92 + 3 * ck.se) and wide.lower_bound == ck.lower_bound
    assert (ck.n, ck.n_groups, ck.n_calibration, ck.calibration_groups) == (y.size, 40, 999, 10)
    assert ck.holds == (ck.lower_bound <= ck.coverage <= ck.upper_bound)
    assert ck.to_dict()["holds"] == ck.holds
    # without groups: binomial, calibration share from the point counts
    b = coverage_check(y, lo, hi, level=0.9, n_calibration=y.size)
    p = b.coverage
    assert b.se_test == pytest.approx(math.sqrt(p * (1 - p) / y.size))
    assert b.se == pytest.approx(b.se_test * math.sqrt(2))
    assert b.n_groups is None and b.calibration_groups is None


def test_per_series_se_never_falls_below_the_binomial_one() -> None:
    # 8 series whose coverage shares are nearly equal: the sandwich estimate is tiny
    rng = np.random.default_rng(4)
    groups = np.repeat(np.arange(8), 50)
    covered = np.concatenate([rng.permutation(np.r_[np.ones(45), np.zeros(5)]) for _ in range(8)])
    y, lo, hi = np.where(covered > 0, 0.0, 2.0), -np.ones(400), np.ones(400)
    assert M.coverage_standard_error(y, lo, hi, groups=groups) < 0.1 * M.coverage_standard_error(y, lo, hi)
    ck = coverage_check(y, lo, hi, level=0.9, n_calibration=400, groups=groups, calibration_groups=8)
    assert ck.se_test == M.coverage_standard_error(y, lo, hi)
    assert ck.se == pytest.approx(ck.se_test * math.sqrt(2), rel=1e-12)


def test_coverage_check_flags_a_narrow_band() -> None:
    rng = np.random.default_rng(1)
    y, mean, sigma, groups = clustered_case(rng, 300)
    lo, hi = M.central_interval(mean, 0.5 * sigma, 0.9)  # far too narrow
    ck = coverage_check(y, lo, hi, level=0.9, n_calibration=5000, groups=groups, calibration_groups=300)
    assert not ck.holds and ck.coverage < ck.lower_bound


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"level": 1.0, "n_calibration": 10}, "between 0 and 1"),
        ({"level": 0.9, "n_calibration": 0}, "n_calibration"),
        ({"level": 0.9, "n_calibration": 10, "z": -1.0}, "z must"),
        ({"level": 0.9, "n_calibration": 10, "slack": 1.5}, "slack"),
        ({"level": 0.9, "n_calibration": 10, "groups": ["a", "b", "a", "b"]}, "calibration_groups"),
    ],
)
def test_coverage_check_rejects_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        coverage_check(np.zeros(4), -np.ones(4), np.ones(4), **kwargs)


# Statistical test on series-structured data. D independent data sets of 200 series;
# each is split 100/100 by series, conformalized on one half, scored on the other.
# If coverage_check's s.e. is right, z_d = (coverage_d - level) / se_d is ~ N(0, 1)
# (up to the tiny 1/(n_cal+1) upward slack) across the D independent data sets:
# - its sample mean is within Z / sqrt(D) of 0;
# - its sample variance is within Z * sqrt(2 / (D - 1)) of 1 (the s.d. of the sample
#   variance of D normal draws), with Z for a family-wise false alarm rate of 1e-4 over
#   the 3 two-sided checks (Bonferroni).
# The binomial s.e. ignores that a series' queries move together: on the same data its
# z has a variance many times 1 -- the third check shows the test can tell them apart.
D = 400
Z_FW = float(stats.norm.ppf(1 - 1e-4 / (2 * 3)))  # ~ 4.15


def test_grouped_standard_error_is_calibrated_on_series_data() -> None:
    rng = np.random.default_rng(2026)
    z_grouped, z_binomial = [], []
    for _ in range(D):
        y, mean, sigma, groups = clustered_case(rng)
        cal = np.isin(groups, rng.permutation(200)[:100])
        sc = SplitConformal().conformalize(y[cal], mean[cal], sigma[cal])
        lo, hi = sc.predict_interval(mean[~cal], sigma[~cal], 0.9)
        g = coverage_check(y[~cal], lo, hi, level=0.9, n_calibration=int(cal.sum()), groups=groups[~cal],
                           calibration_groups=100)
        b = coverage_check(y[~cal], lo, hi, level=0.9, n_calibration=int(cal.sum()))
        z_grouped.append((g.coverage - 0.9) / g.se)
        z_binomial.append((b.coverage - 0.9) / b.se)
    zg, zb = np.asarray(z_grouped), np.asarray(z_binomial)
    var_tol = Z_FW * math.sqrt(2 / (D - 1))
    assert abs(zg.mean()) <= Z_FW / math.sqrt(D), zg.mean()
    assert abs(zg.var(ddof=1) - 1) <= var_tol, zg.var(ddof=1)
    assert zb.var(ddof=1) > 1 + var_tol, zb.var(ddof=1)


# --------------------------------------------------------------------------- group_resplit_coverage


def test_group_resplit_coverage_matches_a_hand_loop() -> None:
    rng = np.random.default_rng(5)
    y, mean, sigma, groups = clustered_case(rng, 30)
    labels = np.array([f"s{g}" for g in groups])
    got = group_resplit_coverage(y, mean, sigma, labels, levels=[0.5, 0.9], n_splits=7, seed=11)
    # the same draws by hand
    split_rng = np.random.default_rng(11)
    covs = []
    order = list(dict.fromkeys(labels))  # first-appearance order, as pandas.factorize
    for _ in range(7):
        cal_labels = {order[i] for i in split_rng.permutation(30)[:15]}
        cal = np.isin(labels, list(cal_labels))
        sc = SplitConformal().conformalize(y[cal], mean[cal], sigma[cal])
        covs.append([M.interval_coverage(y[~cal], *sc.predict_interval(mean[~cal], sigma[~cal], lv))
                     for lv in (0.5, 0.9)])
    covs = np.asarray(covs)
    np.testing.assert_allclose(got["mean_coverage"], covs.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(got["sd"], covs.std(axis=0, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(got["min"], covs.min(axis=0))
    assert list(got["level"]) == [0.5, 0.9] and (got["n_splits"] == 7).all()


def test_group_resplit_coverage_per_label_matches_a_hand_loop() -> None:
    rng = np.random.default_rng(6)
    y, mean, sigma, groups = clustered_case(rng, 20)
    channel = np.where(rng.random(y.size) < 0.7, "hr", "lactate")
    got = group_resplit_coverage(y, mean, sigma, groups, levels=[0.9], n_splits=3, seed=4, by=channel)
    split_rng, covs = np.random.default_rng(4), []
    order = list(dict.fromkeys(groups))
    for _ in range(3):
        cal = np.isin(groups, [order[i] for i in split_rng.permutation(20)[:10]])
        sc = SplitConformal().conformalize(y[cal], mean[cal], sigma[cal], groups=channel[cal])
        lo, hi = sc.predict_interval(mean[~cal], sigma[~cal], 0.9, groups=channel[~cal])
        covs.append(M.interval_coverage(y[~cal], lo, hi))
    assert got["mean_coverage"].iloc[0] == pytest.approx(np.mean(covs), rel=1e-12)


def test_group_resplit_coverage_is_valid_when_points_are_exchangeable() -> None:
    # One point per group: the split is a plain random split of exchangeable points, so the
    # mean over R splits sits in [level, level + 1/(n_cal + 1)] up to Z sd / sqrt(R)
    # (family-wise 1e-4 over the 4 levels, two-sided).
    rng = np.random.default_rng(9)
    n, R = 3000, 200
    sigma = rng.lognormal(0.0, 0.5, n)
    y = rng.normal(0.0, sigma)
    got = group_resplit_coverage(y, np.zeros(n), sigma, np.arange(n), n_splits=R, seed=1)
    z = float(stats.norm.ppf(1 - 1e-4 / (2 * 4)))
    for row in got.itertuples():
        tol = z * row.sd / math.sqrt(R)
        assert row.level - tol <= row.mean_coverage <= row.level + 1 / (n // 2 + 1) + tol, row


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"groups": np.zeros(10)}, "calibration_fraction"),
        ({"groups": np.arange(10), "calibration_fraction": 1.0}, "calibration_fraction"),
        ({"groups": np.arange(10), "n_splits": 0}, "n_splits"),
        ({"groups": np.arange(5)}, "one label per point"),
    ],
)
def test_group_resplit_coverage_rejects_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        group_resplit_coverage(np.zeros(10), np.zeros(10), np.ones(10), **kwargs)


# ----------------------------------------------------------------------------- the coverage note


def band_covering(per_series: list[float], n_each: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A band over series ``k`` covering exactly ``per_series[k]`` of its ``n_each`` queries."""
    ys, groups = [], []
    for k, share in enumerate(per_series):
        inside = int(round(share * n_each))
        ys.append(np.r_[np.zeros(inside), np.full(n_each - inside, 5.0)])
        groups += [f"s{k}"] * n_each
    y = np.concatenate(ys)
    return y, -np.ones_like(y), np.ones_like(y), np.array(groups)


def test_coverage_note_says_when_the_band_falls_short() -> None:
    rng = np.random.default_rng(0)
    y, lo, hi, g = band_covering(list(np.clip(0.77 + 0.05 * rng.standard_normal(12), 0, 1)))
    note = coverage_note(y, lo, hi, level=0.9, groups=g)
    per = pd.Series((y >= lo) & (y <= hi)).groupby(g).mean()
    assert note.n_groups == 12 and note.unit == "series" and note.coverage == pytest.approx(per.mean())
    assert note.se == pytest.approx(max(per.std(ddof=1) / np.sqrt(12), np.sqrt(note.coverage * (1 - note.coverage) / y.size)))
    assert note.verdict == "outside" and note.z < -3
    assert note.text.startswith(f"The 90 % band covered {note.coverage:.2f} of the test queries (± {note.se:.2f} over 12 series): "
                                "below its level by more than chance allows. What to do:")
    assert "adaptive" in note.text


def test_coverage_note_above_and_within_and_worth_watching() -> None:
    y, lo, hi, g = band_covering([1.0] * 12)
    above = coverage_note(y, lo, hi, level=0.8, groups=g)
    assert above.verdict == "outside" and above.z > 3 and "above its level" in above.text and "wider" in above.text
    y, lo, hi, g = band_covering([0.85, 0.95] * 6)  # exactly 0.90
    within = coverage_note(y, lo, hi, level=0.9, groups=g)
    assert within.verdict == "within" and within.text is None
    y, lo, hi, g = band_covering([0.8, 0.9] * 6)  # 0.85, se 0.0151 over series: 3.3 se below
    assert coverage_note(y, lo, hi, level=0.9, groups=g).verdict == "outside"
    y, lo, hi, g = band_covering([0.75, 0.95] * 6)  # 0.85, se 0.030: 1.7 se below
    assert coverage_note(y, lo, hi, level=0.9, groups=g).verdict == "within"
    y, lo, hi, g = band_covering([0.75, 0.925] * 6)  # 0.8375, se 0.0264: 2.4 se below
    watch = coverage_note(y, lo, hi, level=0.9, groups=g)
    assert watch.verdict == "worth watching" and "worth watching" in watch.text
    # series, not queries: the same shortfall with no groups is far outside the binomial window
    assert coverage_note(y, lo, hi, level=0.9).verdict == "outside"
    with pytest.raises(ValueError, match="fraction|level"):
        coverage_note(y, lo, hi, level=90, groups=g)
