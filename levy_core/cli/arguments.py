"""The ``levy`` command line's shared arguments: the argparse types (bounded numbers, a host)
and the options every command that reads data has (DATA, MODEL DATA, the columns, the clock,
the dates, the chunks)."""

from __future__ import annotations

import argparse
import math

from levy_core.data.series_chunks import DEFAULT_CHUNK_SERIES
from levy_core.runtime.threads import add_threads_option

__all__ = ["MAX_CHUNK_SERIES", "TIME_UNIT_CHOICES", "add_chunks", "add_data", "add_model_and_data", "bounded_int",
           "host", "positive_int", "positive_seconds"]

MAX_CHUNK_SERIES = 100_000
"""Largest ``--chunk-series``: series held in memory at once."""
TIME_UNIT_CHOICES = ("hours", "minutes", "seconds", "days")
"""``--time-unit``'s choices."""


def add_data(parser: argparse.ArgumentParser) -> None:
    """DATA and how it is read: ``--time-unit``, the dates, the columns, ``--threads``."""
    parser.add_argument("data", help="CSV of observations (long or wide; .csv.gz accepted) or a .parquet file")
    parser.add_argument("--time-unit", default=None, choices=TIME_UNIT_CHOICES,
                        help="unit of numeric times (date-times are always read as such); default: the unit the "
                        "model was fitted with (levy fit: hours)")
    parser.add_argument("--dayfirst", action="store_true", help="dates written as numbers are day first "
                        "(DD/MM/YYYY); default: told from the dates (a day over 12), refused when they cannot tell")
    parser.add_argument("--date-format", default=None, metavar="FMT", help="the strptime format of every "
                        "date-time in the data and queries, e.g. '%%m/%%d/%%Y %%H:%%M' (instead of --dayfirst)")
    add_column_options(parser)
    add_threads_option(parser)


def add_column_options(parser: argparse.ArgumentParser) -> None:
    """``--id``, ``--time``, ``--value``, ``--channel``, ``--channels``: which column is which
    (each left out: found by name, or the one the model was fitted with)."""
    group = parser.add_argument_group("columns", "which column is which; each one left out is the one the model "
                                      "was fitted with (levy fit: found by its name, e.g. time, date, day, ds)")
    group.add_argument("--id", default=None, metavar="COL", help="the column of series ids (patients, sensors)")
    group.add_argument("--time", default=None, metavar="COL", help="the column of times (numbers or date-times)")
    group.add_argument("--value", default=None, metavar="COL", help="long form: the column of measured values")
    group.add_argument("--channel", default=None, metavar="COL", help="long form: the column naming each "
                       "value's channel")
    group.add_argument("--channels", default=None, metavar="A,B,C", help="wide form: the columns that hold "
                       "measurements, comma-separated (one channel each)")


def add_model_and_data(parser: argparse.ArgumentParser) -> None:
    """MODEL DATA and how DATA is read (`add_data`)."""
    parser.add_argument("model", help="model directory written by `levy fit`")
    add_data(parser)


def add_chunks(parser: argparse.ArgumentParser) -> None:
    """``--chunk-series`` and ``--quiet``: a file read a chunk of whole series at a time."""
    parser.add_argument("--chunk-series", type=bounded_int(1, MAX_CHUNK_SERIES), default=DEFAULT_CHUNK_SERIES,
                        help="series read and processed at a time (memory stays that of one chunk); the rows of "
                        "each series must be together in the file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def positive_int(text: str) -> int:
    """argparse type: a whole number ≥ 1 (e.g. ``--workers``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value} (nothing would be trained)")
    return value


def bounded_int(lo: int, hi: int, *, grouped: bool = True):
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


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0 (``--max-seconds``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds greater than 0, got {text!r} "
                                         "(leave it out for no time budget)")
    return value


def host(text: str) -> str:
    """argparse type: a host name or address to listen on (no spaces, not empty)."""
    if not text.strip() or any(ch.isspace() for ch in text):
        raise argparse.ArgumentTypeError(f"expected a host name or address such as localhost or 0.0.0.0, "
                                         f"got {text!r}")
    return text
