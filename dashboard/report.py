"""The self-contained HTML report: figures and tables in, one offline HTML page out.

Pure layout: the caller (``origin_services.build_report``) gathers the figures and tables.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from levy_dashboard.tables import GUARANTEE_CAPTION

__all__ = ["Figure", "render_report", "report_is_offline"]

Figure = tuple[str, go.Figure, str]  # (title, figure, caption)

_STYLE = (
    "body{font-family:Arial,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:4px 8px;"
    "text-align:right}th{background:#f4f4f4}.cap{color:#555;font-size:13px}h1{font-size:24px}"
)


def _sections(figures: list[Figure]) -> str:
    parts = []
    for i, (title, fig, caption) in enumerate(figures):
        # plotly.js inlined once, in the first figure: the page opens with no network
        div = pio.to_html(fig, include_plotlyjs=(i == 0), full_html=False, config={"displaylogo": False},
                          default_width="100%")
        parts.append(f"<section><h2>{html.escape(title)}</h2>{div}<p class='cap'>{html.escape(caption)}</p>"
                     "</section>")
    return "".join(parts)


def render_report(*, description: str, n_test: int, mc_passes: int, figures: list[Figure],
                  metrics: pd.DataFrame, guarantee: pd.DataFrame, extra: dict[str, Any]) -> str:
    """The report page: what was fitted (``description``), the metrics and guarantee tables,
    the ``extra`` results as a list, and every figure with its caption."""
    extra_html = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(json.dumps(v, default=float))}</li>"
                         for k, v in extra.items() if v)
    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Lévy uncertainty report</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>Lévy uncertainty report</h1><p>{html.escape(description)}</p>"
        f"<p>Report generated {generated}; {n_test:,} test queries; MC-Dropout with "
        f"T = {mc_passes} passes. Error metrics are on the per-channel min–max normalised scale; "
        f"coverage is scale-free.</p>"
        f"<h2>Metrics on the test split</h2>{metrics.to_html(float_format=lambda v: f'{v:.4g}')}"
        f"<h2>Does the conformal band hold its level?</h2>{guarantee.to_html(index=False)}"
        f"<p class='cap'>{html.escape(GUARANTEE_CAPTION)}</p>"
        f"<ul>{extra_html}</ul>{_sections(figures)}</body></html>"
    )


def report_is_offline(text: str) -> bool:
    """True when the HTML loads no external script (no ``<script src=...>``)."""
    return re.search(r"<script[^>]*\bsrc\s*=", text, flags=re.IGNORECASE) is None
