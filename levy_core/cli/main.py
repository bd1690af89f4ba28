"""``levy``: fit, predict, evaluate, rank and the dashboard from the command line.

Bad input never produces a traceback: the message goes to stderr as ``error: …`` and the
exit code is 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np
import pandas as pd
from tqdm import tqdm

from levy_core import pipeline  # its names load on first use
from levy_core.cli.advise import add_advise_command
from levy_core.cli.server import LOCAL_HOSTS, cmd_dashboard, streamlit_command
from levy_core.cli.watch import add_watch_command
from levy_core.data import DataError, Observations, parse_duration, read_queries, to_user_time
from levy_core.data.drift import DriftReport, DriftTally
from levy_core.data.series_chunks import DEFAULT_CHUNK_SERIES, read_observations
from levy_core.data.times import TIME_UNITS
from levy_core.model.sizes import AUTO_MEDIUM_MIN_SERIES, MODEL_SIZES
from levy_core.runtime.atomic import terminate_as_exit
from levy_core.runtime.priority import add_nice_option, lower_priority
from levy_core.runtime.threads import add_threads_option, command_threads, using_threads
from levy_core.serving.csv_safety import to_safe_csv
from levy_core.serving.table_writer import TableWriter, atomic_output, refuse_same_file

# What loads PyTorch (the model, the episodes, training, the chunked scoring, the band levels)
# is imported in the command that needs it: `levy --help`, a mistyped option and `levy dashboard`
# (which hands over to Streamlit's own process) do not wait 2-3 s for it.
if TYPE_CHECKING:
    from levy_core.training.train import Progress

__all__ = ["LOCAL_HOSTS", "main", "streamlit_command"]

MAX_POINTS = 10_000
"""Largest ``levy predict --points``: grid points (or horizon steps) per series and channel."""
MAX_MC_PASSES = 1_000
"""Largest ``levy evaluate --mc-passes``: MC-Dropout passes over the test split."""
MAX_CHUNK_SERIES = 100_000
"""Largest ``--chunk-series``: series held in memory at once."""
MAX_EPOCHS = 100_000
"""Largest ``levy fit --epochs``."""


class EpochBars:
    """One tqdm bar per model on stderr: epochs done, train and early-stopping loss, ETA.
    A bar closes when its model stops (the last epoch, or early stopping: no time left)."""

    def __init__(self, stream: IO[str] = sys.stderr) -> None:
        self.stream = stream
        self.bar: tqdm | None = None

    def __call__(self, p: Progress) -> None:
        if self.bar is None or self.bar.desc != p.model:
            self.close()
            self.bar = tqdm(total=p.epochs, desc=p.model, unit="epoch", file=self.stream, leave=True,
                            dynamic_ncols=True)
        self.bar.update(p.epoch - self.bar.n)
        self.bar.set_postfix(loss=f"{p.train_loss:.4g}", val=f"{p.val_loss:.4g}", refresh=True)
        if p.eta_seconds == 0 or p.epoch >= p.epochs:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _load_data(path: str, time_unit: str = "hours", *, dayfirst: bool | None = None,
               date_format: str | None = None) -> Observations:
    if not Path(path).is_file():
        raise DataError(f"{path}: no such file; give the path of a CSV (or .csv.gz) or Parquet file of observations")
    return read_observations(path, time_unit=time_unit, dayfirst=dayfirst, date_format=date_format)


def _dates(args: argparse.Namespace) -> dict[str, bool | str | None]:
    """How dates written as numbers are read: ``--dayfirst`` or ``--date-format`` (neither:
    inferred from the column, refused when it cannot tell)."""
    if args.dayfirst and args.date_format:
        raise ValueError("give --dayfirst or --date-format, not both (the format says where the day is)")
    return {"dayfirst": True if args.dayfirst else None, "date_format": args.date_format}


def _refuse_overwriting(args: argparse.Namespace, **outputs: str | None) -> None:
    """Refuse, before anything is read or written, an output that is an input (the data,
    the model, the queries) or another output."""
    inputs = {"the data file": getattr(args, "data", None), "the model": getattr(args, "model", None),
              "the queries file (--queries)": getattr(args, "queries", None)}
    refuse_same_file(inputs, {f"--{name.replace('_', '-')}": path for name, path in outputs.items()})


def _series_bar(args: argparse.Namespace) -> tqdm:
    """The progress bar of a chunked read on stderr: series done (off with --quiet)."""
    return tqdm(desc=Path(args.data).name, unit=" series", file=sys.stderr, disable=args.quiet, dynamic_ncols=True)


def _report_load(obs) -> None:
    for msg in obs.report.messages:
        print(f"note: {msg}", file=sys.stderr)


def _warn_drift(report: DriftReport) -> None:
    """Each drift flag as ``warning: …`` on stderr (a model without drift statistics: a note)."""
    if not report.checked:
        print(f"note: drift {report.note}", file=sys.stderr)
    for msg in report.flags["message"]:
        print(f"warning: {msg}", file=sys.stderr)


def _cutoff_hours(text: str | None, unit: str) -> float | None:
    """``--cutoff`` in hours, the pipeline's clock: a bare number is in the data's own unit
    (days for ``--time-unit days``; hours since each series' first observation for
    date-time data), a number with a unit (``2y``, ``730d``, ``24h``) is that long after
    time 0 (after each series' first observation for date-time data)."""
    if text is None:
        return None
    try:
        bare = float(text)
    except ValueError:
        return parse_duration(text, unit)
    if not math.isfinite(bare):
        raise DataError(f"--cutoff {text!r} is not a finite number: give a time such as 24 or 730d")
    return bare * TIME_UNITS.get(unit, 1.0)  # date-time data: hours, as the pipeline's clock


def _in_unit(hours: float, unit: str) -> str:
    """A time of the pipeline's clock (hours) in the data's unit, for messages."""
    if unit in TIME_UNITS and unit != "hours":
        return f"{hours / TIME_UNITS[unit]:g} {unit}"
    return f"{hours:g} h"


def _cmd_fit(args: argparse.Namespace) -> int:
    from levy_core.episodes.tasks import TaskConfig
    from levy_core.episodes.transforms import parse_transform
    from levy_core.pipeline.modelfile import check_save_target, file_sha256
    from levy_core.training.train import TrainConfig

    transform = parse_transform(args.transform)  # ValueError naming a bad kind, before any work
    _refuse_overwriting(args, out=args.out)
    check_save_target(args.out)  # a link, a file, a folder that is not a model: refused before the fit
    lower_priority(args.nice)  # before the fit starts torch's threads: they inherit it
    obs = _load_data(args.data, args.time_unit, **_dates(args))
    _report_load(obs)
    print(f"data: {obs.n_series} series, {obs.n_channels} channels, {obs.n_obs} observations", file=sys.stderr)
    unit = obs.report.input_time_unit
    horizon = parse_duration(args.horizon, unit) if args.horizon else None
    season = {"auto": None, "none": 0.0}.get(args.season.lower()) if args.season.lower() in ("auto", "none") \
        else parse_duration(args.season, unit)
    task = TaskConfig(args.task, cutoff=_cutoff_hours(args.cutoff, unit), horizon=horizon, season=season)
    train = TrainConfig(epochs=args.epochs, seed=args.seed, max_seconds=args.max_seconds)
    t0 = time.perf_counter()
    fitted = pipeline.fit(obs, task=task, train=train, size=args.size, train_twin=not args.no_twin,
                          phi=args.phi, progress=None if args.quiet else EpochBars(), transform=transform)
    fitted.source_sha256 = file_sha256(args.data)  # which file, byte for byte, the model was fitted on
    out = fitted.save(args.out)
    tr = fitted.training
    print(f"fitted a {pipeline.size_name(fitted.model_config)} model in {time.perf_counter() - t0:.1f} s: "
          f"split {fitted.split.mode} "
          f"({tr['n_series']['train']}/{tr['n_series']['stopping']}/{tr['n_series']['calibration']}/"
          f"{tr['n_series']['test']} train/early-stopping/calibration/test series), task {fitted.task.kind}"
          + (f" (cut-off {_in_unit(fitted.task.cutoff, unit)})" if fitted.task.kind == "forecast" else "")
          + f", calibration scale c = {fitted.levy_calibration.scale_:.3g}; saved to {out}", file=sys.stderr)
    print(f"offset: {fitted.offset_description()}", file=sys.stderr)
    print(f"transform: {fitted.scaler.transform_note()}", file=sys.stderr)
    for note in (fitted.training_note(), fitted.band_note()):
        if note:
            print(f"note: {note}", file=sys.stderr)
    return 0


def _band_kind(requested: str, fitted: pipeline.FittedModel, level: float) -> str:
    """``auto``: the adaptive band where the fit walked it at this level (rolling origins),
    split conformal otherwise."""
    from levy_core.pipeline.nixtla import band_kind

    return band_kind(requested, fitted, level)


def _predictions(args: argparse.Namespace, fitted: pipeline.FittedModel, obs: Observations,
                 level: float) -> pd.DataFrame:
    """The predictions ``levy predict`` writes, in the user's ids and hours."""
    data = pipeline.prepare(fitted, obs)
    if args.queries and args.horizon:
        raise ValueError("give either --queries or --horizon, not both")
    if args.queries:
        queries = read_queries(args.queries, obs, **_dates(args))
        return _warn_horizon(pipeline.predict_user_queries(fitted, data, queries, level=level))
    if args.horizon:
        hours = parse_duration(args.horizon, obs.report.input_time_unit)
        return _warn_horizon(pipeline.predict_future(fitted, data, hours, n_points=args.points, level=level))
    pred = pipeline.predict_grid(fitted, data, n_points=args.points, level=level)
    skipped = pred.attrs.get("skipped_series", [])
    if skipped:
        print(f"note: skipped {len(skipped)} series with no observation to predict from: {skipped[:5]}",
              file=sys.stderr)
    return data.clock.to_user(pred)


def _warn_horizon(pred: pd.DataFrame) -> pd.DataFrame:
    """Say so when queries lie beyond the horizon a fit on rolling origins was made for."""
    if pred.attrs.get("beyond_horizon"):
        print(f"warning: {pred.attrs['beyond_horizon']}", file=sys.stderr)
    return pred


def _cmd_predict(args: argparse.Namespace) -> int:
    from levy_core.calibration.over_time import GUARANTEE
    from levy_core.pipeline.nixtla import band_levels, level_label
    from levy_core.serving.chunked import predict_file

    levels = band_levels(args.level)  # ValueError: not a fraction in (0, 1) or a percent in [10, 100)
    _refuse_overwriting(args, out=args.out)
    dates = _dates(args)
    fitted = pipeline.load_model(args.model)
    kinds = [_band_kind(args.band, fitted, level) for level in levels]
    drift = DriftTally(fitted.drift)
    if args.queries:  # the queries name series anywhere in the file: read it whole
        obs = _load_data(args.data, args.time_unit, **dates)
        drift.add(obs)
        with TableWriter(args.out) as out:
            out.write(_prediction_table(args, fitted, obs, levels))
        n = out.rows
    else:  # chunks of whole series, each written as it is predicted
        if not Path(args.data).is_file():
            raise DataError(f"{args.data}: no such file; give the path of a CSV (or .csv.gz) or Parquet file")
        with _series_bar(args) as bar:
            n, totals = predict_file(args.data, args.out, lambda obs: _prediction_table(args, fitted, obs, levels),
                                     chunk_series=args.chunk_series, time_unit=args.time_unit, progress=bar.update,
                                     drift=drift, **dates)
        print(f"note: {totals.describe()}", file=sys.stderr)
    _warn_drift(drift.report())
    print(f"note: transform per channel (fitted and calibrated in it, bands mapped back): "
          f"{fitted.scaler.transform_note()}", file=sys.stderr)
    shown = ", ".join(f"{level_label(level)} % {kind}" for level, kind in zip(levels, kinds, strict=True))
    print(f"wrote {n} predictions to {args.out} ({shown} band{'s' if len(levels) > 1 else ''}"
          + (f"; {GUARANTEE}" if "adaptive" in kinds else "") + ")", file=sys.stderr)
    return 0


def _prediction_table(args: argparse.Namespace, fitted: pipeline.FittedModel, obs: Observations,
                      levels: list[float]) -> pd.DataFrame:
    """The rows ``levy predict`` writes for ``obs`` (:func:`_prediction_rows`), refused when a
    band is infinite (a level the calibration split has too few scores for)."""
    table = _prediction_rows(args, fitted, obs, levels)
    _refuse_infinite_bands(table, fitted, levels)
    return table


def _refuse_infinite_bands(table: pd.DataFrame, fitted: pipeline.FittedModel, levels: list[float]) -> None:
    """ValueError when a band column holds ±inf: split conformal bounds a level ``L`` only
    when the calibration split has at least ``L / (1 - L)`` scores, so ±inf would be written."""
    from levy_core.pipeline.nixtla import level_label

    bands = [c for c in table.columns if str(c).startswith(("lower", "upper")) or "-lo-" in str(c)
             or "-hi-" in str(c)]
    infinite = [c for c in bands if pd.api.types.is_float_dtype(table[c]) and np.isinf(table[c].to_numpy()).any()]
    if not infinite:
        return
    conformal = getattr(fitted.levy_calibration, "conformal", None)
    scores = getattr(conformal, "scores_", None)
    n = 0 if scores is None else len(scores)
    most = f"{100 * n / (n + 1):.4g} %" if n else "a lower level"
    shown = ", ".join(f"{level_label(level)} %" for level in levels)
    raise ValueError(f"--level {shown}: the conformal band is infinite ({', '.join(map(str, infinite[:4]))}): the "
                     f"model's calibration split has {n:,} scores, too few to bound the band at this level; give "
                     f"a level of at most {most} (the bound per channel may be lower), or --band gaussian")


def _prediction_rows(args: argparse.Namespace, fitted: pipeline.FittedModel, obs: Observations,
                     levels: list[float]) -> pd.DataFrame:
    """The rows ``levy predict`` writes for ``obs``: the user's ids and clock; one level's
    ``lower, upper``, or every level's (``--format nixtla``: NeuralForecast's columns)."""
    pred = _predictions(args, fitted, obs, levels[0])
    if args.format == "nixtla" or len(levels) > 1:
        return _level_table(args, fitted, obs, pred, levels)
    level = levels[0]
    kind = _band_kind(args.band, fitted, level)
    suffix = {"conformal": "conf", "gaussian": "gauss", "adaptive": "adaptive"}[kind]
    if f"lower_{suffix}" not in pred:
        raise ValueError(f"--band {kind} is not available for this model at level {level}; "
                         "use --band conformal or gaussian")
    pred = pred.rename(columns={f"lower_{suffix}": "lower", f"upper_{suffix}": "upper"})
    pred["time"] = to_user_time(pred["series_id"], pred["time"], obs).to_numpy()
    cols = ["series_id", "channel", "time", *(["horizon_hours"] if "horizon" in pred else []), "mean", "sigma",
            "lower", "upper", "log_evidence", "disagreement", "n_eff"]
    pred = pred.rename(columns={"horizon": "horizon_hours"})
    return pred[cols]


def _level_table(args: argparse.Namespace, fitted: pipeline.FittedModel, obs: Observations, pred: pd.DataFrame,
                 levels: list[float]) -> pd.DataFrame:
    """``levy predict``'s rows at several levels (``lower_<L>, upper_<L>`` per level) or in
    NeuralForecast's convention (``--format nixtla``: ``unique_id, ds, Lévy, Lévy-lo-90, …``)."""
    from levy_core.pipeline.nixtla import level_bands, nixtla_frame

    bands, _ = level_bands(pred, fitted, levels, args.band)
    times = to_user_time(pred["series_id"], pred["time"], obs)
    if args.format == "nixtla":
        return nixtla_frame(pred, times, bands, levels, fitted)
    out = pred.rename(columns={"horizon": "horizon_hours"})
    out["time"] = times.to_numpy()
    cols = ["series_id", "channel", "time", *(["horizon_hours"] if "horizon_hours" in out else []), "mean", "sigma"]
    return pd.concat([out[cols].reset_index(drop=True), bands.reset_index(drop=True),
                      out[["log_evidence", "disagreement", "n_eff"]].reset_index(drop=True)], axis=1)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    _refuse_overwriting(args, json=args.json, predictions=args.predictions)
    dates = _dates(args)
    fitted = pipeline.load_model(args.model)
    obs = _load_data(args.data, args.time_unit, **dates)
    _warn_drift(pipeline.drift_report(fitted, obs))
    data = pipeline.prepare(fitted, obs)
    result, pred = pipeline.evaluate(fitted, data, mc_passes=args.mc_passes)
    result = _json_safe(result)
    if args.predictions:  # each file renamed into place once complete (an error leaves none)
        with atomic_output(args.predictions) as tmp:
            to_safe_csv(pipeline.user_predictions(pred, data), tmp, index=False)
    with atomic_output(args.json) as tmp:
        tmp.write_text(json.dumps(result, indent=2))
    lv = result["levy"]
    line = (f"n_test {result['n_test']}: Lévy MSE {lv['mse']:.4g} CRPS {lv['crps']:.4g} "
            f"cov90 {lv['coverage']['0.9']:.3f} conformal90 {lv['conformal_coverage']['0.9']:.3f} "
            f"({lv['seconds']:.3f} s)")
    if "mc_dropout" in result:
        mc = result["mc_dropout"]
        line += f"; MC-Dropout T={mc['passes']} CRPS {mc['crps']:.4g} ({mc['seconds']:.3f} s)"
    print(line, file=sys.stderr)
    if "adaptive_coverage" in lv:  # rolling origins: the band that holds over time
        print(f"adaptive conformal over {lv['test_origins']} test origins (γ = {lv['gamma']:g}): coverage "
              + ", ".join(f"{100 * float(k):.0f} % {v:.3f} (within ±{lv['adaptive_bound'][k]:.3f} of the level "
                          "in the long run)" for k, v in lv["adaptive_coverage"].items()), file=sys.stderr)
    print(_guarantee_lines(pipeline.coverage_checks(fitted, pred)), file=sys.stderr)
    if result["coverage_note"]["text"]:  # the band outside its per-series window, in plain words
        print(f"note: {result['coverage_note']['text']}", file=sys.stderr)
    return 0


def _guarantee_lines(checks) -> str:
    """Each method's conformal coverage at every level and whether it lies in its window."""
    lines = ["conformal band within level − 3 s.e. .. level + 1/(n+1) + 3 s.e. (per-series s.e.; "
             "binomial s.e. in brackets):"]
    for method, rows in checks.groupby("method", sort=False):
        parts = []
        for r in rows.itertuples():
            series = "?" if r.holds_series is None else ("holds" if r.holds_series else "OUTSIDE")
            binomial = "holds" if r.holds_binomial else "outside"
            parts.append(f"{100 * r.level:.0f} % {r.coverage:.3f} {series} [{binomial}]")
        lines.append(f"  {method}: " + ", ".join(parts))
    return "\n".join(lines)


def _json_safe(obj):
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "item"):
        return _json_safe(obj.item())
    return obj


def _cmd_rank(args: argparse.Namespace) -> int:
    _refuse_overwriting(args, out=args.out)
    dates = _dates(args)
    if not Path(args.data).is_file():
        raise DataError(f"{args.data}: no such file; give the path of a CSV (or .csv.gz) or Parquet file")
    if args.engine == "ray":  # ray is an optional extra: imported only here
        if any(v is not None for v in dates.values()):
            raise ValueError("--dayfirst and --date-format are not read by --engine ray: write the times as ISO "
                             "date-times (2024-01-31 14:05) or numbers, or rank without --engine ray")
        from levy_core.serving.ray_engine import rank_with_ray

        n, seconds = rank_with_ray(args.model, args.data, args.out, workers=args.workers, address=args.address,
                                   time_unit=args.time_unit)
        print(f"scored {n} series in {seconds:.2f} s on Ray ({args.workers} worker{'s' * (args.workers > 1)})")
        return 0
    if args.address is not None:
        raise ValueError("--address names a Ray cluster: give it with --engine ray")
    from levy_core.serving.chunked import rank_file

    fitted = pipeline.load_model(args.model)
    drift = DriftTally(fitted.drift)
    with _series_bar(args) as bar:
        summary = rank_file(fitted, args.data, args.out, chunk_series=args.chunk_series, time_unit=args.time_unit,
                            progress=bar.update, drift=drift, **dates)
    print(f"note: {summary.totals.describe()}", file=sys.stderr)
    _warn_drift(drift.report())
    print(f"scored {summary.n_series} series in {summary.seconds:.2f} s")
    return 0


def _add_data(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", help="CSV of observations (long or wide; .csv.gz accepted) or a .parquet file")
    parser.add_argument("--time-unit", default="hours", choices=["hours", "minutes", "seconds", "days"],
                        help="unit of numeric times (date-times are always read as such)")
    parser.add_argument("--dayfirst", action="store_true", help="dates written as numbers are day first "
                        "(DD/MM/YYYY); default: told from the dates (a day over 12), refused when they cannot tell")
    parser.add_argument("--date-format", default=None, metavar="FMT", help="the strptime format of every "
                        "date-time in the data and queries, e.g. '%%m/%%d/%%Y %%H:%%M' (instead of --dayfirst)")
    add_threads_option(parser)


def _add_model_and_data(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="model directory written by `levy fit`")
    _add_data(parser)


def _add_chunks(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunk-series", type=_bounded_int(1, MAX_CHUNK_SERIES), default=DEFAULT_CHUNK_SERIES,
                        help="series read and processed at a time (memory stays that of one chunk); the rows of "
                        "each series must be together in the file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _positive_int(text: str) -> int:
    """argparse type: a whole number ≥ 1 (e.g. ``--epochs``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value} (nothing would be trained)")
    return value


def _bounded_int(lo: int, hi: int, *, grouped: bool = True):
    """argparse type: a whole number in ``[lo, hi]``; the message names the bounds
    (``grouped``: with thousands separators)."""
    fmt = ",d" if grouped else "d"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {lo:{fmt}} and at most "
                                             f"{hi:{fmt}}, got {text!r}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"must be at least {lo:{fmt}}, got {value:{fmt}} (a whole number from "
                                             f"{lo:{fmt}} to {hi:{fmt}})")
        if value > hi:
            raise argparse.ArgumentTypeError(f"must be at most {hi:{fmt}} (the limit), got {value:{fmt}}")
        return value
    parse.__name__ = f"integer in [{lo}, {hi}]"
    return parse


def _positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0 (``--max-seconds``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds greater than 0, got {text!r} "
                                         "(leave it out for no time budget)")
    return value


def _host(text: str) -> str:
    """argparse type: a host name or address to listen on (no spaces, not empty)."""
    if not text.strip() or any(ch.isspace() for ch in text):
        raise argparse.ArgumentTypeError(f"expected a host name or address such as localhost or 0.0.0.0, "
                                         f"got {text!r}")
    return text


def build_parser() -> argparse.ArgumentParser:
    """The ``levy`` command line's parser: every subcommand and option (the documentation
    site's CLI reference is generated from it)."""
    p = argparse.ArgumentParser(prog="levy", description="Lévy attention: predictions with single-pass "
                                "uncertainty for irregularly sampled time series.")
    sub = p.add_subparsers(dest="command", required=True)

    f = sub.add_parser("fit", help="train the Lévy model and its MC-Dropout twin, calibrate both")
    _add_data(f)
    f.add_argument("--out", required=True, help="model directory to write")
    f.add_argument("--task", choices=["forecast", "interpolate"], default="forecast")
    f.add_argument("--cutoff", default=None, help="forecast: history ends here, a bare number in the data's time "
                   "unit (hours since each series' first observation for date-time data) or with a unit, e.g. 24h, "
                   "730d, 2y (default: the median series midpoint, rounded)")
    f.add_argument("--horizon", default=None, help="forecast: how far ahead to predict after the cut-off (few "
                   "series: after each forecast origin), e.g. 36h, 2w, 5y; a bare number is in the data's unit")
    f.add_argument("--season", default="auto", help="few series: the seasonal offset's period (e.g. 24h, 1y), "
                   "'none', or 'auto' (detected on the training part)")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--epochs", type=_bounded_int(1, MAX_EPOCHS), default=40,
                   help=f"training epochs per model, 1 to {MAX_EPOCHS:,}")
    f.add_argument("--max-seconds", type=_positive_seconds, default=None,
                   help="training time budget per model, in seconds (finite, > 0)")
    f.add_argument("--size", choices=["auto", *MODEL_SIZES], default="auto",
                   help=f"model width; auto: medium on a file of at least {AUTO_MEDIUM_MIN_SERIES:,} "
                   "series (it pays there, at ~5x the fit time), small below")
    f.add_argument("--phi", choices=["rate", "count"], default="rate")
    f.add_argument("--transform", default="auto", help="value transform: auto (log for strictly positive skewed "
                   "channels, log1p with zeros), none, log, log1p, or per channel, e.g. bili=log,albumin=none")
    f.add_argument("--no-twin", action="store_true", help="skip the softmax/MC-Dropout twin")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    add_nice_option(f)  # a fit runs behind interactive work (levy_core.runtime.priority)
    f.set_defaults(func=_cmd_fit)

    pr = sub.add_parser("predict", help="predictions with σ̂ and bands on a dense grid or given queries")
    _add_model_and_data(pr)
    pr.add_argument("--out", required=True)
    pr.add_argument("--level", type=float, nargs="+", default=[0.9], help="band level(s): fractions (0.9) or "
                    "percents as NeuralForecast writes them (90); several give one band each (lower_80, upper_80, …)")
    pr.add_argument("--format", choices=["levy", "nixtla"], default="levy", help="nixtla: NeuralForecast / "
                    "StatsForecast's columns unique_id, ds, [channel,] Lévy, Lévy-lo-90, Lévy-hi-90, … per level")
    pr.add_argument("--band", choices=["auto", "gaussian", "conformal", "adaptive"], default="auto",
                    help="auto: adaptive conformal for a fit on rolling origins (few series), split "
                    "conformal otherwise")
    pr.add_argument("--points", type=_bounded_int(1, MAX_POINTS), default=100,
                    help=f"grid points per series and channel (or horizon steps), 1 to {MAX_POINTS:,}")
    pr.add_argument("--queries", default=None, help="CSV of queries (series_id, channel, time: date-times or "
                    "numbers in the data's unit; series_id / channel may be left out when the data has one)")
    pr.add_argument("--horizon", default=None, help="forecast each series past its last observation, e.g. 36h, "
                    "2w, 5y (a bare number is in the data's unit)")
    _add_chunks(pr)
    pr.set_defaults(func=_cmd_predict)

    e = sub.add_parser("evaluate", help="score Lévy, MC-Dropout, softmax and the 50-draw sampler on the test split")
    _add_model_and_data(e)
    e.add_argument("--json", required=True)
    e.add_argument("--predictions", default=None)
    e.add_argument("--mc-passes", type=_bounded_int(0, MAX_MC_PASSES), default=20,
                   help=f"MC-Dropout passes over the test split, 1 to {MAX_MC_PASSES:,}")
    e.set_defaults(func=_cmd_evaluate)

    r = sub.add_parser("rank", help="rank series by trust in one batched pass")
    _add_model_and_data(r)
    r.add_argument("--out", required=True, help="the ranking to write: .parquet for Parquet, CSV otherwise")
    _add_chunks(r)
    r.add_argument("--engine", choices=["local", "ray"], default="local", help="local: in this process; ray: a "
                   "Ray Data pipeline (pip install 'levy-core[ray]') on a local Ray or the cluster at --address")
    r.add_argument("--address", default=None, help="--engine ray: the Ray cluster to connect to (e.g. "
                   "HEAD:6379, or auto on a node of the cluster); default: start a local Ray")
    r.add_argument("--workers", type=_positive_int, default=2, help="--engine ray: scoring actors (one CPU each; "
                   "a local Ray: at most this machine's cores)")
    r.set_defaults(func=_cmd_rank)
    add_advise_command(sub, _add_model_and_data)
    add_watch_command(sub, _add_model_and_data, _add_chunks)

    d = sub.add_parser("dashboard", help="start the dashboard (on DATA or a bundled sample)")
    d.add_argument("data", nargs="?", default=None)
    d.add_argument("--port", type=_bounded_int(1, 65535, grouped=False), default=8501, help="port to listen on, 1 to 65535")
    d.add_argument("--host", type=_host, default="localhost",
                   help="address to listen on (default localhost: this machine only); 0.0.0.0 lets anyone who "
                   "can reach the port upload data and start fits, with no authentication")
    d.add_argument("--headless", type=lambda s: s.lower() in ("1", "true", "yes"), default=True)
    d.add_argument("--fit-workers", type=_bounded_int(1, cores := os.cpu_count() or 1), metavar="N", help="fits run "
                   f"at once, a thread each, 1 to {cores}; more wait in a queue (default: {max(1, cores // 2)})")
    d.set_defaults(func=cmd_dashboard)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``levy`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:  # a fixed thread count per command, never read from the load (levy_core.runtime.threads);
        # none for `levy dashboard`, which hands over to Streamlit's own process (and so never loads torch here);
        # SIGTERM raises SystemExit(143): temporaries are removed on `kill` as on Ctrl-C
        with (using_threads(command_threads(args.threads)) if hasattr(args, "threads") else contextlib.nullcontext()), \
                terminate_as_exit():
            return int(args.func(args) or 0)
    except (DataError, ValueError) as exc:  # ValueError: bad option values, and a ModelLoadError is one
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        # a calibration step used before the one it needs; its module is loaded if it was raised
        from levy_core.calibration.calibrate import NotFittedError

        if not isinstance(exc, NotFittedError):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
