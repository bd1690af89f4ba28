"""benchmarks/studies/period_survey.py: the survey's marks and the synthetic table (the series the
2026-12-04 log's false alarms and power come from)."""

from __future__ import annotations

import numpy as np

from benchmarks.studies import period_survey as ps


def test_only_the_series_whose_periods_moved_are_marked() -> None:
    before = ["fresh   elec-equip-30      (1.00) | ()", "anchors nile               () | ()"]
    after = ["fresh   elec-equip-30      (1.00) | (1.00)", "anchors nile               () | ()", "dev     new  ()"]
    got = ps.marked(after, before)
    assert got[0].startswith("* ") and got[1].startswith("  ") and got[2].startswith("* ")  # a new series differs too


def test_the_synthetic_table_counts_the_draws_a_test_offers_a_year() -> None:
    always, never = (lambda frame: (ps.YEAR,)), (lambda frame: ())
    assert all(row.endswith("| 1.000 | 1.000 |") for row in ps.synthetic(3, always)[2:])
    assert all(row.endswith("| 0.000 | 0.000 |") for row in ps.synthetic(3, never)[2:])
    lengths = []
    ps.synthetic(2, lambda frame: lengths.append(len(frame)) or ())
    assert lengths[:2] == [120, 120] and 140 < lengths[2] < 200  # 2 draws of 120 months, then of 240 with 30 % dropped


def test_the_seasonal_series_carry_a_year_and_the_noise_does_not() -> None:
    rng = np.random.default_rng(0)
    season = ps.SERIES["white noise + season 0.3"](rng, 1200) - ps.SERIES["white noise"](np.random.default_rng(0), 1200)
    np.testing.assert_allclose(season[:12], season[12:24], atol=1e-12)  # what is added repeats every 12 months
    assert ps.years((ps.YEAR, 24.0)) == "(1.00, 0.00)"
