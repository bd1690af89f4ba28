"""``levy rank MODEL DATA --out RANKING``: series ranked by trust in one batched pass, in
chunks of whole series (or on Ray); DATA read as the fit read its data unless told otherwise."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from levy_core.cli.arguments import add_chunks, add_model_and_data, positive_int
from levy_core.cli.inputs import (
    dates,
    mapping_for,
    read_options,
    refuse_overwriting,
    series_bar,
    warn_drift,
)
from levy_core.data import DataError
from levy_core.data.drift import DriftTally

__all__ = ["add_rank_command", "run_rank"]


def run_rank(args: argparse.Namespace) -> int:
    """The ``rank`` subcommand."""
    refuse_overwriting(args, out=args.out)
    given = dates(args)
    if not Path(args.data).is_file():
        raise DataError(f"{args.data}: no such file; give the path of a CSV (or .csv.gz) or Parquet file")
    if args.engine == "ray":  # ray is an optional extra: imported only here
        if any(v is not None for v in given.values()):
            raise ValueError("--dayfirst and --date-format are not read by --engine ray: write the times as ISO "
                             "date-times (2024-01-31 14:05) or numbers, or rank without --engine ray")
        from levy_core.forecast.forecaster import (
            LevyForecaster,  # loads PyTorch: when the command runs
        )

        options = read_options(args, LevyForecaster.open_model(args.model).fitted.reading)
        if (options.dayfirst, options.date_format) != (None, None):
            raise ValueError("the model was fitted with --dayfirst or --date-format, which --engine ray does not "
                             "read: write the times as ISO date-times (2024-01-31 14:05), or rank without --engine "
                             "ray")
        from levy_core.serving.ray_engine import rank_with_ray

        n, seconds = rank_with_ray(args.model, args.data, args.out, workers=args.workers, address=args.address,
                                   time_unit=options.time_unit, columns=options.columns)
        print(f"scored {n} series in {seconds:.2f} s on Ray ({args.workers} worker{'s' * (args.workers > 1)})")
        return 0
    if args.address is not None:
        raise ValueError("--address names a Ray cluster: give it with --engine ray")
    from levy_core.forecast.forecaster import LevyForecaster
    from levy_core.serving.chunked import rank_file

    fitted = LevyForecaster.open_model(args.model).fitted
    options = read_options(args, fitted.reading)  # the fit's columns, unit and dates unless told otherwise
    drift = DriftTally(fitted.drift)
    with series_bar(args) as bar:
        summary = rank_file(fitted, args.data, args.out, chunk_series=args.chunk_series,
                            mapping=mapping_for(args.data, options.columns), time_unit=options.time_unit,
                            progress=bar.update, drift=drift, dayfirst=options.dayfirst,
                            date_format=options.date_format)
    print(f"note: {summary.totals.describe()}", file=sys.stderr)
    warn_drift(drift.report())
    print(f"scored {summary.n_series} series in {summary.seconds:.2f} s")
    return 0


def add_rank_command(sub: argparse._SubParsersAction) -> None:
    """Register ``levy rank`` on the CLI's subparsers."""
    r = sub.add_parser("rank", help="rank series by trust in one batched pass", allow_abbrev=False)
    add_model_and_data(r)
    r.add_argument("--out", required=True, help="the ranking to write: .parquet for Parquet, CSV otherwise")
    add_chunks(r)
    r.add_argument("--engine", choices=["local", "ray"], default="local", help="local: in this process; ray: a "
                   "Ray Data pipeline (pip install 'levy-core[ray]') on a local Ray or the cluster at --address")
    r.add_argument("--address", default=None, help="--engine ray: the Ray cluster to connect to (e.g. "
                   "HEAD:6379, or auto on a node of the cluster); default: start a local Ray")
    r.add_argument("--workers", type=positive_int, default=2, help="--engine ray: scoring actors (one CPU each; "
                   "a local Ray: at most this machine's cores)")
    r.set_defaults(func=run_rank)
