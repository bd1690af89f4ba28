"""The data's own calendar: which ``freq`` date-time data are sampled on, and the forecast
times on it.

A weekly series forecasts on its weekday, a monthly one on month starts (or ends, as the
data), business-day data on business days, at the data's time of day, as NeuralForecast and
StatsForecast users pass ``freq``. Irregular data (no dominant step) have no ``freq``:
forecast times are spread evenly over the horizon, as before.

* `infer_freq` -- the ``freq`` of date-time observations, or None: a pandas alias
  (``"W-SAT"``, ``"MS"``, ``"ME"``, ``"B"``, ``"D"``, ``"h"``, …) when every observation lies
  on it and most steps between a series' observations are one step of it (rows dropped
  at random still leave most steps whole);
* `check_freq` -- a ``freq`` given by the user (``--freq``, ``freq=``), checked;
* `calendar_steps` -- the times on the calendar within a horizon after a series' last
  observation, as hours after it (the pipeline's clock).
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
from pandas.tseries.frequencies import to_offset

from levy_core.data.errors import DataError
from levy_core.data.observations import Observations

__all__ = ["AGREEING_SHARE", "MAX_CALENDAR_STEPS", "calendar_steps", "check_freq", "freq_step_hours",
           "infer_freq", "series_stamps"]

AGREEING_SHARE = 0.5
"""Share of the steps between consecutive observations that must be exactly one ``freq``
step for `infer_freq` to name it (weekly data with 30 % of rows dropped: ~70 %)."""

MAX_CALENDAR_STEPS = 100_000
"""Most calendar times `calendar_steps` lays out before thinning them."""

_WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
_MIN_STEPS = 2
"""Fewest steps between observations (over all series) `infer_freq` needs."""
_US_PER_HOUR = 3_600_000_000
_REMOVED_ALIASES = {"M": "ME", "Q": "QE", "Y": "YE", "A": "YE", "H": "h", "T": "min", "S": "s", "L": "ms", "U": "us",
                    "N": "ns", "BM": "BME", "BQ": "BQE", "BY": "BYE", "BA": "BYE", "AS": "YS", "BAS": "BYS"}
"""Aliases pandas 3 removed (pandas 2 still reads them, with a warning), and what replaces each."""


def series_stamps(obs: Observations) -> tuple[pd.DatetimeIndex, np.ndarray] | None:
    """The distinct observation date-times of each series, series by series and oldest first
    (UTC, microseconds), and the series' code of each; None for numeric times."""
    origin = obs.report.time_origin
    if origin is None or obs.frame.empty:
        return None
    frame = obs.frame[["series_id", "time"]].drop_duplicates().sort_values(["series_id", "time"])
    starts = pd.to_datetime(frame["series_id"].map(origin), utc=True).dt.tz_convert(None).dt.as_unit("us")
    micro = np.round(frame["time"].to_numpy(np.float64) * _US_PER_HOUR).astype(np.int64)
    # in integer microseconds: pandas 2 goes through nanoseconds, which overflow past 292 years
    at = starts.to_numpy().astype("datetime64[us]").astype(np.int64) + micro
    stamps = pd.DatetimeIndex(at.astype("datetime64[us]")).tz_localize("UTC")
    codes = pd.factorize(frame["series_id"])[0]
    return stamps, codes


def _steps(stamps: pd.DatetimeIndex, kind: str) -> np.ndarray:
    """Steps between consecutive stamps in the calendar unit ``kind`` (float, may be
    fractional for ``"tick"``-like units given in hours)."""
    if kind == "month":
        months = stamps.year.to_numpy() * 12 + stamps.month.to_numpy()
        return np.diff(months).astype(np.float64)
    if kind == "business":
        days = stamps.tz_convert(None).normalize().to_numpy().astype("datetime64[D]")
        return np.busday_count(days[:-1], days[1:]).astype(np.float64)
    micro = stamps.asi8 if stamps.unit == "us" else stamps.as_unit("us").asi8
    return np.diff(micro) / (_US_PER_HOUR * {"week": 168.0, "day": 24.0, "hour": 1.0, "minute": 1 / 60,
                                               "second": 1 / 3600}[kind])


def _candidates(stamps: pd.DatetimeIndex) -> list[tuple[str, str, int, np.ndarray]]:
    """``(freq, step kind, step size, on-calendar mask)`` to try, coarsest first."""
    day = stamps.tz_convert(None)
    weekday = int(np.bincount(day.day_of_week.to_numpy(), minlength=7).argmax())
    every = np.ones(len(day), dtype=bool)
    return [
        ("YS", "month", 12, day.is_year_start & (day.month == 1)),
        ("YE", "month", 12, day.is_year_end),
        ("QS", "month", 3, day.is_quarter_start),
        ("QE", "month", 3, day.is_quarter_end),
        ("MS", "month", 1, day.is_month_start),
        ("ME", "month", 1, day.is_month_end),
        (f"W-{_WEEKDAYS[weekday]}", "week", 1, day.day_of_week == weekday),
        ("B", "business", 1, day.day_of_week < 5),
        ("D", "day", 1, every),
        ("h", "hour", 1, every),
        ("min", "minute", 1, every),
        ("s", "second", 1, every),
    ]


def infer_freq(obs: Observations) -> str | None:
    """The calendar date-time data are sampled on, or None.

    Parameters
    ----------
    obs : Observations
        Read with date-times (`LoadReport.time_origin` set); numeric times have none.

    Returns
    -------
    str or None
        The coarsest pandas alias of ``YS, YE, QS, QE, MS, ME, W-<weekday>, B, D, h, min,
        s`` such that every observation lies on it (all at one time of day for a day or
        coarser: the first of the month for ``MS``, the weekday for ``W-…``, Monday to
        Friday for ``B``), every step between consecutive observations of a series is a
        whole number of its steps, and at least `AGREEING_SHARE` of them are exactly
        one; else a multiple of an hour, a minute or a second (``"15min"``, ``"2h"``) that
        most steps are. None for numeric times, fewer than two steps, or no such calendar
        (irregular data).
    """
    found = series_stamps(obs)
    if found is None:
        return None
    stamps, codes = found
    same = codes[1:] == codes[:-1]  # steps within a series
    if int(same.sum()) < _MIN_STEPS:
        return None
    local = stamps.tz_convert(None)
    time_of_day = (local - local.normalize()).to_numpy()
    one_time = bool((time_of_day == time_of_day[0]).all())
    for freq, kind, size, on in _candidates(stamps):
        coarse = kind in ("month", "week", "business", "day")
        if (coarse and not one_time) or not np.asarray(on).all():
            continue
        steps = _steps(stamps, kind)[same] / size
        if _agree(steps):
            return freq
    return _tick_multiple(stamps, same)


def _agree(steps: np.ndarray) -> bool:
    """Every step a whole number (at least 1) and most of them exactly 1."""
    whole = np.abs(steps - np.round(steps)) < 1e-6
    return bool(whole.all() and (steps >= 1 - 1e-6).all()
                and np.mean(np.abs(steps - 1) < 1e-6) >= AGREEING_SHARE)


def _tick_multiple(stamps: pd.DatetimeIndex, same: np.ndarray) -> str | None:
    """A fixed step that is a multiple of a second, a minute or an hour (``15min``, ``2h``,
    ``30s``): the most common step, when every step is a whole number of it and most are
    exactly one; None otherwise."""
    micro = np.diff(stamps.as_unit("us").asi8)[same]
    values, counts = np.unique(micro, return_counts=True)
    modal = int(values[np.argmax(counts)])
    if modal <= 0 or not _agree(micro / modal):
        return None
    for alias, size in (("h", _US_PER_HOUR), ("min", 60_000_000), ("s", 1_000_000)):
        if modal % size == 0:
            k = modal // size
            return check_freq(f"{k}{alias}") if k < 24 * 3600 else None
    return None


def check_freq(freq: str) -> str:
    """A ``freq`` the user gave, as pandas writes it (``"W"`` -> ``"W-SUN"``, ``"MS"``).

    Raises
    ------
    DataError
        Not a pandas frequency alias (naming a few), or not a positive step.
    """
    if not isinstance(freq, str) or not freq.strip() or len(freq) > 20:
        raise DataError(f"freq must be a pandas frequency such as W-SAT, MS, ME, B, D or h, got {str(freq)[:40]!r}")
    parts = re.fullmatch(r"\d*([A-Za-z]+)(-.*)?", freq.strip())
    if parts and parts.group(1) in _REMOVED_ALIASES:  # pandas 2 still reads them (with a warning), 3 refuses
        raise DataError(f"freq {freq!r} is an alias pandas no longer reads ('M' could be minutes or months): "
                        f"give {_REMOVED_ALIASES[parts.group(1)]} instead")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated aliases ('w'): accepted as pandas reads them
            offset = to_offset(freq.strip())
    except (ValueError, TypeError) as exc:
        raise DataError(f"freq {freq!r} is not a calendar pandas reads: give one such as W-SAT (weekly on "
                        "Saturdays), MS (month starts), ME (month ends), B (business days), D, h or 15min") from exc
    if freq_step_hours(offset.freqstr) <= 0:
        raise DataError(f"freq {freq!r} must step forward in time (a positive step)")
    return str(offset.freqstr)


def freq_step_hours(freq: str) -> float:
    """The typical length of one step of ``freq``, in hours: the median over 12 steps (a
    month 744 or 720, a week 168, a business day 24)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        offset = to_offset(freq)
    if not offset.n:
        return 0.0
    stamps = [pd.Timestamp("2001-01-01") + offset]  # on the calendar; then its next 12 steps
    for _ in range(12):
        stamps.append(stamps[-1] + offset)
    return float(np.median([(b - a) / pd.Timedelta(hours=1) for a, b in zip(stamps, stamps[1:], strict=False)]))


def calendar_steps(last: pd.Timestamp, horizon: float, freq: str, n_points: int) -> np.ndarray:
    """The calendar's times after ``last`` within ``horizon``, as hours after ``last``.

    Parameters
    ----------
    last : pandas.Timestamp
        A series' last observation (UTC).
    horizon : float
        Hours after it, > 0.
    freq : str
        The calendar (`check_freq`).
    n_points : int
        Most times returned: when the horizon holds more steps, every ``k``-th step is kept
        (``k`` the smallest that fits), so every time stays on the calendar.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` float64 hours, increasing, in ``(0, horizon]``, ``m <= n_points``; empty when
        the horizon is shorter than one step.
    """
    step = freq_step_hours(freq)
    if not (math.isfinite(horizon) and horizon > 0 and step > 0 and n_points >= 1):
        return np.empty(0)
    every = max(1, math.ceil(horizon / step / min(n_points, MAX_CALENDAR_STEPS) - 1e-9))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        offset = to_offset(freq) * every
    end = last + pd.Timedelta(microseconds=round(horizon * _US_PER_HOUR))
    times = pd.date_range(start=last, end=end, freq=offset)
    hours = ((times - last) / pd.Timedelta(hours=1)).to_numpy(np.float64)
    return hours[hours > 0][:n_points]
