"""Issue 53, the dashboard on the user's clock: a PBC-like panel read in days (many series, a
forecast with a cut-off) is drawn on an axis in days — the band, its cut-off line, the data
panel's gaps — not on the model's hours (``time (h)`` up to 60,000 before)."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
from follow_up import pbc_like
from levy_dashboard import charts, services
from levy_dashboard.fitting import fits


@pytest.fixture(scope="module")
def days_fit():
    buffer = io.StringIO()
    pbc_like(30).to_csv(buffer, index=False)
    data = buffer.getvalue().encode()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(fits.ENV_FAST, "1")
        settings = services.fit.default_settings()
    obs = services.data.load_observations("pbc-days", data, "pbc.csv", time_unit="days")
    res = services.fit.fit_model(obs, services.data.data_key(obs), "upload: pbc.csv",
                                 dataclasses.replace(settings, task="forecast", train_twin=False))
    return obs, res


def test_the_band_of_a_panel_in_days_is_drawn_in_days(days_fit) -> None:
    obs, res = days_fit
    sid = res.data.series_choices()[0]
    channel = res.data.channels_of(sid, res.fitted.channels)[0]
    inputs = services.band.band_inputs(res.key, res, sid, channel, 0.9, "gaussian", 0)
    assert inputs.time_axis == "time (days)"
    np.testing.assert_allclose(inputs.grid["when"].to_numpy(float), inputs.grid["time"].to_numpy() / 24.0)
    np.testing.assert_allclose(inputs.points["when"].to_numpy(float), inputs.points["time"].to_numpy() / 24.0)
    times = obs.frame.loc[obs.frame["series_id"] == sid, "time"].to_numpy()  # hours
    assert inputs.cutoff == pytest.approx(res.fitted.task.series_cutoff(times) / 24.0)  # its cut-off, in days
    fig = charts.band_figure(inputs.grid, inputs.points, **inputs.figure_arguments())
    assert fig.layout.xaxis4.title.text == "time (days)"
    band = next(t for t in fig.data if t.name and "band" in t.name)
    assert max(x for x in band.x if x is not None) <= obs.frame["time"].max() / 24.0 + 1e-6  # days, not hours
    assert services.band.user_axis(res) == "time (days)"
    assert services.band.time_text(res, sid, 48.0) == "2 days"


def test_the_data_panel_says_gaps_and_span_in_days(days_fit) -> None:
    obs, _ = days_fit
    summary = services.data.summary(services.data.data_key(obs), obs)
    assert summary.clock == "days" and summary.gap_unit == "days"
    assert summary.say(summary.span).endswith(" days") and "h" not in summary.say(summary.median_gap).split()
    fig = charts.gap_histogram(summary.gaps / services.data.hours_per(summary.gap_unit), unit=summary.gap_unit)
    assert fig.layout.xaxis.title.text == "gap (days, log scale)"
    assert 100 < float(np.median(summary.gaps)) / 24.0 < 500  # the visits about a year apart, in days


def test_the_selected_query_is_marked_on_the_same_clock(days_fit) -> None:
    _, res = days_fit
    sid = res.data.series_choices()[0]
    channel = res.data.channels_of(sid, res.fitted.channels)[0]
    inputs = services.band.band_inputs(res.key, res, sid, channel, 0.9, "gaussian", 0)
    attended = inputs.points[["time", "value"]].assign(weight=1.0)
    marks = services.band.marks_on_user_clock(res, sid, inputs, {"query": {"time": 480.0}, "attended": attended})
    assert marks["query"]["when"] == pytest.approx(20.0)  # 480 hours: day 20
    np.testing.assert_allclose(marks["attended"]["when"].to_numpy(float), attended["time"].to_numpy() / 24.0)


def test_the_evidence_table_lists_times_in_days(days_fit) -> None:
    _, res = days_fit
    sid = res.data.series_choices()[0]
    held = services.evidence.heldout_queries(res.key, res, sid)
    assert len(held), "the first series offered is a test series with held-out queries"
    q = held.iloc[0]
    query = {"series_id": sid, "channel": str(q["channel"]), "time": float(q["time"])}
    exp = services.evidence.explain_query(res.key, res, query, held)
    assert exp is not None and not exp.in_hours and "time (days)" in exp.top.columns
    assert float(exp.top["time (days)"].max()) <= float(q["time"]) / 24.0  # drawn on the past, in days


def test_the_fit_settings_open_with_the_fit_in_words_on_the_datas_clock(days_fit) -> None:
    """The Fit panel's settings start with model.json's summary (days), the raw task after."""
    import re

    _, res = days_fit
    summary = services.fit.settings_summary(res)
    words = summary["in words, on your clock"]
    assert list(summary)[0] == "in words, on your clock" and "task" in summary
    text = " ".join(str(v) for v in words.values() if v)
    assert "days" in text and not re.search(r"\d h\b|\bhours\b", text), text
