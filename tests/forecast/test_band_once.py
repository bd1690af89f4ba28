"""A backtest window derives each band once and every score and column reads it
(issue 54: the band is passed, not recomputed)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from levy_core.data import Observations
from levy_core.forecast import windows
from levy_core.pipeline.bands import method_bands, nixtla_frame
from levy_core.pipeline.predictive import Predictive


@pytest.fixture(scope="module")
def window(fit_obs: Observations) -> windows.Window:
    cut = windows.cutoffs(fit_obs, 1, 6.0, 6.0)[0]
    return windows.window(fit_obs, 0, cut, 6.0, 1)


def test_a_window_derives_each_band_once(fitted, fit_obs, window, monkeypatch) -> None:
    """Each method's band at each asked level is asked of its predictive once, and no other
    band is derived (the window's prediction frame carries no band columns of its own)."""
    calls: Counter = Counter()
    interval = Predictive.interval

    def counted(self, level, kind="conformal", *, original=False):  # noqa: ANN001, ANN202
        calls[(self.method.key, level, kind)] += 1
        return interval(self, level, kind, original=original)

    monkeypatch.setattr(Predictive, "interval", counted)
    scored = windows.score_window(fitted, window, fit_obs, [80, 95], "conformal")
    expected = {(m, lv, "conformal"): 1 for m in ("levy", "last_value") for lv in (0.8, 0.95)}
    assert dict(calls) == expected
    assert set(scored.scores.coverage) == {80, 95} and scored.baselines[0].method == "last value"


def test_the_windows_columns_and_scores_read_the_band(fitted, fit_obs, window) -> None:
    """The forecasts' ``Lévy-lo/hi`` columns are the Lévy band's bounds in the data's units,
    and the coverage is that of its normalised bounds against the truth."""
    scored = windows.score_window(fitted, window, fit_obs, [80, 95], "gaussian")
    data = windows.prepared.prepare(fitted, window.history)
    pred = windows.with_last_value(fitted, data, windows.predict.predict_after_end(
        fitted, data, window.queries[["series_id", "channel", "time"]], level=None))
    assert not [c for c in pred.columns if c.startswith(("lower", "upper", "mc_lower", "lv_lower"))]
    band = method_bands(pred, fitted, [80, 95], "gaussian", ("levy",))["levy"]
    assert band.levels == (0.8, 0.95) and band.kinds == ("gaussian", "gaussian")
    np.testing.assert_array_equal(scored.forecasts["Lévy-lo-95"].to_numpy(), band.lower_original[1])
    np.testing.assert_array_equal(scored.forecasts["Lévy-hi-80"].to_numpy(), band.upper_original[0])
    y = fitted.scaler.check_range(window.queries)
    inside = (y >= band.lower[0]) & (y <= band.upper[0])
    assert scored.scores.coverage[80] == pytest.approx(inside.mean(), abs=1e-12)
    frame = nixtla_frame(pred, pred["time"], band, None, fitted)
    assert list(frame.columns[-4:]) == ["Lévy-lo-95", "Lévy-lo-80", "Lévy-hi-80", "Lévy-hi-95"]
    with pytest.raises(ValueError, match="needs the levels"):
        nixtla_frame(pred, pred["time"], frame, None, fitted)
