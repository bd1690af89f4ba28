"""The "Measure next" chart: a target channel's band today and as it would be with one
suggested measurement, the hypothetical observation marked (pure plotly, no ``st.*``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from levy_dashboard.charts.style import CONTEXT, HELDOUT, LEVY, NEUTRAL, apply_layout, pct, rgba

__all__ = ["MARK", "advice_figure"]

MARK = "#009E73"  # bluish green: the hypothetical measurement


def _outline(fig: go.Figure, band: pd.DataFrame, name: str) -> None:
    """Today's band as dashed edges (the band with the measurement is drawn filled over it)."""
    for edge, show in (("upper", True), ("lower", False)):
        fig.add_trace(go.Scatter(x=band["when"], y=band[edge], mode="lines", name=name, legendgroup=name,
                                 showlegend=show, line={"color": NEUTRAL, "dash": "dash", "width": 1.6},
                                 hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=band["when"], y=band["mean"], mode="lines", line={"color": NEUTRAL, "dash": "dot"},
                             name=f"{name}: mean", legendgroup=name, showlegend=False))


def _band(fig: go.Figure, band: pd.DataFrame, colour: str, alpha: float, name: str, dash: str) -> None:
    x = list(band["when"]) + list(band["when"])[::-1]
    y = list(band["upper"]) + list(band["lower"])[::-1]
    fig.add_trace(go.Scatter(x=x, y=y, fill="toself", fillcolor=rgba(colour, alpha), line={"width": 0},
                             hoverinfo="skip", name=name, legendgroup=name))
    fig.add_trace(go.Scatter(x=band["when"], y=band["mean"], mode="lines", line={"color": colour, "dash": dash},
                             name=f"{name}: mean", legendgroup=name, showlegend=False))


def advice_figure(points: pd.DataFrame, before: pd.DataFrame, after: pd.DataFrame, *, channel: str,
                  measure: dict, level: float, time_title: str) -> go.Figure:
    """``channel``'s observations (``points``: ``when, value, role``), its band today
    (``before``) and with the measurement (``after``; both ``when, mean, lower, upper``);
    ``measure``: ``channel, when, label`` and, when it is this channel, ``value, std`` (its
    predictive: a marker with a ±1 std bar), else a dotted line at its time."""
    fig = go.Figure()
    _band(fig, after, LEVY, 0.30, f"{pct(level)} band with {measure['label']}", "solid")
    _outline(fig, before, f"{pct(level)} band today")
    seen = points[points["role"] == "seen"]
    later = points[points["role"] == "later"]
    fig.add_trace(go.Scatter(x=seen["when"], y=seen["value"], mode="markers", name="observed",
                             marker={"color": CONTEXT, "size": 6}))
    if len(later):
        fig.add_trace(go.Scatter(x=later["when"], y=later["value"], mode="markers", name="really measured later",
                                 marker={"color": HELDOUT, "size": 8, "symbol": "diamond"}))
    if measure["channel"] == channel:
        fig.add_trace(go.Scatter(x=[measure["when"]], y=[measure["value"]], mode="markers",
                                 name=f"hypothetical {measure['label']}",
                                 error_y={"type": "data", "array": [measure["std"]], "color": MARK},
                                 marker={"color": MARK, "size": 16, "symbol": "star",
                                         "line": {"color": "white", "width": 1}}))
    else:
        fig.add_vline(x=measure["when"], line={"color": MARK, "dash": "dot", "width": 2})
        fig.add_trace(go.Scatter(x=[measure["when"]], y=[float(after["upper"].max())], mode="markers+text",
                                 text=[f"measure {measure['label']}"], textposition="top center",
                                 marker={"color": MARK, "size": 12, "symbol": "star"},
                                 name=f"hypothetical {measure['label']} (another channel)"))
    fig.update_xaxes(title=time_title)
    fig.update_yaxes(title=channel)
    return apply_layout(fig, f"{channel}: its band today and with {measure['label']}", height=440)
