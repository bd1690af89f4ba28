"""The data and the fit: training curves, sampling gaps, channel counts, a series' timeline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from levy_dashboard.charts.style import (
    CONTEXT,
    LEVY,
    MC,
    NEUTRAL,
    TIME_AXIS,
    apply_layout,
    time_hover,
    x_of,
)

_MODELS = {"levy": ("Lévy", LEVY), "softmax": ("MC-Dropout twin", MC)}


def training_figure(history: Sequence[Mapping[str, float]]) -> go.Figure:
    """Loss per epoch: ``history`` rows ``model, epoch, train_loss, val_loss``."""
    h = pd.DataFrame(list(history))
    fig = go.Figure()
    for model, part in h.groupby("model", sort=False) if len(h) else []:
        label, colour = _MODELS.get(str(model), (str(model), NEUTRAL))
        fig.add_trace(
            go.Scatter(
                x=part["epoch"],
                y=part["val_loss"],
                mode="lines+markers",
                name=f"{label}: early-stopping MSE",
                line={"color": colour, "width": 2},
            )
        )
        fig.add_trace(
            go.Scatter(
                x=part["epoch"],
                y=part["train_loss"],
                mode="lines",
                name=f"{label}: training MSE",
                line={"color": colour, "width": 1.2, "dash": "dot"},
            )
        )
    apply_layout(fig, "Training curves", height=360)
    fig.update_xaxes(title_text="epoch", dtick=1 if len(h) and h["epoch"].max() <= 15 else None)
    fig.update_yaxes(title_text="MSE (normalised units², log)", type="log")
    return fig


def gap_histogram(gaps: np.ndarray, *, bins: int = 40, unit: str = "h") -> go.Figure:
    """Histogram of the gaps between consecutive observation times (log-spaced bins), given
    in ``unit`` (the data's own: "days"; the axis and hover say it)."""
    g = np.asarray(gaps, dtype=np.float64)
    g = g[np.isfinite(g) & (g > 0)]
    fig = go.Figure()
    if g.size:
        lo, hi = np.log10(g.min()), np.log10(g.max())
        edges = np.logspace(lo, hi if hi > lo else lo + 1, bins + 1)
        counts, _ = np.histogram(g, bins=edges)
        fig.add_trace(
            go.Bar(
                x=np.sqrt(edges[1:] * edges[:-1]),
                y=counts,
                width=np.diff(edges),
                name="gaps",
                marker={"color": CONTEXT, "opacity": 0.75},
                hovertemplate=f"gap ≈ %{{x:.3g}} {unit}: %{{y}} gaps<extra></extra>",
            )
        )
    apply_layout(
        fig,
        "Gaps between consecutive observations (irregular sampling)",
        height=340,
        legend_top=False,
    )
    fig.update_xaxes(title_text=f"gap ({unit}, log scale)", type="log")
    fig.update_yaxes(title_text="number of gaps")
    return fig


def channel_counts_figure(frame: pd.DataFrame, *, max_bars: int = 40) -> go.Figure:
    """Observations per channel."""
    counts = frame["channel"].value_counts().head(max_bars)
    fig = go.Figure(
        go.Bar(
            x=counts.index.astype(str),
            y=counts.to_numpy(),
            marker={"color": CONTEXT},
            name="observations",
            hovertemplate="%{x}: %{y} observations<extra></extra>",
        )
    )
    apply_layout(fig, "Observations per channel", height=340, legend_top=False)
    fig.update_xaxes(title_text="channel", type="category")
    fig.update_yaxes(title_text="observations (count)")
    return fig


def series_timeline(frame: pd.DataFrame, series_id: str, *, time_axis: str = TIME_AXIS) -> go.Figure:
    """When each channel of one series was observed (at ``when``, the user's clock, if given)."""
    part = frame[frame["series_id"].astype(str) == str(series_id)]
    fig = go.Figure(
        go.Scatter(
            x=x_of(part),
            y=part["channel"].astype(str),
            mode="markers",
            marker={"color": CONTEXT, "size": 5, "symbol": "line-ns-open"},
            customdata=part["value"],
            name="observation",
            hovertemplate="%{y} at " + time_hover(part) + ": %{customdata:.4g}<extra></extra>",
        )
    )
    apply_layout(
        fig, f"Observation times of series {series_id}, per channel", height=300, legend_top=False
    )
    fig.update_xaxes(title_text=time_axis)
    fig.update_yaxes(title_text="channel", type="category")
    return fig
