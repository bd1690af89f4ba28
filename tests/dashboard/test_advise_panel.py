"""The Measure next panel through AppTest: a ranked table of measurements with the narrowing
of each target's band split into evidence and value, plain-words lines, and choosing a
suggestion redraws the band as it would be with the hypothetical observation marked."""

from __future__ import annotations

import pytest
from dash_helpers import figure, show, start
from levy_dashboard.session import state


@pytest.mark.integration
def test_the_advise_panel_ranks_measurements_and_shows_the_band_with_one() -> None:
    at = show(start(), state.PANEL_ADVISE)
    lines = [m.value for m in at.markdown if m.value.startswith("- measuring ")]
    assert lines and "band of" in lines[0] and "%" in lines[0]
    table = next(d.value for d in at.dataframe if "measure" in d.value.columns)
    assert {"rank", "measure", "narrowing %", "of which evidence %", "of which value %"} <= set(table.columns)
    assert list(table["rank"]) == list(range(1, len(table) + 1))
    assert table["narrowing %"].is_monotonic_decreasing
    fig = figure(at, state.ADVISE_CHART)
    names = [t.get("name", "") for t in fig["data"]]
    assert any(n.startswith("90 % band today") for n in names)
    first = table["measure"].iloc[0]
    assert any(n == f"90 % band with {first}" for n in names)
    assert any(n.startswith(f"hypothetical {first}") for n in names)
    caption = " ".join(c.value for c in at.caption)
    assert "evidence part is exact" in caption

    # choosing another suggestion redraws the band with it, the measurement marked
    at.selectbox(key=state.ADVISE_PICK).set_value(2).run()
    assert not at.exception, at.exception
    third = table["measure"].iloc[2]
    names = [t.get("name", "") for t in figure(at, state.ADVISE_CHART)["data"]]
    assert f"90 % band with {third}" in names and any(n.startswith(f"hypothetical {third}") for n in names)

    # no target: a message instead of a table
    sid = at.session_state[state.SERIES]
    at.multiselect(key=state.keyed(state.ADVISE_TARGETS, sid)).set_value([]).run()
    assert not at.exception, at.exception
    assert any("at least one target" in i.value for i in at.info)


def test_advice_on_a_forecast_fit_starts_at_the_cut_off() -> None:
    """A fit on many series with a cut-off: advice starts from the observations up to it, and
    those after it (what was really measured next) are kept apart for the chart."""
    from types import SimpleNamespace

    from levy_dashboard.services.advise import advice_data

    from levy_core.data import load_sample
    from levy_core.episodes.tasks import TaskConfig

    obs = load_sample("Synthetic multichannel")
    sid = obs.series_ids[3]
    res = SimpleNamespace(obs=obs, on_origins=False, fitted=SimpleNamespace(task=TaskConfig("forecast", cutoff=24.0)))
    seen, later, start = advice_data(res, sid)
    assert "cut-off (24 hours)" in start
    assert set(seen.frame["series_id"]) == {sid} and seen.frame["time"].max() <= 24.0
    assert later is not None and later.frame["time"].min() > 24.0
    assert len(seen.frame) + len(later.frame) == int((obs.frame["series_id"] == sid).sum())
    res.fitted.task = TaskConfig("interpolate")
    seen, later, start = advice_data(res, sid)
    assert later is None and start == "the series' last observation" and len(seen.frame) > 0
