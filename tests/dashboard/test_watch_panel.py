"""The Watch panel through AppTest: a replay of the test series, each observation against the
band issued before it, flagged points marked, the running flag rate beside the nominal α, and
play / pause stepping the replay's clock."""

from __future__ import annotations

import pytest
from dash_helpers import figure, show, start
from levy_dashboard.charts.watch import FLAG
from levy_dashboard.session import state

from levy_core.decisions.watch import WATCH_COLUMNS


@pytest.mark.integration
def test_the_watch_panel_replays_the_test_series_with_flags_and_rates() -> None:
    at = show(start(), state.PANEL_WATCH)
    text = " ".join(m.value for m in at.caption).replace("\\", "")  # markdown escapes
    assert "test series" in text and "one-step-ahead scores of the fit's" in text and "calibration series" in text
    assert "against the nominal α = 0.01" in text
    assert not at.warning  # the calibration split was replayed: valid p-values
    fig = figure(at, state.WATCH_CHART)
    names = [t.get("name", "") for t in fig["data"]]
    assert any(n.startswith("Lévy 99 % band issued before each observation") for n in names)
    assert "flagged (p ≤ 0.01)" in names and "nominal α = 0.01" in names
    assert "running flag rate, this series" in names and "running flag rate, every watched series" in names
    flagged = next(t for t in fig["data"] if t.get("name", "").startswith("flagged"))
    assert flagged["marker"]["color"] == FLAG and flagged["marker"]["symbol"] == "x"
    nominal = next(t for t in fig["data"] if t.get("name", "").startswith("nominal"))
    assert list(nominal["y"]) == [0.01, 0.01]
    assert [m.label for m in at.metric] == ["flagged so far (this series)", "running flag rate",
                                          "nominal false-alarm rate α"]
    assert at.metric[2].value == "0.01"

    # α moves the band and the nominal line; the slider moves the replay's clock
    at.select_slider(key=state.WATCH_ALPHA).set_value(0.1).run()
    assert not at.exception, at.exception
    fig = figure(at, state.WATCH_CHART)
    assert any(t.get("name", "").startswith("Lévy 90 % band") for t in fig["data"])
    sid = at.selectbox(key=state.WATCH_SERIES).value
    slider = at.slider(key=state.keyed(state.WATCH_STEP, sid))
    last = slider.value
    assert last > 5
    slider.set_value(3).run()
    assert "step 4 of" in " ".join(m.value for m in at.markdown).replace("\\", "")
    shown = figure(at, state.WATCH_CHART)
    obs = [t for t in shown["data"] if t.get("name") in ("observations", "flagged (p ≤ 0.1)")]
    assert sum(len(t["x"]) for t in obs) <= 4  # nothing after the replay's clock is shown

    # play advances the clock one step per run; pause stops it
    at.button(key=state.WATCH_PLAY).click().run()
    assert not at.exception, at.exception
    assert at.session_state[state.WATCH_PLAYING] is True
    assert at.slider(key=state.keyed(state.WATCH_STEP, sid)).value == 4
    assert at.button(key=state.WATCH_PLAY).label.startswith("⏸")
    at.button(key=state.WATCH_PLAY).click().run()
    assert at.session_state[state.WATCH_PLAYING] is False
    assert WATCH_COLUMNS[0] == "series_id"
