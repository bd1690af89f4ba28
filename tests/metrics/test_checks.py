"""levy_core.metrics.checks: each check accepts what it should and refuses the rest with a
ValueError that names the argument (the calibrators' saved state: tests/calibration/test_saved_checks.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from levy_core.metrics import checks

# --------------------------------------------------------------------------- as_1d, same_length


def test_as_1d_accepts_array_likes_as_float64() -> None:
    for x in ([1, 2, 3], (1.0, 2.0, 3.0), np.array([1, 2, 3], dtype=np.int32), torch.tensor([1.0, 2.0, 3.0])):
        out = checks.as_1d(x, "x")
        assert out.dtype == np.float64 and out.shape == (3,)
        np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
    out = checks.as_1d([-np.inf, 0.0, np.inf], "lower", allow_inf=True)
    np.testing.assert_array_equal(out, [-np.inf, 0.0, np.inf])


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (["a", "b"], "foo must be a numeric 1-D array-like"),
        (np.ones((2, 2)), r"foo must be 1-D, got shape \(2, 2\)"),
        (3.0, r"foo must be 1-D, got shape \(\)"),
        ([], "foo must not be empty"),
        ([1.0, np.nan, np.nan], r"foo contains 2 NaN value\(s\) \(first at index 1\)"),
        ([1.0, 2.0, np.inf], r"foo contains 1 infinite value\(s\) \(first at index 2\); it must be finite"),
    ],
)
def test_as_1d_refuses(value, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        checks.as_1d(value, "foo")


def test_as_1d_refuses_nan_even_with_inf_allowed() -> None:
    with pytest.raises(ValueError, match="upper contains 1 NaN"):
        checks.as_1d([np.inf, np.nan], "upper", allow_inf=True)


def test_same_length_names_every_argument() -> None:
    checks.same_length(a=np.zeros(3), b=np.ones(3), c=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="same length: a has 3, b has 2, c has 3"):
        checks.same_length(a=np.zeros(3), b=np.ones(2), c=np.zeros(3))


# --------------------------------------------------------------------------- sigma and levels


def test_check_sigma() -> None:
    np.testing.assert_array_equal(checks.check_sigma([0.0, 2.0]), [0.0, 2.0])
    with pytest.raises(ValueError, match=r"sigma must be >= 0; sigma\[1\] = -0.5"):
        checks.check_sigma([1.0, -0.5, -2.0])
    with pytest.raises(ValueError, match="std must be >= 0"):
        checks.check_sigma([-1.0], "std")
    with pytest.raises(ValueError, match="sigma contains 1 infinite"):
        checks.check_sigma([1.0, np.inf])
    with pytest.raises(ValueError, match="sigma contains 1 NaN"):
        checks.check_sigma([np.nan])


def test_check_level() -> None:
    for good in (0.9, np.float32(0.5), np.array(0.25), 1e-9):
        value = checks.check_level(good)
        assert isinstance(value, float) and value == float(good)
    for bad in (0.0, 1.0, -0.1, 1.5, math.nan, math.inf):
        with pytest.raises(ValueError, match="level must lie strictly between 0 and 1"):
            checks.check_level(bad)
    with pytest.raises(ValueError, match=r"level must be a scalar in \(0, 1\), got shape \(2,\)"):
        checks.check_level([0.5, 0.9])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"level must be a number in \(0, 1\)"):
        checks.check_level("high")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="confidence must lie"):
        checks.check_level(2.0, "confidence")
    # a percent is named as such (docs/guides/python-pipeline.md, "Levels: fractions and percents")
    with pytest.raises(ValueError, match=r"got 90: 90 looks like a percent; this function takes fractions "
                                         r"\(write 0\.9 for a 90 % band\)"):
        checks.check_level(90)
    with pytest.raises(ValueError, match=r"levels must lie .* got 97\.5: 97\.5 looks like a percent; .*write 0\.975"):
        checks.check_levels([0.5, 97.5])
    for neither in (1.0, 100.0, 150.0, -5.0):
        with pytest.raises(ValueError) as info:
            checks.check_level(neither)
        assert "percent" not in str(info.value)


def test_check_levels() -> None:
    np.testing.assert_array_equal(checks.check_levels(0.9), [0.9])
    np.testing.assert_array_equal(checks.check_levels((0.5, 0.9)), [0.5, 0.9])
    for bad in ([0.5, 1.0], [0.0], [-0.2, 0.5]):
        with pytest.raises(ValueError, match="every entry of levels must lie strictly between 0 and 1"):
            checks.check_levels(bad)
    with pytest.raises(ValueError, match="levels contains 1 NaN"):
        checks.check_levels([0.5, np.nan])
    with pytest.raises(ValueError, match="levels must not be empty"):
        checks.check_levels([])
    with pytest.raises(ValueError, match=r"levels must be numbers in \(0, 1\)"):
        checks.check_levels(["x"])
    with pytest.raises(ValueError, match="levels must be 1-D"):
        checks.check_levels([[0.5, 0.9]])
    with pytest.raises(ValueError, match="every entry of grid"):
        checks.check_levels([1.5], "grid")


# --------------------------------------------------------------------------- combined checks


def test_check_point_predictions_and_gaussian_name_the_argument() -> None:
    y, m, s = [1.0, 2.0], [0.0, 0.0], [1.0, 1.0]
    out = checks.check_point_predictions(y, m)
    assert all(a.dtype == np.float64 for a in out)
    assert len(checks.check_gaussian(y, m, s)) == 3
    with pytest.raises(ValueError, match="y_true contains 1 NaN"):
        checks.check_point_predictions([np.nan, 1.0], m)
    with pytest.raises(ValueError, match="mean contains 1 infinite"):
        checks.check_point_predictions(y, [0.0, np.inf])
    with pytest.raises(ValueError, match="same length: y_true has 2, mean has 3"):
        checks.check_point_predictions(y, [0.0] * 3)
    with pytest.raises(ValueError, match="y_true"):
        checks.check_gaussian(np.ones((2, 1)), m, s)
    with pytest.raises(ValueError, match="mean must not be empty"):
        checks.check_gaussian(y, [], s)
    with pytest.raises(ValueError, match="sigma must be >= 0"):
        checks.check_gaussian(y, m, [1.0, -1.0])
    with pytest.raises(ValueError, match="same length: y_true has 2, mean has 2, sigma has 1"):
        checks.check_gaussian(y, m, [1.0])


def test_check_bounds_and_interval() -> None:
    lo, hi = checks.check_bounds([-np.inf, 0.0], [1.0, np.inf])  # infinite bounds are fine
    assert lo[0] == -np.inf and hi[1] == np.inf
    checks.check_bounds([1.0], [1.0])  # a degenerate interval is fine
    with pytest.raises(ValueError, match="lower must be <= upper pointwise; at index 1 lower=3.0 > upper=2.0"):
        checks.check_bounds([0.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="lower contains 1 NaN"):
        checks.check_bounds([np.nan], [1.0])
    with pytest.raises(ValueError, match="upper contains 1 NaN"):
        checks.check_bounds([0.0], [np.nan])
    with pytest.raises(ValueError, match="same length: lower has 1, upper has 2"):
        checks.check_bounds([0.0], [1.0, 2.0])
    y, lo, hi = checks.check_interval([0.5], [-np.inf], [np.inf])
    assert y[0] == 0.5
    with pytest.raises(ValueError, match="y_true contains 1 infinite"):
        checks.check_interval([np.inf], [0.0], [1.0])
    with pytest.raises(ValueError, match="same length: y_true has 2, lower has 1, upper has 1"):
        checks.check_interval([0.0, 1.0], [0.0], [1.0])


# --------------------------------------------------------------------------- groups, half width


def test_group_codes() -> None:
    codes, uniques = checks.group_codes(["b", "a", "b", 1, "1"], 5)
    np.testing.assert_array_equal(codes, [0, 1, 0, 2, 2])  # first appearance; 1 and "1" are one
    np.testing.assert_array_equal(uniques, ["b", "a", "1"])
    assert uniques.dtype.kind == "U"
    with pytest.raises(ValueError, match=r"groups must be 1-D with one label per point \(4\), got shape \(3,\)"):
        checks.group_codes(["a", "b", "c"], 4)
    with pytest.raises(ValueError, match="groups must be 1-D"):
        checks.group_codes([["a", "b"]], 2)
    with pytest.raises(ValueError, match=r"groups has 2 missing label\(s\) \(first at index 1\)"):
        checks.group_codes(["a", None, float("nan")], 3)
    with pytest.raises(ValueError, match="by has 1 missing"):
        checks.group_codes([None], 1, "by")


def test_gaussian_half_width() -> None:
    sigma = np.array([0.0, 1.0, 2.5])
    for level in (0.5, 0.9, 0.99):
        np.testing.assert_allclose(
            checks.gaussian_half_width(sigma, level), stats.norm.ppf(0.5 + level / 2) * sigma, rtol=1e-14
        )
    assert checks.gaussian_half_width(sigma, 0.9)[0] == 0.0


# --------------------------------------------------------------------------- positive numbers


def test_check_positive() -> None:
    assert checks.check_positive(2, "rel_floor") == 2.0
    assert checks.check_positive("1e-6", "rel_floor") == 1e-6
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="rel_floor must be a positive finite number"):
            checks.check_positive(bad, "rel_floor")
    for bad in (None, "tiny", [1.0, 2.0]):
        with pytest.raises(ValueError, match="rel_floor must be a positive number"):
            checks.check_positive(bad, "rel_floor")  # type: ignore[arg-type]


def test_check_positive_int() -> None:
    for good, want in ((3, 3), (3.0, 3), (np.int64(50), 50)):
        out = checks.check_positive_int(good, "min_group_size")  # type: ignore[arg-type]
        assert out == want and type(out) is int
    for bad in (0, -2, 2.5, "3", None, math.inf, math.nan, [3]):
        with pytest.raises(ValueError, match="min_group_size must be a positive integer"):
            checks.check_positive_int(bad, "min_group_size")  # type: ignore[arg-type]
