"""Series ranked by trust (lower score = narrower calibrated band)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from levy_dashboard.charts.style import HELDOUT, LEVY, apply_layout


def ranking_figure(
    ranked: pd.DataFrame, *, highlight: str | None = None, max_bars: int = 60
) -> go.Figure:
    """Trust scores of the ranked series (lower = more trusted); ``highlight`` is outlined."""
    r = ranked.head(max_bars)
    line_w = [2.5 if str(s) == str(highlight) else 0.0 for s in r["series_id"]]
    fig = go.Figure(
        go.Bar(
            x=r["series_id"].astype(str),
            y=r["trust_score"],
            name="trust score c·σ̂",
            marker={"color": LEVY, "line": {"width": line_w, "color": HELDOUT}},
            customdata=np.column_stack([r["rank"], r["mean_n_eff"], r["mean_disagreement"]]),
            hovertemplate="series %{x} (rank %{customdata[0]})<br>trust score %{y:.4g}<br>"
            "mean n_eff "
            "%{customdata[1]:.3g} · mean tr Σ %{customdata[2]:.3g}<extra></extra>",
        )
    )
    more = f" (first {max_bars} of {len(ranked)})" if len(ranked) > max_bars else ""
    apply_layout(
        fig,
        f"Series ranked by trust{more}: lower bar = narrower calibrated band",
        height=380,
        legend_top=False,
    )
    fig.update_xaxes(title_text="series (most trusted on the left)", type="category")
    fig.update_yaxes(title_text="trust score c·σ̂ (normalised units)")
    return fig
