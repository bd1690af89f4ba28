"""The log-linear spread study's design (issue 51): eight finite columns whatever the context."""

import numpy as np

from benchmarks.studies.loglinear_spread import ABLATIONS, design


def test_the_design_is_finite_where_a_query_has_no_context_or_no_spread() -> None:
    x = np.zeros((3, 13))
    x[0, 4] = np.inf  # no observation at all: an infinite lead
    x[1, 2] = -np.inf  # σ̂ of 0
    x[2, 8] = np.nan  # a channel seen once: no spread of its own
    out = design(x)
    assert out.shape == (3, 8) and np.all(np.isfinite(out)) and np.all(np.abs(out) <= 20.0)
    assert out[0, 1] == 20.0 and out[1, 0] == -20.0
    assert all(max(cols) < 8 for cols in ABLATIONS.values())
