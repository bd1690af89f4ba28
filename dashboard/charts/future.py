"""The forecast past the end of the data (fits on rolling origins), with why it widens.

Row 1: the series' observations (those the forecast draws on in black, earlier ones grey),
the Lévy mean past the last observation and its band (optionally MC-Dropout's); rows 2–3 on
the same time axis: ``n_eff`` (the evidence thins out as the forecast moves away from the
data) and the two terms of ``log σ̂``. Frames carry ``when`` (the user's clock), drawn on the
time axis; the layer builders are those of ``charts.band``.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from levy_dashboard.charts.band import (
    add_bands_and_means,
    add_evidence_panel,
    add_terms_panel,
)
from levy_dashboard.charts.style import (
    CONTEXT,
    NEUTRAL,
    TIME_AXIS,
    apply_layout,
    pct,
    rgba,
    time_hover,
    x_of,
)
from plotly.subplots import make_subplots

FUTURE_ROWS = 3
_ROLES = (
    ("history", rgba(NEUTRAL, 0.55), 4, "earlier observations"),
    ("context", CONTEXT, 6, "observations the forecast draws on"),
)


def add_history(fig: go.Figure, points: pd.DataFrame, *, row: int = 1) -> go.Figure:
    """The series' observations (``time``/``when``, ``value``, ``role`` "context" or "history")."""
    for role, colour, size, name in _ROLES:
        p = points[points["role"] == role]
        if p.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=x_of(p),
                y=p["value"],
                mode="markers",
                name=name,
                marker={"color": colour, "size": size, "line": {"width": 0.4, "color": "white"}},
                hovertemplate=f"{name}<br>{time_hover(p)}<br>value %{{y:.4g}}<extra></extra>",
            ),
            row=row,
            col=1,
        )
    return fig


def add_last_observation(fig: go.Figure, last: object, *, label_row: int = 1) -> go.Figure:
    """A dashed line at the series' last observation (where the forecast starts), labelled."""
    if last is None:
        return fig
    x = pd.Timestamp(last).isoformat() if isinstance(last, pd.Timestamp) else last
    fig.add_vline(x=x, line={"color": NEUTRAL, "width": 1.2, "dash": "dash"}, row="all", col=1)
    fig.add_annotation(x=x, y=1.0, yref="y domain", text="last observation → forecast", showarrow=False,
                       xanchor="left", yanchor="top", font={"color": NEUTRAL, "size": 11}, row=label_row, col=1)
    return fig


def future_subplots() -> go.Figure:
    """Three rows on one shared time axis: the band (tall), ``n_eff``, the ``log σ̂`` terms."""
    return make_subplots(rows=FUTURE_ROWS, cols=1, shared_xaxes=True, vertical_spacing=0.05,
                         row_heights=[0.58, 0.21, 0.21])


def _style(fig: go.Figure, *, title: str, channel: str, time_axis: str, height: int) -> go.Figure:
    apply_layout(fig, title, height=height, legend_top=False)
    fig.update_layout(
        legend={"orientation": "v", "x": 1.01, "xanchor": "left", "y": 1.0, "yanchor": "top",
                "font": {"size": 11}, "tracegroupgap": 2},
        margin={"t": 60, "r": 10},
        hovermode="closest",
    )
    fig.update_yaxes(title_text=f"{channel} (data units)", row=1, col=1)
    fig.update_yaxes(title_text="n_eff (obs., log)", type="log", row=2, col=1)
    fig.update_yaxes(title_text="log-σ̂ terms (ln units)", row=3, col=1)
    fig.update_xaxes(title_text=time_axis, row=FUTURE_ROWS, col=1)
    return fig


def future_figure(
    grid: pd.DataFrame,
    points: pd.DataFrame,
    *,
    series_id: str,
    channel: str,
    level: float,
    band_label: str = "adaptive conformal",
    show_mc: bool = True,
    last: object = None,
    horizon_label: str = "",
    time_axis: str = TIME_AXIS,
    height: int = 760,
) -> go.Figure:
    """The forecast past the end of one series and channel, with why its band widens.

    Parameters
    ----------
    grid : DataFrame
        ``pipeline.predict_future`` rows of the series and channel with ``lower, upper`` at
        the level (and ``mc_mean, mc_lower, mc_upper``), ``time`` (hours) and optionally
        ``when`` (the user's clock, drawn on the axis).
    points : DataFrame
        The series' observations of the channel: ``time``/``when``, ``value``, ``role``
        ("context": what the forecast draws on; "history": earlier).
    last : date-time or number
        The series' last observation, on the axis's clock (a dashed line).

    The view opens on the context and the forecast; a double click shows the whole history.
    """
    g = grid.sort_values("time")
    fig = add_bands_and_means(future_subplots(), g, level=level, band_label=band_label, show_mc=show_mc)
    add_history(fig, points, row=1)
    add_evidence_panel(fig, g, row=2)
    add_terms_panel(fig, g, row=3)
    add_last_observation(fig, last, label_row=1)
    ahead = f" up to {horizon_label}" if horizon_label else ""
    title = (f"Forecast of series {series_id}, channel {channel}{ahead} past the last observation "
             f"({pct(level)} {band_label} band)")
    _style(fig, title=title, channel=channel, time_axis=time_axis, height=height)
    ctx = points[points["role"] == "context"]
    if len(ctx) and len(g):  # open on what the forecast draws on and the forecast itself
        fig.update_xaxes(range=[x_of(ctx).min(), x_of(g).max()])
    return fig
