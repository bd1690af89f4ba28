"""``levy watch MODEL DATA --alpha 0.01 --out FLAGS.csv``: a replay that flags surprises (issue 26).

Every observation of DATA is scored against the band the model issued from the observations
before it in its series ([`levy_core.decisions.watch.iter_watch`][levy_core.decisions.watch.iter_watch]), chunk of whole series by
chunk, with a tqdm bar of series on stderr; the scored rows (or, with ``--only-flagged``,
the flagged ones) go to ``--out`` atomically (`TableWriter`
through [`levy_core.serving.chunked.predict_file`][levy_core.serving.chunked.predict_file]). The last line says the flag rate against
the nominal α with its between-series window. Wired into `levy_core.cli.main` by
`add_watch_command`; errors reach ``cli.main`` (``error: …``, exit 2).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from levy_core.cli.inputs import load_data, mapping_for, read_options
from levy_core.data import DataError, Observations, to_user_time
from levy_core.data.drift import DriftTally
from levy_core.decisions.defaults import DEFAULT_ALPHA, DEFAULT_MAX_CONTEXT, check_alpha
from levy_core.serving.table_writer import refuse_same_file

# the replay itself (levy_core.decisions.watch, serving.chunked) loads PyTorch: imported when
# the command runs, so that `levy --help` and the other commands' parsing do not wait for it

__all__ = ["add_watch_command", "parse_alpha", "run_watch"]

NOT_CALIBRATED = ("p-values are taken against the fit's own calibration scores, which come from forecasts over "
                  "the fitted horizon, not one step ahead: the flag rate need not be α. Give --calibration "
                  "with the data the model was fitted on (its calibration split is replayed) or held-out series.")


def parse_alpha(text: str) -> float:
    """``--alpha``: a false-alarm rate in (0, 1)."""
    try:
        return check_alpha(float(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_watch_command(sub: argparse._SubParsersAction,
                      add_model_and_data: Callable[[argparse.ArgumentParser], None],
                      add_chunks: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``levy watch`` on the CLI's subparsers (``add_model_and_data``, ``add_chunks``:
    the CLI's own MODEL DATA arguments and --chunk-series / --quiet)."""
    w = sub.add_parser("watch", help="replay DATA in time order: each observation's conformal p-value against the "
                       "band issued before it, flagged at --alpha", allow_abbrev=False)
    add_model_and_data(w)
    w.add_argument("--out", required=True, help="the scored observations (CSV; .parquet for Parquet)")
    w.add_argument("--alpha", type=parse_alpha, default=DEFAULT_ALPHA, help="false-alarm rate in (0, 1): flag an observation "
                   "whose p-value is at most this (outside the 1 - alpha conformal band)")
    w.add_argument("--calibration", default=None, metavar="DATA", help="observations whose one-step-ahead scores "
                   "the p-values are taken against: the data the model was fitted on (its calibration split is "
                   "replayed) or series it never trained on; default: the fit's own scores (see the note it prints)")
    w.add_argument("--only-flagged", action="store_true", help="write the flagged observations only")
    w.add_argument("--max-context", type=int, default=DEFAULT_MAX_CONTEXT,
                   help="most recent observations one step's band is issued from")
    add_chunks(w)
    w.set_defaults(func=run_watch)


def _user_rows(rows: pd.DataFrame, obs: Observations, only_flagged: bool) -> pd.DataFrame:
    """Scored rows in the user's clock (date-times for date-time data)."""
    from levy_core.decisions.watch import WATCH_COLUMNS

    if only_flagged:
        rows = rows[rows["flagged"]]
    out = rows.copy()
    out["time"] = to_user_time(out["series_id"], out["time"], obs).to_numpy()
    return out[WATCH_COLUMNS]


def run_watch(args: argparse.Namespace) -> int:
    """``levy watch``: see the module docstring."""
    from levy_core.decisions.watch import WatchTally, calibrate_watch, iter_watch
    from levy_core.forecast.forecaster import LevyForecaster
    from levy_core.serving.chunked import predict_file

    refuse_same_file({"the data file": args.data, "the model": args.model, "--calibration": args.calibration},
                     {"--out": args.out})
    if args.dayfirst and args.date_format:
        raise ValueError("give --dayfirst or --date-format, not both (the format says where the day is)")
    for path in (args.data, args.calibration):
        if path is not None and not Path(path).is_file():
            raise DataError(f"{path}: no such file; give the path of a CSV (or .csv.gz) or Parquet file")
    fitted = LevyForecaster.open_model(args.model).fitted
    options = read_options(args, fitted.reading)  # the fit's columns, unit and dates unless told otherwise
    if args.calibration is not None:
        cal = calibrate_watch(fitted, load_data(args.calibration, options), max_context=args.max_context)
        print(f"note: calibration: {cal.source}", file=sys.stderr)
    else:
        cal = None
    tally = WatchTally(args.alpha, calibration_se=cal.standard_error(args.alpha) if cal is not None else 0.0)
    drift = DriftTally(fitted.drift)

    def scored(obs: Observations) -> pd.DataFrame:
        if not tally.scored.keys().isdisjoint(obs.series_ids):  # a file with series out of place, read again whole
            tally.clear()
            bar.reset()
        rows = next(iter_watch(fitted, [obs], alpha=args.alpha, calibration=cal, max_context=args.max_context,
                               tally=tally, progress=bar.update))  # the bar moves series by series
        return _user_rows(rows, obs, args.only_flagged)

    with tqdm(desc=Path(args.data).name, unit=" series", file=sys.stderr, disable=args.quiet,
              dynamic_ncols=True) as bar:
        n, totals = predict_file(args.data, args.out, scored, chunk_series=args.chunk_series,
                                 mapping=mapping_for(args.data, options.columns), time_unit=options.time_unit,
                                 drift=drift, dayfirst=options.dayfirst, date_format=options.date_format)
    print(f"note: {totals.describe()}", file=sys.stderr)
    for msg in drift.report().flags["message"]:
        print(f"warning: {msg}", file=sys.stderr)
    print(f"wrote {n:,} {'flagged ' if args.only_flagged else 'scored '}observations to {args.out}", file=sys.stderr)
    if cal is None:
        print(f"note: {NOT_CALIBRATED}", file=sys.stderr)
    print(tally.summary())
    se = tally.standard_error()
    if tally.n_scored and math.isfinite(se) and abs(tally.flag_rate - args.alpha) > 2 * se:
        print(f"note: the flag rate lies outside α ± 2 s.e. ({args.alpha:g} ± {2 * se:.4f}): "
              + ("the data is not like the calibration data, or it holds surprises" if cal is not None
                 else "see the note above"), file=sys.stderr)
    return 0
