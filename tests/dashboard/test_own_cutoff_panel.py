"""The dashboard on a panel with different follow-ups (issue 53): its forecast fit gives each
series its own cut-off (the sidebar's default there), the band chart draws the series' own
cut-off line, advice starts from it, and the Fit panel's note names the series that still
sit out."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from dash_helpers import start
from follow_up import SINGLE, pbc_like
from levy_dashboard import services
from levy_dashboard.fitting.fits import FitResult
from levy_dashboard.services.advise import advice_data
from levy_dashboard.session import state

from levy_core.data import TIME_UNITS, load_sample, user_time_unit
from levy_core.episodes.tasks import TaskConfig


@pytest.fixture(scope="module")
def own() -> FitResult:
    """A forecast fit of the PBC-like upload with the sidebar's defaults (no cut-off chosen)."""
    up = services.data.source_from_upload("pbc.csv", pbc_like().to_csv(index=False).encode())
    obs = services.data.load_observations(up.digest, up.data, up.name, None, "days")
    key = services.data.data_key(obs)
    assert services.fit.own_cutoffs_by_default(key, obs), "the sidebar offers each series its own cut-off"
    settings = dataclasses.replace(services.fit.default_settings(), task="forecast", cutoff=None, epochs=2,
                                   train_twin=False)
    return services.fit.fit_model(obs, key, up.label, settings)


def test_the_fit_gives_each_series_its_own_cutoff_and_names_who_sits_out(own: FitResult) -> None:
    task = own.fitted.task
    assert task.per_series and task.cutoff is None
    assert "task: forecast after the cut-off at 50 % of each series' own span" in own.describe()
    note = own.fitted.left_out_note()
    assert note is not None and note.startswith("Each series has its own cut-off") and SINGLE in note
    assert f"1 of 61 series sits out of this fit: {SINGLE};" in note


def test_the_band_draws_the_series_own_cutoff(own: FitResult) -> None:
    pts = own.data.points()
    drawn = set()
    for sid in own.data.series_choices()[:3]:
        channel = own.data.channels_of(sid, own.fitted.channels)[0]
        inputs = services.band.band_inputs(own.key, own, sid, channel, 0.9, "conformal", 0)
        t = pts.loc[pts["series_id"] == sid, "time"]
        hours_per = TIME_UNITS[user_time_unit(own.obs)]  # the band is drawn on the data's clock (days)
        assert inputs.cutoff * hours_per == pytest.approx(t.min() + 0.5 * (t.max() - t.min()))
        drawn.add(round(float(inputs.cutoff), 6))
    assert len(drawn) == 3, "each series its own line"


def test_advice_starts_at_the_series_own_cutoff() -> None:
    obs = load_sample("Synthetic multichannel")
    sid = obs.series_ids[3]
    t = obs.frame.loc[obs.frame["series_id"] == sid, "time"]
    cut = t.min() + 0.25 * (t.max() - t.min())
    res = SimpleNamespace(obs=obs, on_origins=False, fitted=SimpleNamespace(task=TaskConfig("forecast",
                                                                                             cutoff_fraction=0.25)))
    seen, later, start = advice_data(res, sid)
    assert f"({cut:g} hours, at 25 % of each series' own span)" in start  # no recorded clock: hours
    assert seen.frame["time"].max() <= cut and later is not None and later.frame["time"].min() > cut


@pytest.mark.integration
def test_the_sidebar_offers_each_series_its_own_cutoff() -> None:
    at = start()
    at.file_uploader(key="upload").set_value(("pbc.csv", pbc_like().to_csv(index=False).encode(), "text/csv")).run()
    assert not at.exception, at.exception
    at.radio(key=state.FIT_TASK).set_value("forecast").run()
    assert not at.exception, at.exception
    boxes = [c for c in at.sidebar.checkbox if c.label == "Each series its own cut-off"]
    assert len(boxes) == 1 and boxes[0].value, [c.label for c in at.sidebar.checkbox]
    assert not [s for s in at.sidebar.slider if s.label.startswith("History cut-off")]
    boxes[0].uncheck().run()
    assert not at.exception, at.exception
    assert [s for s in at.sidebar.slider if s.label.startswith("History cut-off")], "one cut-off for all, chosen"
