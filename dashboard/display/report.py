"""The self-contained HTML report: figures and tables in, one offline HTML page out.

Pure layout: ``services.report.report_inputs`` gathers what the report shows
(``inputs.ReportInputs``); ``build_report`` draws its figures with ``charts`` and lays out
the page (``render_report``).
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
from levy_dashboard import charts
from levy_dashboard.display.chart_inputs import ReportInputs
from levy_dashboard.display.tables import GUARANTEE_CAPTION

__all__ = ["Figure", "build_report", "render_report", "report_figures", "report_is_offline"]

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
                  metrics: pd.DataFrame, guarantee: pd.DataFrame, extra: dict[str, Any],
                  data_units: pd.DataFrame | None = None) -> str:
    """The report page: what was fitted (``description``), the metrics (normalised, and per
    channel in its own units: ``data_units``) and guarantee tables,
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
        + (f"<h2>Per channel, in its own units</h2>"
           f"{data_units.to_html(index=False, float_format=lambda v: f'{v:.4g}')}" if data_units is not None else "")
        + f"<h2>Does the conformal band hold its level?</h2>{guarantee.to_html(index=False)}"
        f"<p class='cap'>{html.escape(GUARANTEE_CAPTION)}</p>"
        f"<ul>{extra_html}</ul>{_sections(figures)}</body></html>"
    )


def report_is_offline(text: str) -> bool:
    """True when the HTML loads no external script (no ``<script src=...>``)."""
    return re.search(r"<script[^>]*\bsrc\s*=", text, flags=re.IGNORECASE) is None


def _band_figures(inputs: ReportInputs) -> list[Figure]:
    """The report's band of one series and channel (on rolling origins: past the end of the
    data, and the coverage over time of the backtest); none when no series was chosen."""
    if inputs.band is not None:
        band = charts.band_figure(inputs.band.grid, inputs.band.points, **inputs.band.figure_arguments())
        return [("Predictive band", band,
                 "Band, n_eff and tr Σ on one time axis: a wide band with small n_eff lacks evidence; "
                 "with large tr Σ the observations it draws on disagree.")]
    if inputs.future is None or inputs.rolling is None:
        return []
    ahead = charts.future_figure(inputs.future.grid, inputs.future.points, **inputs.future.figure_arguments())
    coverage = charts.rolling_coverage_figure(inputs.rolling, time_axis=inputs.time_axis)
    return [("Forecast past the end of the data", ahead,
             "The band widens as the forecast moves away from the data (n_eff falls). Adaptive conformal: "
             f"{inputs.guarantee_text}."),
            ("Backtest: coverage over time", coverage,
             "Share of the last 10 test origins' queries inside each 90 % band; dotted: the nominal level.")]


def _per_query_figures(inputs: ReportInputs) -> list[Figure]:
    """Coverage by quintile of width, evidence and lead, and risk–coverage against the per-channel
    constant (a report built without them: the risk–coverage of the calibration curves)."""
    cal = inputs.curves
    out: list[Figure] = []
    if inputs.quantile_coverage is not None:
        out.append(("Coverage by quintile of width, evidence and lead",
                    charts.coverage_by_quantile_figure(inputs.quantile_coverage, inputs.level),
                    inputs.quantile_caption))
    if inputs.selective is not None:
        sr = inputs.selective
        out.append(("Risk–coverage against the per-channel constant",
                    charts.risk_coverage_figure(sr.curves, sr.oracle, sr.constant), inputs.selective_caption))
    else:
        out.append(("Risk–coverage", charts.risk_coverage_figure(cal["risk"], cal["oracle"]),
                    "Lower is better: a spread that ranks errors well keeps the error low while the least "
                    "trusted queries are left out."))
    return out


def report_figures(inputs: ReportInputs) -> list[Figure]:
    """Every figure of the report with its title and caption: the band first (when a series
    was chosen), then reliability, coverage by channel, PIT, coverage by quintile of width,
    evidence and lead, risk–coverage against the per-channel constant, and cost."""
    cal = inputs.curves
    return [
        *_band_figures(inputs),
        ("Reliability", charts.reliability_figure(cal["reliability"]),
         "Each curve is the share of test queries inside the central band of each nominal level; on the "
         "dotted diagonal the bands are calibrated, above it they are too wide, below too narrow."),
        ("Coverage by channel", charts.channel_coverage_figure(inputs.channel_coverage, inputs.level),
         "Each channel's share of test queries inside its conformal band at the report's level (dotted "
         "line); the band is conformalized per channel."),
        ("PIT", charts.pit_figure(cal["pit"]),
         "A flat histogram (density 1) means calibrated; a U shape means over-confident, a hump "
         "under-confident."),
        *_per_query_figures(inputs),
        ("Cost", charts.timing_figure(inputs.timing),
         "Wall time of training and of producing the uncertainty of the whole test split."),
    ]


def build_report(inputs: ReportInputs) -> str:
    """The self-contained HTML report of ``services.report.report_inputs``: plotly.js inlined
    once, every figure, the metrics tables and what was fitted, when and on what data."""
    return render_report(description=inputs.description, n_test=inputs.n_test, mc_passes=inputs.mc_passes,
                         figures=report_figures(inputs), metrics=inputs.metrics, guarantee=inputs.guarantee,
                         extra=inputs.extra, data_units=inputs.data_units)
