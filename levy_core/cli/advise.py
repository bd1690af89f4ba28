"""``levy advise MODEL DATA``: which measurement would narrow the band most (issue 26).

Wired into `levy_core.cli.main` by `add_advise_command`; errors reach ``cli.main``,
which prints ``error: …`` and exits 2. The table is written atomically
(`TableWriter`); a plain-words line per top suggestion goes
to stdout.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from levy_core.cli.inputs import load_data, read_options
from levy_core.data import TIME_UNITS, DataError, Observations, parse_duration, to_user_time
from levy_core.decisions.defaults import DEFAULT_DRAWS, DEFAULT_POINTS
from levy_core.serving.table_writer import TableWriter, refuse_same_file

if TYPE_CHECKING:  # the computation loads PyTorch and SciPy: imported when the command runs
    import pandas as pd

    from levy_core.decisions.advise import Advice

__all__ = ["ADVICE_COLUMNS", "add_advise_command", "advice_table", "parse_at", "run_advise"]

ADVICE_COLUMNS = ["rank", "series_id", "channel", "ahead_hours", "time", "target", "width_before", "width_after",
                  "narrowing_pct", "evidence_pct", "value_pct", "score_pct"]
MAX_DRAWS = 256
MAX_POINTS = 1000


def parse_at(text: str, unit: str) -> list[float]:
    """``--at now,+1h,+4h`` as hours after now (``now`` or ``0`` is 0; a bare number is in
    the data's unit; a leading ``-`` gives a negative time, which advise refuses by name)."""
    out = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.lower() in ("now", "0", "+0", "0h"):
            out.append(0.0)
            continue
        sign = -1.0 if item.startswith("-") else 1.0
        out.append(sign * parse_duration(item.lstrip("+-").strip(), unit))
    if not out:
        raise ValueError(f"--at {text!r} names no time: give e.g. now,+1h,+4h")
    return out


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def advice_table(advice: Advice, obs: Observations, unit: str = "hours") -> pd.DataFrame:
    """`Advice.to_frame` in the user's clock (``time``: date-times or the data's unit;
    ``ahead_<unit>``: how far after now, in ``unit``, a key of ``TIME_UNITS``: the columns
    of `ADVICE_COLUMNS` with ``ahead_hours`` so named)."""
    frame = advice.to_frame()
    frame["ahead"] = frame["ahead"].to_numpy(float) / TIME_UNITS[unit]
    frame = frame.rename(columns={"ahead": f"ahead_{unit}"})
    frame["time"] = to_user_time(frame["series_id"], frame["time"], obs).to_numpy()
    return frame[[f"ahead_{unit}" if c == "ahead_hours" else c for c in ADVICE_COLUMNS]]


def run_advise(args: argparse.Namespace) -> int:
    """The ``advise`` subcommand."""
    refuse_same_file({"the data file": args.data, "the model": args.model}, {"--out": args.out})
    if args.dayfirst and args.date_format:
        raise ValueError("give --dayfirst or --date-format, not both (the format says where the day is)")
    from levy_core.forecast.forecaster import LevyForecaster  # loads PyTorch: when the command runs

    levels = LevyForecaster.band_levels(args.level)  # as `levy predict --level`: 0.9 or 90
    if len(levels) != 1:
        raise ValueError(f"--level takes one band level for advise, got {len(levels)}")
    forecaster = LevyForecaster.open_model(args.model)
    fitted = forecaster.fitted
    if not Path(args.data).is_file():
        raise DataError(f"{args.data}: no such file; give the path of a CSV (or .csv.gz) or Parquet file of "
                        "observations")
    obs = load_data(args.data, read_options(args, fitted.reading))  # the fit's columns, unit and dates
    unit = obs.report.input_time_unit
    horizon = parse_duration(args.horizon, unit) if args.horizon else None
    at = parse_at(args.at, unit) if args.at else None
    from levy_core.decisions.advise import advise

    advice = advise(fitted, obs, args.series, targets=_names(args.targets), candidates=_names(args.candidates),
                    horizon=horizon, at=at, points=args.points, draws=args.draws, seed=args.seed, level=levels[0])
    table = advice_table(advice, obs, forecaster.duration_unit())
    with TableWriter(args.out) as out:
        out.write(table)
    for line in advice.sentences(args.top, clock=forecaster.clock()):
        print(line)
    print(f"wrote {out.rows} rows to {args.out} ({len(advice.candidates)} candidate measurements × "
          f"{len(advice.targets)} target channels of series {advice.series_id}, {round(100 * advice.level)} % "
          "conformal band)", file=sys.stderr)
    return 0


def _bounded(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must lie in [{lo}, {hi}], got {value}")
        return value
    return parse


def add_advise_command(sub: argparse._SubParsersAction,
                       add_model_and_data: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``levy advise`` on the CLI's subparsers (``add_model_and_data``: the CLI's
    own MODEL DATA arguments, with --time-unit and the date options)."""
    a = sub.add_parser("advise", help="which measurement would narrow the band most: a ranked table",
                       allow_abbrev=False)
    add_model_and_data(a)
    a.add_argument("--out", required=True, help="the advice table to write (CSV; .parquet for Parquet)")
    a.add_argument("--series", default=None, help="the series to advise on (may be left out when the data hold one)")
    a.add_argument("--targets", default=None, help="channels whose band should narrow, comma-separated (default: "
                   "every channel the series has observed)")
    a.add_argument("--candidates", default=None, help="channels to consider measuring, comma-separated (default: "
                   "every channel the model knows)")
    a.add_argument("--horizon", default=None, help="how far after the series' last observation the targets reach, "
                   "e.g. 24h (default: the fit's horizon)")
    a.add_argument("--at", default=None, help="when each candidate could be measured, e.g. now,+1h,+4h (default: "
                   "now, about an eighth and a quarter of the horizon ahead)")
    a.add_argument("--points", type=_bounded(1, MAX_POINTS), default=DEFAULT_POINTS,
                   help="target times per channel over the horizon")
    a.add_argument("--draws", type=_bounded(1, MAX_DRAWS), default=DEFAULT_DRAWS,
                   help="values per candidate the disagreement part averages over")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--level", type=float, default=0.9, help="the band's coverage: a fraction (0.9) or a percent "
                   "(90), as levy predict --level")
    a.add_argument("--top", type=_bounded(0, 1000), default=3, help="plain-words lines for this many suggestions")
    a.set_defaults(func=run_advise)
