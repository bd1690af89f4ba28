"""The watch replay: each observation against the band issued before it, flags marked, and the
running flag rate beside the nominal α (figure in, figure out)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from levy_dashboard.charts.style import CONTEXT, LEVY, MC, NEUTRAL, apply_layout, rgba
from plotly.subplots import make_subplots

__all__ = ["FLAG", "watch_figure"]

FLAG = MC  # vermillion crosses: flagged observations


def _x(frame: pd.DataFrame) -> object:
    return frame["when"] if "when" in frame else frame["time"]


def watch_figure(shown: pd.DataFrame, rate: pd.DataFrame, *, alpha: float, upto: object, channel: str,
                 time_title: str, value_title: str) -> go.Figure:
    """Two rows on one time axis.

    Top: ``shown`` (one channel's scored observations up to the replay time; columns
    ``time``/``when, value, mean, lower, upper, p_value, flagged``): the band at ``1 −
    alpha`` issued before each observation (shaded, drawn through the observation times),
    its mean, the observations, flagged ones as crosses. Steps are drawn ``vh``: the
    value an observation was scored against holds over the interval that ends at it. Bottom: ``rate`` (columns
    ``time``/``when, series_rate, all_rate``): the running flag rate of this series (every
    channel) and of every watched series, beside the nominal ``alpha``. ``upto``: the
    replay time (a vertical line; in ``when``'s clock).
    """
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.7, 0.3], vertical_spacing=0.08)
    level = f"{100 * (1 - alpha):.4g} %"
    x = _x(shown)
    fig.add_trace(go.Scatter(x=x, y=shown["upper"], mode="lines", line={"width": 0, "shape": "vh"},
                             showlegend=False, hoverinfo="skip", name="upper"), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=shown["lower"], mode="lines", line={"width": 0, "shape": "vh"}, fill="tonexty",
                             fillcolor=rgba(LEVY, 0.22), name=f"Lévy {level} band issued before each observation",
                             hoverinfo="skip"), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=shown["mean"], mode="lines", line={"color": LEVY, "width": 1.5, "shape": "vh"},
                             name="Lévy mean before each observation"), row=1, col=1)
    quiet, flagged = shown[~shown["flagged"]], shown[shown["flagged"]]
    hover = "p = %{customdata:.3g}<extra></extra>"
    fig.add_trace(go.Scatter(x=_x(quiet), y=quiet["value"], mode="markers", customdata=quiet["p_value"],
                             marker={"color": CONTEXT, "size": 6}, name="observations", hovertemplate=hover),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=_x(flagged), y=flagged["value"], mode="markers", customdata=flagged["p_value"],
                             marker={"color": FLAG, "size": 13, "symbol": "x", "line": {"width": 1}},
                             name=f"flagged (p ≤ {alpha:g})", hovertemplate=hover), row=1, col=1)
    rx = _x(rate)
    fig.add_trace(go.Scatter(x=rx, y=rate["series_rate"], mode="lines", line={"color": LEVY, "width": 2},
                             name="running flag rate, this series"), row=2, col=1)
    fig.add_trace(go.Scatter(x=rx, y=rate["all_rate"], mode="lines", line={"color": NEUTRAL, "width": 1.5},
                             name="running flag rate, every watched series"), row=2, col=1)
    fig.add_trace(go.Scatter(x=[rx.iloc[0], rx.iloc[-1]] if len(rate) else [], y=[alpha, alpha] if len(rate) else [],
                             mode="lines", line={"color": FLAG, "dash": "dash", "width": 1.5},
                             name=f"nominal α = {alpha:g}"), row=2, col=1)
    for row in (1, 2):
        fig.add_vline(x=upto, line={"color": NEUTRAL, "dash": "dot", "width": 1}, row=row, col=1)
    apply_layout(fig, f"Watch · {channel}: each observation against the band issued before it", height=560)
    fig.update_yaxes(title_text=value_title, row=1, col=1)
    fig.update_yaxes(title_text="flag rate", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text=time_title, row=2, col=1)
    return fig
