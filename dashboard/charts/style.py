"""The look every figure shares: palette, fonts, layout, fills and small formatting helpers.

One colour-blind-safe palette (Okabe–Ito) is used in every panel: the Lévy model is always
blue, MC-Dropout always vermillion. Figures get their title, font, margins and legend from
``apply_layout``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

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
FONT = {"family": "Inter, 'Source Sans Pro', Arial, sans-serif", "size": 13}


def rgba(hex_colour: str, alpha: float) -> str:
    """``#RRGGBB`` + opacity → ``rgba(r, g, b, a)`` (plotly fill colours)."""
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r}, {g}, {b}, {alpha:g})"


def method_colour(label: str, sep: str = " ") -> str:
    """Colour of the method a trace label starts with (text before ``sep``); grey if unknown."""
    return METHOD_COLOURS.get(str(label).split(sep)[0], NEUTRAL)


def pct(level: float) -> str:
    """``0.9`` → ``"90 %"``."""
    return f"{100 * level:.0f} %"


# Every figure gets "plotly_white" when it is made: plotly applies its default template
# unvalidated, where assigning one to a made figure validates the whole template again (a
# titled one-trace figure: 26 ms before, 10 ms now; the same template JSON; 2026-12-03).
# Figures are made only after this module is imported (every chart module imports it first).
TEMPLATE = "plotly_white"
pio.templates.default = TEMPLATE


def apply_layout(
    fig: go.Figure, title: str, *, height: int = 420, legend_top: bool = True
) -> go.Figure:
    """Title (top left), font, height and margins; with ``legend_top`` a horizontal legend
    above the plot (the template, ``TEMPLATE``, is plotly's default from this module on)."""
    layout = {
        "title": {"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 16}, "y": 0.985,
                  "yref": "container", "yanchor": "top"},
        "font": FONT,
        "height": height,
        "margin": {"l": 70, "r": 30, "t": 115 if legend_top else 60, "b": 55},
        "hoverlabel": {"font_size": 12},
    }
    if legend_top:
        layout["legend"] = {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0.0, "xanchor": "left",
                            "font": {"size": 12}}
    fig.update_layout(layout)  # one update: each call validates and dispatches again
    return fig


def x_of(frame: pd.DataFrame, fallback: str = "time") -> np.ndarray:
    """The time axis values of a frame: its ``when`` column (the user's clock: date-times or
    numbers in the data's unit) when it has one, else ``fallback`` (hours)."""
    if "when" in frame.columns:
        return frame["when"].to_numpy()
    return frame[fallback].to_numpy(np.float64)


def time_label(value: object) -> str:
    """One time for a title: a date-time to the minute, or a number."""
    if isinstance(value, (pd.Timestamp, np.datetime64)):
        return f"{pd.Timestamp(value):%Y-%m-%d %H:%M}"
    return f"{float(value):.4g}"


def time_hover(frame: pd.DataFrame, ref: str = "x") -> str:
    """A hover template piece for the time ``%{ref}`` of values drawn by ``x_of(frame)``."""
    if "when" not in frame.columns:
        return f"t = %{{{ref}:.2f}} h"
    if pd.api.types.is_datetime64_any_dtype(frame["when"]):
        return f"%{{{ref}|%Y-%m-%d %H:%M}}"
    return f"t = %{{{ref}:.4g}}"


def finite(a: np.ndarray) -> np.ndarray:
    """Infinite band edges (conformal band wider than the data allow) are not drawn."""
    a = np.asarray(a, dtype=np.float64)
    return np.where(np.isfinite(a), a, np.nan)


def band_polygon(
    t: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:  # t: hours, numbers or date-times
    """Closed outline (upper left→right, lower right→left) for a ``fill='toself'`` band."""
    return np.concatenate([t, t[::-1]]), np.concatenate([finite(upper), finite(lower)[::-1]])


def add_legend_line(fig: go.Figure, name: str, line: Mapping[str, object]) -> go.Figure:
    """A legend entry for lines drawn as shapes (``add_vline`` has none of its own)."""
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=name, line=dict(line)))
    return fig
