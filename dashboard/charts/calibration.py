"""Calibration and cost: reliability, channel coverage, PIT, risk–coverage, timing.

The risk–coverage plot takes a reference curve (a per-channel constant spread: knowing the
channel alone), drawn grey and dashed.

Lévy traces are blue and MC-Dropout ones vermillion, picked from the method a label starts
with (``style.method_colour``); references (ideal, uniform, oracle) are grey and dotted.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from levy_dashboard.charts.style import (
    CONTEXT,
    METHOD_COLOURS,
    NEUTRAL,
    apply_layout,
    method_colour,
    pct,
)


def reliability_figure(curves: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> go.Figure:
    """Nominal vs observed coverage. Keys ``"<method> — <kind>"`` with method "Lévy" or
    "MC-Dropout" and kind "scaled Gaussian" or "conformal" (dashed)."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, 1],
            y=[0, 1],
            mode="lines",
            name="ideal (observed = nominal)",
            line={"color": NEUTRAL, "dash": "dot", "width": 1.2},
            hoverinfo="skip",
        )
    )
    for label, (nominal, observed) in curves.items():
        conformal = "conformal" in label
        fig.add_trace(
            go.Scatter(
                x=nominal,
                y=observed,
                mode="lines+markers",
                name=label,
                line={
                    "color": method_colour(label, " — "),
                    "dash": "dash" if conformal else "solid",
                    "width": 2,
                },
                marker={"size": 5, "symbol": "square" if conformal else "circle"},
                hovertemplate="nominal %{x:.0%} → observed %{y:.1%}<extra>" + label + "</extra>",
            )
        )
    apply_layout(fig, "Reliability: nominal vs observed coverage of central bands", height=460)
    fig.update_xaxes(title_text="nominal coverage (%)", tickformat=".0%", range=[0, 1])
    fig.update_yaxes(
        title_text="observed coverage on the test split (%)", tickformat=".0%", range=[0, 1.02]
    )
    return fig


def channel_coverage_figure(table: pd.DataFrame, level: float, queries: str = "test queries") -> go.Figure:
    """Coverage of the conformal band per channel, one bar per method; ``table`` has columns
    channel, method ("Lévy" / "MC-Dropout"), coverage, n (``queries`` of that channel)."""
    fig = go.Figure()
    channels = sorted(table["channel"].unique(), key=str.lower, reverse=True)  # A at the top
    for method, rows in table.groupby("method", sort=False):
        rows = rows.set_index("channel").reindex(channels)
        fig.add_trace(
            go.Bar(
                y=channels,
                x=rows["coverage"],
                orientation="h",
                name=method,
                marker={"color": METHOD_COLOURS.get(method, NEUTRAL)},
                customdata=rows["n"],
                hovertemplate="%{y}: %{x:.1%} of %{customdata} " + queries + "<extra>"
                + method
                + "</extra>",
            )
        )
    fig.add_vline(x=level, line={"color": NEUTRAL, "dash": "dot", "width": 1.5})
    apply_layout(
        fig,
        f"Coverage of the {pct(level)} conformal band, channel by channel",
        height=max(320, 120 + 22 * len(channels)),
    )
    fig.update_layout(barmode="group", bargap=0.25)
    fig.update_xaxes(
        title_text=f"share of the channel's {queries} inside the band",
        tickformat=".0%",
        range=[0, 1.02],
    )
    fig.update_yaxes(title_text="channel", automargin=True)
    return fig


def pit_figure(pits: Mapping[str, np.ndarray], *, bins: int = 20) -> go.Figure:
    """Histograms of PIT values ``Φ((y − ŷ)/s)`` per method; flat at 1 when calibrated."""
    fig = go.Figure()
    edges = np.linspace(0, 1, bins + 1)
    centres = 0.5 * (edges[1:] + edges[:-1])
    for label, values in pits.items():
        hist, _ = np.histogram(np.asarray(values, dtype=np.float64), bins=edges, density=True)
        fig.add_trace(
            go.Bar(
                x=centres,
                y=hist,
                name=label,
                opacity=0.85,
                marker={"color": method_colour(label), "line": {"width": 0.5, "color": "white"}},
                hovertemplate="PIT %{x:.2f}: density %{y:.2f}<extra>" + label + "</extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[0, 1],
            y=[1, 1],
            mode="lines",
            name="calibrated (uniform)",
            line={"color": NEUTRAL, "dash": "dot"},
            hoverinfo="skip",
        )
    )
    apply_layout(fig, "PIT histogram (flat = calibrated)", height=420)
    fig.update_layout(barmode="group", bargap=0.08, bargroupgap=0.0)
    fig.update_xaxes(title_text="PIT value Φ((y − ŷ) / cσ) (probability, 0–1)", range=[0, 1])
    fig.update_yaxes(title_text="density (1 = uniform)")
    return fig


def risk_coverage_figure(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
    oracle: tuple[np.ndarray, np.ndarray] | None = None,
    reference: tuple[np.ndarray, np.ndarray] | None = None,
    reference_name: str = "per-channel constant (knowing the channel alone)",
) -> go.Figure:
    """Risk (MSE of the kept queries) when keeping only the most trusted share; ``reference``
    (a per-channel constant spread's curve) as a grey dashed line, ``oracle`` grey dotted."""
    fig = go.Figure()
    for label, (cov, risk) in curves.items():
        fig.add_trace(
            go.Scatter(
                x=cov,
                y=risk,
                mode="lines",
                name=label,
                line={"color": method_colour(label), "width": 2.2},
                hovertemplate="keep %{x:.0%} → MSE %{y:.4g}<extra>" + label + "</extra>",
            )
        )
    for name, curve, dash in ((reference_name, reference, "dash"), ("oracle (sorted by actual error)", oracle, "dot")):
        if curve is None:
            continue
        fig.add_trace(
            go.Scatter(
                x=curve[0],
                y=curve[1],
                mode="lines",
                name=name,
                line={"color": NEUTRAL, "dash": dash, "width": 2 if dash == "dash" else 1.5},
                hovertemplate="keep %{x:.0%} → MSE %{y:.4g}<extra>" + name.split(" (")[0] + "</extra>",
            )
        )
    apply_layout(fig, "Risk–coverage (lower = spread ranks errors better)", height=420)
    fig.update_xaxes(title_text="share of queries kept, most trusted first (%)", tickformat=".0%")
    fig.update_yaxes(title_text="MSE of kept queries (normalised units²)")
    return fig


def timing_figure(rows: pd.DataFrame) -> go.Figure:
    """Seconds each method took. ``rows``: ``method, stage, seconds`` (stage e.g. "training",
    "uncertainty on the test split")."""
    fig = go.Figure()
    for stage, pattern in zip(pd.unique(rows["stage"]), ("", "/"), strict=False):
        part = rows[rows["stage"] == stage]
        fig.add_trace(
            go.Bar(
                y=part["method"],
                x=part["seconds"],
                orientation="h",
                name=str(stage),
                marker={
                    "color": [method_colour(m) for m in part["method"]],
                    "pattern": {"shape": pattern},
                    "line": {"color": CONTEXT, "width": 0.6},
                },
                text=[f"{s:.3g} s" for s in part["seconds"]],
                textposition="outside",
                hovertemplate="%{y}: %{x:.3g} s<extra>" + str(stage) + "</extra>",
            )
        )
    apply_layout(
        fig, "What each method costs: training and uncertainty on the test split", height=330
    )
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="wall time (s, log scale)", type="log")
    fig.update_yaxes(title_text="method")
    return fig
