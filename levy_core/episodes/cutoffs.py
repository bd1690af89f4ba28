"""The forecast cut-off's rules: one time for every series, or each series' own.

A panel whose series are followed for different lengths (the PBC follow-up: up to 14
years) loses, with one cut-off for all, the series that end before it (nothing to predict
after it) or start after it (no history). Each series' own cut-off at a share of its observed
span (``TaskConfig.cutoff_fraction``) keeps every series observed at two different times in
the fit. `resolve_task` picks it by default on a panel split by
series when it keeps more series in than the common median midpoint does; the rule is saved
with the model, so predictions and evaluations split each series the same way.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from levy_core.data import DataError

__all__ = ["PER_SERIES_DEFAULT", "cutoff_fraction_of", "median_midpoint", "taking_part"]

PER_SERIES_DEFAULT = 0.5
"""The share of each series' span at which its own cut-off lies by default (``--cutoff auto``)."""


def cutoff_fraction_of(value: object) -> float | None:
    """The per-series cut-off a user's ``--cutoff``/``cutoff=`` asks for: ``"auto"`` → each
    series' midpoint (``PER_SERIES_DEFAULT``), ``"60%"`` → 0.6; None for anything else (a
    time, handled by the caller). ``DataError`` for a share outside (0 %, 100 %)."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if text == "auto":
        return PER_SERIES_DEFAULT
    if not text.endswith("%"):
        return None
    try:
        share = float(text[:-1]) / 100
    except ValueError:
        raise DataError(f"cut-off {value!r}: a share of each series' span is a number and %, e.g. 50%") from None
    if not 0 < share < 1:
        raise DataError(f"cut-off {value!r}: a share of each series' span lies strictly between 0% and 100%")
    return share


def median_midpoint(frame: pd.DataFrame) -> float:
    """The median series midpoint, rounded as a person would pick it (23.78 h → 24 h)."""
    times = frame.groupby("series_id")["time"]
    start, end = times.min(), times.max()
    half_span = float((end - start).median()) / 2
    middle = float(((start + end) / 2).median())
    if not half_span > 0:
        return middle
    step = 10.0 ** (math.floor(math.log10(half_span)) - 1)
    return round(round(middle / step) * step, 10)


def taking_part(frame: pd.DataFrame, *, cutoff: float | None = None, cutoff_fraction: float | None = None,
                horizon: float | None = None) -> int:
    """How many series of ``frame`` (columns series_id, time) have context and a query under a
    forecast with the cut-off ``cutoff`` (hours) for all, or each series' own at ``cutoff_fraction``
    of its span (one of the two given), and ``horizon`` (hours; None: to the end): what
    ``EpisodeBuilder.usable`` keeps."""
    times = frame.groupby("series_id")["time"]
    if cutoff_fraction is not None:
        first, last = times.min(), times.max()
        cut = first + float(cutoff_fraction) * (last - first)
    elif cutoff is not None:
        cut = pd.Series(float(cutoff), index=times.min().index)
    else:
        raise ValueError("give the cut-off: a time for all series or a share of each series' span")
    row_cut = frame["series_id"].map(cut).to_numpy(np.float64)
    t = frame["time"].to_numpy(np.float64)
    end = row_cut + (np.inf if horizon is None else float(horizon))
    has_context = pd.Series(t <= row_cut, index=frame.index).groupby(frame["series_id"]).any()
    has_query = pd.Series((t > row_cut) & (t <= end), index=frame.index).groupby(frame["series_id"]).any()
    return int((has_context & has_query).sum())
