"""levy_core.calibration.saved_checks: a calibrator's saved state is read back or refused with a
ValueError that names the field."""

from __future__ import annotations

import math

import numpy as np
import pytest

from levy_core.calibration import saved_checks


def test_check_state() -> None:
    good = {"type": "SplitConformal", "version": saved_checks.FORMAT_VERSION}
    assert saved_checks.check_state(good, "SplitConformal") is good
    with pytest.raises(ValueError, match=r"expected a dict saved by SplitConformal.to_dict\(\)"):
        saved_checks.check_state([good], "SplitConformal")
    with pytest.raises(ValueError, match="expected a dict with type='ScaledGaussian'"):
        saved_checks.check_state(good, "ScaledGaussian")
    with pytest.raises(ValueError, match="unsupported SplitConformal format version 2"):
        saved_checks.check_state({**good, "version": 2}, "SplitConformal")


def test_saved_float() -> None:
    assert saved_checks.saved_float({"scale": "0.5"}, "scale") == 0.5
    assert saved_checks.saved_float({"scale": 0}, "scale", allow_zero=True) == 0.0
    with pytest.raises(ValueError, match="saved calibration is missing 'scale'"):
        saved_checks.saved_float({}, "scale")
    with pytest.raises(ValueError, match="saved 'scale' must be a number"):
        saved_checks.saved_float({"scale": "big"}, "scale")
    with pytest.raises(ValueError, match="saved 'scale' must be a positive finite number"):
        saved_checks.saved_float({"scale": 0.0}, "scale")
    with pytest.raises(ValueError, match="saved 'scale' must be a non-negative finite number"):
        saved_checks.saved_float({"scale": math.inf}, "scale", allow_zero=True)


def test_saved_scores() -> None:
    np.testing.assert_array_equal(saved_checks.saved_scores([3.0, 0.0, 1.0], "scores"), [0.0, 1.0, 3.0])
    with pytest.raises(ValueError, match="saved 'scores' must be non-negative"):
        saved_checks.saved_scores([1.0, -1.0], "scores")
    with pytest.raises(ValueError, match="scores contains 1 NaN"):
        saved_checks.saved_scores([np.nan], "scores")
    with pytest.raises(ValueError, match="scores must not be empty"):
        saved_checks.saved_scores([], "scores")
    groups = saved_checks.saved_group_scores({1: [2.0, 1.0], "b": [0.5]})
    assert list(groups) == ["1", "b"]
    np.testing.assert_array_equal(groups["1"], [1.0, 2.0])
    for bad in ({}, [[1.0]], None):
        with pytest.raises(ValueError, match="saved 'group_scores' must be a non-empty mapping"):
            saved_checks.saved_group_scores(bad)
    with pytest.raises(ValueError, match=r"saved \"group_scores\['b'\]\" must be non-negative"):
        saved_checks.saved_group_scores({"a": [1.0], "b": [-1.0]})
