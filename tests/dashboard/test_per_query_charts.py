"""The band-per-query figures on hand-made frames: coverage by quintile (three panels, error
bars, the level) and risk–coverage with the per-channel constant as the reference line."""

from __future__ import annotations

import numpy as np
import pandas as pd
from levy_dashboard import charts


def _bins(groupings: tuple[str, ...] = ("width", "evidence", "lead")) -> pd.DataFrame:
    rows = []
    for g in groupings:
        for m, shift in (("Lévy", 0.0), ("MC-Dropout", -0.05)):
            for b in range(1, 6):
                rows.append({"grouping": g, "method": m, "bin": b, "coverage": 0.8 + 0.03 * b + shift,
                             "se": 0.01 * b, "n": 40, "n_series": 8, "label": f"{b - 1}–{b}",
                             "unit": "days" if g == "lead" else "n_eff"})
    return pd.DataFrame(rows)


def test_coverage_by_quantile_three_panels_two_methods_with_error_bars_and_the_level():
    table = _bins()
    fig = charts.coverage_by_quantile_figure(table, 0.9)
    points = [t for t in fig.data if t.mode == "markers"]
    assert len(points) == 6
    assert [(t.name, t.xaxis) for t in points] == [("Lévy", "x"), ("MC-Dropout", "x"), ("Lévy", "x2"),
                                                   ("MC-Dropout", "x2"), ("Lévy", "x3"), ("MC-Dropout", "x3")]
    assert [t.showlegend for t in points] == [True, True, False, False, False, False]  # one legend entry each
    for t in points:
        assert t.error_y.visible and t.error_y.type == "data"
        rows = table[(table["method"] == t.name)].drop_duplicates("bin")
        np.testing.assert_allclose(t.error_y.array, 1.96 * rows["se"].to_numpy())
        assert t.marker.color == (charts.LEVY if t.name == "Lévy" else charts.MC)
    # the two methods side by side in a bin, not on top of each other
    assert np.all(np.asarray(points[0].x) < np.asarray(points[1].x))
    # the level: a grey dashed line in each panel, and a legend entry
    lines = [s for s in fig.layout.shapes if s.y0 == s.y1 == 0.9]
    assert len(lines) == 3 and all(s.line.dash == "dash" and s.line.color == charts.NEUTRAL for s in lines)
    assert any((t.name or "").startswith("nominal level (90 %)") for t in fig.data)
    lay = fig.layout
    assert lay.title.text.startswith("Does the 90 % conformal band hold")
    assert lay.xaxis.title.text.startswith("width quintile") and lay.xaxis2.title.text.startswith("n_eff")
    assert lay.xaxis3.title.text == "lead quintile (days)"
    assert list(lay.xaxis.tickvals) == [1, 2, 3, 4, 5] and lay.xaxis3.ticktext[1] == "1–<br>2"
    assert "inside the band" in lay.yaxis.title.text and lay.yaxis.tickformat == ".0%"
    assert [a.text for a in lay.annotations] == [charts.conditional.PANEL_TITLES[g] for g in ("width", "evidence",
                                                                                               "lead")]
    low, high = lay.yaxis.range
    assert low <= 0.8 + 0.03 - 0.05 - 1.96 * 0.01 and high >= 0.9


def test_coverage_by_quantile_leaves_out_a_grouping_it_has_no_rows_for():
    fig = charts.coverage_by_quantile_figure(_bins(("width", "evidence")), 0.8)
    assert {t.xaxis for t in fig.data if t.mode == "markers"} == {"x", "x2"}
    assert "xaxis3" not in fig.layout.to_plotly_json()
    assert "80 %" in fig.layout.title.text


def test_risk_coverage_reference_line_is_the_per_channel_constant_grey_dashed():
    cov = np.linspace(0, 1, 11)
    fig = charts.risk_coverage_figure({"Lévy": (cov, cov), "MC-Dropout": (cov, 2 * cov)}, (cov, cov / 2),
                                      (cov, 0.5 + 0 * cov))
    names = [t.name for t in fig.data]
    assert names == ["Lévy", "MC-Dropout", "per-channel constant (knowing the channel alone)",
                     "oracle (sorted by actual error)"]
    ref = fig.data[2]
    assert ref.line.dash == "dash" and ref.line.color == charts.NEUTRAL
    np.testing.assert_allclose(ref.y, 0.5)
    assert fig.data[3].line.dash == "dot"
    assert fig.data[0].line.color == charts.LEVY and fig.data[1].line.color == charts.MC
    assert fig.layout.xaxis.title.text and "normalised" in fig.layout.yaxis.title.text
    without = charts.risk_coverage_figure({"Lévy": (cov, cov)})
    assert [t.name for t in without.data] == ["Lévy"]
