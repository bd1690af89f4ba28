"""How ``levy``'s commands read their inputs: the data file (with the columns, the clock's unit
and the dates named on the command line or recorded by the fit), the refusal of an output that
is an input, and the notes and warnings reading prints on stderr."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from levy_core.data import ColumnMapping, ColumnNames, DataError, Observations, detect_mapping
from levy_core.data.drift import DriftReport
from levy_core.data.recorded import ReadOptions, RecordedReading, calendar_of
from levy_core.data.series_chunks import head_table, read_observations
from levy_core.serving.table_writer import refuse_same_file

__all__ = ["column_names", "dates", "load_data", "mapping_for", "read_options", "recorded_reading",
           "refuse_overwriting", "report_load", "series_bar", "warn_drift"]


def column_names(args: argparse.Namespace) -> ColumnNames:
    """The columns named by ``--id``, ``--time``, ``--value``, ``--channel``, ``--channels``."""
    channels = getattr(args, "channels", None)
    wide = tuple(c.strip() for c in channels.split(",") if c.strip()) if channels else ()
    if channels is not None and not wide:
        raise ValueError(f"--channels {channels!r} names no column: give the wide form's value columns, "
                         "e.g. --channels bili,albumin")
    return ColumnNames(series=getattr(args, "id", None), time=getattr(args, "time", None),
                       value=getattr(args, "value", None), channel=getattr(args, "channel", None), channels=wide)


def read_options(args: argparse.Namespace, recorded: RecordedReading | None = None) -> ReadOptions:
    """How this command reads its data: its options over what the fit recorded (``recorded``;
    None: a model saved before it was recorded, or ``levy fit``). A ``--time-unit`` other than
    the fit's is refused by name (`TimeUnitConflict`)."""
    opts = dates(args)
    if recorded is None:
        return ReadOptions(column_names(args), args.time_unit or "hours", **opts)
    return recorded.resolve(column_names(args), args.time_unit, opts["dayfirst"], opts["date_format"])


def recorded_reading(options: ReadOptions, obs: Observations, freq: str | None = None) -> RecordedReading:
    """What ``levy fit`` records in ``model.json``: how it read ``obs``, and its calendar
    (``--freq``, else inferred from date-times: DataError for ``--freq`` on numeric times)."""
    return RecordedReading(columns=options.columns, mapping=obs.report.mapping, time_unit=options.time_unit,
                           clock=obs.report.input_time_unit, dayfirst=options.dayfirst,
                           date_format=options.date_format, freq=calendar_of(obs, freq))


def mapping_for(path: str, columns: ColumnNames) -> ColumnMapping | None:
    """The mapping a file is read with: None when no column is named (each file's own
    detection, as ever); otherwise the named columns and the others found by name in the
    file's first rows."""
    if columns.empty:
        return None
    table = head_table(path)
    return detect_mapping(table.loc[:, ~table.columns.duplicated()], columns)


def load_data(path: str, options: ReadOptions) -> Observations:
    """The whole file as observations, read with ``options``."""
    if not Path(path).is_file():
        raise DataError(f"{path}: no such file; give the path of a CSV (or .csv.gz) or Parquet file of observations")
    return read_observations(path, mapping=mapping_for(path, options.columns), time_unit=options.time_unit,
                             dayfirst=options.dayfirst, date_format=options.date_format)


def dates(args: argparse.Namespace) -> dict[str, bool | str | None]:
    """How dates written as numbers are read: ``--dayfirst`` or ``--date-format`` (neither:
    inferred from the column, refused when it cannot tell)."""
    if args.dayfirst and args.date_format:
        raise ValueError("give --dayfirst or --date-format, not both (the format says where the day is)")
    return {"dayfirst": True if args.dayfirst else None, "date_format": args.date_format}


def refuse_overwriting(args: argparse.Namespace, **outputs: str | None) -> None:
    """Refuse, before anything is read or written, an output that is an input (the data,
    the model, the queries) or another output."""
    inputs = {"the data file": getattr(args, "data", None), "the model": getattr(args, "model", None),
              "the queries file (--queries)": getattr(args, "queries", None)}
    refuse_same_file(inputs, {f"--{name.replace('_', '-')}": path for name, path in outputs.items()})


def series_bar(args: argparse.Namespace) -> tqdm:
    """The progress bar of a chunked read on stderr: series done (off with --quiet)."""
    return tqdm(desc=Path(args.data).name, unit=" series", file=sys.stderr, disable=args.quiet, dynamic_ncols=True)


def report_load(obs: Observations) -> None:
    """What reading changed or found, as ``note: …`` lines on stderr."""
    for msg in obs.report.messages:
        print(f"note: {msg}", file=sys.stderr)


def warn_drift(report: DriftReport) -> None:
    """Each drift flag as ``warning: …`` on stderr (a model without drift statistics: a note)."""
    if not report.checked:
        print(f"note: drift {report.note}", file=sys.stderr)
    for msg in report.flags["message"]:
        print(f"warning: {msg}", file=sys.stderr)
