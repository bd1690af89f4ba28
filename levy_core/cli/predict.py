"""``levy predict MODEL DATA --out PRED``: predictions with σ̂ and bands on a grid, past each
series' end (``--horizon``) or at given queries, in the user's ids and clock; DATA read as the fit
read its data (its columns, time unit and dates: [`RecordedReading`][levy_core.data.RecordedReading]) unless
told otherwise."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from levy_core.cli.arguments import add_chunks, add_model_and_data, bounded_int
from levy_core.cli.inputs import (
    dates,
    load_data,
    mapping_for,
    read_options,
    refuse_overwriting,
    series_bar,
    warn_drift,
)
from levy_core.data import DataError, Observations, parse_duration, read_queries, to_user_time
from levy_core.data.calendar import check_freq
from levy_core.data.drift import DriftTally
from levy_core.data.recorded import ReadOptions
from levy_core.serving.table_writer import TableWriter

if TYPE_CHECKING:  # the forecaster loads PyTorch: imported when the command runs
    from levy_core.forecast.forecaster import LevyForecaster

__all__ = ["MAX_POINTS", "add_predict_command", "refuse_infinite_bands", "run_predict"]

MAX_POINTS = 10_000
"""Largest ``levy predict --points``: grid points (or horizon steps) per series and channel."""


def _predictions(args: argparse.Namespace, forecaster: LevyForecaster, obs: Observations,
                 level: float, options: ReadOptions) -> pd.DataFrame:
    """The predictions ``levy predict`` writes, in the user's ids and hours."""
    data = forecaster.prepare(obs)
    if args.queries and args.horizon:
        raise ValueError("give either --queries or --horizon, not both")
    if args.queries:
        queries = read_queries(args.queries, obs, dayfirst=options.dayfirst, date_format=options.date_format)
        return _warn_horizon(forecaster.predict_user_queries(data, queries, level=level))
    if args.horizon:
        hours = parse_duration(args.horizon, obs.report.input_time_unit)
        return _warn_horizon(forecaster.predict_future(data, hours, n_points=args.points, level=level,
                                                       freq=_calendar(args, forecaster, obs)))
    pred = forecaster.predict_grid(data, n_points=args.points, level=level)
    skipped = pred.attrs.get("skipped_series", [])
    if skipped:
        print(f"note: skipped {len(skipped)} series with no observation to predict from: {skipped[:5]}",
              file=sys.stderr)
    return data.clock.to_user(pred)


def _calendar(args: argparse.Namespace, forecaster: LevyForecaster, obs: Observations) -> str | None:
    """The calendar ``--horizon``'s steps fall on: ``--freq``, else the one the fit recorded
    (date-time data only; None: evenly spread)."""
    if args.freq is not None:
        if obs.report.time_origin is None:
            raise DataError(f"--freq {args.freq}: the data's times are numbers in {obs.report.input_time_unit}, "
                            "which have no calendar; --freq is for date-time data (leave it out)")
        return check_freq(args.freq)
    reading = forecaster.fitted.reading
    recorded = reading.freq if reading is not None else None
    return recorded if obs.report.time_origin is not None else None


def _with_horizon(pred: pd.DataFrame, forecaster: LevyForecaster) -> pd.DataFrame:
    """``horizon`` (hours after the series' end) as ``horizon_<unit>`` in the user's unit
    (``horizon_days`` for data in days; ``horizon_hours`` for hours)."""
    if "horizon" not in pred:
        return pred
    out = pred.rename(columns={"horizon": forecaster.horizon_column()})
    out[forecaster.horizon_column()] = forecaster.in_duration_unit(pred["horizon"].to_numpy())
    return out


def _warn_horizon(pred: pd.DataFrame) -> pd.DataFrame:
    """Say so when queries lie beyond the horizon a fit on rolling origins was made for."""
    if pred.attrs.get("beyond_horizon"):
        print(f"warning: {pred.attrs['beyond_horizon']}", file=sys.stderr)
    return pred


def run_predict(args: argparse.Namespace) -> int:
    """The ``predict`` subcommand."""
    from levy_core.calibration.over_time import GUARANTEE
    from levy_core.forecast.forecaster import LevyForecaster
    from levy_core.serving.chunked import predict_file

    levels = LevyForecaster.band_levels(args.level)  # ValueError: not a fraction in (0, 1) or a percent in [10, 100)
    refuse_overwriting(args, out=args.out)
    dates(args)  # --dayfirst with --date-format: refused before the model is read
    forecaster = LevyForecaster.open_model(args.model)
    fitted = forecaster.fitted
    options = read_options(args, fitted.reading)  # the fit's columns, unit and dates unless told otherwise
    kinds = [forecaster.band_kind(args.band, level) for level in levels]
    drift = DriftTally(fitted.drift)
    if args.queries:  # the queries name series anywhere in the file: read it whole
        obs = load_data(args.data, options)
        drift.add(obs)
        with TableWriter(args.out) as out:
            out.write(_prediction_table(args, forecaster, obs, levels, options))
        n = out.rows
    else:  # chunks of whole series, each written as it is predicted
        if not Path(args.data).is_file():
            raise DataError(f"{args.data}: no such file; give the path of a CSV (or .csv.gz) or Parquet file")
        with series_bar(args) as bar:
            n, totals = predict_file(args.data, args.out,
                                     lambda obs: _prediction_table(args, forecaster, obs, levels, options),
                                     chunk_series=args.chunk_series, mapping=mapping_for(args.data, options.columns),
                                     time_unit=options.time_unit, progress=bar.update, drift=drift,
                                     dayfirst=options.dayfirst, date_format=options.date_format)
        print(f"note: {totals.describe()}", file=sys.stderr)
    warn_drift(drift.report())
    print(f"note: transform per channel (fitted and calibrated in it, bands mapped back): "
          f"{fitted.scaler.transform_note()}", file=sys.stderr)
    shown = ", ".join(f"{forecaster.level_label(level)} % {kind}" for level, kind in zip(levels, kinds, strict=True))
    print(f"wrote {n} predictions to {args.out} ({shown} band{'s' if len(levels) > 1 else ''}"
          + (f"; {GUARANTEE}" if "adaptive" in kinds else "") + ")", file=sys.stderr)
    return 0


def _prediction_table(args: argparse.Namespace, forecaster: LevyForecaster, obs: Observations,
                      levels: list[float], options: ReadOptions) -> pd.DataFrame:
    """The rows ``levy predict`` writes for ``obs`` (`_prediction_rows`), refused when a
    band is infinite (a level the model's calibration has too few scores for)."""
    table = _prediction_rows(args, forecaster, obs, levels, options)
    refuse_infinite_bands(table, forecaster, levels)
    return table


def refuse_infinite_bands(table: pd.DataFrame, forecaster: LevyForecaster, levels: list[float]) -> None:
    """ValueError when a band column holds ±inf: split conformal bounds a level ``L`` only
    when the calibration the rows take (`FittedModel.conformal_scores_count`) has at least
    ``L / (1 - L)`` scores, so ±inf would be written."""
    bands = [c for c in table.columns if str(c).startswith(("lower", "upper")) or "-lo-" in str(c)
             or "-hi-" in str(c)]
    infinite = [c for c in bands if pd.api.types.is_float_dtype(table[c]) and np.isinf(table[c].to_numpy()).any()]
    if not infinite:
        return
    ids = table["series_id"] if "series_id" in table else table.get("unique_id", pd.Series(dtype=str))
    n = forecaster.fitted.conformal_scores_count(ids.astype(str).unique())  # the band these series take
    most = f"{100 * n / (n + 1):.4g} %" if n else "a lower level"
    shown = ", ".join(f"{forecaster.level_label(level)} %" for level in levels)
    raise ValueError(f"--level {shown}: the conformal band is infinite ({', '.join(map(str, infinite[:4]))}): the "
                     f"model's calibration has {n:,} scores, too few to bound the band at this level; give "
                     f"a level of at most {most} (the bound per channel may be lower), or --band gaussian")


def _prediction_rows(args: argparse.Namespace, forecaster: LevyForecaster, obs: Observations,
                     levels: list[float], options: ReadOptions) -> pd.DataFrame:
    """The rows ``levy predict`` writes for ``obs``: the user's ids and clock; one level's
    ``lower, upper``, or every level's (``--format nixtla``: NeuralForecast's columns)."""
    pred = _predictions(args, forecaster, obs, levels[0], options)
    if args.format == "nixtla" or len(levels) > 1:
        return _level_table(args, forecaster, obs, pred, levels)
    level = levels[0]
    kind = forecaster.band_kind(args.band, level)
    suffix = {"conformal": "conf", "gaussian": "gauss", "adaptive": "adaptive"}[kind]
    if f"lower_{suffix}" not in pred:
        raise ValueError(f"--band {kind} is not available for this model at level {level}; "
                         "use --band conformal or gaussian")
    pred = pred.rename(columns={f"lower_{suffix}": "lower", f"upper_{suffix}": "upper"})
    pred["time"] = to_user_time(pred["series_id"], pred["time"], obs).to_numpy()
    cols = ["series_id", "channel", "time", *([forecaster.horizon_column()] if "horizon" in pred else []), "mean",
            "sigma", "lower", "upper", "log_evidence", "disagreement", "n_eff"]
    return _with_horizon(pred, forecaster)[cols]


def _level_table(args: argparse.Namespace, forecaster: LevyForecaster, obs: Observations, pred: pd.DataFrame,
                 levels: list[float]) -> pd.DataFrame:
    """``levy predict``'s rows at several levels (``lower_<L>, upper_<L>`` per level) or in
    NeuralForecast's convention (``--format nixtla``: ``unique_id, ds, Lévy, Lévy-lo-90, …``)."""
    bands, _ = forecaster.level_bands(pred, levels, args.band)
    times = to_user_time(pred["series_id"], pred["time"], obs)
    if args.format == "nixtla":
        return forecaster.nixtla_frame(pred, times, bands, levels)
    out = _with_horizon(pred, forecaster)
    out["time"] = times.to_numpy()
    cols = ["series_id", "channel", "time", *([forecaster.horizon_column()] if "horizon" in pred else []), "mean", "sigma"]
    return pd.concat([out[cols].reset_index(drop=True), bands.reset_index(drop=True),
                      out[["log_evidence", "disagreement", "n_eff"]].reset_index(drop=True)], axis=1)


def add_predict_command(sub: argparse._SubParsersAction) -> None:
    """Register ``levy predict`` on the CLI's subparsers."""
    pr = sub.add_parser("predict", help="predictions with σ̂ and bands on a dense grid or given queries",
                        allow_abbrev=False)
    add_model_and_data(pr)
    pr.add_argument("--out", required=True)
    pr.add_argument("--level", type=float, nargs="+", default=[0.9], help="band level(s): fractions (0.9) or "
                    "percents as NeuralForecast writes them (90); several give one band each (lower_80, upper_80, …)")
    pr.add_argument("--format", choices=["levy", "nixtla"], default="levy", help="nixtla: NeuralForecast / "
                    "StatsForecast's columns unique_id, ds, [channel,] Lévy, Lévy-lo-90, Lévy-hi-90, … per level")
    pr.add_argument("--band", choices=["auto", "gaussian", "conformal", "adaptive"], default="auto",
                    help="auto: adaptive conformal for a fit on rolling origins (few series), split "
                    "conformal otherwise")
    pr.add_argument("--points", type=bounded_int(1, MAX_POINTS), default=100,
                    help=f"grid points per series and channel (or horizon steps), 1 to {MAX_POINTS:,}")
    pr.add_argument("--queries", default=None, help="CSV of queries (series_id, channel, time: date-times or "
                    "numbers in the data's unit; series_id / channel may be left out when the data has one)")
    pr.add_argument("--horizon", default=None, help="forecast each series past its last observation, e.g. 36h, "
                    "2w, 5y (a bare number is in the data's unit); the column horizon_<unit> says how far, in the "
                    "data's unit (horizon_days for days)")
    pr.add_argument("--freq", default=None, help="date-time data: the calendar --horizon's steps fall on, a pandas "
                    "alias such as W-SAT (weekly on Saturdays), MS (month starts), ME, B (business days), D, h; "
                    "default: the one levy fit recorded (found in the data), evenly spread for irregular data")
    add_chunks(pr)
    pr.set_defaults(func=run_predict)
