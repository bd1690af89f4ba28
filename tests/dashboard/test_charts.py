"""The pure plotly figure builders of ``levy_dashboard.charts`` on small hand-made frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from levy_dashboard import charts


def _grid(n: int = 30, mc: bool = True) -> pd.DataFrame:
    t = np.linspace(0, 10, n)
    mean = np.sin(t)
    sigma = 0.1 + 0.05 * t
    g = pd.DataFrame(
        {
            "time": t,
            "mean": mean,
            "lower": mean - 2 * sigma,
            "upper": mean + 2 * sigma,
            "sigma": sigma,
            "n_eff": np.exp(-t / 5) * 10,
            "log_evidence": 8 - t / 5,
            "disagreement": 0.1 + 0.01 * t,
            "evidence_term": -1 + t / 20,
            "disagreement_term": 0.5 * np.log(0.1 + 0.01 * t),
        }
    )
    if mc:
        g["mc_mean"], g["mc_lower"], g["mc_upper"] = mean + 0.1, mean - 3 * sigma, mean + 3 * sigma
    return g


def _points() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "time": [1.0, 2.0, 6.0, 7.0],
            "value": [0.8, 0.9, -0.2, 0.6],
            "role": ["context", "context", "held-out", "held-out"],
            "query_id": ["", "", "s|c|6.0", "s|c|7.0"],
        }
    )


def _by_name(fig: go.Figure, prefix: str):
    hits = [t for t in fig.data if (t.name or "").startswith(prefix)]
    assert hits, f"no trace {prefix!r} in {[t.name for t in fig.data]}"
    return hits[0]


def _titled(fig: go.Figure) -> None:
    assert fig.layout.title.text
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axis.title.text or axis.matches


def test_palette_is_okabe_ito_and_distinct():
    assert charts.LEVY == "#0072B2" and charts.MC == "#D55E00"
    assert charts.CONTEXT == "#000000" and charts.HELDOUT == "#E69F00"
    assert charts.EVIDENCE == "#009E73" and charts.DISAGREEMENT == "#CC79A7"
    assert len(set(charts.PALETTE.values())) == len(charts.PALETTE)
    assert charts.rgba("#0072B2", 0.5) == "rgba(0, 114, 178, 0.5)"


def test_band_figure_rows_share_time_axis():
    fig = charts.band_figure(
        _grid(),
        _points(),
        series_id="s",
        channel="c",
        level=0.9,
        cutoff=5.0,
        attended=pd.DataFrame({"time": [1.0, 2.0], "value": [0.8, 0.9], "weight": [0.7, 0.3]}),
        query={"time": 6.0, "value": -0.2},
    )
    band = _by_name(fig, "Lévy 90 % band")
    assert band.fill == "toself" and len(band.x) == 2 * 30
    assert np.allclose(band.y[:30], _grid()["upper"]) and np.allclose(
        band.y[30:], _grid()["lower"][::-1]
    )
    mc = _by_name(fig, "MC-Dropout 90 % band")
    assert mc.fill == "toself" and mc.line.color == charts.MC
    assert list(fig.data).index(mc) < list(fig.data).index(band)  # drawn under the Lévy band
    assert _by_name(fig, "Lévy mean").line.color == charts.LEVY
    held = _by_name(fig, "held-out observations")
    assert held.marker.color == charts.HELDOUT and list(held.customdata[:, 0]) == [
        "s|c|6.0",
        "s|c|7.0",
    ]
    assert _by_name(fig, "context observations").marker.color == charts.CONTEXT
    att = _by_name(fig, "drawn on by the query")
    assert att.marker.size[0] > att.marker.size[1]  # sized by attention weight
    assert _by_name(fig, "selected query").x == (6.0,)
    ev, dis = _by_name(fig, "n_eff (evidence)"), _by_name(fig, "tr Σ (disagreement)")
    assert (ev.xaxis, dis.xaxis) == ("x2", "x3") and ev.line.color == charts.EVIDENCE
    assert dis.line.color == charts.DISAGREEMENT and "log Λ" in ev.hovertemplate
    assert fig.layout.yaxis2.type == "log"
    for ax in (fig.layout.xaxis, fig.layout.xaxis2, fig.layout.xaxis3):
        assert ax.matches == "x4"
    assert fig.layout.xaxis4.title.text == "time (h)"
    for ax in (fig.layout.yaxis, fig.layout.yaxis2, fig.layout.yaxis3, fig.layout.yaxis4):
        assert ax.title.text
    assert "series s, channel c" in fig.layout.title.text
    assert any(a.text == "forecast cut-off" for a in fig.layout.annotations)
    # log σ̂ = the sum of the two shares
    e = _by_name(fig, "½ log φ(Λ)")
    d = _by_name(fig, "½ log tr Σ")
    total = _by_name(fig, "log σ̂")
    assert e.xaxis == d.xaxis == total.xaxis == "x4"
    # the sum is drawn from the two columns, not recomputed from ``sigma`` (which the grid
    # here deliberately does not match)
    g = _grid()
    assert np.allclose(total.y, g["evidence_term"] + g["disagreement_term"])
    assert not np.allclose(total.y, np.log(g["sigma"]))


def test_band_builders_take_and_return_the_figure():
    g, fig = _grid(), charts.band_subplots()
    for build in (
        lambda f: charts.add_mc_band(f, g, level=0.8),
        lambda f: charts.add_band(f, g, level=0.8, band_label="conformal"),
        lambda f: charts.add_mean(f, g),
        lambda f: charts.add_mc_mean(f, g),
        lambda f: charts.add_observations(f, _points()),
        lambda f: charts.add_evidence_panel(f, g, row=2),
        lambda f: charts.add_disagreement_panel(f, g, row=3),
        lambda f: charts.add_terms_panel(f, g, row=4),
    ):
        assert build(fig) is fig
    names = [t.name for t in fig.data]
    assert names[:4] == [
        "MC-Dropout 80 % band",
        "Lévy 80 % band (conformal)",
        "Lévy mean",
        "MC-Dropout mean",
    ]
    assert len(names) == 4 + 2 + 1 + 1 + 3
    # nothing to draw: the figure comes back unchanged
    n, shapes = len(fig.data), len(fig.layout.shapes)
    assert charts.add_attended(fig, None) is fig
    assert charts.add_attended(fig, pd.DataFrame(columns=["time", "value", "weight"])) is fig
    assert charts.add_selected_query(fig, None) is fig
    assert charts.add_selected_query(fig, {"time": 1.0, "value": float("nan")}) is fig
    assert charts.add_cutoff(fig, None) is fig and charts.add_query_line(fig, None) is fig
    assert (len(fig.data), len(fig.layout.shapes)) == (n, shapes)
    # lines through every row, added after the traces
    charts.add_cutoff(fig, 5.0)
    charts.add_query_line(fig, {"time": 6.0})
    assert len(fig.layout.shapes) == 2 * 4
    assert charts.has_mc(g) and not charts.has_mc(_grid(mc=False))


def test_package_reexports_the_public_names():
    import levy_dashboard.charts as package

    for name in package.__all__:
        assert getattr(charts, name) is not None, name
    for name in (
        "SKY",
        "NEUTRAL",
        "ERROR_SCALE",
        "METHOD_COLOURS",
        "TIME_AXIS",
        "apply_layout",
        "pct",
        "band_polygon",
    ):
        assert name in package.__all__
    assert charts.pct(0.9) == "90 %"
    assert charts.method_colour("MC-Dropout (T=20)") == charts.MC
    assert charts.method_colour("other") == charts.NEUTRAL


def test_band_figure_without_mc_and_with_infinite_conformal_edges():
    g = _grid(mc=False)
    g.loc[3, "upper"] = np.inf
    fig = charts.band_figure(
        g, _points(), series_id="s", channel="c", level=0.99, band_label="conformal", show_mc=True
    )
    assert not [t for t in fig.data if (t.name or "").startswith("MC-Dropout")]
    band = _by_name(fig, "Lévy 99 % band (conformal)")
    assert np.isnan(band.y[3])  # infinite edges are not drawn


def test_heldout_scatter_customdata_and_selection():
    pred = pd.DataFrame(
        {
            "series_id": ["a", "a", "b"],
            "channel": ["x", "y", "x"],
            "time": [1.0, 2.0, 3.0],
            "y_true": [1.0, 2.0, 3.0],
            "mean": [1.1, 1.5, 3.3],
            "pred_std": [0.2, 0.3, 0.4],
            "n_eff": [1.0, 0.1, 5.0],
            "log_evidence": [8.0, 6.0, 9.0],
            "disagreement_norm": [0.01, 0.02, 0.0],
            "abs_error_norm": [0.1, 0.5, 0.3],
        }
    )
    fig = charts.heldout_scatter(
        pred, current_series="a", selected={"series_id": "b", "channel": "x", "time": 3.0}
    )
    main = fig.data[0]
    assert main.marker.colorscale and list(main.marker.color) == [0.1, 0.5, 0.3]
    assert tuple(main.customdata[2, :3]) == ("b", "x", 3.0)
    # a clicked point is read back by field name, whatever the order of the columns
    from levy_dashboard.charts.evidence import CUSTOMDATA_FIELDS, customdata_field
    point = list(main.customdata[1])
    assert len(point) == len(CUSTOMDATA_FIELDS)
    assert {name: customdata_field(point, name) for name in ("series_id", "channel", "abs_error_norm")} == {
        "series_id": "a", "channel": "y", "abs_error_norm": 0.5}
    assert customdata_field(point[:3], "origin") is None  # a point with fewer fields
    assert min(main.y) > 0  # zero disagreement is clamped for the log axis
    assert len(_by_name(fig, "series a").x) == 2
    assert _by_name(fig, "selected query").x == (5.0,)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    _titled(fig)
    # highlights that match nothing draw nothing
    none = charts.heldout_scatter(
        pred, current_series="zz", selected={"series_id": "a", "channel": "x", "time": 9.0}
    )
    assert [t.name for t in none.data] == ["held-out queries (test series)"]


def test_reliability_pit_risk_two_methods():
    lv = np.linspace(0.05, 0.95, 19)
    rel = charts.reliability_figure(
        {
            "Lévy — scaled Gaussian": (lv, lv),
            "Lévy — conformal": (lv, lv),
            "MC-Dropout — scaled Gaussian": (lv, lv * 0.9),
            "MC-Dropout — conformal": (lv, lv),
        }
    )
    assert _by_name(rel, "Lévy — scaled Gaussian").line.color == charts.LEVY
    assert _by_name(rel, "MC-Dropout — conformal").line.dash == "dash"
    assert _by_name(rel, "MC-Dropout — conformal").line.color == charts.MC
    assert _by_name(rel, "ideal").x == (0, 1)
    _titled(rel)
    rng = np.random.default_rng(0)
    pit = charts.pit_figure(
        {"Lévy": rng.uniform(size=500), "MC-Dropout": rng.uniform(size=500)}, bins=10
    )
    bars = [t for t in pit.data if t.type == "bar"]
    assert [b.name for b in bars] == ["Lévy", "MC-Dropout"]
    assert np.sum(np.asarray(bars[0].y) * 0.1) == pytest.approx(1.0)  # a density
    _titled(pit)
    cov = np.linspace(0, 1, 11)
    risk = charts.risk_coverage_figure(
        {"Lévy": (cov, cov), "MC-Dropout": (cov, cov)}, oracle=(cov, cov / 2)
    )
    assert {t.name for t in risk.data} == {"Lévy", "MC-Dropout", "oracle (sorted by actual error)"}
    _titled(risk)


def test_timing_ranking_draws_training_data_figures():
    timing = charts.timing_figure(
        pd.DataFrame(
            {
                "method": ["Lévy", "Lévy", "MC-Dropout (T=20)", "MC-Dropout (T=20)"],
                "stage": ["training", "uncertainty on the test split"] * 2,
                "seconds": [1.0, 0.01, 2.0, 0.5],
            }
        )
    )
    assert [t.name for t in timing.data] == ["training", "uncertainty on the test split"]
    assert list(timing.data[0].marker.color) == [charts.LEVY, charts.MC]
    _titled(timing)
    ranked = pd.DataFrame(
        {
            "rank": [1, 2],
            "series_id": ["a", "b"],
            "trust_score": [0.1, 0.2],
            "mean_n_eff": [3.0, 1.0],
            "mean_disagreement": [0.1, 0.2],
        }
    )
    rf = charts.ranking_figure(ranked, highlight="b")
    assert list(rf.data[0].x) == ["a", "b"] and list(rf.data[0].marker.line.width) == [0.0, 2.5]
    _titled(rf)
    d = np.random.default_rng(1).normal(5.0, 0.1, 1000)
    df = charts.draws_figure(
        d, mean=5.0, sigma=0.1, rmsd=float(np.sqrt(np.mean((d - 5) ** 2))), y_true=5.2
    )
    assert df.data[0].type == "histogram" and len(df.data[0].x) == 1000
    assert {"m ± σ̂ (closed form)", "m ± RMSD of the draws", "observed y"} <= {
        t.name for t in df.data
    }
    assert len(df.layout.shapes) == 6  # m, m ± σ̂, m ± RMSD, y
    _titled(df)
    hist = [
        {"model": m, "epoch": e, "train_loss": 1 / e, "val_loss": 1.5 / e}
        for m in ("levy", "softmax")
        for e in (1, 2, 3)
    ]
    tf = charts.training_figure(hist)
    assert {t.line.color for t in tf.data} == {charts.LEVY, charts.MC}
    _titled(tf)
    gaps = charts.gap_histogram(np.array([0.01, 0.1, 0.1, 1.0, 0.0, np.nan]))
    assert sum(gaps.data[0].y) == 4  # zero and NaN gaps are not counted
    _titled(gaps)
    frame = pd.DataFrame(
        {
            "series_id": ["a"] * 3,
            "channel": ["x", "y", "x"],
            "time": [0.0, 1.0, 2.0],
            "value": [1.0, 2.0, 3.0],
        }
    )
    _titled(charts.channel_counts_figure(frame))
    tl = charts.series_timeline(frame, "a")
    assert list(tl.data[0].x) == [0.0, 1.0, 2.0]
    _titled(tl)


# ----------------------------------------------------------------------------- rolling origins


def _future(n: int = 12) -> pd.DataFrame:
    g = _grid(n)
    g["time"] = 100.0 + np.linspace(1, 24, n)
    g["when"] = pd.Timestamp("2024-04-04 22:00") + pd.to_timedelta(g["time"] - 100.0, unit="h")
    return g


def _history() -> pd.DataFrame:
    t = np.array([10.0, 50.0, 90.0, 100.0])
    return pd.DataFrame({"time": t, "value": [1.0, 2.0, 1.5, 1.2], "role": ["history", "context", "context", "context"],
                         "when": pd.Timestamp("2024-04-04 22:00") + pd.to_timedelta(t - 100.0, unit="h")})


def test_future_figure_draws_at_the_users_clock_past_the_last_observation():
    last = pd.Timestamp("2024-04-04 22:00")
    fig = charts.future_figure(_future(), _history(), series_id="s", channel="c", level=0.9,
                               band_label="adaptive conformal", last=last, horizon_label="24 h",
                               time_axis="time (UTC)")
    band = _by_name(fig, "Lévy 90 % band (adaptive conformal)")
    assert band.fill == "toself" and pd.Timestamp(min(band.x)) > last
    assert _by_name(fig, "observations the forecast draws on").marker.color == charts.CONTEXT
    assert _by_name(fig, "earlier observations")
    assert "%Y-%m-%d" in _by_name(fig, "Lévy mean").hovertemplate
    assert fig.layout.xaxis3.title.text == "time (UTC)" and "24 h" in fig.layout.title.text
    assert any(a.text.startswith("last observation") for a in fig.layout.annotations)
    assert pd.Timestamp(fig.layout.xaxis.range[0]) == pd.Timestamp("2024-04-02 20:00")  # opens on the context


def test_origin_band_and_rolling_coverage_figures():
    q = _future(8).assign(y_true=lambda d: d["mean"] + 0.1, lower_adaptive_90=lambda d: d["lower"],
                          upper_adaptive_90=lambda d: d["upper"], lower_90=lambda d: d["lower"] - 0.1,
                          upper_90=lambda d: d["upper"] + 0.1)
    fig = charts.origin_band_figure(q, _history(), series_id="s", channel="c",
                                    origin=pd.Timestamp("2024-04-04 22:00"), time_axis="time (UTC)")
    names = [t.name for t in fig.data]
    assert names[:2] == ["split conformal 90 % band", "adaptive conformal 90 % band"]  # adaptive on top
    assert _by_name(fig, "adaptive conformal").fillcolor.startswith("rgba(0, 114, 178")
    assert _by_name(fig, "what happened").marker.color == charts.HELDOUT
    _titled(fig)
    table = pd.DataFrame({
        "origin": [1.0, 2.0] * 3, "when": list(pd.to_datetime(["2024-04-01", "2024-04-02"])) * 3,
        "method": ["Lévy"] * 4 + ["MC-Dropout"] * 2,
        "band": ["adaptive"] * 2 + ["split conformal"] * 2 + ["adaptive"] * 2,
        "coverage": [0.9, 0.85, 0.8, 0.7, 0.95, 0.9], "n_queries": [10, 20] * 3})
    cov = charts.rolling_coverage_figure(table, level=0.9, window=10, time_axis="time (UTC)")
    assert _by_name(cov, "Lévy — adaptive").line.color == charts.LEVY
    assert _by_name(cov, "Lévy — split conformal").line.dash == "dash"
    assert _by_name(cov, "MC-Dropout — adaptive").line.color == charts.MC
    assert _by_name(cov, "nominal level 90 %") and cov.layout.shapes[0].y0 == 0.9
    _titled(cov)
