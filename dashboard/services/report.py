"""Report: everything the self-contained HTML report draws and lists, gathered from the
other services' caches (``ReportInputs``); ``report.build_report`` turns it into the page
(figures by ``charts``, layout by ``report.render_report``).
"""

from __future__ import annotations

from levy_dashboard.display.chart_inputs import ReportInputs
from levy_dashboard.fitting.fits import FitResult
from levy_dashboard.services.band import GUARANTEE, band_inputs, time_axis
from levy_dashboard.services.evaluation import (
    calibration_curves,
    channel_coverage,
    data_units_table,
    evaluation,
    guarantee_table,
    metrics_table,
    sampler_check,
    timing_rows,
)
from levy_dashboard.services.origins import future_inputs, rolling_coverage
from levy_dashboard.services.per_query import (
    coverage_bins,
    coverage_caption,
    risk_caption,
    selective_risk,
)

__all__ = ["report_inputs"]


def report_inputs(key: str, res: FitResult, mc_passes: int, *, series_id: str | None = None,
                  channel: str | None = None, level: float = 0.9, kind: str = "gaussian",
                  horizon: float | None = None) -> ReportInputs:
    """What the report of a fit shows: what was fitted, the test split's metrics, guarantee
    checks, calibration curves, coverage by channel and by quintile of width, evidence and lead
    at ``level``, risk–coverage against the per-channel constant, the cost of each method
    and, with ``series_id`` and ``channel``, their band at ``level`` of ``kind`` (on rolling
    origins: the forecast ``horizon`` hours past the end, and the backtest's coverage over time)."""
    result, _ = evaluation(key, res, mc_passes)
    band = future = rolling = None
    if series_id is not None and channel is not None:
        if not res.on_origins:
            band = band_inputs(key, res, series_id, channel, level, kind, mc_passes)
        else:
            future = future_inputs(key, res, series_id, channel, level, kind, horizon or res.fitted.task.horizon,
                                   mc_passes)
            rolling = rolling_coverage(key, res, mc_passes)
    bins, selective = coverage_bins(key, res, mc_passes, level), selective_risk(key, res, mc_passes)
    extra = {"softmax twin (no uncertainty)": result.get("softmax"), "50-draw sampler": sampler_check(key, res),
             "the band of new series": res.fitted.new_series_note()}
    return ReportInputs(
        description=res.describe(), n_test=result["n_test"], mc_passes=mc_passes, level=level,
        curves=calibration_curves(key, res, mc_passes), channel_coverage=channel_coverage(key, res, mc_passes, level),
        timing=timing_rows(res, result), metrics=metrics_table(result), guarantee=guarantee_table(key, res, mc_passes),
        extra=extra, guarantee_text=GUARANTEE, band=band, future=future, rolling=rolling, time_axis=time_axis(res),
        quantile_coverage=bins, quantile_caption=coverage_caption(bins, level), selective=selective,
        selective_caption=risk_caption(selective), data_units=data_units_table(result))
