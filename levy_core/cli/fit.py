"""``levy fit DATA --out MODEL``: train the Lévy model (and its twin), calibrate, save.

The columns (``--id``, ``--time``, ``--value``/``--channel`` or ``--channels``), the time
unit and the date options are recorded in ``model.json`` ([`RecordedReading`][levy_core.data.RecordedReading])
and reused by every later command.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import IO, TYPE_CHECKING

from tqdm import tqdm

from levy_core.cli.arguments import add_data, bounded_int, positive_seconds
from levy_core.cli.inputs import (
    load_data,
    read_options,
    recorded_reading,
    refuse_overwriting,
    report_load,
)
from levy_core.data import TIME_UNITS, DataError, parse_duration, say_duration, say_time
from levy_core.model.sizes import AUTO_MEDIUM_MIN_SERIES, MODEL_SIZES
from levy_core.runtime.priority import add_nice_option, lower_priority

if TYPE_CHECKING:
    from levy_core.forecast.verbs import FittedModel
    from levy_core.training.train import Progress

__all__ = ["MAX_EPOCHS", "EpochBars", "add_fit_command", "cutoff_hours", "in_unit", "run_fit"]

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


def cutoff_hours(text: str | None, unit: str) -> float | None:
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


def in_unit(hours: float, unit: str) -> str:
    """A time of the pipeline's clock (hours) in the data's unit ("1458.33 days"; for
    date-times, a calendar duration after each series' first observation), for messages."""
    return say_time(hours, unit)


def _forecast_plan(fitted: FittedModel, unit: str) -> str:
    """Where a forecast fit's history ends, in the data's clock: the global cut-off, or on
    rolling origins the horizon forecast from each origin."""
    plan = fitted.split.origin_plan if fitted.split.mode == "origin" else None
    if plan:
        return f"rolling forecast origins, horizon {say_duration(float(plan['horizon']), unit)}"
    return f"cut-off {fitted.task.cutoff_text(lambda h: in_unit(h, unit))}"


def run_fit(args: argparse.Namespace) -> int:
    """The ``fit`` subcommand."""
    from levy_core.forecast.forecaster import LevyForecaster

    # the settings checked before any work: a bad transform kind, a share out of range, a freq pandas cannot read
    forecaster = LevyForecaster(size=args.size, epochs=args.epochs, seed=args.seed, season=args.season, task=args.task,
                                horizon=args.horizon or None, cutoff=args.cutoff, max_seconds=args.max_seconds,
                                twin=not args.no_twin, phi=args.phi, transform=args.transform, freq=args.freq,
                                progress=None if args.quiet else EpochBars())
    refuse_overwriting(args, out=args.out)
    options = read_options(args)  # bad column names, --dayfirst with --date-format: before the fit
    forecaster.check_save_target(args.out)  # a link, a file, a folder that is not a model: refused before the fit
    lower_priority(args.nice)  # before the fit starts torch's threads: they inherit it
    obs = load_data(args.data, options)
    report_load(obs)
    print(f"data: {obs.n_series} series, {obs.n_channels} channels, {obs.n_obs} observations", file=sys.stderr)
    unit = obs.report.input_time_unit
    if forecaster.cutoff_share is None:  # one time for every series: a bare number in the data's unit, in hours
        forecaster.cutoff = cutoff_hours(args.cutoff, unit)
    t0 = time.perf_counter()
    fitted = forecaster.fit_observations(obs).fitted
    fitted.source_sha256 = forecaster.file_sha256(args.data)  # which file, byte for byte, the model was fitted on
    fitted.reading = recorded_reading(options, obs, args.freq)  # reused by every later command
    out = fitted.save(args.out)
    tr = fitted.training
    print(f"fitted a {forecaster.size_name()} model in {time.perf_counter() - t0:.1f} s: "
          f"split {fitted.split.mode} "
          f"({tr['n_series']['train']}/{tr['n_series']['stopping']}/{tr['n_series']['calibration']}/"
          f"{tr['n_series']['test']} train/early-stopping/calibration/test series), task {fitted.task.kind}"
          + (f" ({_forecast_plan(fitted, unit)})" if fitted.task.kind == "forecast" else "")
          + f", calibration scale c = {fitted.levy_calibration.scale_:.3g}; saved to {out}", file=sys.stderr)
    print(f"offset: {fitted.offset_description()}", file=sys.stderr)
    if fitted.new_series_note():
        print(f"band: {fitted.new_series_note()}", file=sys.stderr)
    print(f"transform: {fitted.scaler.transform_note()}", file=sys.stderr)
    print(f"reading: {fitted.reading.describe()} (recorded in the model: later commands read their data alike)",
          file=sys.stderr)
    for note in (fitted.left_out_note(), fitted.training_note(), fitted.band_note()):
        if note:
            print(f"note: {note}", file=sys.stderr)
    return 0


def add_fit_command(sub: argparse._SubParsersAction) -> None:
    """Register ``levy fit`` on the CLI's subparsers."""
    f = sub.add_parser("fit", help="train the Lévy model and its MC-Dropout twin, calibrate both", allow_abbrev=False)
    add_data(f)
    f.add_argument("--out", required=True, help="model directory to write")
    f.add_argument("--task", choices=["forecast", "interpolate"], default="forecast")
    f.add_argument("--cutoff", default=None, help="forecast: history ends here: one time for every series, a bare "
                   "number in the data's time unit (hours since each series' first observation for date-time data) or "
                   "with a unit, e.g. 24h, 730d, 2y; or each series' own, a share of its span, e.g. 60%%, or auto "
                   "(50%%) (default: the median series midpoint, rounded; on a panel where it would leave series out "
                   "that their own midpoints keep in, each series' own midpoint)")
    f.add_argument("--horizon", default=None, help="forecast: how far ahead to predict after the cut-off (few "
                   "series: after each forecast origin), e.g. 36h, 2w, 5y; a bare number is in the data's unit")
    f.add_argument("--freq", default=None, help="date-time data: the calendar they are sampled on, a pandas alias "
                   "such as W-SAT (weekly on Saturdays), MS (month starts), ME, B (business days), D, h; recorded in "
                   "the model, forecasts past each series' end fall on it (default: found in the data; none for "
                   "irregular data)")
    f.add_argument("--season", default="auto", help="few series: the seasonal offset's period (e.g. 24h, 1y), "
                   "'none', or 'auto' (detected on the training part)")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--epochs", type=bounded_int(1, MAX_EPOCHS), default=40,
                   help=f"training epochs per model, 1 to {MAX_EPOCHS:,}")
    f.add_argument("--max-seconds", type=positive_seconds, default=None,
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
    f.set_defaults(func=run_fit)
