"""The predictive band with evidence and disagreement under it, on one time axis.

``band_figure`` makes the four rows and calls one builder per layer. Each builder takes the
figure, adds its traces (or shapes) and returns the figure, so a view or a report can draw
a subset on a figure of its own. Builders that get ``None`` (no attended observations, no
selected query, no cut-off) return the figure unchanged. ``grid`` arguments are the dense
query grid of one series and channel sorted by time (``band_figure`` sorts it once).
Charts compute no uncertainty quantity: every line is a column of the frames given.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from levy_dashboard.charts.style import (
    CONTEXT,
    DISAGREEMENT,
    EVIDENCE,
    HELDOUT,
    LEVY,
    MC,
    NEUTRAL,
    TIME_AXIS,
    apply_layout,
    band_polygon,
    finite,
    pct,
    rgba,
    time_hover,
    x_of,
)
from plotly.subplots import make_subplots

BAND_ROWS = 4
_MC_COLUMNS = {"mc_mean", "mc_lower", "mc_upper"}


def _times(grid: pd.DataFrame) -> np.ndarray:
    return x_of(grid)


def has_mc(grid: pd.DataFrame) -> bool:
    """Whether ``grid`` carries an MC-Dropout band to overlay."""
    return _MC_COLUMNS <= set(grid.columns) and bool(grid["mc_mean"].notna().any())


# ----------------------------------------------------------------------------- row 1: the band


def add_mc_band(fig: go.Figure, grid: pd.DataFrame, *, level: float, row: int = 1) -> go.Figure:
    """The MC-Dropout band, outlined; add it before the Lévy band so the blue stays on top."""
    x, y = band_polygon(_times(grid), grid["mc_lower"].to_numpy(), grid["mc_upper"].to_numpy())
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            fill="toself",
            fillcolor=rgba(MC, 0.10),
            line={"width": 1.3, "color": MC, "dash": "dot"},
            name=f"MC-Dropout {pct(level)} band",
            legendgroup="mc",
            hoverinfo="skip",
        ),
        row=row,
        col=1,
    )
    return fig


def add_band(
    fig: go.Figure,
    grid: pd.DataFrame,
    *,
    level: float,
    band_label: str = "scaled Gaussian",
    row: int = 1,
) -> go.Figure:
    """The Lévy band ``lower … upper`` as a filled polygon (infinite edges left out)."""
    x, y = band_polygon(_times(grid), grid["lower"].to_numpy(), grid["upper"].to_numpy())
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            fill="toself",
            fillcolor=rgba(LEVY, 0.25),
            line={"width": 0},
            name=f"Lévy {pct(level)} band ({band_label})",
            legendgroup="levy",
            hoverinfo="skip",
        ),
        row=row,
        col=1,
    )
    return fig


def add_mean(fig: go.Figure, grid: pd.DataFrame, *, row: int = 1) -> go.Figure:
    """The Lévy mean; hover shows the band edges and ``σ̂`` (the ``sigma`` column)."""
    custom = np.column_stack(
        [
            finite(grid["lower"].to_numpy()),
            finite(grid["upper"].to_numpy()),
            grid["sigma"].to_numpy(),
        ]
    )
    fig.add_trace(
        go.Scatter(
            x=_times(grid),
            y=grid["mean"],
            mode="lines",
            line={"color": LEVY, "width": 2.2},
            name="Lévy mean",
            legendgroup="levy",
            customdata=custom,
            hovertemplate=time_hover(grid) + "<br>mean %{y:.4g}<br>band [%{customdata[0]:.4g}, "
            "%{customdata[1]:.4g}]<br>σ̂ %{customdata[2]:.3g}<extra>Lévy</extra>",
        ),
        row=row,
        col=1,
    )
    return fig


def add_mc_mean(fig: go.Figure, grid: pd.DataFrame, *, row: int = 1) -> go.Figure:
    """The MC-Dropout mean, dashed."""
    fig.add_trace(
        go.Scatter(
            x=_times(grid),
            y=grid["mc_mean"],
            mode="lines",
            line={"color": MC, "width": 1.6, "dash": "dash"},
            name="MC-Dropout mean",
            legendgroup="mc",
            hovertemplate=time_hover(grid) + "<br>mean %{y:.4g}<extra>MC-Dropout</extra>",
        ),
        row=row,
        col=1,
    )
    return fig


_ROLES = (
    ("context", CONTEXT, "circle", 6, "context observations"),
    ("held-out", HELDOUT, "diamond", 8, "held-out observations"),
)


def add_observations(fig: go.Figure, points: pd.DataFrame, *, row: int = 1) -> go.Figure:
    """Context (black circles) and held-out (orange diamonds) observations: ``time, value,
    role`` and optionally ``query_id`` (→ ``customdata``, so a click selects that query)."""
    for role, colour, symbol, size, name in _ROLES:
        p = points[points["role"] == role]
        fig.add_trace(
            go.Scatter(
                x=x_of(p),
                y=p["value"],
                mode="markers",
                name=name,
                customdata=p[["query_id"]].to_numpy() if "query_id" in p.columns else None,
                marker={
                    "color": colour,
                    "size": size,
                    "symbol": symbol,
                    "line": {"width": 0.5, "color": "white"},
                },
                hovertemplate=f"{name}<br>{time_hover(p)}<br>value %{{y:.4g}}<extra></extra>",
            ),
            row=row,
            col=1,
        )
    return fig


def add_attended(fig: go.Figure, attended: pd.DataFrame | None, *, row: int = 1) -> go.Figure:
    """Rings around the observations the selected query drew on (``time, value, weight``),
    area growing with the attention weight."""
    if attended is None or not len(attended):
        return fig
    w = attended["weight"].to_numpy(np.float64)
    fig.add_trace(
        go.Scatter(
            x=x_of(attended),
            y=attended["value"],
            mode="markers",
            name="drawn on by the query (size = attention weight)",
            marker={
                "size": 7 + 26 * np.sqrt(w / max(float(w.max()), 1e-12)),
                "color": rgba(LEVY, 0.0),
                "symbol": "circle",
                "line": {"width": 2, "color": LEVY},
            },
            customdata=w,
            hovertemplate=time_hover(attended) + "<br>value %{y:.4g}<br>"
            "weight %{customdata:.3f}<extra>attended</extra>",
        ),
        row=row,
        col=1,
    )
    return fig


def add_selected_query(
    fig: go.Figure, query: Mapping[str, float] | None, *, row: int = 1
) -> go.Figure:
    """A star at the selected query (``time`` and its observed ``value``, else its ``mean``)."""
    if query is None:
        return fig
    qy = query.get("value", query.get("mean"))
    if qy is None or not np.isfinite(qy):
        return fig
    fig.add_trace(
        go.Scatter(
            x=[query.get("when", query["time"])],
            y=[qy],
            mode="markers",
            name="selected query",
            marker={
                "symbol": "star",
                "size": 17,
                "color": HELDOUT,
                "line": {"width": 1.5, "color": CONTEXT},
            },
            hovertemplate="selected query<br>y %{y:.4g}<extra></extra>",
        ),
        row=row,
        col=1,
    )
    return fig


# ----------------------------------------------------------------------------- rows 2–4


def _add_line(
    fig: go.Figure,
    grid: pd.DataFrame,
    y: object,
    *,
    colour: str,
    name: str,
    label: str,
    group: str,
    row: int,
    dash: str | None = None,
) -> go.Figure:
    line: dict[str, object] = {"color": colour, "width": 1.5 if dash else 2}
    if dash:
        line["dash"] = dash
    fig.add_trace(
        go.Scatter(
            x=_times(grid),
            y=y,
            mode="lines",
            line=line,
            name=name,
            hovertemplate=f"{time_hover(grid)}<br>{label}<extra>{group}</extra>",
        ),
        row=row,
        col=1,
    )
    return fig


def add_evidence_panel(fig: go.Figure, grid: pd.DataFrame, *, row: int = 2) -> go.Figure:
    """``n_eff`` (floored at 1e-12 for the log axis); hover shows ``log Λ``."""
    fig.add_trace(
        go.Scatter(
            x=_times(grid),
            y=np.maximum(grid["n_eff"].to_numpy(np.float64), 1e-12),
            mode="lines",
            line={"color": EVIDENCE, "width": 2},
            name="n_eff (evidence)",
            customdata=grid["log_evidence"].to_numpy(np.float64),
            hovertemplate=time_hover(grid) + "<br>n_eff %{y:.3g}<br>log Λ %{customdata:.2f}"
            "<extra>evidence</extra>",
        ),
        row=row,
        col=1,
    )
    return fig


def add_disagreement_panel(fig: go.Figure, grid: pd.DataFrame, *, row: int = 3) -> go.Figure:
    """``tr Σ``, the disagreement among the attended values."""
    return _add_line(
        fig,
        grid,
        grid["disagreement"],
        colour=DISAGREEMENT,
        name="tr Σ (disagreement)",
        label="tr Σ %{y:.3g}",
        group="disagreement",
        row=row,
    )


def add_terms_panel(fig: go.Figure, grid: pd.DataFrame, *, row: int = 4) -> go.Figure:
    """The two shares of ``log σ̂ = ½ log φ(Λ) + ½ log tr Σ`` (``evidence_term``,
    ``disagreement_term``) and their sum, dotted."""
    ev, dis = grid["evidence_term"], grid["disagreement_term"]
    _add_line(
        fig,
        grid,
        ev,
        colour=EVIDENCE,
        name="½ log φ(Λ): evidence share of log σ̂",
        label="½ log φ(Λ) %{y:.2f}",
        group="evidence",
        row=row,
    )
    _add_line(
        fig,
        grid,
        dis,
        colour=DISAGREEMENT,
        name="½ log tr Σ: disagreement share of log σ̂",
        label="½ log tr Σ %{y:.2f}",
        group="disagreement",
        row=row,
    )
    return _add_line(
        fig,
        grid,
        ev.to_numpy(np.float64) + dis.to_numpy(np.float64),
        colour=LEVY,
        name="log σ̂ (their sum)",
        label="log σ̂ %{y:.2f}",
        group="Lévy",
        row=row,
        dash="dot",
    )


# ----------------------------------------------------------------------------- time markers


def add_cutoff(fig: go.Figure, cutoff: object | None, *, label_row: int = 1) -> go.Figure:
    """A dashed line at the forecast cut-off through every row, labelled in ``label_row``
    (``cutoff``: a number on the axis' clock, or a date-time for a date-time axis).

    Add it after the traces: ``row="all"`` only reaches rows that hold one.
    """
    if cutoff is None:
        return fig
    x = float(cutoff) if isinstance(cutoff, (int, float, np.number)) else cutoff
    fig.add_vline(
        x=x, line={"color": NEUTRAL, "width": 1.2, "dash": "dash"}, row="all", col=1
    )
    fig.add_annotation(
        x=x,
        y=1.0,
        yref="y domain",
        text="forecast cut-off",
        showarrow=False,
        xanchor="left",
        yanchor="top",
        font={"color": NEUTRAL, "size": 11},
        row=label_row,
        col=1,
    )
    return fig


def add_query_line(fig: go.Figure, query: Mapping[str, float] | None) -> go.Figure:
    """A dotted line at the selected query's time through every row (after the traces)."""
    if query is None:
        return fig
    fig.add_vline(
        x=query.get("when", float(query["time"])),
        line={"color": HELDOUT, "width": 1.2, "dash": "dot"},
        row="all",
        col=1,
    )
    return fig


def style_band_figure(fig: go.Figure, *, title: str, channel: str, height: int = 900,
                      time_axis: str = TIME_AXIS) -> go.Figure:
    """Shared layout, the legend on the right and the four rows' axis titles."""
    apply_layout(fig, title, height=height, legend_top=False)
    fig.update_layout(
        legend={
            "orientation": "v",
            "x": 1.01,
            "xanchor": "left",
            "y": 1.0,
            "yanchor": "top",
            "font": {"size": 11},
            "tracegroupgap": 2,
        },
        margin={"t": 60, "r": 10},
        hovermode="closest",
    )
    fig.update_yaxes(title_text=f"{channel} (data units)", row=1, col=1)
    fig.update_yaxes(title_text="n_eff (obs., log)", type="log", row=2, col=1)
    fig.update_yaxes(title_text="tr Σ (units²)", row=3, col=1)
    fig.update_yaxes(title_text="log-σ̂ terms (ln units)", row=4, col=1)
    fig.update_xaxes(title_text=time_axis, row=BAND_ROWS, col=1)
    return fig


def band_subplots() -> go.Figure:
    """Four rows on one shared time axis: the band (tall), ``n_eff``, ``tr Σ``, the terms."""
    return make_subplots(
        rows=BAND_ROWS,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.035,
        row_heights=[0.46, 0.18, 0.18, 0.18],
    )


def add_bands_and_means(fig: go.Figure, grid: pd.DataFrame, *, level: float, band_label: str,
                        show_mc: bool, row: int = 1) -> go.Figure:
    """The Lévy band and mean and, when asked and present, MC-Dropout's under them
    (outlined, so the blue band stays blue)."""
    mc = show_mc and has_mc(grid)
    if mc:
        add_mc_band(fig, grid, level=level, row=row)
    add_band(fig, grid, level=level, band_label=band_label, row=row)
    add_mean(fig, grid, row=row)
    if mc:
        add_mc_mean(fig, grid, row=row)
    return fig


def band_figure(
    grid: pd.DataFrame,
    points: pd.DataFrame,
    *,
    series_id: str,
    channel: str,
    level: float,
    band_label: str = "scaled Gaussian",
    show_mc: bool = True,
    cutoff: float | None = None,
    attended: pd.DataFrame | None = None,
    query: Mapping[str, float] | None = None,
    height: int = 900,
    time_axis: str = TIME_AXIS,
) -> go.Figure:
    """The predictive band with evidence and disagreement under it on one time axis.

    Parameters
    ----------
    grid : DataFrame
        Dense query grid of one series and channel: ``time, mean, lower, upper, sigma,
        n_eff, log_evidence, disagreement, evidence_term, disagreement_term`` and, for the
        MC-Dropout overlay, ``mc_mean, mc_lower, mc_upper`` (original units).
    points : DataFrame
        Observations of that series and channel: ``time, value, role`` with role
        ``"context"`` or ``"held-out"``; optional ``query_id`` (held-out rows) goes to
        ``customdata`` so a click on a held-out point selects that query.
    attended : DataFrame, optional
        Observations of this channel the selected query drew on: ``time, value, weight``.
    query : mapping, optional
        The selected query: ``time`` and optionally ``when``, ``value`` (observed) and ``mean``.
    time_axis : str
        The time axis title. Frames with a ``when`` column (the user's clock: date-times or
        numbers in the data's unit) are drawn at ``when``, others at ``time`` (hours).

    Rows: 1 band (Lévy, optional MC-Dropout), 2 ``n_eff`` (log axis; hover shows
    ``log Λ``), 3 ``tr Σ``, 4 the two terms of ``log σ̂ = ½ log tr Σ + ½ log φ(Λ)`` and
    their sum (``evidence_term + disagreement_term``; ``sigma`` is only shown on hover).
    """
    g = grid.sort_values("time")
    fig = add_bands_and_means(band_subplots(), g, level=level, band_label=band_label, show_mc=show_mc)
    add_observations(fig, points, row=1)
    add_attended(fig, attended, row=1)
    add_selected_query(fig, query, row=1)
    add_evidence_panel(fig, g, row=2)
    add_disagreement_panel(fig, g, row=3)
    add_terms_panel(fig, g, row=4)
    add_cutoff(fig, cutoff, label_row=1)
    add_query_line(fig, query)
    title = (
        f"Predictive band for series {series_id}, channel {channel} "
        f"({pct(level)} {band_label}), with evidence and disagreement"
    )
    return style_band_figure(fig, title=title, channel=channel, height=height, time_axis=time_axis)
