"""The band per query: coverage by quintile of width, evidence and lead, and risk–coverage
against the per-channel constant (``levy_core.pipeline.band_per_query``, ``services.per_query``),
checked against ``levy_core.metrics`` computed directly; their captions; the report carries both.

On the model shipped with the bundled multichannel sample (no fit), Lévy and its MC-Dropout twin.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from levy_dashboard import services
from levy_dashboard.display import report
from levy_dashboard.fitting.fits import FitResult

from levy_core.data import from_frame
from levy_core.metrics import risk_coverage_curve
from levy_core.metrics.conditional import coverage_by_quantile, risk_coverage_ratio
from levy_core.pipeline.band_per_query import (
    SelectiveRisk,
    coverage_by_group,
    off_bins,
    selective_risk,
)

T = 3


@pytest.fixture(scope="module")
def res() -> FitResult:
    src = services.data.source_from_sample(services.data.DEFAULT_SAMPLE)
    obs = services.data.load_observations(src.digest, src.data, src.name)
    fitted = services.fit.shipped_fit(src, obs, services.data.data_key(obs))
    assert fitted is not None and fitted.has_twin, "the multichannel sample ships its model with a twin"
    return fitted


@pytest.fixture(scope="module")
def pred(res: FitResult) -> pd.DataFrame:
    return services.evaluation.evaluation(res.key, res, T)[1]


@pytest.mark.parametrize("level", [0.9, 0.8])
def test_coverage_by_group_is_metrics_coverage_by_quantile_per_method(res, pred, level):
    table = coverage_by_group(res.fitted, pred, level)
    y, series, channels = pred["y_norm"].to_numpy(), pred["series_id"].to_numpy(), pred["channel"].to_numpy()
    methods = [p for p in res.fitted.predictives(pred) if p.method.key != "last_value"]
    assert [p.name for p in methods] == ["Lévy", "MC-Dropout"]
    assert list(pd.unique(table["grouping"])) == ["width", "evidence", "lead"]
    assert len(table) == 3 * 2 * 5
    for p in methods:
        lo, hi = p.interval(level, "conformal")
        expected = {
            "width": coverage_by_quantile(y, lo, hi, hi - lo, series, level=level, within=channels),
            "evidence": coverage_by_quantile(y, lo, hi, pred["n_eff"], series, level=level),
            "lead": coverage_by_quantile(y, lo, hi, pred["gap_any"], series, level=level),
        }
        for grouping, bins in expected.items():
            got = table[(table["grouping"] == grouping) & (table["method"] == p.name)].reset_index(drop=True)
            pd.testing.assert_frame_equal(got[bins.table.columns], bins.table, check_dtype=False)
            assert got["n"].sum() == len(pred)


def test_selective_risk_ranks_each_method_by_its_own_band_and_the_constant_by_the_channel(res, pred):
    sr = selective_risk(res.fitted, pred, 0.9)
    y = pred["y_norm"].to_numpy()
    constant = pred["lv_std_norm"].to_numpy()
    # the reference knows the channel alone: one spread per channel
    assert (pred.groupby("channel")["lv_std_norm"].nunique() == 1).all()
    for p in (p for p in res.fitted.predictives(pred) if p.method.key != "last_value"):
        lo, hi = p.interval(0.9, "conformal")
        cov, risk = risk_coverage_curve(y, p.mean, (hi - lo) / 2)
        np.testing.assert_allclose(sr.curves[p.name][0], cov)
        np.testing.assert_allclose(sr.curves[p.name][1], risk)
        assert sr.ratios[p.name] == pytest.approx(risk_coverage_ratio(y, p.mean, (hi - lo) / 2, constant))
    levy = pred["mean_norm"].to_numpy()
    np.testing.assert_allclose(sr.constant[1], risk_coverage_curve(y, levy, constant)[1])
    # every curve ends at its method's MSE over all queries; the constant's at the Lévy model's
    assert sr.constant[1][-1] == pytest.approx(np.mean((y - levy) ** 2))
    assert sr.curves["MC-Dropout"][1][-1] == pytest.approx(np.mean((y - pred["mc_mean_norm"].to_numpy()) ** 2))
    assert sr.oracle[1][0] <= sr.curves["Lévy"][1][0]


def test_service_labels_the_bins_and_the_lead_in_the_datas_unit(res):
    bins = services.per_query.coverage_bins(res.key, res, T, 0.9)
    width = bins[(bins["grouping"] == "width") & (bins["method"] == "Lévy")]
    assert list(width["label"]) == ["1 narrowest", "2", "3", "4", "5 widest"]
    lead = bins[bins["grouping"] == "lead"]
    assert set(lead["unit"]) == {"hours"}  # the sample is read in hours
    assert all(lab and "nan" not in lab for lab in bins["label"])


def test_lead_unit_is_the_datas_own_or_a_readable_one_for_date_times():
    frame = pd.DataFrame({"series_id": ["a"] * 3, "time": [0.0, 1.0, 2.0], "channel": ["x"] * 3,
                          "value": [1.0, 2.0, 3.0]})
    assert services.per_query.lead_unit(from_frame(frame, time_unit="days"), 500.0) == ("days", 24.0)
    dated = frame.assign(time=pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-05"]))
    assert services.per_query.lead_unit(from_frame(dated), 100.0) == ("days", 24.0)
    assert services.per_query.lead_unit(from_frame(dated), 3.0) == ("hours", 1.0)
    assert services.per_query.bin_label("lead", 2, 24.0, 72.0, hours_per_unit=24.0) == "1–3"
    assert services.per_query.bin_label("evidence", 2, 3.14159, 3.14159) == "3.14"


def _table(coverage: list[float], se: list[float]) -> pd.DataFrame:
    n = len(coverage)
    cov, s = np.asarray(coverage), np.asarray(se)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(s > 0, (cov - 0.9) / np.where(s > 0, s, 1), np.sign(cov - 0.9) * np.inf)
    return pd.DataFrame({"grouping": ["lead"] * n, "method": ["Lévy"] * n, "bin": np.arange(1, n + 1),
                         "key_low": np.arange(n, dtype=float), "key_high": np.arange(n, dtype=float) + 1,
                         "n": 50, "n_series": 10, "coverage": cov, "se": s, "z": z,
                         "label": [f"{i}–{i + 1}" for i in range(n)], "unit": "days"})


def test_coverage_caption_names_the_bins_outside_both_windows():
    # bin 1: 0.05 off and 5 s.e. off (named); bin 2: 0.05 off but 1 s.e. (holds); bin 3: 0.02 off (holds)
    table = _table([0.85, 0.85, 0.92, 0.90, 1.0], [0.01, 0.05, 0.001, 0.02, 0.0])
    assert list(off_bins(table, 0.9)["bin"]) == [1, 5]
    text = services.per_query.coverage_caption(table, 0.9)
    assert ("Lévy by lead: quintile 1 (0–1 days): 85.0 % ± 1.0 % s.e., "
            "quintile 5 (4–5 days): 100.0 % alike in every series.") in text
    assert "too narrow" in text
    one = _table([0.7, 0.9], [0.0, 0.0]).assign(n_series=1)
    assert "quintile 1 (0–1 days): 70.0 % one series: no standard error." in services.per_query.coverage_caption(
        one, 0.9)
    assert "quintile 2 " not in text and "Every bin holds" not in text
    assert "Every bin holds" in services.per_query.coverage_caption(_table([0.9, 0.88, 0.925], [0.01] * 3), 0.9)


def test_risk_caption_says_when_sigma_does_not_beat_the_channel():
    cov = np.linspace(0, 1, 5)
    curves = {"Lévy": (cov, cov), "MC-Dropout": (cov, cov)}

    def caption(levy: float, mc: float) -> str:
        return services.per_query.risk_caption(SelectiveRisk(curves, (cov, cov), (cov, cov),
                                                             {"Lévy": levy, "MC-Dropout": mc}, 0.9))

    worse = caption(1.015, 0.97)
    assert "Lévy 1.01×; MC-Dropout 0.97×" in worse or "Lévy 1.02×; MC-Dropout 0.97×" in worse
    assert "σ̂ ranks errors no better than knowing the channel here." in worse
    assert "MC-Dropout's spread ranks its errors better" in worse
    better = caption(0.7, 0.9)
    assert "σ̂ ranks errors no better" not in better and "σ̂ beats knowing" not in better
    assert "MC-Dropout's spread ranks" not in better
    assert "beats knowing the channel by only 3 %" in caption(0.97, 0.99)
    assert "per-channel constant" in better and "own errors" in better


def test_report_carries_the_quintiles_and_the_reference_line(res):
    inputs = services.report.report_inputs(res.key, res, T)
    html = report.build_report(inputs)
    assert report.report_is_offline(html)
    assert "Coverage by quintile of width, evidence and lead" in html
    assert "Risk–coverage against the per-channel constant" in html
    assert "per-channel constant (knowing the channel alone)" in html  # the reference trace
    assert "Area under each curve ÷ the constant" in html
    titles = [title for title, _, _ in report.report_figures(inputs)]
    assert titles == ["Reliability", "Coverage by channel", "PIT", "Coverage by quintile of width, evidence and lead",
                      "Risk–coverage against the per-channel constant", "Cost"]
    assert html.count("Plotly.newPlot") == len(titles)


@pytest.mark.usefixtures("fresh_caches")
@pytest.mark.parametrize("attr", ["coverage_by_group", "selective_risk"])
def test_a_cache_hit_computes_nothing_and_another_level_does(res, monkeypatch, attr):
    from levy_core.pipeline import band_per_query  # what the fitted model's verb runs

    calls = []
    real = getattr(band_per_query, attr)
    monkeypatch.setattr(band_per_query, attr, lambda *a, **k: calls.append(a[2:]) or real(*a, **k))
    get = services.per_query.coverage_bins if attr == "coverage_by_group" else services.per_query.selective_risk
    first = get(res.key, res, T, 0.9)
    again = get(res.key, res, T, 0.9)
    assert len(calls) == 1
    if attr == "coverage_by_group":
        pd.testing.assert_frame_equal(first, again)
    else:
        assert first.ratios == again.ratios
    get(res.key, res, T, 0.8)
    assert len(calls) == 2


def test_scores_in_each_channels_own_units_in_the_panel_table_and_the_report(res):
    """The MC-Dropout panel's and the report's per-channel table is ``evaluate``'s
    ``per_channel_data_units``, channel by channel and method by method."""
    from levy_dashboard.display import tables

    result, _ = services.evaluation.evaluation(res.key, res, T)
    own = tables.data_units_table(result)
    per = result["levy"]["per_channel_data_units"]
    assert list(own["channel"]) == list(per) and list(own["test queries"]) == [per[c]["n"] for c in per]
    for c in per:
        row = own[own["channel"] == c].iloc[0]
        assert (row["Lévy MAE"], row["Lévy RMSE"], row["Lévy CRPS"]) == (per[c]["mae"], per[c]["rmse"], per[c]["crps"])
        if result.get("mc_dropout"):
            assert row["MC-Dropout CRPS"] == result["mc_dropout"]["per_channel_data_units"][c]["crps"]
    assert tables.data_units_table({"levy": {"mse": 1.0}}) is None  # a result saved before the scores
    html = report.build_report(services.report.report_inputs(res.key, res, T))
    assert "Per channel, in its own units" in html and f"{own['Lévy CRPS'].iloc[0]:.4g}" in html
