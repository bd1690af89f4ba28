"""Evaluation: both methods scored on the test split (``pipeline_evaluation.evaluate``), the calibration
curves, the conformal guarantee's checks, the coverage per channel, the trust ranking, and
the downloads of the per-query predictions and the ranking.

Cache wrappers keyed by the fit key and the MC-Dropout passes T; tables are laid out by
``tables``, and every CSV goes through ``levy_core.serving.csv_safety.to_safe_csv``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from levy_dashboard.display import tables
from levy_dashboard.display.tables import (
    GUARANTEE_CAPTION,
    backtest_table,
    bound_text,
    data_units_table,
    metrics_table,
)
from levy_dashboard.fitting.fits import FitResult

from levy_core.forecast.verbs import PRED_COLUMNS
from levy_core.serving.csv_safety import to_safe_csv

__all__ = ["GUARANTEE_CAPTION", "backtest_table", "bound_text", "calibration_curves", "channel_coverage", "coverage_note",
           "data_units_table",
           "evaluation", "guarantee_table", "metrics_table", "prediction_csv", "ranking", "ranking_csv", "sampler_check",
           "timing_rows"]


@st.cache_data(show_spinner=False, max_entries=16)
def evaluation(key: str, _res: FitResult, mc_passes: int) -> tuple[dict[str, Any], pd.DataFrame]:
    """``pipeline_evaluation.evaluate`` (JSON metrics, per-query frame) with T MC-Dropout passes, without
    the sampler check (``sampler_check``: only the panels that show it pay for its draws; the
    band panel, the first a user sees, needs the per-query frame alone)."""
    return _res.verbs.evaluate_data(_res.data, mc_passes=mc_passes if _res.has_twin else 0, sampler_draws=0)


@st.cache_data(show_spinner=False, max_entries=16)
def sampler_check(key: str, _res: FitResult) -> dict[str, Any]:
    """``pipeline_evaluation.sampler_check``: the 50-draw sampler's CRPS beside the closed form's."""
    return _res.verbs.sampler_check(_res.data)


def timing_rows(res: FitResult, result: dict[str, Any]) -> pd.DataFrame:
    return tables.timing_rows(res.fitted.training, result)


@st.cache_data(show_spinner=False, max_entries=16)
def calibration_curves(key: str, _res: FitResult, mc_passes: int) -> dict[str, Any]:
    """``pipeline_evaluation.calibration_curves`` on the test split's evaluation."""
    return _res.verbs.calibration_curves(evaluation(key, _res, mc_passes)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def guarantee_table(key: str, _res: FitResult, mc_passes: int) -> pd.DataFrame:
    """``pipeline_evaluation.coverage_checks`` on the test split, laid out by ``tables.guarantee_table``."""
    return tables.guarantee_table(_res.verbs.coverage_checks(evaluation(key, _res, mc_passes)[1]))


@st.cache_data(show_spinner=False, max_entries=32)
def channel_coverage(key: str, _res: FitResult, mc_passes: int, level: float) -> pd.DataFrame:
    """``pipeline_evaluation.channel_coverage`` of the conformal bands at ``level`` on the test split."""
    return _res.verbs.channel_coverage(evaluation(key, _res, mc_passes)[1], level)


def prediction_csv(pred: pd.DataFrame, res: FitResult | None = None) -> bytes:
    """The per-query predictions as ``levy evaluate --predictions`` writes them: in the user's
    ids and clock with ``res`` (each query's forecast ``origin`` on rolling origins), cells a
    spreadsheet would run as formulas neutralised."""
    cols = [c for c in PRED_COLUMNS if c in pred.columns]
    frame = pred[cols] if res is None else res.verbs.user_predictions(pred, res.data, fill_missing=False)
    return to_safe_csv(frame, index=False).encode()


@st.cache_data(show_spinner=False, max_entries=8)
def ranking(key: str, _res: FitResult) -> tuple[pd.DataFrame, float]:
    """``pipeline_ranking.rank``: series by trust, and the seconds it took."""
    return _res.verbs.rank(_res.data)


def ranking_csv(ranked: pd.DataFrame) -> bytes:
    """The trust ranking as a CSV download, cells a spreadsheet would run neutralised."""
    return to_safe_csv(ranked, index=False).encode()


def coverage_note(key: str, res: FitResult, mc_passes: int) -> str | None:
    """The sentence ``levy evaluate`` prints when the Lévy 90 % band's coverage on the test
    split lies outside its per-series standard-error window (``evaluate_data``'s
    ``coverage_note``); None within it."""
    return evaluation(key, res, mc_passes)[0]["coverage_note"]["text"]
