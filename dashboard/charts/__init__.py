"""Pure plotly figure builders: data frames and arrays in, ``go.Figure`` out (no ``st.*``).

Every figure has a title and axis titles with units; the dashboard puts a one-line caption
under each saying how to read it. One colour-blind-safe palette (Okabe–Ito) is used in every
panel: the Lévy model is always blue, MC-Dropout always vermillion.

Modules: ``style`` (palette, fonts, ``apply_layout``, ``rgba``, ``pct``), ``band`` (the
predictive band and its layer builders), ``evidence`` (held-out evidence × disagreement),
``future`` (the forecast past the end of the data, rolling origins), ``backtest`` (one test
origin's bands against what happened, coverage over time), ``calibration`` (reliability,
channel coverage, PIT, risk–coverage against the per-channel constant, timing),
``conditional`` (coverage by quintile of width, evidence and lead), ``identity``
(operator draws vs closed-form σ̂), ``ranking`` (trust ranking), ``data`` (training
curves, gaps, channel counts, a series' timeline). Everything public is re-exported here:
``from levy_dashboard import charts; charts.band_figure(...)``.
"""

from __future__ import annotations

from levy_dashboard.charts.backtest import (
    add_forecast_and_truth,
    add_origin_bands,
    origin_band_figure,
    rolling_coverage_figure,
)
from levy_dashboard.charts.band import (
    add_attended,
    add_band,
    add_bands_and_means,
    add_cutoff,
    add_disagreement_panel,
    add_evidence_panel,
    add_mc_band,
    add_mc_mean,
    add_mean,
    add_observations,
    add_query_line,
    add_selected_query,
    add_terms_panel,
    band_figure,
    band_subplots,
    has_mc,
    style_band_figure,
)
from levy_dashboard.charts.calibration import (
    channel_coverage_figure,
    pit_figure,
    reliability_figure,
    risk_coverage_figure,
    timing_figure,
)
from levy_dashboard.charts.conditional import coverage_by_quantile_figure
from levy_dashboard.charts.data import (
    channel_counts_figure,
    gap_histogram,
    series_timeline,
    training_figure,
)
from levy_dashboard.charts.evidence import add_heldout_queries, add_highlight, heldout_scatter
from levy_dashboard.charts.future import (
    add_history,
    add_last_observation,
    future_figure,
    future_subplots,
)
from levy_dashboard.charts.identity import (
    add_closed_form_density,
    add_draws_histogram,
    add_observed,
    add_spread_lines,
    draws_figure,
)
from levy_dashboard.charts.ranking import ranking_figure
from levy_dashboard.charts.style import (
    CONTEXT,
    DISAGREEMENT,
    ERROR_SCALE,
    EVIDENCE,
    FONT,
    HELDOUT,
    LEVY,
    MC,
    METHOD_COLOURS,
    NEUTRAL,
    PALETTE,
    SKY,
    TIME_AXIS,
    add_legend_line,
    apply_layout,
    band_polygon,
    finite,
    method_colour,
    pct,
    rgba,
    time_hover,
    time_label,
    x_of,
)

__all__ = [
    # style
    "CONTEXT",
    "DISAGREEMENT",
    "ERROR_SCALE",
    "EVIDENCE",
    "FONT",
    "HELDOUT",
    "LEVY",
    "MC",
    "METHOD_COLOURS",
    "NEUTRAL",
    "PALETTE",
    "SKY",
    "TIME_AXIS",
    "add_legend_line",
    "apply_layout",
    "band_polygon",
    "finite",
    "method_colour",
    "pct",
    "rgba",
    "time_hover",
    "time_label",
    "x_of",
    # band
    "add_attended",
    "add_band",
    "add_bands_and_means",
    "add_cutoff",
    "add_disagreement_panel",
    "add_evidence_panel",
    "add_mc_band",
    "add_mc_mean",
    "add_mean",
    "add_observations",
    "add_query_line",
    "add_selected_query",
    "add_terms_panel",
    "band_figure",
    "band_subplots",
    "has_mc",
    "style_band_figure",
    # future (rolling origins)
    "add_history",
    "add_last_observation",
    "future_figure",
    "future_subplots",
    # backtest (rolling origins)
    "add_forecast_and_truth",
    "add_origin_bands",
    "origin_band_figure",
    "rolling_coverage_figure",
    # evidence
    "add_heldout_queries",
    "add_highlight",
    "heldout_scatter",
    # calibration
    "channel_coverage_figure",
    "coverage_by_quantile_figure",
    "pit_figure",
    "reliability_figure",
    "risk_coverage_figure",
    "timing_figure",
    # identity
    "add_closed_form_density",
    "add_draws_histogram",
    "add_observed",
    "add_spread_lines",
    "draws_figure",
    # ranking
    "ranking_figure",
    # data
    "channel_counts_figure",
    "gap_histogram",
    "series_timeline",
    "training_figure",
]
