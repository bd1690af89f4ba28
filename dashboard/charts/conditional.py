"""The band per query: coverage by quintile of width, evidence and lead, with error bars.

Three small panels side by side, one per grouping; Lévy (blue) and MC-Dropout (vermillion)
side by side in each bin, each point with its ± 1.96 standard-error bar (over series), the
nominal level as a grey dashed line.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from levy_dashboard.charts.style import NEUTRAL, add_legend_line, apply_layout, method_colour, pct
from plotly.subplots import make_subplots

__all__ = ["PANEL_TITLES", "coverage_by_quantile_figure"]

PANEL_TITLES: dict[str, str] = {
    "width": "by the band's width",
    "evidence": "by evidence (n_eff)",
    "lead": "by lead (time to the nearest observation)",
}
_X_TITLES: dict[str, str] = {
    "width": "width quintile (within each channel)",
    "evidence": "n_eff quintile",
    "lead": "lead quintile",
}
_OFFSET = {"Lévy": -0.12, "MC-Dropout": 0.12}  # the two methods side by side within a bin


def coverage_by_quantile_figure(table: pd.DataFrame, level: float,
                                groupings: Sequence[str] = ("width", "evidence", "lead")) -> go.Figure:
    """Coverage of the conformal band at ``level`` by quintile, one panel per grouping.

    ``table``: one row per (grouping, method, bin) with ``coverage``, ``se`` (standard error
    over series), ``n``, ``n_series``, ``label`` (the bin's tick text) and ``unit`` (of the lead's range), as
    ``services.per_query.coverage_bins`` gives it. Error bars are ± 1.96 s.e.
    """
    shown = [g for g in groupings if (table["grouping"] == g).any()]
    fig = make_subplots(rows=1, cols=max(len(shown), 1), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[PANEL_TITLES.get(g, g) for g in shown])
    lows, highs = [level], [level]
    for col, grouping in enumerate(shown, start=1):
        part = table[table["grouping"] == grouping]
        for method, rows in part.groupby("method", sort=False):
            rows = rows.sort_values("bin")
            half = 1.96 * rows["se"].fillna(0.0)
            lows.append(float((rows["coverage"] - half).min()))
            highs.append(float((rows["coverage"] + half).max()))
            fig.add_trace(
                go.Scatter(
                    x=rows["bin"] + _OFFSET.get(str(method), 0.0),
                    y=rows["coverage"],
                    mode="markers",
                    name=str(method),
                    legendgroup=str(method),
                    showlegend=col == 1,
                    marker={"color": method_colour(str(method)), "size": 9,
                            "symbol": "circle" if method == "Lévy" else "diamond"},
                    error_y={"type": "data", "array": half.to_numpy(), "visible": True, "thickness": 1.6,
                             "width": 4, "color": method_colour(str(method))},
                    customdata=rows[["label", "n", "n_series", "se"]].to_numpy(),
                    hovertemplate="%{customdata[0]}: %{y:.1%} ± %{customdata[3]:.1%} s.e. "
                    "(%{customdata[1]} queries, %{customdata[2]} series)<extra>" + str(method) + "</extra>",
                ),
                row=1,
                col=col,
            )
        ticks = part.drop_duplicates("bin").sort_values("bin")
        title = _X_TITLES.get(grouping, grouping)
        if grouping == "lead" and "unit" in part:
            title += f" ({part['unit'].iloc[0]})"
        fig.update_xaxes(tickvals=ticks["bin"].tolist(), range=[0.5, ticks["bin"].max() + 0.5], title_text=title,
                         ticktext=[str(t).replace("–", "–<br>").replace(" ", "<br>") for t in ticks["label"]],
                         tickangle=0, row=1, col=col)
        fig.add_hline(y=level, line={"color": NEUTRAL, "dash": "dash", "width": 1.5}, row=1, col=col)
    add_legend_line(fig, f"nominal level ({pct(level)})", {"color": NEUTRAL, "dash": "dash", "width": 1.5})
    apply_layout(fig, f"Does the {pct(level)} conformal band hold within groups? Coverage by quintile", height=470)
    fig.update_layout(legend={"y": 1.14}, margin={"t": 130, "b": 80})
    fig.update_annotations(font_size=13)  # the panels' titles
    low, high = max(0.0, min(lows) - 0.03), min(1.0, max(highs)) + 0.03
    fig.update_yaxes(tickformat=".0%", range=[low, high])
    fig.update_yaxes(title_text="share of the bin's test queries inside the band (%)", row=1, col=1)
    return fig
