"""Held-out queries on the evidence × disagreement plane, coloured by |error|.

``heldout_scatter`` draws every query and then, through ``add_highlight``, rings the current
series and stars the selected query (same ``x, y, customdata`` as the main trace, so a click
on a highlight selects the same query).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from levy_dashboard.charts.style import CONTEXT, ERROR_SCALE, HELDOUT, apply_layout, rgba

CUSTOMDATA_FIELDS: tuple[str, ...] = ("series_id", "channel", "time", "y_true", "mean", "pred_std", "log_evidence",
                                      "abs_error_norm", "time_text", "origin")
"""The columns of a scatter point's ``customdata``, in order: read them by name
(:func:`customdata_field`), never by position."""
_AT = {name: i for i, name in enumerate(CUSTOMDATA_FIELDS)}
_FROM_FRAME = CUSTOMDATA_FIELDS[2:8]  # the prediction frame's own columns

HOVER = (
    f"series %{{customdata[{_AT['series_id']}]}}, %{{customdata[{_AT['channel']}]}}<br>"
    f"%{{customdata[{_AT['time_text']}]}}<br>"
    f"y %{{customdata[{_AT['y_true']}]:.4g}} · ŷ %{{customdata[{_AT['mean']}]:.4g}} "
    f"± %{{customdata[{_AT['pred_std']}]:.3g}}<br>"
    f"n_eff %{{x:.3g}} (log Λ %{{customdata[{_AT['log_evidence']}]:.2f}}) · tr Σ %{{y:.3g}}<br>"
    f"|error| %{{customdata[{_AT['abs_error_norm']}]:.3f}} (normalised)<extra></extra>"
)


def customdata_field(point: list | tuple, name: str) -> object | None:
    """One field of a clicked point's ``customdata`` (as the browser sends it back) by its name
    in :data:`CUSTOMDATA_FIELDS`; None where the point carries fewer fields."""
    i = _AT[name]
    return point[i] if len(point) > i else None


def scatter_xy(pred: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``n_eff`` and ``disagreement_norm``, floored at 1e-12 for the log axes."""
    x = np.maximum(pred["n_eff"].to_numpy(np.float64), 1e-12)
    y = np.maximum(pred["disagreement_norm"].to_numpy(np.float64), 1e-12)
    return x, y


def _time_texts(pred: pd.DataFrame) -> list[str]:
    """Each query's time for the hover: its ``when`` (the user's clock) or ``time`` in hours."""
    if "when" not in pred.columns:
        return [f"t = {t:.2f} h" for t in pred["time"].to_numpy(np.float64)]
    when = pred["when"]
    if pd.api.types.is_datetime64_any_dtype(when):
        return [f"{pd.Timestamp(w):%Y-%m-%d %H:%M}" for w in when]
    return [f"t = {float(w):.4g}" for w in when]


def scatter_customdata(pred: pd.DataFrame) -> np.ndarray:
    """One row of :data:`CUSTOMDATA_FIELDS` per query, shape (n, 10) (``origin``: the forecast
    origin on rolling origins, else NaN)."""
    origin = pred["origin"] if "origin" in pred.columns else np.full(len(pred), np.nan)
    return np.column_stack(
        [pred["series_id"].astype(str), pred["channel"].astype(str)] + [pred[c] for c in _FROM_FRAME]
        + [np.array(_time_texts(pred), dtype=object), origin]
    )


def add_heldout_queries(fig: go.Figure, pred: pd.DataFrame, *,
                        name: str = "held-out queries (test series)") -> go.Figure:
    """All held-out queries, coloured by ``abs_error_norm`` with a colour bar."""
    x, y = scatter_xy(pred)
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            mode="markers",
            name=name,
            customdata=scatter_customdata(pred),
            hovertemplate=HOVER,
            marker={
                "color": pred["abs_error_norm"],
                "colorscale": ERROR_SCALE,
                "size": 8,
                "opacity": 0.85,
                "line": {"width": 0.4, "color": "white"},
                "colorbar": {"title": {"text": "|error|<br>(normalised)"}, "thickness": 14},
            },
        )
    )
    return fig


def add_highlight(
    fig: go.Figure, pred: pd.DataFrame, mask: np.ndarray, *, name: str, marker: Mapping
) -> go.Figure:
    """The queries where ``mask`` holds, drawn again on top with ``marker`` (nothing if none)."""
    if not mask.any():
        return fig
    x, y = scatter_xy(pred)
    fig.add_trace(
        go.Scatter(
            x=x[mask],
            y=y[mask],
            mode="markers",
            name=name,
            customdata=scatter_customdata(pred)[mask],
            hovertemplate=HOVER,
            marker=dict(marker),
        )
    )
    return fig


def series_mask(pred: pd.DataFrame, series_id: str) -> np.ndarray:
    return (pred["series_id"].astype(str) == str(series_id)).to_numpy()


def query_mask(pred: pd.DataFrame, selected: Mapping[str, object]) -> np.ndarray:
    """The row(s) of the query ``{"series_id", "channel", "time"}`` (and ``"origin"`` when
    both name one: on rolling origins one time is a query of several origins)."""
    mask = (
        (pred["series_id"].astype(str) == str(selected["series_id"]))
        & (pred["channel"].astype(str) == str(selected["channel"]))
        & np.isclose(pred["time"].to_numpy(np.float64), float(selected["time"]))
    ).to_numpy()
    if "origin" in pred.columns and selected.get("origin") is not None:
        mask = mask & np.isclose(pred["origin"].to_numpy(np.float64), float(selected["origin"]))
    return mask


_RING = {"size": 11, "color": rgba(CONTEXT, 0.0), "line": {"width": 1.4, "color": CONTEXT}}
_STAR = {"symbol": "star", "size": 18, "color": HELDOUT, "line": {"width": 1.5, "color": CONTEXT}}


def heldout_scatter(
    pred: pd.DataFrame,
    *,
    current_series: str | None = None,
    selected: Mapping[str, object] | None = None,
    name: str = "held-out queries (test series)",
) -> go.Figure:
    """Held-out queries: evidence (``n_eff``, x) × disagreement (``tr Σ``, y), colour = |error|.

    ``pred`` columns: ``series_id, channel, time, y_true, mean, pred_std, n_eff,
    log_evidence, disagreement_norm, abs_error_norm`` (``*_norm``: per-channel min–max
    scale, so channels share the axes); optional ``when`` (the user's clock, for the hover)
    and ``origin``. ``customdata``: see ``scatter_customdata``.
    """
    fig = add_heldout_queries(go.Figure(), pred, name=name)
    if current_series is not None:
        add_highlight(
            fig,
            pred,
            series_mask(pred, current_series),
            name=f"series {current_series}",
            marker=_RING,
        )
    if selected is not None:
        add_highlight(fig, pred, query_mask(pred, selected), name="selected query", marker=_STAR)
    apply_layout(fig, "Held-out queries: evidence × disagreement (colour = |error|)", height=460)
    fig.update_layout(hovermode="closest")
    fig.update_xaxes(title_text="evidence n_eff (observations, log scale)", type="log")
    fig.update_yaxes(title_text="disagreement tr Σ (normalised units², log)", type="log")
    return fig
