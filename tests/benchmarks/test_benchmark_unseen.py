"""benchmarks/unseen.py: the trivial rows (last value, the stay's own context mean, the
channel's training mean), each forecast and its per-channel spread, written out by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from benchmarks import unseen


def frame(rows: list[tuple[str, str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["series_id", "channel", "time", "value"])


# training file: stay a has hr 1, 3 in its first 24 h and 5 after; stay b has hr 10 before, 10 after
TRAIN = frame([("a", "hr", 1.0, 1.0), ("a", "hr", 2.0, 3.0), ("a", "hr", 30.0, 5.0),
               ("b", "hr", 1.0, 10.0), ("b", "hr", 40.0, 10.0)])
CONTEXT = frame([("u", "hr", 1.0, 2.0), ("u", "hr", 5.0, 6.0)])
QUERIES = frame([("u", "hr", 30.0, 7.0), ("v", "hr", 30.0, 8.0)])  # v: no context, the training mean


@pytest.mark.parametrize(("how", "u", "train_errors"), [
    ("last", 6.0, [5 - 3, 10 - 10]),
    ("own mean", 4.0, [5 - 2, 10 - 10]),
    ("training mean", 29 / 5, [5 - 29 / 5, 10 - 29 / 5]),
])
def test_each_trivial_row_forecasts_and_spreads_as_written(how: str, u: float, train_errors: list[float]) -> None:
    out = unseen.trivial_predictive(TRAIN, CONTEXT, QUERIES, how=how)
    assert out["mean"].tolist() == pytest.approx([u, 29 / 5])  # training mean of hr: (1+3+5+10+10)/5
    rms = math.sqrt(sum(e * e for e in train_errors) / len(train_errors))
    assert out["pred_std"].tolist() == pytest.approx([rms, rms])
