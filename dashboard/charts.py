"""Pure plotly figure builders: data frames and arrays in, ``go.Figure`` out (no ``st.*``).

Every figure has a title and axis titles with units; the dashboard puts a one-line caption
under each saying how to read it. One colour-blind-safe palette (Okabe–Ito) is used in every
panel: the Lévy model is always blue, MC-Dropout always vermillion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

# ----------------------------------------------------------------------------- palette
# Okabe & Ito (2008), "Color Universal Design": distinguishable under the common colour
# vision deficiencies. Defined once here; every view and figure takes colours from it.
LEVY = "#0072B2"  # blue: the Lévy model (closed-form σ̂)
MC = "#D55E00"  # vermillion: the MC-Dropout twin
CONTEXT = "#000000"  # black: context observations (what the model sees)
HELDOUT = "#E69F00"  # orange: held-out observations (what is predicted)
EVIDENCE = "#009E73"  # bluish green: evidence (n_eff, log Λ)
DISAGREEMENT = "#CC79A7"  # reddish purple: disagreement (tr Σ)
SKY = "#56B4E9"  # sky blue: sampled-operator draws (a Lévy quantity, lighter shade)
NEUTRAL = "#7F7F7F"  # grey: references (ideal diagonal, oracle, cut-off)
PALETTE: dict[str, str] = {
    "levy": LEVY,
    "mc": MC,
    "context": CONTEXT,
    "heldout": HELDOUT,
    "evidence": EVIDENCE,
    "disagreement": DISAGREEMENT,
    "draws": SKY,
    "neutral": NEUTRAL,
}
ERROR_SCALE = "Cividis"  # sequential colour scale for |error|, readable with any CVD
METHOD_COLOURS: dict[str, str] = {"Lévy": LEVY, "MC-Dropout": MC}

TIME_AXIS = "time (h)"
_FONT = {"family": "Inter, 'Source Sans Pro', Arial, sans-serif", "size": 13}


def rgba(hex_colour: str, alpha: float) -> str:
    """``#RRGGBB`` + opacity → ``rgba(r, g, b, a)`` (plotly fill colours)."""
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r}, {g}, {b}, {alpha:g})"


def _layout(fig: go.Figure, title: str, *, height: int = 420, legend_top: bool = True) -> go.Figure:
    fig.update_layout(
        title={
            "text": title,
            "x": 0.0,
            "xanchor": "left",
            "font": {"size": 16},
            "y": 0.985,
            "yref": "container",
            "yanchor": "top",
        },
        template="plotly_white",
        font=_FONT,
        height=height,
        margin={"l": 70, "r": 30, "t": 115 if legend_top else 60, "b": 55},
        hoverlabel={"font_size": 12},
    )
    if legend_top:
        fig.update_layout(
            legend={
                "orientation": "h",
                "yanchor": "bottom",
                "y": 1.02,
                "x": 0.0,
                "xanchor": "left",
                "font": {"size": 12},
            }
        )
    return fig


def _pct(level: float) -> str:
    return f"{100 * level:.0f} %"


def _finite(a: np.ndarray) -> np.ndarray:
    """Infinite band edges (conformal band wider than the data allow) are not drawn."""
    a = np.asarray(a, dtype=np.float64)
    return np.where(np.isfinite(a), a, np.nan)


def _band_polygon(
    t: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Closed outline (upper left→right, lower right→left) for a ``fill='toself'`` band."""
    return np.concatenate([t, t[::-1]]), np.concatenate([_finite(upper), _finite(lower)[::-1]])


# ----------------------------------------------------------------------------- band + evidence


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
        The selected query: ``time`` and optionally ``value`` (observed) and ``mean``.

    Rows: 1 band (Lévy, optional MC-Dropout), 2 ``n_eff`` (log axis; hover shows
    ``log Λ``), 3 ``tr Σ``, 4 the two terms of ``log σ̂ = ½ log tr Σ + ½ log φ(Λ)``.
    """
    g = grid.sort_values("time")
    t = g["time"].to_numpy(np.float64)
    fig = make_subplots(
        rows=4,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.035,
        row_heights=[0.46, 0.18, 0.18, 0.18],
    )
    lvl = _pct(level)

    has_mc = (
        show_mc
        and {"mc_mean", "mc_lower", "mc_upper"} <= set(g.columns)
        and g["mc_mean"].notna().any()
    )
    if has_mc:  # under the Lévy band, outlined, so the blue band stays blue
        mx, my = _band_polygon(t, g["mc_lower"].to_numpy(), g["mc_upper"].to_numpy())
        fig.add_trace(
            go.Scatter(
                x=mx,
                y=my,
                fill="toself",
                fillcolor=rgba(MC, 0.10),
                line={"width": 1.3, "color": MC, "dash": "dot"},
                name=f"MC-Dropout {lvl} band",
                legendgroup="mc",
                hoverinfo="skip",
            ),
            row=1,
            col=1,
        )
    bx, by = _band_polygon(t, g["lower"].to_numpy(), g["upper"].to_numpy())
    fig.add_trace(
        go.Scatter(
            x=bx,
            y=by,
            fill="toself",
            fillcolor=rgba(LEVY, 0.25),
            line={"width": 0},
            name=f"Lévy {lvl} band ({band_label})",
            legendgroup="levy",
            hoverinfo="skip",
        ),
        row=1,
        col=1,
    )
    custom = np.column_stack(
        [_finite(g["lower"].to_numpy()), _finite(g["upper"].to_numpy()), g["sigma"].to_numpy()]
    )
    fig.add_trace(
        go.Scatter(
            x=t,
            y=g["mean"],
            mode="lines",
            line={"color": LEVY, "width": 2.2},
            name="Lévy mean",
            legendgroup="levy",
            customdata=custom,
            hovertemplate="t = %{x:.2f} h<br>mean %{y:.4g}<br>band [%{customdata[0]:.4g}, "
            "%{customdata[1]:.4g}]<br>σ̂ %{customdata[2]:.3g}<extra>Lévy</extra>",
        ),
        row=1,
        col=1,
    )
    if has_mc:
        fig.add_trace(
            go.Scatter(
                x=t,
                y=g["mc_mean"],
                mode="lines",
                line={"color": MC, "width": 1.6, "dash": "dash"},
                name="MC-Dropout mean",
                legendgroup="mc",
                hovertemplate="t = %{x:.2f} h<br>mean %{y:.4g}<extra>MC-Dropout</extra>",
            ),
            row=1,
            col=1,
        )
    for role, colour, symbol, name in (
        ("context", CONTEXT, "circle", "context observations"),
        ("held-out", HELDOUT, "diamond", "held-out observations"),
    ):
        p = points[points["role"] == role]
        custom_p = p[["query_id"]].to_numpy() if "query_id" in p.columns else None
        fig.add_trace(
            go.Scatter(
                x=p["time"],
                y=p["value"],
                mode="markers",
                name=name,
                customdata=custom_p,
                marker={
                    "color": colour,
                    "size": 6 if role == "context" else 8,
                    "symbol": symbol,
                    "line": {"width": 0.5, "color": "white"},
                },
                hovertemplate=f"{name}<br>t = %{{x:.2f}} h<br>value %{{y:.4g}}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    if attended is not None and len(attended):
        w = attended["weight"].to_numpy(np.float64)
        size = 7 + 26 * np.sqrt(w / max(float(w.max()), 1e-12))
        fig.add_trace(
            go.Scatter(
                x=attended["time"],
                y=attended["value"],
                mode="markers",
                name="drawn on by the query (size = attention weight)",
                marker={
                    "size": size,
                    "color": rgba(LEVY, 0.0),
                    "symbol": "circle",
                    "line": {"width": 2, "color": LEVY},
                },
                customdata=w,
                hovertemplate="t = %{x:.2f} h<br>value %{y:.4g}<br>"
                "weight %{customdata:.3f}<extra>attended</extra>",
            ),
            row=1,
            col=1,
        )
    if query is not None:
        qy = query.get("value", query.get("mean"))
        if qy is not None and np.isfinite(qy):
            fig.add_trace(
                go.Scatter(
                    x=[query["time"]],
                    y=[qy],
                    mode="markers",
                    name="selected query",
                    marker={
                        "symbol": "star",
                        "size": 17,
                        "color": HELDOUT,
                        "line": {"width": 1.5, "color": CONTEXT},
                    },
                    hovertemplate="selected query<br>t = %{x:.2f} h<br>y %{y:.4g}<extra></extra>",
                ),
                row=1,
                col=1,
            )

    log_ev = g["log_evidence"].to_numpy(np.float64)
    fig.add_trace(
        go.Scatter(
            x=t,
            y=np.maximum(g["n_eff"].to_numpy(np.float64), 1e-12),
            mode="lines",
            line={"color": EVIDENCE, "width": 2},
            name="n_eff (evidence)",
            customdata=log_ev,
            hovertemplate="t = %{x:.2f} h<br>n_eff %{y:.3g}<br>log Λ %{customdata:.2f}"
            "<extra>evidence</extra>",
        ),
        row=2,
        col=1,
    )
    # the rows under the band: (row, y, colour, dash, name, hover label, trace group)
    diagnostics = [
        (3, g["disagreement"], DISAGREEMENT, None, "tr Σ (disagreement)", "tr Σ %{y:.3g}",
         "disagreement"),
        (4, g["evidence_term"], EVIDENCE, None, "½ log φ(Λ): evidence share of log σ̂",
         "½ log φ(Λ) %{y:.2f}", "evidence"),
        (4, g["disagreement_term"], DISAGREEMENT, None, "½ log tr Σ: disagreement share of log σ̂",
         "½ log tr Σ %{y:.2f}", "disagreement"),
        (4, np.log(np.maximum(g["sigma"].to_numpy(np.float64), 1e-300)), LEVY, "dot",
         "log σ̂ (their sum)", "log σ̂ %{y:.2f}", "Lévy"),
    ]
    for row, y, colour, dash, name, label, group in diagnostics:
        line = {"color": colour, "width": 1.5 if dash else 2}
        if dash:
            line["dash"] = dash
        fig.add_trace(
            go.Scatter(x=t, y=y, mode="lines", line=line, name=name,
                       hovertemplate=f"t = %{{x:.2f}} h<br>{label}<extra>{group}</extra>"),
            row=row,
            col=1,
        )

    if cutoff is not None:
        fig.add_vline(
            x=float(cutoff), line={"color": NEUTRAL, "width": 1.2, "dash": "dash"}, row="all", col=1
        )
        fig.add_annotation(
            x=float(cutoff),
            y=1.0,
            yref="y domain",
            text="forecast cut-off",
            showarrow=False,
            xanchor="left",
            yanchor="top",
            font={"color": NEUTRAL, "size": 11},
            row=1,
            col=1,
        )
    if query is not None:
        fig.add_vline(
            x=float(query["time"]),
            line={"color": HELDOUT, "width": 1.2, "dash": "dot"},
            row="all",
            col=1,
        )

    title = (
        f"Predictive band for series {series_id}, channel {channel} "
        f"({lvl} {band_label}), with evidence and disagreement"
    )
    _layout(fig, title, height=height, legend_top=False)
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
    fig.update_xaxes(title_text=TIME_AXIS, row=4, col=1)
    return fig


def heldout_scatter(
    pred: pd.DataFrame,
    *,
    current_series: str | None = None,
    selected: Mapping[str, object] | None = None,
) -> go.Figure:
    """Held-out queries: evidence (``n_eff``, x) × disagreement (``tr Σ``, y), colour = |error|.

    ``pred`` columns: ``series_id, channel, time, y_true, mean, pred_std, n_eff,
    log_evidence, disagreement_norm, abs_error_norm`` (``*_norm``: per-channel min–max
    scale, so channels share the axes). ``customdata`` = ``[series_id, channel, time]``.
    """
    fig = go.Figure()
    x = np.maximum(pred["n_eff"].to_numpy(np.float64), 1e-12)
    y = np.maximum(pred["disagreement_norm"].to_numpy(np.float64), 1e-12)
    custom = np.column_stack(
        [
            pred["series_id"].astype(str),
            pred["channel"].astype(str),
            pred["time"],
            pred["y_true"],
            pred["mean"],
            pred["pred_std"],
            pred["log_evidence"],
            pred["abs_error_norm"],
        ]
    )
    hover = (
        "series %{customdata[0]}, %{customdata[1]}<br>t = %{customdata[2]:.2f} h<br>"
        "y %{customdata[3]:.4g} · ŷ %{customdata[4]:.4g} ± %{customdata[5]:.3g}<br>"
        "n_eff %{x:.3g} (log Λ %{customdata[6]:.2f}) · tr Σ %{y:.3g}<br>"
        "|error| %{customdata[7]:.3f} (normalised)<extra></extra>"
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            mode="markers",
            name="held-out queries (test series)",
            customdata=custom,
            hovertemplate=hover,
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
    if current_series is not None:
        mask = (pred["series_id"].astype(str) == str(current_series)).to_numpy()
        if mask.any():
            fig.add_trace(
                go.Scatter(
                    x=x[mask],
                    y=y[mask],
                    mode="markers",
                    name=f"series {current_series}",
                    customdata=custom[mask],
                    hovertemplate=hover,
                    marker={
                        "size": 11,
                        "color": rgba(CONTEXT, 0.0),
                        "line": {"width": 1.4, "color": CONTEXT},
                    },
                )
            )
    if selected is not None:
        m = (
            (pred["series_id"].astype(str) == str(selected["series_id"]))
            & (pred["channel"].astype(str) == str(selected["channel"]))
            & np.isclose(pred["time"].to_numpy(np.float64), float(selected["time"]))
        ).to_numpy()
        if m.any():
            fig.add_trace(
                go.Scatter(
                    x=x[m],
                    y=y[m],
                    mode="markers",
                    name="selected query",
                    customdata=custom[m],
                    hovertemplate=hover,
                    marker={
                        "symbol": "star",
                        "size": 18,
                        "color": HELDOUT,
                        "line": {"width": 1.5, "color": CONTEXT},
                    },
                )
            )
    _layout(fig, "Held-out queries: evidence × disagreement (colour = |error|)", height=460)
    fig.update_layout(hovermode="closest")
    fig.update_xaxes(title_text="evidence n_eff (observations, log scale)", type="log")
    fig.update_yaxes(title_text="disagreement tr Σ (normalised units², log)", type="log")
    return fig


# ----------------------------------------------------------------------------- MC-Dropout


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
                    "color": [
                        METHOD_COLOURS.get(str(m).split(" ")[0], NEUTRAL) for m in part["method"]
                    ],
                    "pattern": {"shape": pattern},
                    "line": {"color": CONTEXT, "width": 0.6},
                },
                text=[f"{s:.3g} s" for s in part["seconds"]],
                textposition="outside",
                hovertemplate="%{y}: %{x:.3g} s<extra>" + str(stage) + "</extra>",
            )
        )
    _layout(fig, "What each method costs: training and uncertainty on the test split", height=330)
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text="wall time (s, log scale)", type="log")
    fig.update_yaxes(title_text="method")
    return fig


# ----------------------------------------------------------------------------- calibration


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
        method = label.split(" — ")[0]
        conformal = "conformal" in label
        fig.add_trace(
            go.Scatter(
                x=nominal,
                y=observed,
                mode="lines+markers",
                name=label,
                line={
                    "color": METHOD_COLOURS.get(method, NEUTRAL),
                    "dash": "dash" if conformal else "solid",
                    "width": 2,
                },
                marker={"size": 5, "symbol": "square" if conformal else "circle"},
                hovertemplate="nominal %{x:.0%} → observed %{y:.1%}<extra>" + label + "</extra>",
            )
        )
    _layout(fig, "Reliability: nominal vs observed coverage of central bands", height=460)
    fig.update_xaxes(title_text="nominal coverage (%)", tickformat=".0%", range=[0, 1])
    fig.update_yaxes(
        title_text="observed coverage on the test split (%)", tickformat=".0%", range=[0, 1.02]
    )
    return fig


def channel_coverage_figure(table: pd.DataFrame, level: float) -> go.Figure:
    """Coverage of the conformal band per channel, one bar per method; ``table`` has columns
    channel, method ("Lévy" / "MC-Dropout"), coverage, n (test queries of that channel)."""
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
                hovertemplate="%{y}: %{x:.1%} of %{customdata} test queries<extra>" + method + "</extra>",
            )
        )
    fig.add_vline(x=level, line={"color": NEUTRAL, "dash": "dot", "width": 1.5})
    _layout(
        fig,
        f"Coverage of the {_pct(level)} conformal band, channel by channel",
        height=max(320, 120 + 22 * len(channels)),
    )
    fig.update_layout(barmode="group", bargap=0.25)
    fig.update_xaxes(title_text="share of the channel's test queries inside the band", tickformat=".0%",
                     range=[0, 1.02])
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
                marker={
                    "color": METHOD_COLOURS.get(label.split(" ")[0], NEUTRAL),
                    "line": {"width": 0.5, "color": "white"},
                },
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
    _layout(fig, "PIT histogram (flat = calibrated)", height=420)
    fig.update_layout(barmode="group", bargap=0.08, bargroupgap=0.0)
    fig.update_xaxes(title_text="PIT value Φ((y − ŷ) / cσ) (probability, 0–1)", range=[0, 1])
    fig.update_yaxes(title_text="density (1 = uniform)")
    return fig


def risk_coverage_figure(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
    oracle: tuple[np.ndarray, np.ndarray] | None = None,
) -> go.Figure:
    """Risk (MSE of the kept queries) when keeping only the most trusted share."""
    fig = go.Figure()
    for label, (cov, risk) in curves.items():
        fig.add_trace(
            go.Scatter(
                x=cov,
                y=risk,
                mode="lines",
                name=label,
                line={"color": METHOD_COLOURS.get(label.split(" ")[0], NEUTRAL), "width": 2.2},
                hovertemplate="keep %{x:.0%} → MSE %{y:.4g}<extra>" + label + "</extra>",
            )
        )
    if oracle is not None:
        fig.add_trace(
            go.Scatter(
                x=oracle[0],
                y=oracle[1],
                mode="lines",
                name="oracle (sorted by actual error)",
                line={"color": NEUTRAL, "dash": "dot", "width": 1.5},
                hovertemplate="keep %{x:.0%} → MSE %{y:.4g}<extra>oracle</extra>",
            )
        )
    _layout(fig, "Risk–coverage (lower = spread ranks errors better)", height=420)
    fig.update_xaxes(title_text="share of queries kept, most trusted first (%)", tickformat=".0%")
    fig.update_yaxes(title_text="MSE of kept queries (normalised units²)")
    return fig


# ------------------------------------------------------------------ ranking, identity, data


def ranking_figure(
    ranked: pd.DataFrame, *, highlight: str | None = None, max_bars: int = 60
) -> go.Figure:
    """Trust scores of the ranked series (lower = more trusted), colour = mean n_eff."""
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
    _layout(
        fig,
        f"Series ranked by trust{more}: lower bar = narrower calibrated band",
        height=380,
        legend_top=False,
    )
    fig.update_xaxes(title_text="series (most trusted on the left)", type="category")
    fig.update_yaxes(title_text="trust score c·σ̂ (normalised units)")
    return fig


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
    fig = go.Figure()
    fig.add_trace(
        go.Histogram(
            x=d,
            nbinsx=bins,
            histnorm="probability density",
            name=f"{len(d):,} operator draws",
            marker={"color": rgba(SKY, 0.75), "line": {"width": 0.4, "color": "white"}},
            hovertemplate="draw %{x:.4g}: density %{y:.3g}<extra></extra>",
        )
    )
    if sigma > 0:
        xs = np.linspace(min(d.min(), mean - 4 * sigma), max(d.max(), mean + 4 * sigma), 300)
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
    fig.add_vline(x=mean, line={"color": CONTEXT, "width": 2})
    for sign in (-1, 1):
        fig.add_vline(x=mean + sign * sigma, line={"color": LEVY, "width": 2, "dash": "dash"})
        fig.add_vline(x=mean + sign * rmsd, line={"color": SKY, "width": 2, "dash": "dot"})
    # legend entries for the vertical lines
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="lines",
            name="m, the closed-form mean",
            line={"color": CONTEXT, "width": 2},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="lines",
            name="m ± σ̂ (closed form)",
            line={"color": LEVY, "dash": "dash", "width": 2},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="lines",
            name="m ± RMSD of the draws",
            line={"color": SKY, "dash": "dot", "width": 2},
        )
    )
    if y_true is not None and np.isfinite(y_true):
        fig.add_vline(x=y_true, line={"color": HELDOUT, "width": 2})
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                name="observed y",
                line={"color": HELDOUT, "width": 2},
            )
        )
    _layout(fig, "The identity: draws of the sampled operator vs the closed-form σ̂", height=430)
    fig.update_xaxes(title_text="operator value at the query (data units)")
    fig.update_yaxes(title_text="density (1 / data unit)")
    return fig


def training_figure(history: Sequence[Mapping[str, float]]) -> go.Figure:
    """Loss per epoch: ``history`` rows ``model, epoch, train_loss, val_loss``."""
    h = pd.DataFrame(list(history))
    fig = go.Figure()
    names = {"levy": ("Lévy", LEVY), "softmax": ("MC-Dropout twin", MC)}
    for model, part in h.groupby("model", sort=False) if len(h) else []:
        label, colour = names.get(str(model), (str(model), NEUTRAL))
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
    _layout(fig, "Training curves", height=360)
    fig.update_xaxes(title_text="epoch", dtick=1 if len(h) and h["epoch"].max() <= 15 else None)
    fig.update_yaxes(title_text="MSE (normalised units², log)", type="log")
    return fig


def gap_histogram(gaps: np.ndarray, *, bins: int = 40) -> go.Figure:
    """Histogram of the gaps between consecutive observation times (log-spaced bins)."""
    g = np.asarray(gaps, dtype=np.float64)
    g = g[np.isfinite(g) & (g > 0)]
    fig = go.Figure()
    if g.size:
        lo, hi = np.log10(g.min()), np.log10(g.max())
        edges = np.logspace(lo, hi if hi > lo else lo + 1, bins + 1)
        counts, _ = np.histogram(g, bins=edges)
        centres = np.sqrt(edges[1:] * edges[:-1])
        fig.add_trace(
            go.Bar(
                x=centres,
                y=counts,
                width=np.diff(edges),
                name="gaps",
                marker={"color": CONTEXT, "opacity": 0.75},
                hovertemplate="gap ≈ %{x:.3g} h: %{y} gaps<extra></extra>",
            )
        )
    _layout(
        fig,
        "Gaps between consecutive observations (irregular sampling)",
        height=340,
        legend_top=False,
    )
    fig.update_xaxes(title_text="gap (h, log scale)", type="log")
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
    _layout(fig, "Observations per channel", height=340, legend_top=False)
    fig.update_xaxes(title_text="channel", type="category")
    fig.update_yaxes(title_text="observations (count)")
    return fig


def series_timeline(frame: pd.DataFrame, series_id: str) -> go.Figure:
    """When each channel of one series was observed."""
    part = frame[frame["series_id"].astype(str) == str(series_id)]
    fig = go.Figure(
        go.Scatter(
            x=part["time"],
            y=part["channel"].astype(str),
            mode="markers",
            marker={"color": CONTEXT, "size": 5, "symbol": "line-ns-open"},
            customdata=part["value"],
            name="observation",
            hovertemplate="%{y} at t = %{x:.2f} h: %{customdata:.4g}<extra></extra>",
        )
    )
    _layout(
        fig, f"Observation times of series {series_id}, per channel", height=300, legend_top=False
    )
    fig.update_xaxes(title_text=TIME_AXIS)
    fig.update_yaxes(title_text="channel", type="category")
    return fig
