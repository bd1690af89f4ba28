"""The identity check: draws of the sampled Lévy operator against the closed-form ``σ̂``."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from levy_dashboard.charts.style import (
    CONTEXT,
    HELDOUT,
    LEVY,
    SKY,
    add_legend_line,
    apply_layout,
    rgba,
)


def add_draws_histogram(fig: go.Figure, draws: np.ndarray, *, bins: int = 60) -> go.Figure:
    """The draws as a probability-density histogram."""
    fig.add_trace(
        go.Histogram(
            x=draws,
            nbinsx=bins,
            histnorm="probability density",
            name=f"{len(draws):,} operator draws",
            marker={"color": rgba(SKY, 0.75), "line": {"width": 0.4, "color": "white"}},
            hovertemplate="draw %{x:.4g}: density %{y:.3g}<extra></extra>",
        )
    )
    return fig


def add_closed_form_density(
    fig: go.Figure, draws: np.ndarray, *, mean: float, sigma: float
) -> go.Figure:
    """The Gaussian ``N(m, σ̂²)`` over the draws' range (at least ``m ± 4σ̂``); none if
    ``σ̂ ≤ 0``. A reference curve of the two numbers given, drawn for comparison."""
    if not sigma > 0:
        return fig
    xs = np.linspace(min(draws.min(), mean - 4 * sigma), max(draws.max(), mean + 4 * sigma), 300)
    pdf = np.exp(-0.5 * ((xs - mean) / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi))
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=pdf,
            mode="lines",
            name="N(m, σ̂²) of the closed form",
            line={"color": LEVY, "width": 2},
            hoverinfo="skip",
        )
    )
    return fig


_MEAN = {"color": CONTEXT, "width": 2}
_SIGMA = {"color": LEVY, "width": 2, "dash": "dash"}
_RMSD = {"color": SKY, "width": 2, "dash": "dot"}
_OBSERVED = {"color": HELDOUT, "width": 2}


def add_spread_lines(fig: go.Figure, *, mean: float, sigma: float, rmsd: float) -> go.Figure:
    """Vertical lines at ``m``, ``m ± σ̂`` (dashed) and ``m ± RMSD`` (dotted), with legend
    entries."""
    fig.add_vline(x=mean, line=_MEAN)
    for sign in (-1, 1):
        fig.add_vline(x=mean + sign * sigma, line=_SIGMA)
        fig.add_vline(x=mean + sign * rmsd, line=_RMSD)
    add_legend_line(fig, "m, the closed-form mean", _MEAN)
    add_legend_line(fig, "m ± σ̂ (closed form)", _SIGMA)
    return add_legend_line(fig, "m ± RMSD of the draws", _RMSD)


def add_observed(fig: go.Figure, y_true: float | None) -> go.Figure:
    """A vertical line at the observed value (none when missing)."""
    if y_true is None or not np.isfinite(y_true):
        return fig
    fig.add_vline(x=y_true, line=_OBSERVED)
    return add_legend_line(fig, "observed y", _OBSERVED)


def draws_figure(
    draws: np.ndarray,
    *,
    mean: float,
    sigma: float,
    rmsd: float,
    y_true: float | None = None,
    bins: int = 60,
) -> go.Figure:
    """Histogram of draws of the sampled Lévy operator with the closed-form ``m ± σ̂`` marked
    and the Gaussian of the same spread for comparison."""
    d = np.asarray(draws, dtype=np.float64)
    fig = add_draws_histogram(go.Figure(), d, bins=bins)
    add_closed_form_density(fig, d, mean=mean, sigma=sigma)
    add_spread_lines(fig, mean=mean, sigma=sigma, rmsd=rmsd)
    add_observed(fig, y_true)
    apply_layout(
        fig, "The identity: draws of the sampled operator vs the closed-form σ̂", height=430
    )
    fig.update_xaxes(title_text="operator value at the query (data units)")
    fig.update_yaxes(title_text="density (1 / data unit)")
    return fig
