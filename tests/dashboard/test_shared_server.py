"""The dashboard on a shared server: nothing one session uploads shows in another, user
strings render inert, downloads cannot run formulas, fits stay within the server's limits."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from dash_helpers import long_csv, session_model, show, start
from levy_dashboard import services
from levy_dashboard.display.markup import plain
from levy_dashboard.fitting import fits
from streamlit.testing.v1 import AppTest


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.file_uploader(key="upload").set_value((name, data, "text/csv"))
    at.run()
    assert not at.exception, at.exception
    return at


def page_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error]
    return " ".join(str(p) for p in parts)


@pytest.mark.integration
def test_two_sessions_with_identical_bytes_see_only_their_own_file_name() -> None:
    data = long_csv(12)
    first = upload(start(), "ward7_confidential.csv", data)
    assert "ward7" in page_text(first).replace("\\", "")
    second = upload(start(), "mine.csv", data)  # same bytes: the cached fit is reused
    assert second.session_state["_fit_key"] == first.session_state["_fit_key"], "the fit is shared"
    text = page_text(second).replace("\\", "")
    assert "mine.csv" in text and "ward7" not in text, "another session's file name leaked"


def dated_csv(first_day: str) -> bytes:
    """``long_csv(12)`` with its hours written as date-times from ``first_day``: whatever the
    day, it reads to the same frame (hours since each series' first observation)."""
    df = pd.read_csv(io.BytesIO(long_csv(12)))
    df["time"] = (pd.Timestamp(first_day) + pd.to_timedelta(df["time"], unit="h")).dt.strftime("%Y-%m-%d %H:%M:%S")
    return df.to_csv(index=False).encode()


def preview_times(at: AppTest) -> pd.Series:
    """The Data panel's rows of one series: their times in the user's clock."""
    table = next(d.value for d in show(at, "Data").dataframe if "channel" in d.value.columns)
    return table[next(c for c in table.columns if c.startswith("time"))]


@pytest.mark.integration
def test_the_same_measurements_on_other_days_show_only_their_own_dates() -> None:
    """Equal frames, other clocks: each session sees its own dates, never the dates (on a
    ward, the admission days) of another session's file, in the Data panel or in its model."""
    first = upload(start(), "spring.csv", dated_csv("2024-03-01"))
    second = upload(start(), "autumn.csv", dated_csv("2025-10-01"))
    a, b = session_model(first), session_model(second)
    assert a.obs.frame.equals(b.obs.frame), "the same frame: only the clock tells them apart"
    assert str(b.obs.report.time_origin[b.obs.series_ids[0]]).startswith("2025-10-01"), "another session's dates"
    assert second.session_state["_fit_key"] != first.session_state["_fit_key"]
    assert str(preview_times(second).iloc[0]).startswith("2025-10-01")
    assert str(preview_times(first).iloc[0]).startswith("2024-03-01")


@pytest.mark.integration
def test_markdown_in_a_file_name_renders_as_text() -> None:
    name = "![x](http://tracker.invalid/p.png) **bold** [link](http://x.invalid).csv"
    at = upload(start(), name, long_csv(12))
    for block in [m.value for m in at.markdown] + [s.value for s in at.subheader]:
        assert "![x](" not in block and "](http" not in block, block
    assert plain(name).replace("\\", "").replace("\u2060", "") == name, "escaped text reads as written"


def test_plain_escapes_every_markdown_construct() -> None:
    for text in ("![a](http://h/x.png)", "[a](http://h)", "**b**", "`c`", "<img src=x>", "# h", "| t |", ":smile:",
                 "$x$", "line\nbreak"):
        escaped = plain(text)
        assert "\n" not in escaped
        for ch in "![]()*`<>#|:$":
            assert ch not in escaped.replace(f"\\{ch}", ""), (text, escaped)


def test_downloads_neutralise_spreadsheet_formulas() -> None:
    pred = pd.DataFrame({"series_id": ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "@SUM(1)", "ok"],
                         "channel": ["-2+3", "\tx", "hr", "hr"], "time": [1.0, 2.0, 3.0, 4.0],
                         "mean": [-1.5, 2.0, 3.0, 4.0]})
    for csv in (services.evaluation.prediction_csv(pred), services.evaluation.ranking_csv(pred)):
        back = pd.read_csv(io.BytesIO(csv), keep_default_na=False)
        assert back["series_id"].tolist()[:3] == ["'" + s for s in pred["series_id"][:3]]
        assert back["channel"].tolist()[:2] == ["'-2+3", "'\tx"]
        assert back["mean"].tolist() == [-1.5, 2.0, 3.0, 4.0], "numbers stay numbers"


@pytest.mark.integration
def test_fits_beyond_the_servers_limits_are_refused(monkeypatch) -> None:
    monkeypatch.setenv("LEVY_DASHBOARD_MAX_SECONDS", "2")
    monkeypatch.setenv("LEVY_DASHBOARD_MAX_EPOCHS", "50")
    monkeypatch.setenv("LEVY_DASHBOARD_SIZES", "small")
    ok = fits.FitSettings(epochs=10, max_seconds=2.0)
    fits.check_limits(ok)
    for bad, what in ((fits.FitSettings(max_seconds=3600.0), "at most 2 s"),
                      (fits.FitSettings(max_seconds=0.0), "at most 2 s"),  # 0 meant "no limit"
                      (fits.FitSettings(epochs=500, max_seconds=2.0), "at most 50 epochs"),
                      (fits.FitSettings(size="large", max_seconds=2.0), "one of small")):
        with pytest.raises(ValueError, match=what):
            fits.check_limits(bad)
    at = start()
    budget = at.number_input(key="fit_budget")
    assert budget.max == 2.0 and budget.value <= 2.0
    assert at.number_input(key="fit_epochs").max == 50
    monkeypatch.setenv("LEVY_DASHBOARD_MAX_EPOCHS", "lots")
    with pytest.raises(ValueError, match="not a number"):
        fits.session_limits()
