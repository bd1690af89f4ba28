"""``LevyForecaster.plot``: a plotly figure of one series' history, forecast and band, with
log evidence and disagreement beneath; its numbers are ``predict``'s."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from levy_core import LevyForecaster
from levy_core.data import DataError, Observations

pytest.importorskip("plotly")  # the dashboard extra: installed for the tests (make install)


@pytest.fixture(scope="module")
def forecaster(fit_obs: Observations) -> LevyForecaster:
    df = fit_obs.frame.rename(columns={"series_id": "unique_id", "time": "ds", "value": "y"})
    return LevyForecaster(epochs=2, seed=0, size="small").fit(df)


def test_the_figure_holds_history_band_forecast_and_signals(forecaster: LevyForecaster) -> None:
    obs = forecaster.observations
    sid = obs.series_ids[1]
    fig = forecaster.plot(sid, channel="smooth", h="6h", level=80, points=20)
    names = [t.name for t in fig.data]
    assert names == ["history", "Lévy-lo-80", "Lévy-hi-80", "Lévy", "log evidence", "disagreement"]
    traces = {t.name: t for t in fig.data}
    mine = obs.frame[(obs.frame["series_id"] == sid) & (obs.frame["channel"] == "smooth")]
    assert len(traces["history"].x) == len(mine) > 0
    np.testing.assert_allclose(np.sort(np.asarray(traces["history"].y, float)), np.sort(mine["value"].to_numpy()))
    for name in names[1:]:
        assert len(traces[name].x) == 20, name
    lower, upper = np.asarray(traces["Lévy-lo-80"].y, float), np.asarray(traces["Lévy-hi-80"].y, float)
    assert np.all(upper >= lower) and np.all(upper > lower).any()
    assert traces["Lévy-hi-80"].fill == "tonexty"  # the band: the area between the two bounds
    # the forecast starts after the history and is predict's, to the number
    assert min(traces["Lévy"].x) > max(traces["history"].x)
    fc = forecaster.predict(h="6h", level=[80], points=20)
    fc = fc[(fc["unique_id"] == sid) & (fc["channel"] == "smooth")]
    np.testing.assert_allclose(traces["Lévy"].y, fc["Lévy"], rtol=1e-6)
    np.testing.assert_allclose(upper, fc["Lévy-hi-80"], rtol=1e-6)
    np.testing.assert_allclose(traces["Lévy"].x, fc["ds"], rtol=1e-9)
    # evidence and disagreement sit in their own rows beneath, on the shared time axis
    assert traces["log evidence"].yaxis == "y2" and traces["disagreement"].yaxis == "y3"
    assert "hours" in fig.layout.xaxis3.title.text


def test_defaults_and_no_signals(forecaster: LevyForecaster) -> None:
    fig = forecaster.plot(h=3.0, signals=False, points=5)
    assert [t.name for t in fig.data] == ["history", "Lévy-lo-90", "Lévy-hi-90", "Lévy"]
    assert forecaster.observations.series_ids[0] in fig.layout.title.text


def test_bad_requests_are_named(forecaster: LevyForecaster) -> None:
    with pytest.raises(DataError, match="'nope' is not among"):
        forecaster.plot("nope", h="6h")
    with pytest.raises(DataError, match="channel 'HR'"):
        forecaster.plot(channel="HR", h="6h")
    with pytest.raises(ValueError, match="give h="):
        forecaster.plot()
    with pytest.raises(ValueError, match="percent"):
        forecaster.plot(h="6h", level=0.9)
    with pytest.raises(ValueError, match="fit the forecaster first"):
        LevyForecaster().plot(h="6h")


def test_date_time_data_plot_on_the_calendar() -> None:
    ds = pd.date_range("2024-01-01", periods=24 * 6, freq="h")
    y = 10 + np.sin(np.arange(len(ds)) * 2 * np.pi / 24) + np.random.default_rng(0).normal(0, 0.1, len(ds))
    f = LevyForecaster(epochs=1, seed=0, size="small").fit(pd.DataFrame({"unique_id": "sensor", "ds": ds, "y": y}))
    fig = f.plot(h="12h", points=6, signals=False)
    history, mean = fig.data[0], fig.data[3]
    assert pd.Timestamp(history.x[-1]) == ds[-1]
    assert pd.Timestamp(mean.x[0]) > ds[-1] and pd.Timestamp(mean.x[-1]) <= ds[-1] + pd.Timedelta("12h")
    assert fig.layout.xaxis.title.text == "date"
