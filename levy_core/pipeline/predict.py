"""Predictions of a fitted model: at the observed queries of a split, on a dense grid, or
at queries the user names; normalised passes converted to original units once, at the end.

Every function takes the data as [`ModelData`][levy_core.pipeline.prepared.ModelData] (or
``Observations``, prepared on the way in) and works in the model's series space.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from levy_core.calibration.query_scale import CONTEXT_COLUMNS
from levy_core.data import DataError, Observations, calendar_duration
from levy_core.data.calendar import calendar_steps
from levy_core.episodes.tasks import EpisodeBuilder
from levy_core.model.batch import Batch
from levy_core.model.limits import MAX_HOURS
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predictive import to_original_units
from levy_core.pipeline.prepared import ModelData, as_model_data
from levy_core.pipeline.user_units import cutoff_of, duration_of, refit_horizon
from levy_core.runtime.budget import MAX_QUERIES_PER_PASS, check_budget

__all__ = ["BATCH_SERIES", "HORIZON_TOLERANCE", "chunks", "horizon_note", "observed_queries", "predict_after_end", "predict_future", "predict_grid",
           "predict_queries", "run_pass", "split_predictions", "with_context", "in_original_units"]

BATCH_SERIES = 64  # series per inference batch
PASS_COLUMNS = ["mean_norm", "sigma_norm", "spread_norm", "log_evidence", "disagreement_norm", "n_eff", "evidence_term",
                "disagreement_term_norm", *CONTEXT_COLUMNS]


HORIZON_TOLERANCE = 0.01  # a query this share of the horizon past it is still within it


def horizon_note(fitted: FittedModel, leads: np.ndarray) -> str | None:
    """A warning when queries lie further ahead than a fit on rolling origins was trained
    and calibrated for (``leads``: hours after the forecast origin, each query); None
    otherwise (and for fits on many series, which have no such horizon).

    Calendar lengths put dates a hair past a horizon written in years or months (ten yearly
    dates after 1 July 1901 end 13.8 h past ``10y``: three leap days), so a query within
    ``HORIZON_TOLERANCE`` of the horizon past it counts as within: the last lead bin the band
    was calibrated on covers it."""
    plan = fitted.split.origin_plan if fitted.split.mode == "origin" else None
    leads = np.asarray(leads, np.float64)
    if not plan or not leads.size:
        return None
    fitted_h = float(plan["horizon"])
    beyond = leads > fitted_h * (1 + HORIZON_TOLERANCE) + 1e-9
    if not beyond.any():
        return None
    far = float(leads[beyond].max())

    def say(hours: float) -> str:  # in the data's unit, or a calendar length
        return duration_of(fitted, hours)

    return (f"{int(beyond.sum())} of {leads.size} queries lie beyond the fitted horizon of "
            f"{say(fitted_h)}, up to {say(far)} after the data's end (the farthest "
            f"{say(far - fitted_h)} past it), while the model was trained and calibrated on "
            f"forecasts up to {say(fitted_h)} ahead: there the forecast and its band extrapolate. "
            f"Refit with --horizon {refit_horizon(fitted, far)} (or more) to forecast that far, or ask for "
            f"times within {say(fitted_h)} of the end.")


def chunks(ids: list[str], size: int = BATCH_SERIES) -> list[list[str]]:
    return [ids[i:i + size] for i in range(0, len(ids), size)]


@torch.no_grad()
def run_pass(fitted: FittedModel, batch: Batch, mc_passes: int = 0) -> dict[str, np.ndarray]:
    """One Lévy pass (+ MC-Dropout with ``mc_passes`` passes) over a batch: arrays (B, M),
    normalised units, named as `PASS_COLUMNS` (+ ``mc_mean_norm, mc_std_norm``).
    Per-head diagnostics are summarised over heads: log of the mean Λ, total tr Σ, mean n_eff."""
    out = fitted.levy(batch)
    n_heads = out.log_evidence.shape[1]
    sigma = out.sigma.numpy()
    # the band's spread: σ̂, times s(h) on rolling origins, or on panels the per-query map s(q)
    spread, context = fitted.band_spread(batch, out)
    res = {"mean_norm": out.mean.numpy(), "sigma_norm": sigma, "spread_norm": spread.astype(sigma.dtype),
           "log_evidence": (torch.logsumexp(out.log_evidence, dim=1) - np.log(n_heads)).numpy(),
           "disagreement_norm": out.disagreement.sum(dim=1).numpy(), "n_eff": out.n_eff.mean(dim=1).numpy(),
           "evidence_term": out.evidence_term.numpy(), "disagreement_term_norm": out.disagreement_term.numpy(),
           **{k: v.astype(sigma.dtype) for k, v in context.items()}}
    if mc_passes and fitted.twin is not None:
        m, s = fitted.twin.mc_dropout(batch, mc_passes, generator_seed=fitted.train_config.seed)
        res["mc_mean_norm"], res["mc_std_norm"] = m.numpy(), s.numpy()
    return res


def in_original_units(fitted: FittedModel, frame: pd.DataFrame, level: float | None) -> pd.DataFrame:
    """Original-unit columns and the bands at ``level`` of every method in ``frame`` (None:
    no band columns, `to_original_units`)."""
    return to_original_units(frame, fitted.predictives(frame), fitted.scaler, level)


def observed_queries(fitted: FittedModel, builder: EpisodeBuilder, ids: list[str], mc_passes: int = 0,
                     batches: list[tuple[Batch, list[np.ndarray]]] | None = None,
                     results: list[dict[str, np.ndarray]] | None = None) -> pd.DataFrame:
    """Predictions at the observed queries of the fixed episodes of ``ids`` (normalised units).
    ``batches``/``results``: already built batches of ``chunks(ids)`` and their passes."""
    parts = chunks(ids)
    batches = batches or [builder.batch(chunk) for chunk in parts]
    rows: list[pd.DataFrame] = []
    for i, (chunk, (batch, query_rows)) in enumerate(zip(parts, batches, strict=True)):
        res = results[i] if results is not None else run_pass(fitted, batch, mc_passes)
        for b, sid in enumerate(chunk):
            m = len(query_rows[b])
            s = builder.series[sid]
            positions = np.searchsorted(s.row, query_rows[b])
            part = {"series_id": sid, "channel": [fitted.channels[c] for c in s.channel[positions]],
                    "time": s.time[positions], "y_norm": batch.target[b, :m].numpy()}
            part.update({k: v[b, :m] for k, v in res.items()})
            rows.append(pd.DataFrame(part))
    cols = ["series_id", "channel", "time", "y_norm", *PASS_COLUMNS] + (
        ["mc_mean_norm", "mc_std_norm"] if mc_passes and fitted.twin else [])
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=cols)


def split_predictions(fitted: FittedModel, data: Observations | ModelData, role: str = "test", *,
                      mc_passes: int = 0, level: float = 0.9) -> pd.DataFrame:
    """Predictions at the observed queries of one split role ("train", "calibration",
    "test"), or of every series when the data is not the data the model was fitted on: the
    Lévy model, MC-Dropout with ``mc_passes`` passes, and the last-value baseline."""
    data = as_model_data(fitted, data)
    ids = data.series_in(role)  # usable: at least one context observation and one query
    if not ids:
        raise DataError(f"no {role} series with both context and observations to predict")
    frame = observed_queries(fitted, data.builder, ids, mc_passes)
    if fitted.last_value is not None:  # the baseline beside the model, query by query
        frame["lv_mean_norm"], frame["lv_std_norm"] = fitted.last_value.predict(data.builder, ids)
    return in_original_units(fitted, frame, level)


def grid_times(fitted: FittedModel, times: np.ndarray, n_points: int) -> np.ndarray:
    """A dense grid over what the band chart shows: from the series' first observation (or
    the forecast origin, if earlier) to the end of its prediction range — relative to the
    data, so a shifted clock gives the same grid shifted."""
    lo, hi = fitted.prediction_range(times)
    start = min(lo, float(times.min()))
    return np.linspace(start, hi, n_points)


def predict_grid(fitted: FittedModel, data: Observations | ModelData, series_ids: list[str] | None = None,
                 channels: list[str] | None = None, *, n_points: int = 200, level: float = 0.9,
                 mc_passes: int = 0) -> pd.DataFrame:
    """Mean, σ̂, bands and diagnostics on a dense time grid per series and channel.

    Returns one row per (series, channel, grid time) with columns ``series_id, channel,
    time, mean, sigma, pred_std, lower_gauss, upper_gauss, lower_conf, upper_conf,
    log_evidence, disagreement, n_eff, evidence_term, disagreement_term`` (+ ``mc_mean,
    mc_std, mc_lower, mc_upper`` when ``mc_passes``), original units, and the normalised
    columns they came from; model series space.
    """
    if n_points < 2:
        raise ValueError(f"n_points must be at least 2, got {n_points}")
    data = as_model_data(fitted, data)
    builder = data.builder
    ids = series_ids if series_ids is not None else sorted(builder.series)
    missing = [s for s in ids if s not in builder.series]
    if missing:
        raise DataError(f"unknown series: {missing[:5]}")
    ids, skipped = with_context(fitted, builder, ids, strict=series_ids is not None)
    chans = channels if channels is not None else fitted.channels
    codes = np.array([builder.channel_index[c] for c in chans], np.int64)
    frames = []
    for chunk in chunks(ids, 16):
        items = []
        for sid in chunk:
            t = grid_times(fitted, builder.series[sid].time, n_points)
            items.append((sid, np.tile(t, len(codes)), np.repeat(codes, len(t))))
        res = run_pass(fitted, builder.query_batch(items), mc_passes)
        for b, (sid, t, c) in enumerate(items):
            part = {"series_id": sid, "channel": [fitted.channels[i] for i in c], "time": t}
            part.update({k: v[b, :len(t)] for k, v in res.items()})
            frames.append(pd.DataFrame(part))
    df = in_original_units(fitted, pd.concat(frames, ignore_index=True), level)
    df.attrs["skipped_series"] = skipped
    return df


def with_context(fitted: FittedModel, builder: EpisodeBuilder, ids: list[str],
                 strict: bool) -> tuple[list[str], list[str]]:
    """Split ``ids`` into series with at least one context observation and those without
    (which have no evidence at all). ``strict``: refuse the latter with a DataError."""
    empty = [s for s in ids if len(builder.split_indices(s)[0]) == 0]
    if empty and (strict or len(empty) == len(ids)):
        where = (f"before the forecast cut-off ({cutoff_of(fitted)})" if fitted.task.kind == "forecast"
                 else "outside the hold-out")
        raise DataError(f"{len(empty)} series have no observation {where}, so nothing to predict from: "
                        f"{empty[:5]}; remove them or fit with an earlier cut-off")
    empty_set = set(empty)
    return [s for s in ids if s not in empty_set], empty


def predict_queries(fitted: FittedModel, data: Observations | ModelData, queries: pd.DataFrame, *,
                    level: float = 0.9, mc_passes: int = 0) -> pd.DataFrame:
    """Predictions at ``queries`` (columns series_id, channel, time) **in the model's series
    space**, each from its series' **fixed episode** (the held-out split's context: before the
    cut-off, or outside the hold-out), as ``evaluate`` and the dashboard's held-out points
    see it; rows in the order given. A user's queries see every observation before them
    instead: [`predict_user_queries`][levy_core.pipeline.user_frames.predict_user_queries]."""
    need = {"series_id", "channel", "time"}
    if not need <= set(queries.columns):
        raise DataError(f"queries need the columns {sorted(need)}; got {list(queries.columns)}")
    data = as_model_data(fitted, data)
    builder = data.builder
    q = queries[["series_id", "channel", "time"]].copy()
    q["series_id"], q["channel"] = q["series_id"].astype(str), q["channel"].astype(str)
    q["time"] = query_times(q["time"])
    refuse_unknown(q, builder)
    with_context(fitted, builder, sorted(set(q["series_id"])), strict=True)
    order = np.arange(len(q))
    frames, groups = [], list(q.assign(order=order).groupby("series_id", sort=True))
    for start in range(0, len(groups), BATCH_SERIES):
        part_groups = groups[start:start + BATCH_SERIES]
        items = [(sid, g["time"].to_numpy(np.float64), g["channel"].map(builder.channel_index).to_numpy(np.int64))
                 for sid, g in part_groups]
        res = run_pass(fitted, builder.query_batch(items), mc_passes)
        for b, ((sid, t, _), (_, g)) in enumerate(zip(items, part_groups, strict=True)):
            part = {"order": g["order"].to_numpy(), "series_id": sid, "channel": g["channel"].to_numpy(),
                    "time": t}
            part.update({k: v[b, :len(t)] for k, v in res.items()})
            frames.append(pd.DataFrame(part))
    df = pd.concat(frames, ignore_index=True).sort_values("order").drop(columns="order").reset_index(drop=True)
    out = in_original_units(fitted, df, level)
    note = horizon_note(fitted, df["time"].to_numpy())  # model time is the lead on rolling origins
    if note:
        out.attrs["beyond_horizon"] = note
    return out


def checked_queries(queries: pd.DataFrame, what: str) -> pd.DataFrame:
    """``queries``' ``series_id, channel, time`` (ids and channels as text, times as float
    hours), renumbered 0..n-1; DataError naming what is missing, or for none to ``what``."""
    need = {"series_id", "channel", "time"}
    if not need <= set(queries.columns):
        raise DataError(f"queries need the columns {sorted(need)}; got {list(queries.columns)}")
    if queries.empty:
        raise DataError(f"no queries to {what}")
    q = queries[["series_id", "channel", "time"]].reset_index(drop=True)
    return q.assign(series_id=q["series_id"].astype(str), channel=q["channel"].astype(str), time=query_times(q["time"]))


def refuse_unknown(queries: pd.DataFrame, builder: EpisodeBuilder) -> None:
    """DataError naming the queries' series without observations in the data, or channels
    the model was not trained on (``queries``: ``series_id, channel`` as text)."""
    unknown = sorted(set(queries["series_id"]) - set(builder.series))
    if unknown:
        raise DataError(f"queries name series with no observations in the data: {unknown[:5]}")
    bad = sorted(set(queries["channel"]) - set(builder.channel_index))
    if bad:
        raise DataError(f"queries name channels the model was not trained on: {bad[:5]}")


def query_times(times: pd.Series) -> pd.Series:
    """Query times as float hours; anything else is refused, quoting the CSV lines."""
    numbers = pd.to_numeric(times, errors="coerce")
    if numbers.isna().any():
        bad = np.flatnonzero(numbers.isna().to_numpy())[:5]
        raise DataError(f"column 'time' of the queries must hold numbers (hours); lines "
                        f"{[int(i) + 2 for i in bad]} hold {[str(v) for v in times.iloc[bad]]}")
    return numbers.astype(float)


def predict_future(fitted: FittedModel, data: Observations | ModelData, horizon: float, *, n_points: int = 50,
                   series_ids: list[str] | None = None, channels: list[str] | None = None,
                   level: float | None = 0.9, mc_passes: int = 0, freq: str | None = None) -> pd.DataFrame:
    """Forecasts beyond each series' last observation, up to ``horizon`` hours after it,
    from every observation of the series' latest episode; **user ids and clock**.

    Returns one row per (series, channel, step) with ``series_id, channel, time`` (the
    user's hours), ``horizon`` (hours after the series' last observation) and the columns of
    [`predict_grid`][levy_core.pipeline.predict.predict_grid]. ``channels``: default, the channels each series has observed.
    ``freq``: date-time data only, the calendar the steps fall on (a pandas alias such as
    ``W-SAT`` or ``MS``: `levy_core.data.calendar.calendar_steps`, at most ``n_points``
    of them per series); None: ``n_points`` steps evenly over the horizon. ``level``: of the
    band columns (None: none, for a caller that derives its own bands with
    ``pipeline.bands.method_bands``).
    """
    if not (np.isfinite(horizon) and horizon > 0):
        raise ValueError(f"horizon must be a positive number of hours, got {horizon}")
    if horizon > MAX_HOURS:
        raise DataError(f"horizon {horizon:g} h is beyond the {MAX_HOURS:g} hours (about 11,000 years) a model's "
                        "clock carries: give a horizon such as 36h or 2w")
    if n_points < 1:
        raise ValueError(f"n_points must be at least 1, got {n_points}")
    data = as_model_data(fitted, data)
    builder, model_ids = data.builder, set(data.builder.series)
    user_ids = series_ids if series_ids is not None else sorted(data.obs.frame["series_id"].unique())
    bad = sorted(set(channels or []) - set(builder.channel_index))
    if bad:
        raise DataError(f"channels the model was not trained on: {bad[:5]}")
    n_channels = len(channels) if channels is not None else len(fitted.channels)
    per_series = check_budget("predict", {"points": n_points, "channels": n_channels, "MC passes": max(1, mc_passes)},
                              "give fewer points (horizon steps), a shorter list of channels or fewer MC passes")
    batch = max(1, min(16, MAX_QUERIES_PER_PASS // per_series))  # series per pass: the peak stays flat
    even = np.linspace(0.0, horizon, n_points + 1)[1:]
    items, meta = [], []
    for sid in user_ids:
        model_id, origin = data.clock.end_episode(str(sid), model_ids)
        s = builder.series[model_id]
        codes = (np.array([builder.channel_index[c] for c in channels], np.int64) if channels is not None
                 else np.unique(s.channel))
        last = float(s.time.max())  # the model time of the series' last observation
        steps = even if freq is None else calendar_future(data.obs, str(sid), origin + last, horizon, freq, n_points)
        items.append((model_id, np.arange(len(s.time)), np.tile(last + steps, len(codes)), np.repeat(codes, len(steps))))
        meta.append((str(sid), origin, last))
    frames = []
    for start in range(0, len(items), batch):
        part_items = items[start:start + batch]
        res = run_pass(fitted, builder.collate(part_items), mc_passes)
        for b, ((_, _, t, c), (sid, origin, last)) in enumerate(zip(part_items, meta[start:start + batch],
                                                                    strict=True)):
            part = {"series_id": sid, "channel": [fitted.channels[i] for i in c], "time": origin + t,
                    "horizon": t - last}
            part.update({k: v[b, :len(t)] for k, v in res.items()})
            part["lead"] = t  # model time: hours after the end episode's origin
            frames.append(pd.DataFrame(part))
    df = pd.concat(frames, ignore_index=True)
    note = horizon_note(fitted, df.pop("lead").to_numpy())
    out = in_original_units(fitted, df, level)
    if note:
        out.attrs["beyond_horizon"] = note
    return out


def calendar_future(obs: Observations, series_id: str, last: float, horizon: float, freq: str,
                    n_points: int) -> np.ndarray:
    """The steps (hours after the series' last observation, ``last`` user hours) on the
    calendar ``freq`` within ``horizon``; DataError for numeric times or a horizon shorter
    than one step."""
    origin = (obs.report.time_origin or {}).get(series_id)
    if origin is None:
        raise DataError(f"freq {freq!r} is for date-time data; these times are numbers in "
                        f"{obs.report.input_time_unit}, which have no calendar (leave freq out)")
    end = pd.to_datetime(origin, utc=True) + pd.Timedelta(microseconds=round(last * 3.6e9))
    steps = calendar_steps(end, horizon, freq, n_points)
    if not len(steps):
        raise DataError(f"horizon {calendar_duration(horizon)} is shorter than one step of the data's calendar "
                        f"({freq}): give a horizon of at least one step, or another --freq / freq=")
    return steps


def predict_after_end(fitted: FittedModel, data: Observations | ModelData, queries: pd.DataFrame, *,
                      level: float | None = 0.9, mc_passes: int = 0) -> pd.DataFrame:
    """Forecasts at given times past each series' end, from every observation of the
    series' latest episode (the context [`predict_future`][levy_core.pipeline.predict.predict_future] forecasts from); **user ids
    and clock**, rows in the order given.

    Parameters
    ----------
    fitted : FittedModel
    data : Observations or ModelData
        The observations to forecast from (a backtest's history up to its cut-off).
    queries : pandas.DataFrame
        ``n`` rows of ``series_id, channel, time`` (the user's ids, hours on the data's
        clock), normally after the series' last observation in ``data``.
    level : float or None
        The level of the frame's band columns; None: none (a caller that derives its own
        with ``pipeline.bands.method_bands``, as a backtest window does).
    mc_passes : int
        MC-Dropout passes (0: none).

    Returns
    -------
    pandas.DataFrame
        ``n`` rows: ``series_id, channel, time`` as given, ``horizon`` (hours after the
        series' last observation) and the columns of [`predict_grid`][levy_core.pipeline.predict.predict_grid];
        ``attrs["beyond_horizon"]`` as [`predict_future`][levy_core.pipeline.predict.predict_future] sets it.
    """
    q = checked_queries(queries, "forecast at")
    data = as_model_data(fitted, data)
    builder, model_ids = data.builder, set(data.builder.series)
    unknown = sorted(set(q["series_id"]) - set(data.obs.series_ids))
    if unknown:
        raise DataError(f"queries name series with no observations in the data: {unknown[:5]}")
    bad = sorted(set(q["channel"]) - set(builder.channel_index))
    if bad:
        raise DataError(f"queries name channels the model was not trained on: {bad[:5]}")
    items, meta = [], []
    for sid, g in q.groupby("series_id", sort=True):
        model_id, origin = data.clock.end_episode(str(sid), model_ids)
        s = builder.series[model_id]
        t = g["time"].to_numpy(np.float64) - origin  # model time: hours after the end episode's origin
        items.append((model_id, np.arange(len(s.time)), t, g["channel"].map(builder.channel_index).to_numpy(np.int64)))
        meta.append((g.index.to_numpy(), float(s.time.max())))
    frames = []
    for start in range(0, len(items), 16):
        part_items = items[start:start + 16]
        res = run_pass(fitted, builder.collate(part_items), mc_passes)
        for b, ((_, _, t, _), (rows, last)) in enumerate(zip(part_items, meta[start:start + 16], strict=True)):
            part = {"order": rows, "horizon": t - last, "lead": t}
            part.update({k: v[b, :len(t)] for k, v in res.items()})
            frames.append(pd.DataFrame(part))
    df = pd.concat(frames, ignore_index=True).sort_values("order").reset_index(drop=True)
    df = pd.concat([q, df.drop(columns="order")], axis=1)
    note = horizon_note(fitted, df.pop("lead").to_numpy())
    out = in_original_units(fitted, df, level)
    if note:
        out.attrs["beyond_horizon"] = note
    return out
