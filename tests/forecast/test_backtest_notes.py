"""A backtest that falls short of its level says so: ``windows.backtest_notes`` on forecasts
whose band covers what the test builds, per series (many series) or per window (one)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from levy_core.forecast.windows import backtest_notes


def _forecasts(n_series: int, per_series: int, covered: float, seed: int = 0) -> pd.DataFrame:
    """``n_series`` × ``per_series`` queries over 3 windows; a share ``covered`` of each series'
    queries inside its 90 % band (y = 0, the band [-1, 1] or [1, 2])."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_series):
        inside = rng.permutation(np.arange(per_series) < round(covered * per_series))
        for j in range(per_series):
            lo, hi = (-1.0, 1.0) if inside[j] else (1.0, 2.0)
            rows.append({"unique_id": f"s{s}", "window": j % 3, "y": 0.0, "Lévy-lo-90": lo, "Lévy-hi-90": hi})
    return pd.DataFrame(rows)


def test_a_backtest_far_below_its_level_is_said_in_plain_words() -> None:
    notes = backtest_notes(_forecasts(40, 20, covered=0.70), [90])
    assert len(notes) == 1
    assert "0.70" in notes[0] and "40 series" in notes[0] and "below its level" in notes[0]


def test_a_backtest_at_its_level_says_nothing() -> None:
    assert backtest_notes(_forecasts(40, 20, covered=0.90), [90]) == ()


def test_one_series_is_judged_over_its_windows() -> None:
    notes = backtest_notes(_forecasts(1, 300, covered=0.60), [90])
    assert len(notes) == 1 and "windows" in notes[0]
