"""benchmarks/studies/band_walk.py: the walk of one band level on a shipped sample model —
from a backtest window to its score and from the band view to its chart, each band derived
once and no climb back up (issue 54)."""

from __future__ import annotations

import pytest

from benchmarks.studies import band_walk


@pytest.fixture(scope="module")
def sample():  # noqa: ANN201 - (fitted, observations, FitResult)
    return band_walk.sample_model()


def test_the_levels_carriers_are_told_from_the_bare_level() -> None:
    assert band_walk.holds_level(0.8) and band_walk.holds_level([80, 90]) and band_walk.holds_level({"0.8": 1})
    assert not band_walk.holds_level(0.9) and not band_walk.holds_level(True)
    assert band_walk.bare_level((0.5, 0.8)) and not band_walk.bare_level(0.9)


def test_a_backtest_window_derives_each_band_once_and_never_climbs_back(sample) -> None:
    fitted, obs, _ = sample
    found = band_walk.backtest_walk(fitted, obs)
    assert found["climbs"] == 0
    assert found["derivations"] == {(m, lv, "conformal"): 1 for m in ("levy", "last_value") for lv in (0.8, 0.9)}
    stays = [f"{file}:{function}" for file, function, _, _ in found["path"]]
    assert stays[0] == "levy_core/forecast/windows.py:score_window"
    assert "levy_core/forecast/results.py:band_scores" in stays  # the score reads the band


def test_the_band_view_derives_its_band_once(sample) -> None:
    found = band_walk.dashboard_walk(sample[2])
    assert found["climbs"] == 0
    assert found["derivations"] == {("levy", 0.8, "conformal"): 1}
    assert "dashboard/charts/band.py:band_figure" in [f"{file}:{function}" for file, function, _, _ in found["path"]]
