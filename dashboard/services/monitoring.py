"""Monitoring: does the model's band still hold on this data (its coverage per level and
channel on the observed queries), and has the data drifted from the training data?

Cache wrappers around ``levy_core.serving.monitoring.monitor_coverage`` and
``FittedVerbs.drift_report`` (``levy_core.forecast.verbs``), keyed by the fit key; tables laid out by ``tables``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from levy_dashboard.display import tables
from levy_dashboard.display.tables import GUARANTEE_CAPTION
from levy_dashboard.fitting.fits import FitResult

from levy_core.data.drift import DENSITY_FACTOR, MIN_VALUES, RANGE_MARGIN, VALUE_SHARE
from levy_core.serving.monitoring import CoverageMonitor, monitor_coverage

__all__ = ["DRIFT_CAPTION", "GUARANTEE_CAPTION", "CoverageMonitor", "drift", "monitoring", "monitoring_tables",
           "what_is_checked"]

DRIFT_CAPTION = (
    f"How to read: a channel is flagged when more than {VALUE_SHARE:.0%} of the series have their median "
    f"beyond the training range by over {RANGE_MARGIN:.0%} of its width, or when it is observed over "
    f"{DENSITY_FACTOR:g}× less or more often per unit of time than in training (each rule needs {MIN_VALUES} values "
    "of the channel); `levy predict`, `levy evaluate` and `levy rank` print the same warnings."
)


def what_is_checked(res: FitResult) -> str:
    """Which model is checked on which data, in words."""
    model = f"the saved model {res.opened_from}" if res.opened_from else "the model fitted here"
    data = "every series (new data)" if not res.data.same_data else "its test split (the data it was fitted on)"
    return f"Checking {model} on {res.data_label}: {data}."


@st.cache_data(show_spinner=False, max_entries=16)
def monitoring(key: str, _res: FitResult) -> CoverageMonitor:
    """``levy_core.serving.monitoring.monitor_coverage``: the band's coverage per level and channel on
    the observed queries of the data (every series of new data; the test split otherwise)."""
    return monitor_coverage(_res.fitted, _res.data)


@st.cache_data(show_spinner=False, max_entries=16)
def drift(key: str, _res: FitResult) -> tuple[pd.DataFrame, bool, str]:
    """``drift_report``: channels whose values lie far outside the training
    range or whose sampling is far sparser or denser than in training, laid out by
    ``tables.drift_table``; with whether anything was checked and why not."""
    report = _res.verbs.drift_report(_res.data)
    return tables.drift_table(report.flags), report.checked, report.note


def monitoring_tables(monitor: CoverageMonitor,
                      level: float) -> tuple[pd.DataFrame, pd.DataFrame, tuple[pd.DataFrame, float]]:
    """(verdict per level, verdict per channel and level, (coverage per channel, level) at
    the checked level nearest ``level``, for the chart), laid out by ``tables``."""
    return (tables.guarantee_table(monitor.checks, coverage_label="coverage on this data"),
            tables.channel_verdict_table(monitor.by_channel), tables.channel_coverage_at(monitor.by_channel, level))
