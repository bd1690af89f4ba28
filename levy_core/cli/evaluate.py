"""``levy evaluate MODEL DATA --json SCORES``: score Lévy, MC-Dropout, softmax and the sampler
on the test split (DATA read as the fit read its data unless told otherwise)."""

from __future__ import annotations

import argparse
import json
import math
import sys

from levy_core.cli.arguments import add_model_and_data, bounded_int
from levy_core.cli.inputs import dates, load_data, read_options, refuse_overwriting, warn_drift
from levy_core.serving.csv_safety import to_safe_csv
from levy_core.serving.table_writer import atomic_output

__all__ = ["MAX_MC_PASSES", "add_evaluate_command", "run_evaluate"]

MAX_MC_PASSES = 1_000
"""Largest ``levy evaluate --mc-passes``: MC-Dropout passes over the test split."""


def run_evaluate(args: argparse.Namespace) -> int:
    """The ``evaluate`` subcommand."""
    refuse_overwriting(args, json=args.json, predictions=args.predictions)
    dates(args)  # --dayfirst with --date-format: refused before the model is read
    from levy_core.forecast.forecaster import LevyForecaster  # loads PyTorch: when the command runs

    forecaster = LevyForecaster.open_model(args.model)
    obs = load_data(args.data, read_options(args, forecaster.fitted.reading))  # the fit's columns, unit and dates
    warn_drift(forecaster.drift_report(obs))
    data = forecaster.prepare(obs)
    result, pred = forecaster.evaluate_data(data, mc_passes=args.mc_passes)
    result = _json_safe(result)
    if args.predictions:  # each file renamed into place once complete (an error leaves none)
        with atomic_output(args.predictions) as tmp:
            to_safe_csv(forecaster.user_predictions(pred, data), tmp, index=False)
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
    warped = [c for c in forecaster.fitted.channels if forecaster.fitted.scaler.transform_of(c) != "none"]
    if warped:  # the headline is in the model's space: a log channel's errors there are on its log
        print(f"note: MSE and CRPS above are in the model's normalised space, where {', '.join(map(str, warped))} "
              f"{'is' if len(warped) == 1 else 'are'} on a log scale; to compare fits made with another "
              "--transform, use the per-channel scores in the data's units below (--json: per_channel_data_units)",
              file=sys.stderr)
    if "adaptive_coverage" in lv:  # rolling origins: the band that holds over time
        print(f"adaptive conformal over {lv['test_origins']} test origins (γ = {lv['gamma']:g}): coverage "
              + ", ".join(f"{100 * float(k):.0f} % {v:.3f} (within ±{lv['adaptive_bound'][k]:.3f} of the level "
                          "in the long run)" for k, v in lv["adaptive_coverage"].items()), file=sys.stderr)
    print(_guarantee_lines(forecaster.coverage_checks(pred)), file=sys.stderr)
    new = forecaster.fitted.new_series_calibration
    if new and not data.same_data:  # a panel's model on another file: which band its series took
        print(f"note: this is not the file the model was fitted on, so its series are scored as new ones, with the "
              f"band calibrated on the fit's calibration and test series together "
              f"({new['levy'].conformal.n_calibration_:,} queries); a series with the id of one of those keeps the "
              f"calibration series' band", file=sys.stderr)
    print(_data_unit_lines(result), file=sys.stderr)
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


def _data_unit_lines(result: dict) -> str:
    """Lévy's (and MC-Dropout's) MAE, RMSE and CRPS per channel in the channel's own units:
    a header and one aligned row per channel (the JSON's ``per_channel_data_units``)."""
    methods = [(k, name) for k, name in (("levy", "Lévy"), ("mc_dropout", "MC-Dropout"))
               if "per_channel_data_units" in result.get(k, {})]
    channels = list(result["levy"]["per_channel_data_units"])
    width = max([len("channel"), *(len(c) for c in channels)])
    head = f"  {'channel':<{width}} {'n':>6}" + "".join(
        f" {name + ' ' + s:>{max(10, len(name) + 5)}}" for _, name in methods for s in ("MAE", "RMSE", "CRPS"))
    lines = ["per channel in its own units (MAE, RMSE, CRPS):", head]
    for c in channels:
        row = f"  {c:<{width}} {result['levy']['per_channel_data_units'][c]['n']:>6}"
        for k, name in methods:
            score = result[k]["per_channel_data_units"][c]
            row += "".join(f" {_num(score[s]):>{max(10, len(name) + 5)}}" for s in ("mae", "rmse", "crps"))
        lines.append(row)
    return "\n".join(lines)


def _num(value) -> str:
    """A score as the table shows it: 4 significant digits, ``–`` where it is undefined."""
    return "–" if value is None else f"{value:.4g}"


def _json_safe(obj):
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "item"):
        return _json_safe(obj.item())
    return obj


def add_evaluate_command(sub: argparse._SubParsersAction) -> None:
    """Register ``levy evaluate`` on the CLI's subparsers."""
    e = sub.add_parser("evaluate", help="score Lévy, MC-Dropout, softmax and the 50-draw sampler on the test split",
                       allow_abbrev=False)
    add_model_and_data(e)
    e.add_argument("--json", required=True)
    e.add_argument("--predictions", default=None)
    e.add_argument("--mc-passes", type=bounded_int(0, MAX_MC_PASSES), default=20,
                   help=f"MC-Dropout passes over the test split, 1 to {MAX_MC_PASSES:,}")
    e.set_defaults(func=run_evaluate)
