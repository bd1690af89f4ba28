"""The backtest of a fit on rolling origins: one test origin's bands against what happened,
and each method's coverage over time.

The adaptive conformal band is Lévy blue and filled; the split-conformal band, for
comparison, a dashed outline. In the coverage chart the colour is the method (Lévy blue,
MC-Dropout vermillion) and the dash the band (solid adaptive, dashed split conformal); the
nominal level is the dotted grey line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from levy_dashboard.charts.style import (
    CONTEXT,
    HELDOUT,
    LEVY,
    NEUTRAL,
    TIME_AXIS,
    add_legend_line,
    apply_layout,
    band_polygon,
    method_colour,
    pct,
    rgba,
    time_hover,
    time_label,
    x_of,
)

_BANDS = (  # (lower, upper, name, fill, line)
    ("lower_90", "upper_90", "split conformal 90 % band", rgba(NEUTRAL, 0.06),
     {"color": NEUTRAL, "width": 1.4, "dash": "dash"}),
    ("lower_adaptive_90", "upper_adaptive_90", "adaptive conformal 90 % band", rgba(LEVY, 0.25),
     {"width": 0}),
)


def add_origin_bands(fig: go.Figure, queries: pd.DataFrame) -> go.Figure:
    """Both 90 % bands over the origin's query times (split conformal under the adaptive one)."""
    for lo, hi, name, fill, line in _BANDS:
        if lo not in queries.columns or queries.empty:
            continue
        x, y = band_polygon(x_of(queries), queries[lo].to_numpy(), queries[hi].to_numpy())
        fig.add_trace(go.Scatter(x=x, y=y, fill="toself", fillcolor=fill, line=line, name=name,
                                 hoverinfo="skip"))
    return fig


def add_forecast_and_truth(fig: go.Figure, queries: pd.DataFrame, context: pd.DataFrame) -> go.Figure:
    """The context it was forecast from (black), the Lévy mean and what happened (orange)."""
    fig.add_trace(go.Scatter(x=x_of(context), y=context["value"], mode="markers", name="observations before the origin",
                             marker={"color": CONTEXT, "size": 5},
                             hovertemplate=f"{time_hover(context)}<br>value %{{y:.4g}}<extra>before</extra>"))
    fig.add_trace(go.Scatter(x=x_of(queries), y=queries["mean"], mode="lines", name="Lévy forecast",
                             line={"color": LEVY, "width": 2},
                             hovertemplate=f"{time_hover(queries)}<br>mean %{{y:.4g}}<extra>Lévy</extra>"))
    fig.add_trace(go.Scatter(x=x_of(queries), y=queries["y_true"], mode="markers", name="what happened",
                             marker={"color": HELDOUT, "size": 8, "symbol": "diamond",
                                     "line": {"width": 0.5, "color": "white"}},
                             hovertemplate=f"{time_hover(queries)}<br>observed %{{y:.4g}}<extra></extra>"))
    return fig


def origin_band_figure(queries: pd.DataFrame, context: pd.DataFrame, *, series_id: str, channel: str,
                       origin: object, time_axis: str = TIME_AXIS, height: int = 470) -> go.Figure:
    """One test origin: the observations before it, the Lévy forecast after it with its
    adaptive and split-conformal 90 % bands, and the observations that came (``queries``:
    ``time``/``when``, ``y_true``, ``mean``, ``lower_adaptive_90``, ``upper_adaptive_90``,
    ``lower_90``, ``upper_90``; ``context``: ``time``/``when``, ``value``)."""
    fig = add_origin_bands(go.Figure(), queries)
    add_forecast_and_truth(fig, queries, context)
    x = pd.Timestamp(origin).isoformat() if isinstance(origin, pd.Timestamp) else origin
    fig.add_vline(x=x, line={"color": NEUTRAL, "width": 1.2, "dash": "dash"})
    fig.add_annotation(x=x, y=1.0, yref="paper", text="forecast origin", showarrow=False, xanchor="left",
                       yanchor="top", font={"color": NEUTRAL, "size": 11})
    apply_layout(fig, f"Backtest: the forecast of series {series_id}, channel {channel} made at "
                      f"{time_label(origin)}, against what happened", height=height)
    fig.update_layout(hovermode="closest")
    fig.update_xaxes(title_text=time_axis)
    fig.update_yaxes(title_text=f"{channel} (data units)")
    return fig


def rolling_coverage_figure(table: pd.DataFrame, *, level: float = 0.9, window: int = 10,
                            time_axis: str = TIME_AXIS, height: int = 430) -> go.Figure:
    """Coverage over time: ``table`` rows ``origin`` (or ``when``), ``method`` ("Lévy",
    "MC-Dropout"), ``band`` ("adaptive", "split conformal"), ``coverage`` (over the last
    ``window`` test origins), ``n_queries``; the nominal ``level`` dotted."""
    fig = go.Figure()
    for (method, band), part in table.groupby(["method", "band"], sort=False):
        dash = "dash" if band == "split conformal" else "solid"
        fig.add_trace(go.Scatter(
            x=x_of(part, "origin"), y=part["coverage"], mode="lines+markers", name=f"{method} — {band}",
            line={"color": method_colour(method), "width": 2, "dash": dash}, marker={"size": 4},
            customdata=part["n_queries"],
            hovertemplate=(f"{time_hover(part)}<br>coverage %{{y:.1%}} of %{{customdata}} queries"
                           f"<extra>{method} — {band}</extra>"),
        ))
    nominal = {"color": NEUTRAL, "width": 1.5, "dash": "dot"}
    fig.add_hline(y=level, line=nominal)
    add_legend_line(fig, f"nominal level {pct(level)}", nominal)
    apply_layout(fig, f"Coverage of the {pct(level)} bands over time (each point: the last {window} test origins)",
                 height=height)
    fig.update_xaxes(title_text=f"forecast origin, {time_axis}")
    low = float(table["coverage"].min()) if len(table) else 0.0
    bottom = min(0.5, np.floor(10 * (min(low, level) - 0.05)) / 10)  # room below the lowest line
    fig.update_yaxes(title_text=f"share inside the band (last {window} origins)", tickformat=".0%",
                     range=[max(0.0, bottom), 1.02])
    return fig
