"""The pipeline's results in the user's ids and clock: predictions at a CSV's queries
([`predict_user_queries`][levy_core.pipeline.user_frames.predict_user_queries]), ``evaluate``'s frame as PRED.csv holds it
([`user_predictions`][levy_core.pipeline.user_frames.user_predictions]), bands added at a level ([`with_bands`][levy_core.pipeline.user_frames.with_bands]) and the drift report
([`drift_report`][levy_core.pipeline.user_frames.drift_report])."""

from __future__ import annotations

import pandas as pd

from levy_core.data import DataError, Observations, to_user_time
from levy_core.data.drift import DriftReport, check_drift
from levy_core.model.limits import MAX_HOURS
from levy_core.pipeline.evaluation import ADAPTIVE_BAND_COLUMNS, PRED_COLUMNS
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import query_times
from levy_core.pipeline.predictive import add_bands
from levy_core.pipeline.prepared import ModelData, as_model_data
from levy_core.pipeline.query_context import predict_from_past, user_queries_to_model

__all__ = ["drift_report", "predict_user_queries", "user_predictions", "with_bands"]


def predict_user_queries(fitted: FittedModel, data: Observations | ModelData, queries: pd.DataFrame, *,
                         level: float | None = 0.9, mc_passes: int = 0) -> pd.DataFrame:
    """Predictions at ``n`` queries in the user's series ids and clock (what a CSV of
    queries holds, columns series_id, channel, time): mapped into the model's space once on
    the way in ([`user_queries_to_model`][levy_core.pipeline.query_context.user_queries_to_model]), each
    answered from every observation of its series in ``data`` before its time (forecast)
    or the whole series (interpolate) — for a query after a series' end, the numbers
    ``--horizon`` gives at that time (``levy_core.pipeline.query_context``) — and reported
    back in the user's ids, clock and order: ``n`` rows with the columns of
    ``predict_grid`` and ``n_context`` (band columns at ``level``; None: none). Not the
    held-out split's fixed episodes: those are ``split_predictions``' (``evaluate``,
    ``calibrate``)."""
    data = as_model_data(fitted, data)
    need = {"series_id", "channel", "time"}
    if not need <= set(queries.columns):
        raise DataError(f"queries need the columns {sorted(need)}; got {list(queries.columns)}")
    user = queries[["series_id", "channel", "time"]].reset_index(drop=True)
    user = user.assign(series_id=user["series_id"].astype(str))
    user["time"] = query_times(user["time"])
    far = user["time"].abs() > MAX_HOURS
    if far.any():
        raise DataError(f"a query at time {user['time'][far].iloc[0]:g} lies beyond the ±{MAX_HOURS:g} hours a model's "
                        "clock carries: give query times within the data's span and horizon")
    pred = predict_from_past(fitted, data, user_queries_to_model(data, user), level=level, mc_passes=mc_passes)
    pred["series_id"], pred["time"] = user["series_id"].to_numpy(), user["time"].to_numpy()
    return pred  # attrs["beyond_horizon"]: predict_from_past's warning, if any


def drift_report(fitted: FittedModel, data: Observations | ModelData) -> DriftReport:
    """How ``data`` differs from what ``fitted`` learned from, per channel: values outside
    the training range and sampling far sparser or denser (``levy_core.data.drift``); a report
    that says "not checked" for a model saved before drift statistics were recorded."""
    return check_drift(fitted.drift, data.obs if isinstance(data, ModelData) else data)


def user_predictions(pred: pd.DataFrame, data: ModelData, *, fill_missing: bool = True) -> pd.DataFrame:
    """``evaluate``'s per-query frame as PRED.csv holds it: `PRED_COLUMNS` (and, on
    rolling origins, each query's forecast ``origin`` and the adaptive walk's 90 % bands) in the user's ids and clock — date-times
    for date-time data, numbers in the data's unit otherwise. ``fill_missing``: the MC
    columns exist (empty) without a twin; otherwise only the columns present."""
    user = data.clock.to_user(pred)
    user["time"] = to_user_time(user["series_id"], user["time"], data.obs).to_numpy()
    cols = [c for c in PRED_COLUMNS if fill_missing or c in user.columns]
    if "origin" in user:
        user["origin"] = to_user_time(user["series_id"], user["origin"], data.obs).to_numpy()
        cols.insert(3, "origin")
    for c in cols:
        if c not in user:
            user[c] = float("nan")
    # rolling origins: the adaptive walk's 90 % bands (data units) beside split conformal's
    cols += [c for c in ADAPTIVE_BAND_COLUMNS if c in user.columns]
    return user[cols]


def with_bands(frame: pd.DataFrame, fitted: FittedModel, level: float, kind: str) -> pd.DataFrame:
    """``frame`` (a prediction frame) with ``lower, upper`` (and ``mc_lower, mc_upper``) at
    ``level`` of ``kind`` ("gaussian" or "conformal"), original units; no model pass."""
    return add_bands(frame, fitted.predictives(frame), level, kind)
