"""One series or a few: the bundled one-series sample ("Single sensor series") in the app.

A forecast on fewer than 10 series runs on rolling forecast origins: the band panel shows the
forecast past the end of the data up to a horizon the user types, the Backtest panel the
latest test origins' bands against what happened and the coverage over time of both
methods. An interpolation runs on time windows. In neither may a view show the model's
pseudo-series ("<id>@<k>", "<id>@end") or a window-relative clock. Fits are tiny
(``LEVY_DASHBOARD_FAST=1``, conftest).
"""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest
from dash_helpers import APP, SAMPLE_DIR, csv_frame, figure, session_model, show, start
from levy_dashboard import services
from levy_dashboard.display import report, tables
from levy_dashboard.session.state import PANELS
from streamlit.testing.v1 import AppTest

from levy_core.calibration.over_time import GUARANTEE

SINGLE = "Single sensor series"
PSEUDO = re.compile(r"\w@\d+|@end")  # a model-space pseudo-series id
# the sample's first and last observations in UTC, naive as the charts draw them
_STAMPS = pd.to_datetime(pd.read_csv(SAMPLE_DIR / "single_series.csv")["timestamp"], utc=True).dt.tz_localize(None)
FIRST, LAST = _STAMPS.min(), _STAMPS.max()


def start_single() -> AppTest:
    """The app opened on the one-series sample: its first fit is a forecast (few series)."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["sample_name"] = SINGLE
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def values(v) -> np.ndarray:
    """A trace array (plotly may encode numbers as base64 ``bdata``)."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
    return np.asarray(v)


def trace(fig: dict, prefix: str) -> dict:
    hits = [t for t in fig["data"] if t.get("name", "").startswith(prefix)]
    assert hits, f"no trace {prefix!r} in {[t.get('name') for t in fig['data']]}"
    return hits[0]


def band_edges(fig: dict) -> tuple[pd.DatetimeIndex, np.ndarray, np.ndarray]:
    """The Lévy band polygon → (times, upper, lower) in time order."""
    band = trace(fig, "Lévy ")
    x, y = pd.to_datetime(values(band["x"])), values(band["y"]).astype(float)
    n = len(x) // 2
    return x[:n], y[:n], y[n:][::-1]


def rendered_texts(at: AppTest) -> list[str]:
    """Every text the run shows: elements, widget labels/options/values, tables, figure JSON."""
    out = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "text", "info", "warning", "error",
                 "success", "exception", "code", "json", "metric", "selectbox", "select_slider", "radio",
                 "multiselect", "text_input", "slider", "checkbox", "toggle", "button", "number_input"):
        for el in at.get(kind):
            out.append(" ".join(str(getattr(el, a, "")) for a in ("value", "label", "options", "body")))
            if hasattr(el, "format_func") and hasattr(el, "options"):
                out.append(" ".join(map(str, el.options)))
    out += [d.value.to_csv() + " ".join(map(str, d.value.columns)) for d in at.dataframe]
    out += [c.proto.spec for c in at.get("plotly_chart")]
    return out


def assert_no_pseudo_ids(at: AppTest, where: str) -> None:
    for text in rendered_texts(at):
        hit = PSEUDO.search(text)
        assert hit is None, f"{where}: pseudo id {hit.group(0)!r} in {text[max(0, hit.start() - 80):hit.end() + 80]!r}"


# ----------------------------------------------------------------------------- no pseudo ids


@pytest.mark.slow  # a forecast fit on rolling origins
def test_forecast_on_one_series_shows_only_the_users_ids_and_clock():
    at = start_single()
    res = services.fit.cached_fit(at.session_state["_fit_key"])
    assert res.fitted.split.mode == "origin" and res.obs.n_series == 1
    # the page says what the offset is, and in plain words that the forecast is the offset: on
    # one series the learned correction is measured but held back
    show(at, PANELS[0])
    page = " ".join(rendered_texts(at)).replace("\\", "")  # markdown escapes
    assert "offset: a classical forecaster chosen on the rolling origins" in page
    assert res.fitted.training["levy"]["correction_held_back"] is True
    assert res.fitted.training_note().startswith("The forecast is the classical offset")
    assert "The forecast is the classical offset" in page
    for panel in PANELS:
        show(at, panel)
        assert not at.error, f"{panel}: {[e.value for e in at.error]}"
        assert_no_pseudo_ids(at, panel)
    # a query picked in the backtest's origin, explained in the band panel, and the identity check
    show(at, "Predictive band")
    held = services.evidence.heldout_queries(res.key, res, "series_0")
    t = float(held[held["channel"] == at.session_state["channel"]]["time"].iloc[0])
    at.selectbox(key="query_pick").set_value(t).run()
    assert not at.exception
    assert at.session_state["_query"]["origin"] == services.origins.test_origins(res, "series_0")[-1]
    assert any("Selected query" in m.value and "UTC" in m.value for m in at.markdown)
    assert_no_pseudo_ids(at, "a selected query")
    show(at, "Check the identity")
    assert_no_pseudo_ids(at, "identity on a selected query")
    # downloads: the per-query predictions and the ranking name the user's series and times
    _, pred = services.evaluation.evaluation(res.key, res, services.fit.default_mc_passes())
    csv = csv_frame(services.evaluation.prediction_csv(pred, res))
    assert set(csv["series_id"]) == {"series_0"} and "origin" in csv.columns
    assert pd.to_datetime(csv["time"]).min() > pd.Timestamp("2024-03-22", tz="UTC")
    assert not PSEUDO.search(services.evaluation.prediction_csv(pred, res).decode())
    assert set(services.evaluation.ranking(res.key, res)[0]["series_id"]) == {"series_0"}


@pytest.mark.slow  # fits in the app
def test_interpolation_on_one_series_shows_only_the_users_ids_and_clock():
    at = start_single()
    at.radio(key="fit_task_few").set_value("interpolate")
    at.button(key="fit_button").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    res = services.fit.cached_fit(at.session_state["_fit_key"])
    assert res.fitted.split.mode == "window"
    for panel in PANELS:
        show(at, panel)
        assert_no_pseudo_ids(at, panel)
    show(at, "Predictive band")
    assert at.selectbox(key="series").options == ["series_0"]
    fig = figure(at, "band_chart")
    assert fig["layout"]["xaxis4"]["title"]["text"] == "time (UTC)"
    x, _, _ = band_edges(fig)
    hour = pd.Timedelta(hours=1)
    assert x.min() < FIRST + hour and x.max() > LAST - hour  # the whole series, not one window


# ----------------------------------------------------------------------------- the future band


@pytest.mark.integration
def test_future_band_extends_past_the_last_observation_and_widens():
    at = start_single()
    fig = figure(at, "future_chart")
    band = trace(fig, "Lévy ")
    assert "adaptive conformal" in band["name"] and band["fill"] == "toself"
    assert at.radio(key="band_kind").value == "Adaptive conformal"
    x, upper, lower = band_edges(fig)
    obs = pd.to_datetime(values(trace(fig, "observations the forecast draws on")["x"]))
    assert obs.max() == LAST and x.min() > LAST  # the band starts past the last observation
    res = services.fit.cached_fit(at.session_state["_fit_key"])
    reach = (x.max() - LAST) / pd.Timedelta(hours=1)
    assert reach == pytest.approx(res.fitted.task.horizon, rel=0.02)  # the fit's horizon by default
    assert upper[-1] - lower[-1] > upper[0] - lower[0]  # wider at the last step than at the first
    assert fig["layout"]["xaxis3"]["title"]["text"] == "time (UTC)"
    assert GUARANTEE in " ".join(c.value for c in at.caption)


@pytest.mark.slow  # a forecast fit in the app
def test_future_band_follows_the_horizon_and_keeps_the_chart_on_bad_input():
    at = start_single()
    key = f"future_horizon_{at.session_state['_fit_key']}"
    at.text_input(key=key).set_value("3d").run()
    assert not at.exception and not at.error
    x, upper, lower = band_edges(figure(at, "future_chart"))
    assert (x.max() - LAST) / pd.Timedelta(hours=1) == pytest.approx(72, rel=0.02)
    wide = upper[-1] - lower[-1]
    at.text_input(key=key).set_value("banana").run()
    assert not at.exception
    assert any("banana" in e.value for e in at.error)
    x2, upper2, lower2 = band_edges(figure(at, "future_chart"))
    assert x2.max() == x.max() and upper2[-1] - lower2[-1] == pytest.approx(wide)  # the last valid chart
    at.text_input(key=key).set_value("12").run()  # a bare number: refused for date-time data
    assert at.error
    at.radio(key="band_kind").set_value("Scaled Gaussian").run()
    assert "scaled Gaussian" in trace(figure(at, "future_chart"), "Lévy ")["name"]


# ----------------------------------------------------------------------------- the backtest


@pytest.mark.slow  # a forecast fit and its backtest
def test_backtest_panel_shows_both_methods_over_time_and_the_guarantee():
    at = show(start_single(), "Backtest")
    rolling = figure(at, "rolling_coverage_chart")
    names = [t.get("name") for t in rolling["data"]]
    assert {"Lévy — adaptive", "Lévy — split conformal"} <= set(names)
    assert "nominal level 90 %" in names
    assert any(s.get("y0") == 0.9 and s.get("y1") == 0.9 for s in rolling["layout"]["shapes"])
    assert pd.to_datetime(values(trace(rolling, "Lévy — adaptive")["x"])).min() > pd.Timestamp("2024-03-22")
    text = " ".join(m.value for m in at.markdown)
    assert GUARANTEE in text
    metrics = {m.label: m.value for m in at.metric}
    res = services.fit.cached_fit(at.session_state["_fit_key"])
    result, _ = services.evaluation.evaluation(res.key, res, services.fit.default_mc_passes())
    assert metrics["Adaptive 90 % band: coverage"] == f"{100 * result['levy']['adaptive_coverage']['0.9']:.1f} %"
    assert metrics["Long-run bound"] == tables.bound_text(result["levy"]["adaptive_bound"]["0.9"], short=True)
    one = figure(at, "backtest_chart")
    assert {"adaptive conformal 90 % band", "split conformal 90 % band", "what happened"} <= {
        t.get("name") for t in one["data"]}
    origins = at.select_slider(key="backtest_origin").options
    assert len(origins) == result["levy"]["test_origins"]
    at.select_slider(key="backtest_origin").set_value(at.select_slider(key="backtest_origin").value).run()
    assert not at.exception
    table = [d.value for d in at.dataframe if "long-run bound" in d.value.columns][0]
    assert list(table["band"][:4]) == ["50 %", "80 %", "90 %", "95 %"]
    # the report carries the forecast past the end and the coverage over time, offline
    html = report.build_report(services.report.report_inputs(
        res.key, res, services.fit.default_mc_passes(), series_id="series_0", channel="temperature_c", level=0.9,
        kind="adaptive", horizon=48.0))
    start = html.find("plotly.js v")  # the inlined library (its own text has "sprite@1" URLs)
    assert report.report_is_offline(html) and start > 0
    assert not PSEUDO.search(html[:start] + html[html.find("</script>", start):])
    assert "Forecast past the end of the data" in html and "Backtest: coverage over time" in html


@pytest.mark.integration
def test_many_series_fits_keep_the_band_panel_and_explain_the_backtest():
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert at.radio(key="band_kind").options == ["Scaled Gaussian", "Conformal"]
    assert figure(at, "band_chart")["layout"]["xaxis4"]["title"]["text"] == "time (hours)"
    show(at, "Backtest")
    assert any("rolling origins" in i.value for i in at.info)


@pytest.mark.slow  # a forecast fit of an uploaded random walk
def test_a_persistent_upload_is_told_where_its_band_falls_short():
    """One random walk uploaded: the fit summary at the top of every panel says, in plain
    words, what the band has done on such series and what to do (FittedModel.band_note)."""
    rng = np.random.default_rng(3)
    days = pd.date_range("2020-01-01", periods=300, freq="D")
    walk = pd.DataFrame({"time": days, "price": 100 + np.cumsum(rng.normal(0, 1, days.size))})
    at = start()
    at.file_uploader(key="upload").set_value(("price.csv", walk.to_csv(index=False).encode(), "text/csv"))
    at.run()
    assert not at.exception, at.exception
    res = session_model(at)
    assert res.on_origins and res.fitted.band_note() is not None
    assert res.fitted.band_note() in res.describe()
    page = " ".join(rendered_texts(at)).replace("\\", "")
    assert "carries its past forward like a random walk" in page and "check it on this series with a backtest" in page
