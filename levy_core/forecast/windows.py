"""The work behind [`LevyForecaster.evaluate`][levy_core.forecast.forecaster.LevyForecaster.evaluate]
and [`backtest`][levy_core.forecast.forecaster.LevyForecaster.backtest]: the pipeline's evaluation as an
[`Evaluation`][levy_core.forecast.results.Evaluation], and the backtest's cut-offs, histories and
scored windows.

Nothing here fits a model (the forecaster does, with its own settings); every score comes
from `levy_core.pipeline.evaluation.method_metrics` and [`levy_core.metrics`][levy_core.metrics]. Each
window scores the last-value baseline beside the model, on the same queries and the same way
(the model's own `LastValueForecaster`, fitted with it).

A backtest window, per series: the cut-off ``c = end - h - (n_windows - 1 - w) · step``
(``end`` the series' last observation, ``w = 0`` the earliest window), the history every
observation at or before ``c``, the held-out queries every observation in ``(c, c + h]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from levy_core.calibration.coverage import coverage_note
from levy_core.data import DATETIME, DataError, Observations, to_user_time, user_time_unit
from levy_core.forecast.results import (
    DATA_UNIT_COLUMNS,
    Evaluation,
    Scores,
    WindowScores,
    band_scores,
    fraction,
)
from levy_core.pipeline import evaluation as pipeline_evaluation
from levy_core.pipeline import modelfile, predict, prepared, user_frames
from levy_core.pipeline.bands import level_label, method_bands, nixtla_frame
from levy_core.pipeline.evaluation import evaluation_note, point_scores
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predictive import Band, Predictive
from levy_core.pipeline.prepared import ModelData

__all__ = ["EVALUATED_BANDS", "ScoredWindow", "Window", "backtest_notes", "cutoffs", "data_unit_table", "evaluation",
           "evaluation_notes",
           "score_window", "user_times", "window", "with_last_value"]

EVALUATED_BANDS = ("auto", "conformal", "gaussian")
"""``auto``: the adaptive walk's figures where the fit walks the level (few series), split
conformal otherwise."""
_RESULT_KEYS = {"levy": "levy", "mc": "mc_dropout", "last_value": "last_value"}


def user_times(series_id: pd.Series | np.ndarray, hours: pd.Series | np.ndarray, obs: Observations) -> pd.Series:
    """Hours on ``obs``' clock in the user's: numbers in the data's unit, or date-times
    (naive when the input's were, so the user's frames join on them)."""
    times = to_user_time(np.asarray(series_id, dtype=object), np.asarray(hours, np.float64), obs)
    if user_time_unit(obs) == DATETIME and not obs.report.input_has_offsets:
        times = times.dt.tz_localize(None)
    return times


def evaluation(fitted: FittedModel, obs: Observations, levels: Sequence[float], band: str,
               mc_passes: int | None) -> Evaluation:
    """``pipeline_evaluation.evaluate`` (without the sampler's draws) as an [`Evaluation`][levy_core.forecast.results.Evaluation] at the
    percent ``levels``; ``band`` one of `EVALUATED_BANDS`."""
    if band not in EVALUATED_BANDS:
        raise ValueError(f"band must be one of {', '.join(EVALUATED_BANDS)} (auto scores the adaptive walk where "
                         f"the fit has one), got {band!r}")
    data = prepared.prepare(fitted, obs)
    result, pred = pipeline_evaluation.evaluate(fitted, data, mc_passes=mc_passes, sampler_draws=0)
    y = pred["y_norm"].to_numpy(np.float64)
    scored = [_method_scores(result[_RESULT_KEYS[p.method.key]], y, p, levels, band)
              for p in fitted.predictives(pred) if _RESULT_KEYS[p.method.key] in result]
    scores = tuple(s for s, _ in scored)
    return Evaluation(n_queries=int(result["n_test"]), levels=tuple(levels),
                      scope="test split" if data.same_data else "every series", scores=scores,
                      predictions=user_frames.user_predictions(pred, data), details=result,
                      notes=evaluation_notes(data, pred, y, scored[0][1], scores[0].band),
                      data_units=data_unit_table(fitted, pred, result))


def data_unit_table(fitted: FittedModel, pred: pd.DataFrame, result: Mapping) -> pd.DataFrame:
    """`Evaluation.data_units`: each method's ``per_channel_data_units`` of ``result``
    (``pipeline_evaluation.evaluate``'s dict) as rows ``method, channel, n_queries, mae, rmse, crps``."""
    rows = [{"method": p.name, "channel": channel, "n_queries": s["n"], "mae": s["mae"], "rmse": s["rmse"],
             "crps": s["crps"]}
            for p in fitted.predictives(pred) if _RESULT_KEYS[p.method.key] in result
            for channel, s in result[_RESULT_KEYS[p.method.key]].get("per_channel_data_units", {}).items()]
    return pd.DataFrame(rows, columns=DATA_UNIT_COLUMNS)


def evaluation_notes(data: ModelData, pred: pd.DataFrame, y: np.ndarray, levy: Band,
                     kinds: Mapping[float, str]) -> tuple[str, ...]:
    """The coverage notes of the Lévy band at each percent level of ``kinds`` (its band kind
    there) on ``evaluate``'s frame ``pred`` (``n`` rows; ``y`` (n,) normalised; ``levy`` the
    Lévy `Band` scored, holding every level that is not adaptive): the sentence of each band
    whose coverage lies outside its per-series window or is worth watching
    (``pipeline_evaluation.evaluation_note``). The adaptive walk's band is checked at 90 %, the level
    ``pred`` holds its bounds for."""
    notes = []
    for lv, kind in kinds.items():
        f = fraction(lv)
        if kind == "adaptive":
            if f != 0.9 or "lower_adaptive_90" not in pred:
                continue
            note = evaluation_note(data, pred, f)
        else:
            note = evaluation_note(data, pred, f, (y, *levy.bounds(f, kind)))
        if note.text:
            notes.append(note.text)
    return tuple(notes)


def backtest_notes(forecasts: pd.DataFrame, levels: Sequence[float]) -> tuple[str, ...]:
    """The coverage notes of a backtest's Lévy bands (``Backtest.forecasts``: ``n`` rows with
    ``unique_id, window, y, Lévy-lo-<L>, Lévy-hi-<L>``) at each percent level, every window's
    queries together: the standard error over series, or over windows for one series."""
    one = forecasts["unique_id"].nunique() < 2
    groups = forecasts["window"].to_numpy() if one else forecasts["unique_id"].astype(str).to_numpy()
    y = forecasts["y"].to_numpy(np.float64)
    notes = []
    for lv in levels:
        label = level_label(fraction(lv))
        note = coverage_note(y, forecasts[f"Lévy-lo-{label}"].to_numpy(np.float64),
                             forecasts[f"Lévy-hi-{label}"].to_numpy(np.float64), level=fraction(lv), groups=groups,
                             unit="windows" if one else "series", what="backtest queries")
        if note.text:
            notes.append(note.text)
    return tuple(notes)


def _method_scores(result: dict, y: np.ndarray, p: Predictive, levels: Sequence[float],
                   band: str) -> tuple[Scores, Band]:
    """One method's row of ``evaluate``'s result, with its band at each percent level: the
    adaptive walk's coverage and width where ``band`` is auto and the method walked the
    level, the band ``band`` names (auto: split conformal) derived once from ``p`` otherwise
    (that `Band`, of the levels not walked, returned beside the row)."""
    walked = result.get("adaptive_coverage", {})
    kinds = {lv: "adaptive" if band == "auto" and str(fraction(lv)) in walked else
             ("conformal" if band == "auto" else band) for lv in levels}
    fixed = [lv for lv in levels if kinds[lv] != "adaptive"]
    derived = p.band([fraction(lv) for lv in fixed], [kinds[lv] for lv in fixed])
    coverage, width = band_scores(y, derived, fixed)
    for lv in levels:
        if kinds[lv] == "adaptive":
            coverage[lv] = float(walked[str(fraction(lv))])
            width[lv] = float(result["adaptive_mean_width"][str(fraction(lv))])
    return Scores(method=p.name, n_queries=len(y), mse=float(result["mse"]), mae=float(result["mae"]),
                  crps=float(result["crps"]), nll=float(result["nll"]),
                  coverage={lv: coverage[lv] for lv in levels}, width={lv: width[lv] for lv in levels},
                  band=kinds), derived


def cutoffs(obs: Observations, n_windows: int, h: float, step: float) -> list[pd.Series]:
    """Each window's cut-off per series (hours on ``obs``' clock; index the series ids),
    earliest window first."""
    ends = obs.frame.groupby("series_id", sort=True)["time"].max()
    return [ends - h - (n_windows - 1 - w) * step for w in range(n_windows)]


@dataclass(frozen=True)
class Window:
    """One backtest window's data.

    Attributes
    ----------
    index : int
        0 for the earliest cut-off.
    cut : pandas.Series
        Series id -> cut-off (hours), the series with a history only.
    history : Observations
        Every observation at or before its series' cut-off, of the series with at least two.
    queries : pandas.DataFrame
        ``series_id, channel, time, value``: the observations within ``h`` after each
        history's cut-off.
    """

    index: int
    cut: pd.Series
    history: Observations
    queries: pd.DataFrame


def window(obs: Observations, index: int, cut: pd.Series, h: float, n_windows: int) -> Window:
    """Window ``index``'s history and queries; ``DataError`` when either is empty."""
    frame = obs.frame
    c = frame["series_id"].map(cut).to_numpy(np.float64)
    t = frame["time"].to_numpy(np.float64)
    before = t <= c
    counts = frame.loc[before, "series_id"].value_counts()
    kept = set(counts.index[counts >= 2])  # a series needs two observations to learn or forecast from
    in_history = frame["series_id"].isin(kept).to_numpy()
    history = frame[before & in_history].reset_index(drop=True)
    queries = frame[(t > c) & (t <= c + h) & in_history].reset_index(drop=True)
    where = f"backtest window {index + 1} of {n_windows}"
    if history.empty:
        raise DataError(f"{where}: no series has two observations before its cut-off (h + the later windows' "
                        "steps before its last observation); use fewer windows, a smaller h or step")
    if queries.empty:
        raise DataError(f"{where}: no series has an observation within h after its cut-off; use a larger h")
    return Window(index, cut[cut.index.isin(kept)], Observations(history, obs.report), queries)


@dataclass(frozen=True)
class ScoredWindow:
    """One backtest window, forecast and scored: what `score_window` returns.

    Attributes
    ----------
    scores : WindowScores
        The Lévy forecasts' scores.
    baselines : tuple of WindowScores
        The trivial forecasters' scores on the same queries (the last value carried
        forward, when the model has its baseline).
    forecasts : pandas.DataFrame
        The window's rows of [`Backtest.to_frame`][levy_core.forecast.results.Backtest.to_frame].
    baseline_forecasts : pandas.DataFrame
        The baselines' forecasts on the same rows: ``last value, last value-lo-<L>, …,
        last value-hi-<L>`` (no columns when there is no baseline).
    note : str or None
        The forecasts' beyond-horizon warning (None within the fitted horizon).
    """

    scores: WindowScores
    baselines: tuple[WindowScores, ...]
    forecasts: pd.DataFrame
    baseline_forecasts: pd.DataFrame
    note: str | None


def score_window(fitted: FittedModel, win: Window, obs: Observations, levels: Sequence[float],
                 band: str) -> ScoredWindow:
    """``fitted``'s forecasts of ``win``'s queries from its history, scored, with the
    last-value baseline's forecasts of the same queries from the same history, scored the
    same way (`with_last_value`)."""
    queries = win.queries
    data = prepared.prepare(fitted, win.history)
    asked = queries[["series_id", "channel", "time"]]  # its bands: method_bands below, once
    pred = with_last_value(fitted, data, predict.predict_after_end(fitted, data, asked, level=None))
    # every band of the window, derived once: Lévy's and the baseline's (its split conformal
    # band where Lévy's is adaptive: it has no walk of its own, and evaluate scores it so too)
    bands = method_bands(pred, fitted, levels, band, ("levy", "last_value"))
    y = fitted.scaler.check_range(queries)  # the truth on the model's normalised scale
    scores = _window_scores(win, y, bands["levy"], levels)
    out = nixtla_frame(pred, user_times(pred["series_id"], pred["time"], obs), bands["levy"], None, fitted)
    at = 3 if "channel" in out else 2
    ids = queries["series_id"].to_numpy()
    out.insert(at, "cutoff", user_times(ids, queries["series_id"].map(win.cut).to_numpy(), obs).array)
    out.insert(at + 1, "window", win.index)
    out.insert(at + 2, "y", queries["value"].to_numpy(np.float64))
    baselines, columns = [], {}
    if "last_value" in bands:
        baselines.append(_window_scores(win, y, bands["last_value"], levels))
        columns = _forecast_columns(bands["last_value"])
    return ScoredWindow(scores, tuple(baselines), out, pd.DataFrame(columns, index=out.index),
                        pred.attrs.get("beyond_horizon"))


def with_last_value(fitted: FittedModel, data: ModelData, pred: pd.DataFrame) -> pd.DataFrame:
    """``pred`` (``predict.predict_after_end``'s frame on ``data``) with the last-value
    baseline's ``lv_mean_norm, lv_std_norm`` at its queries: each query's channel's last
    value in the context the model forecast from (the series' end episode; the channel's
    training mean where it holds none) and the spread the baseline fitted on the training
    part's own errors (`LastValueForecaster`). ``pred``
    itself where the model has no baseline."""
    if fitted.last_value is None or fitted.last_value_calibration is None:
        return pred
    builder, model_ids = data.builder, set(data.builder.series)
    codes = pred["channel"].astype(str).map(builder.channel_index).to_numpy(np.int64)
    mean, spread = np.empty(len(pred)), np.empty(len(pred))
    for sid, rows in pred.groupby("series_id", sort=True).indices.items():
        model_id, _ = data.clock.end_episode(str(sid), model_ids)
        mean[rows], spread[rows] = fitted.last_value.predict_after(builder, model_id, codes[rows])
    out = pred.assign(lv_mean_norm=mean, lv_std_norm=spread)
    out.attrs = dict(pred.attrs)
    return out


def _window_scores(win: Window, y: np.ndarray, band: Band, levels: Sequence[float]) -> WindowScores:
    """One method's scores on the window's queries ``y`` (normalised, (n,)), read from its
    ``band`` (``n`` queries; row ``i`` at the percent ``levels[i]``)."""
    found = point_scores(y, band.mean, band.std)
    coverage, width = band_scores(y, band, levels)
    return WindowScores(window=win.index, n_series=int(win.queries["series_id"].nunique()),
                        n_queries=len(win.queries), mse=float(found["mse"]), mae=float(found["mae"]),
                        crps=float(found["crps"]), nll=float(found["nll"]), coverage=coverage, width=width,
                        band=dict(zip(levels, band.kinds, strict=True)), method=band.method.name)


def _forecast_columns(band: Band) -> dict[str, np.ndarray]:
    """``band``'s forecasts in the data's units as Nixtla names a model's columns: ``<name>,
    <name>-lo-<widest>, …, <name>-hi-<widest>`` (each (n,))."""
    name = band.method.name
    rows = sorted(range(len(band.levels)), key=lambda i: band.levels[i])
    columns = {name: band.mean_original}
    columns.update({f"{name}-lo-{band.labels[i]}": band.lower_original[i] for i in reversed(rows)})
    columns.update({f"{name}-hi-{band.labels[i]}": band.upper_original[i] for i in rows})
    return columns


def calendar(freq: str | None, fitted: modelfile.FittedModel, obs: Observations) -> str | None:
    """The calendar ``predict(h=…)`` steps on: ``freq`` (``LevyForecaster(freq=…)``), else the
    one the fit recorded; None for numeric times (evenly spread steps)."""
    if obs.report.time_origin is None:
        return None
    return freq or (fitted.reading.freq if fitted.reading is not None else None)
