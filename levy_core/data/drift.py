"""Is new data like the data the model was fitted on? Drift, per channel, said plainly.

The band's guarantee (split conformal, adaptive conformal) assumes the new series are like
the calibration series. At fit time [`reference_from`][levy_core.data.drift.reference_from] records, per channel and in the
data's own units, what the model learned from ([`DriftReference`][levy_core.data.drift.DriftReference], saved in
``model.json``); [`check_drift`][levy_core.data.drift.check_drift] compares new observations with it and returns a
[`DriftReport`][levy_core.data.drift.DriftReport]: a table of flags and plain-English messages.

The rules, measured on random 60 % / 20 % splits of the bundled samples by series (the figures:
docs/benchmarks/drift.md):

* **values** — a new series' *typical* (median) value of a channel beyond the training
  range ``[min, max]`` by more than [`RANGE_MARGIN`][levy_core.data.drift.RANGE_MARGIN] of its width (outside ``[-0.1,
  1.1]`` on the model's min-max normalised scale) lies beyond every value the model
  learned from. Values within one
  series are correlated (one ICU stay with a high bilirubin gives many high values), so
  the unit counted is the series, not the value: the channel is flagged when more than
  [`VALUE_SHARE`][levy_core.data.drift.VALUE_SHARE] of the new series observing it sit outside the range (and at least
  one does). Checked for channels with at least [`MIN_VALUES`][levy_core.data.drift.MIN_VALUES] training values.
* **sampling** — observations of the channel per hour of series span, pooled over the
  series (thinning a data set to a fraction ``f`` of its observations divides it by
  ``1/f`` on average); flagged when the new data are [`DENSITY_FACTOR`][levy_core.data.drift.DENSITY_FACTOR] times sparser
  or denser than the training data, with at least [`MIN_VALUES`][levy_core.data.drift.MIN_VALUES] observations on both
  sides. The median gap between consecutive observations is reported beside it.

Channels the model never saw are not drift but an error: [`refuse_unknown_channels`][levy_core.data.drift.refuse_unknown_channels]
raises a [`DataError`][levy_core.data.DataError] naming them and the channels the model knows.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from levy_core.data import DataError, Observations
from levy_core.data.durations import display_unit, say_duration
from levy_core.data.messages import count, quote_list
from levy_core.data.times import TIME_UNITS

__all__ = ["DENSITY_FACTOR", "FLAG_COLUMNS", "MIN_VALUES", "NOT_RECORDED", "RANGE_MARGIN", "VALUE_SHARE", "ChannelReference",
           "DriftReference", "DriftReport", "DriftTally", "check_drift", "refuse_unknown_channels", "reference_from"]

RANGE_MARGIN = 0.1
"""How far beyond the training range (a share of its width) a series' median must lie."""
VALUE_SHARE = 0.2
"""Share of the new series whose median lies outside the training range that flags a
channel (0 flags over 50 random splits of the PhysioNet sample at 0.2; 5 at 0.1)."""
DENSITY_FACTOR = 4.0
"""Sparser or denser by this factor (either way) flags a channel's sampling."""
MIN_VALUES = 20
"""Observations a channel needs (in training; for sampling, also in the new data) to be checked."""
NOT_RECORDED = "not checked: the model predates drift statistics (re-fit it to record them)"
FLAG_COLUMNS = ["channel", "kind", "figure", "training", "new", "message"]
"""Columns of `DriftReport.flags`."""


@dataclass(frozen=True)
class ChannelReference:
    """What the model learned from on one channel, in the data's units.

    Attributes
    ----------
    n_values : int
        Training observations of the channel.
    minimum, maximum : float
        The training range of its values.
    rate : float
        Observations per hour of series span, pooled: ``n_values / Σ span`` over the series
        (a series' span: its first to its last observation, any channel); NaN when every
        span is 0.
    median_gap : float
        Median hours between consecutive observations of the channel within a series (NaN
        when no series has two).
    """

    n_values: int
    minimum: float
    maximum: float
    rate: float
    median_gap: float

    def to_dict(self) -> dict[str, Any]:
        # NaN is not JSON: None stands for "not defined"
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChannelReference:
        """Checked: every figure a finite number (or null where it may be undefined)."""
        if not isinstance(data, Mapping) or set(data) != {"n_values", "minimum", "maximum", "rate", "median_gap"}:
            raise ValueError("drift statistics of a channel must hold n_values, minimum, maximum, rate, median_gap")
        n = data["n_values"]
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"drift statistics: n_values must be a whole number >= 1, got {n!r}")
        lo, hi = _number(data["minimum"], "minimum"), _number(data["maximum"], "maximum")
        if not lo <= hi:
            raise ValueError(f"drift statistics: minimum {lo} above maximum {hi}")
        rate, gap = _number(data["rate"], "rate", optional=True), _number(data["median_gap"], "median_gap", optional=True)
        if rate < 0 or gap <= 0:
            raise ValueError("drift statistics: rate must be >= 0 and median_gap > 0")
        return cls(int(n), lo, hi, rate, gap)


def _number(value: Any, name: str, *, optional: bool = False) -> float:
    if value is None and optional:
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"drift statistics: {name} must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class DriftReference:
    """Per-channel training statistics ([`ChannelReference`][levy_core.data.drift.ChannelReference]), saved with the model."""

    channels: dict[str, ChannelReference] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"channels": {c: ref.to_dict() for c, ref in self.channels.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], known: Sequence[str]) -> DriftReference:
        """Read back what `to_dict` wrote; ``known``: the model's channels (no other
        channel may appear). ``ValueError`` for anything else."""
        if not isinstance(data, Mapping) or set(data) != {"channels"} or not isinstance(data["channels"], Mapping):
            raise ValueError("drift statistics must be an object {'channels': {...}}")
        stray = sorted(set(data["channels"]) - set(known))
        if stray:
            raise ValueError(f"drift statistics name channels the model does not have: {quote_list(stray)}")
        return cls({str(c): ChannelReference.from_dict(v) for c, v in data["channels"].items()})


@dataclass(frozen=True)
class DriftReport:
    """What [`check_drift`][levy_core.data.drift.check_drift] found.

    Attributes
    ----------
    flags : pandas.DataFrame
        One row per flag, columns [`FLAG_COLUMNS`][levy_core.data.drift.FLAG_COLUMNS]: ``channel``; ``kind`` ("values
        above the range", "values below the range", "sparser", "denser"); ``figure`` (what
        ``training`` and ``new`` measure); ``training`` and ``new`` (floats); ``message``.
        Empty when nothing is flagged or nothing was checked.
    checked : bool
        False when the model holds no drift statistics (saved before they were recorded).
    note : str
        Why nothing was checked ("" when ``checked``).
    """

    flags: pd.DataFrame
    checked: bool = True
    note: str = ""

    @property
    def messages(self) -> list[str]:
        """The flags' messages, or the note when nothing was checked."""
        return list(self.flags["message"]) if self.checked else [self.note]


def refuse_unknown_channels(channels: Sequence[str], known: Sequence[str]) -> None:
    """``DataError`` naming the ``channels`` that are not among ``known`` (the model's),
    and the channels the model knows."""
    unknown = sorted(set(map(str, channels)) - set(known))
    if unknown:
        raise DataError(f"the data has {count(len(unknown), 'channel')} the model was never trained on: "
                        f"{quote_list(unknown)}; the model knows {count(len(known), 'channel')}: "
                        f"{quote_list(sorted(known), limit=50)}. Drop or rename those channels, or fit a model "
                        "on data that has them.")


def reference_from(frame: pd.DataFrame) -> DriftReference:
    """The per-channel statistics of ``frame`` (columns ``series_id, channel, time, value``,
    as `Observations.frame`, sorted by series and time): what the model learned from."""
    stats = _channel_stats(frame)
    return DriftReference({str(c): ChannelReference(int(r.n_values), float(r.minimum), float(r.maximum),
                                                    float(r.rate), float(r.median_gap))
                           for c, r in stats.iterrows()})


def _channel_stats(frame: pd.DataFrame) -> pd.DataFrame:
    """Per channel: n_values, minimum, maximum, rate (per hour of span), median_gap."""
    times = frame.groupby("series_id", sort=False)["time"]
    total_span = float((times.max() - times.min()).sum())
    by_channel = frame.groupby("channel", sort=True)
    stats = by_channel["value"].agg(n_values="size", minimum="min", maximum="max")
    stats["rate"] = stats["n_values"] / total_span if total_span > 0 else np.nan
    gaps = frame.groupby(["series_id", "channel"], sort=False)["time"].diff()  # NaN at each first
    stats["median_gap"] = gaps.groupby(frame["channel"]).median().reindex(stats.index)
    return stats


def check_drift(reference: DriftReference | None, obs: Observations) -> DriftReport:
    """Compare ``obs`` with the training statistics, channel by channel.

    Parameters
    ----------
    reference : DriftReference or None
        ``FittedModel.drift``; None for a model saved before drift statistics were recorded
        (the report then says so and flags nothing).
    obs : Observations
        The new data.

    Returns
    -------
    DriftReport
        Flags for values outside the training range and sampling far sparser or denser
        (rules: this module's docstring).
    """
    return DriftTally(reference).add(obs).report()


class DriftTally:
    """[`check_drift`][levy_core.data.drift.check_drift] over data seen in chunks of whole series (``levy predict`` and
    ``levy rank`` on big files): [`add`][levy_core.data.drift.DriftTally.add] each chunk, then [`report`][levy_core.data.drift.DriftTally.report]. What it keeps
    per channel is a few counts — new series, series far above / below the range, the
    extreme medians, observations, the summed series spans — so memory does not grow with
    the series and the flags equal those of the whole data at once. Only the median gap,
    shown in a sampling message beside the rule, is the median over chunks of each chunk's
    median."""

    def __init__(self, reference: DriftReference | None) -> None:
        self.reference = reference
        self.span = 0.0  # Σ series span (hours), any channel
        self.counts: dict[str, dict[str, float]] = {}
        self.gaps: dict[str, list[float]] = {}
        self.clock: str | None = None  # the data's clock ("days", "datetime"), from the first add

    def clear(self) -> None:
        """Forget what was added (a file re-read whole after chunks that went wrong)."""
        self.span, self.counts, self.gaps = 0.0, {}, {}

    def add(self, obs: Observations) -> DriftTally:
        """Count the series of ``obs`` (series already added must not reappear)."""
        if self.reference is None:
            return self
        self.clock = obs.report.input_time_unit  # the messages say rates and gaps in the data's clock
        frame = obs.frame
        times = frame.groupby("series_id", sort=False)["time"]
        self.span += float((times.max() - times.min()).sum())
        medians = frame.groupby(["channel", "series_id"], sort=True)["value"].median()
        stats = _channel_stats(frame)
        for channel, ref in self.reference.channels.items():
            if channel not in stats.index:
                continue
            m = medians.loc[channel]
            margin = RANGE_MARGIN * (ref.maximum - ref.minimum)
            c = self.counts.setdefault(channel, {"series": 0, "above": 0, "below": 0, "highest": -math.inf,
                                                 "lowest": math.inf, "n_values": 0})
            c["series"] += len(m)
            c["above"] += int((m > ref.maximum + margin).sum())
            c["below"] += int((m < ref.minimum - margin).sum())
            c["highest"], c["lowest"] = max(c["highest"], float(m.max())), min(c["lowest"], float(m.min()))
            c["n_values"] += int(stats.loc[channel, "n_values"])
            if np.isfinite(stats.loc[channel, "median_gap"]):
                self.gaps.setdefault(channel, []).append(float(stats.loc[channel, "median_gap"]))
        return self

    def report(self) -> DriftReport:
        """The flags for everything added (the rules: this module's docstring)."""
        if self.reference is None:
            return DriftReport(pd.DataFrame(columns=FLAG_COLUMNS), checked=False, note=NOT_RECORDED)
        rows: list[dict[str, Any]] = []
        for channel, c in self.counts.items():
            ref = self.reference.channels[channel]
            rows += _value_flags(channel, ref, c)
            new = pd.Series({"n_values": c["n_values"], "rate": c["n_values"] / self.span if self.span > 0 else np.nan,
                             "median_gap": float(np.median(self.gaps[channel])) if channel in self.gaps else np.nan})
            rows += _sampling_flags(channel, ref, new, self.clock)
        return DriftReport(pd.DataFrame(rows, columns=FLAG_COLUMNS))


def _value_flags(channel: str, ref: ChannelReference, counts: Mapping[str, float]) -> list[dict[str, Any]]:
    """Series whose median value lies far above / below the training range, if too many
    (``counts``: a [`DriftTally`][levy_core.data.drift.DriftTally]'s of the channel)."""
    if ref.n_values < MIN_VALUES:
        return []
    out = []
    span = f"{ref.minimum:.4g} to {ref.maximum:.4g}"
    n_series = int(counts["series"])
    for side, n_out, extreme, bound in (("above", int(counts["above"]), counts["highest"], ref.maximum),
                                        ("below", int(counts["below"]), counts["lowest"], ref.minimum)):
        share = n_out / n_series
        if n_out == 0 or share <= VALUE_SHARE:
            continue
        message = (f"channel {channel!r}: {n_out} of {n_series:,} new series ({100 * share:.0f} %) have "
                   f"their typical (median) value far {side} the training range {span} "
                   f"({'highest' if side == 'above' else 'lowest'} median {extreme:.4g}); the band was calibrated on data like the training data, so it may not hold "
                   "here")
        out.append({"channel": channel, "kind": f"values {side} the range",
                    "figure": f"training {'maximum' if side == 'above' else 'minimum'} vs the new series' "
                              f"{'highest' if side == 'above' else 'lowest'} median",
                    "training": bound, "new": float(extreme), "message": message})
    return out


def _sampling_flags(channel: str, ref: ChannelReference, new: pd.Series, clock: str | None = None) -> list[dict[str, Any]]:
    """The channel observed ``DENSITY_FACTOR`` times less (or more) often per unit of time,
    said in the data's ``clock`` (per day and gaps in days for data in days; per hour
    without a clock)."""
    if min(ref.n_values, int(new["n_values"])) < MIN_VALUES or not (ref.rate > 0 and new["rate"] > 0):
        return []
    ratio = float(new["rate"]) / ref.rate
    if 1 / DENSITY_FACTOR < ratio < DENSITY_FACTOR:
        return []
    kind = "sparser" if ratio < 1 else "denser"
    factor = 1 / ratio if ratio < 1 else ratio
    unit = display_unit(clock, ref.median_gap) if clock is not None else "hours"
    per = f"observations per {unit.removesuffix('s')} of series span"
    size = TIME_UNITS[unit]
    gaps = ""
    if math.isfinite(ref.median_gap) and math.isfinite(new["median_gap"]):
        gaps = f"; median gap {say_duration(new['median_gap'], clock or 'hours')} vs " \
               f"{say_duration(ref.median_gap, clock or 'hours')}"
    message = (f"channel {channel!r} is sampled {factor:.1f}× {kind} than in training "
               f"({new['rate'] * size:.3g} vs {ref.rate * size:.3g} {per}{gaps}); the band was "
               f"calibrated on data sampled like the training data, so it may not hold here")
    return [{"channel": channel, "kind": kind, "figure": per, "training": ref.rate * size,
             "new": float(new["rate"]) * size, "message": message}]
