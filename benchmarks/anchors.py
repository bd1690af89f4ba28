"""Lévy against what a single-series user would run instead: same data, same end points,
scored the same way, timed in the same run (issue 23, "Must show", single series).

Series (all ship with Python packages or this repository), each with its forecast horizon H:

=================  ==========================================================  =======
name               what                                                        H
=================  ==========================================================  =======
sensor             ``sample_data/single_series.csv``: 2 channels, ~14 days,    24 h
                   irregular steps
nile               Nile flow (statsmodels), yearly 1871–1970                   10 y
sunspots           sunspots (statsmodels), yearly 1700–2008, ~11 y cycle       11 y
co2                Mauna Loa CO₂ (statsmodels), weekly with missing weeks      52 w
elnino             El Niño SST (statsmodels), monthly 1950–2010                12 mo
sf-temps           San Francisco temperature (vega_datasets), hourly, the      48 h
                   last 60 days of 2010
seattle            Seattle daily maximum temperature (vega_datasets)           30 d
                   2012–2015, a seeded 10 % of days dropped
employment         US nonfarm employment (vega_datasets), monthly 2006–2015    12 mo
                   (seasonally adjusted: no season, a trend)
elnino-30          elnino with a seeded 30 % of months dropped                 12 mo
sf-temps-30        sf-temps with a seeded 30 % of hours dropped                48 h
=================  ==========================================================  =======

Three more sets run with ``--set``: ``dev``, twelve other series where every change to the
forecaster is judged first, ``fresh``, thirteen more chosen on 2026-12-04 before they
were ever scored, and ``unseen``, ten more chosen on 2026-12-07 before their first run
(their names are in ``DEV_CASES``, ``FRESH_CASES`` and ``UNSEEN_CASES`` below).

End points: the k-th fit (k = 1 … ``--ends``; ``--first-end K`` starts at K, for windows
earlier than the usual three) sees the data up to and including
``end_k = last time − k·H`` and is scored at the true date-times of the points in
``(end_k, end_k + H]``.

Methods, each a mean and a 90 % interval per query:

* ``levy``: ``LevyForecaster(seed=0, horizon=H).fit(train)``, then ``predict(queries,
  level=[90])``; the fit's ``training`` record and its base forecast go to the log;
* ``gp``: scikit-learn's ``GaussianProcessRegressor`` as a careful user writes it: time in
  horizons, ``normalize_y``, C·RBF(long: the trend) + C·ExpSineSquared(period fixed at the
  series' season)·RBF(decay) (seasonal series only) + C·RBF(short) + WhiteKernel, no
  optimizer restarts, the last 1,000 points per channel; band ±1.6449 sd;
* ``prophet``: Prophet defaults with ``interval_width=0.9``, per channel;
* ``ets``: statsforecast's ``AutoETS`` (season length in steps, 1 when none) on series on a
  regular grid (the median step; missing grid points interpolated), ``level=[90]``, each
  query given the nearest forecast step; irregular series (the sensor) skipped;
* trivial rows, per channel: ``last`` (the last value), ``mean`` (the training mean),
  ``seasonal_naive`` (the value one season before, or k seasons where the query is more
  than one season ahead; seasonal series), ``seasonal_naive_drift`` (the same plus k times
  the last season's change, mean of the last season minus mean of the one before; on a
  trending series without a season: the last value plus the slope between the means of
  the last two horizon-long windows). Each has a Gaussian band ±1.6449·s(lead), s the RMS
  of the method's own errors at that lead (bins over the horizon) over rolling origins
  inside the training part.

Scores per (series, end point, method): CRPS of the Gaussian implied by the 90 % interval
(sd = (hi − lo) / (2·1.6449), the point forecast as its mean), MAE, 90 % coverage, mean
width, fit + predict seconds (``time.perf_counter`` in this process; every method is
warmed up on a tiny series first, untimed). Then the per-series table (means over the end
points) and the issue's must-show lines.

Prophet and statsforecast are benchmark-only extras (``pip install -e ".[anchors]"``);
their rows are skipped with a message where they are missing.

Usage::

    python benchmarks/anchors.py [--set anchors|dev|fresh|unseen] [--only nile co2] [--ends 3]
        [--methods levy gp last] [--epochs 40] [--out results.txt] [--save-predictions DIR] [--threads N]
    python benchmarks/anchors.py --tables-from DIR [--out results.txt]   # no refitting
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common.fpp_series import fpp_series  # noqa: E402
from benchmarks.common.r_classics import r_classics  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
Z90 = float(stats.norm.ppf(0.95))  # 1.6449: the 90 % interval's half width in sd
GP_MAX_POINTS = 1000
METHODS = ("levy", "gp", "prophet", "ets", "last", "mean", "seasonal_naive", "seasonal_naive_drift")
TRIVIAL = ("last", "mean", "seasonal_naive", "seasonal_naive_drift")
LABELS = {"levy": "Lévy", "gp": "GP (sklearn)", "prophet": "Prophet", "ets": "AutoETS", "last": "last value",
          "mean": "training mean", "seasonal_naive": "seasonal naive",
          "seasonal_naive_drift": "s. naive + drift"}
PACKAGES = {"prophet": "prophet", "ets": "statsforecast"}  # benchmark-only extras
INSTALL = 'pip install -e ".[anchors]"'
DAY = pd.Timedelta(days=1)
YEAR = pd.Timedelta(days=365.25)


# ---------------------------------------------------------------------------------------
# series


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    frame: pd.DataFrame  # time (naive UTC datetime64), channel, value; sorted by time
    horizon: pd.DateOffset  # H: end points one H apart, each scored over the next H
    horizon_text: str  # the same, as LevyForecaster(horizon=...) reads it
    step: pd.DateOffset  # the sampling step (the AutoETS grid)
    season: pd.Timedelta | None = None  # None: not seasonal
    trend: bool = False  # the seasonal naive + drift row
    regular: bool = True  # on a grid of ``step`` (points may be missing): AutoETS runs
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def channels(self) -> list[str]:
        return sorted(self.frame["channel"].unique())


def _frame(times, values, channel: str) -> pd.DataFrame:
    out = pd.DataFrame({"time": pd.to_datetime(times), "channel": channel,
                        "value": np.asarray(values, np.float64)})
    return out.dropna().sort_values("time", kind="stable").reset_index(drop=True)


def _yearly(years, values, channel: str) -> pd.DataFrame:
    return _frame(pd.to_datetime([f"{int(y)}-07-01" for y in years]), values, channel)


def _drop(frame: pd.DataFrame, fraction: float, seed: int) -> pd.DataFrame:
    keep = np.random.default_rng(seed).random(len(frame)) >= fraction
    return frame[keep].reset_index(drop=True)


def _sensor() -> Case:
    raw = pd.read_csv(REPO / "sample_data" / "single_series.csv")
    times = pd.to_datetime(raw.pop("timestamp"), utc=True, format="ISO8601").dt.tz_convert(None)
    frame = pd.concat([_frame(times, raw[c], c) for c in raw.columns]).sort_values(["time", "channel"])
    return Case("sensor", "bundled sensor (2 channels, ~14 days, irregular)", frame.reset_index(drop=True),
                pd.DateOffset(hours=24), "24h", pd.DateOffset(minutes=30), pd.Timedelta(hours=24),
                regular=False)


def _nile() -> Case:
    import statsmodels.api as sm
    d = sm.datasets.nile.load_pandas().data
    return Case("nile", "Nile flow (yearly)", _yearly(d["year"], d["volume"], "volume"),
                pd.DateOffset(years=10), "10y", pd.DateOffset(years=1))


def _sunspots() -> Case:
    import statsmodels.api as sm
    d = sm.datasets.sunspots.load_pandas().data
    return Case("sunspots", "sunspots (yearly, ~11 y cycle)", _yearly(d["YEAR"], d["SUNACTIVITY"], "sunspots"),
                pd.DateOffset(years=11), "11y", pd.DateOffset(years=1), 11 * YEAR)


def _co2() -> Case:
    import statsmodels.api as sm
    d = sm.datasets.co2.load_pandas().data
    return Case("co2", "Mauna Loa CO2 (weekly, missing weeks)", _frame(d.index, d["co2"], "co2"),
                pd.DateOffset(weeks=52), "52w", pd.DateOffset(weeks=1), YEAR, trend=True)


def _elnino_frame() -> pd.DataFrame:
    import statsmodels.api as sm
    d = sm.datasets.elnino.load_pandas().data
    long = d.melt(id_vars="YEAR", var_name="month", value_name="sst")
    month = pd.to_datetime(long["month"], format="%b").dt.month
    times = pd.to_datetime(pd.DataFrame({"year": long["YEAR"].astype(int), "month": month, "day": 1}))
    return _frame(times, long["sst"], "sst")


def _elnino(drop: float = 0.0) -> Case:
    frame = _elnino_frame()
    name, title = "elnino", "El Niño SST (monthly)"
    if drop:
        frame, name, title = _drop(frame, drop, 30), "elnino-30", "El Niño SST (monthly, 30 % dropped)"
    return Case(name, title, frame, pd.DateOffset(months=12), "12mo", pd.DateOffset(months=1), YEAR)


def _hourly_temps(dataset: str, name: str, city: str, drop: float, seed: int) -> Case:
    """The last 60 days of 2010 of a vega_datasets hourly temperature series, 48 h ahead
    (with ``drop``: that share of hours dropped, seeded)."""
    from vega_datasets import local_data
    d = local_data(dataset)
    d = d[d["date"] > d["date"].max() - pd.Timedelta(days=60)]
    frame = _frame(d["date"], d["temp"], "temp")
    title = f"{city} temperature (hourly, last 60 days of 2010)"
    if drop:
        frame, name, title = (_drop(frame, drop, seed), f"{name}-{round(drop * 100)}",
                              f"{city} temperature (hourly, {drop:.0%} dropped)".replace("%", " %"))
    return Case(name, title, frame, pd.DateOffset(hours=48), "48h", pd.DateOffset(hours=1),
                pd.Timedelta(hours=24))


def _sf_temps(drop: float = 0.0) -> Case:
    return _hourly_temps("sf-temps", "sf-temps", "San Francisco", drop, 31)


def _seattle() -> Case:
    from vega_datasets import local_data
    d = local_data.seattle_weather()
    frame = _drop(_frame(d["date"], d["temp_max"], "temp_max"), 0.10, 32)
    return Case("seattle", "Seattle daily max temperature (10 % of days dropped)", frame,
                pd.DateOffset(days=30), "30d", pd.DateOffset(days=1), YEAR)


def _employment() -> Case:
    from vega_datasets import local_data
    d = local_data("us-employment")
    return Case("employment", "US nonfarm employment (monthly, seasonally adjusted)",
                _frame(pd.to_datetime(d["month"]), d["nonfarm"], "nonfarm"), pd.DateOffset(months=12), "12mo",
                pd.DateOffset(months=1), None, trend=True)


CASES: dict[str, tuple[Callable[[], Case], tuple[str, ...]]] = {  # name: (builder, packages it needs)
    "sensor": (_sensor, ()),
    "nile": (_nile, ("statsmodels",)),
    "sunspots": (_sunspots, ("statsmodels",)),
    "co2": (_co2, ("statsmodels",)),
    "elnino": (_elnino, ("statsmodels",)),
    "sf-temps": (_sf_temps, ("vega_datasets",)),
    "seattle": (_seattle, ("vega_datasets",)),
    "employment": (_employment, ("vega_datasets",)),
    "elnino-30": (lambda: _elnino(0.30), ("statsmodels",)),
    "sf-temps-30": (lambda: _sf_temps(0.30), ("vega_datasets",)),
}


# A development set: other series of the same kinds, never scored by the must-show. A change
# to the offset's candidates or its selection rule is judged here first (``--set dev``, and
# ``benchmarks/studies/offset_study.py --set dev``), so that the anchors above stay a test of it, not
# the data it was tuned on.


def _seattle_hourly(drop: float = 0.0) -> Case:
    return _hourly_temps("seattle-temps", "seattle-hourly", "Seattle", drop, 41)


def _seattle_min(drop: float) -> Case:
    from vega_datasets import local_data
    d = local_data.seattle_weather()
    frame = _drop(_frame(d["date"], d["temp_min"], "temp_min"), drop, 42)
    return Case(f"seattle-min-{round(drop * 100)}", f"Seattle daily min temperature ({drop:.0%} of days dropped)",
                frame, pd.DateOffset(days=30), "30d", pd.DateOffset(days=1), YEAR)


def _sector(column: str) -> Case:
    from vega_datasets import local_data
    d = local_data("us-employment")
    return Case(column.split("_")[0], f"US {column.replace('_', ' ')} employment (monthly, seasonally adjusted)",
                _frame(pd.to_datetime(d["month"]), d[column], column), pd.DateOffset(months=12), "12mo",
                pd.DateOffset(months=1), None, trend=True)


def _quarters(d: pd.DataFrame) -> pd.Series:
    """The first day of each row's quarter, from its ``year`` and ``quarter`` columns."""
    return pd.to_datetime(pd.DataFrame({"year": d["year"].astype(int), "month": 3 * d["quarter"].astype(int) - 2,
                                        "day": 1}))


def _macro(column: str, trend: bool) -> Case:
    import statsmodels.api as sm
    d = sm.datasets.macrodata.load_pandas().data
    return Case(column, f"US {column} (quarterly, statsmodels macrodata)", _frame(_quarters(d), d[column], column),
                pd.DateOffset(months=24), "24mo", pd.DateOffset(months=3), None, trend=trend)


def _stock(symbol: str) -> Case:
    from vega_datasets import local_data
    d = local_data.stocks()
    d = d[d["symbol"] == symbol]
    return Case(symbol.lower(), f"{symbol} share price (monthly)", _frame(d["date"], d["price"], "price"),
                pd.DateOffset(months=12), "12mo", pd.DateOffset(months=1), None)


DEV_CASES: dict[str, tuple[Callable[[], Case], tuple[str, ...]]] = {
    "seattle-hourly": (_seattle_hourly, ("vega_datasets",)),
    "seattle-hourly-30": (lambda: _seattle_hourly(0.30), ("vega_datasets",)),
    "seattle-min-10": (lambda: _seattle_min(0.10), ("vega_datasets",)),
    "seattle-min-30": (lambda: _seattle_min(0.30), ("vega_datasets",)),
    "construction": (lambda: _sector("construction"), ("vega_datasets",)),
    "education": (lambda: _sector("education_and_health_services"), ("vega_datasets",)),
    "leisure": (lambda: _sector("leisure_and_hospitality"), ("vega_datasets",)),
    "realgdp": (lambda: _macro("realgdp", True), ("statsmodels",)),
    "unemp": (lambda: _macro("unemp", False), ("statsmodels",)),
    "cpi": (lambda: _macro("cpi", True), ("statsmodels",)),
    "aapl": (lambda: _stock("AAPL"), ("vega_datasets",)),
    "ibm": (lambda: _stock("IBM"), ("vega_datasets",)),
}

# A fresh set, chosen on 2026-12-04 and scored only after every rule of the forecaster was
# fixed: nothing was ever tuned on it. Where the anchors (the must-show) and the development
# set have both been looked at many times, this one says how the forecaster does on series
# it has never met: a seasonal index, share prices, employment, quarterly macro series, a
# noisy daily weather series and two short quarterly series (55 and 107 points).


def _elec_equip(drop: float = 0.0) -> Case:
    from statsmodels.datasets import elec_equip
    d = elec_equip.load().data
    frame, name = _frame(d.index, d.iloc[:, 0], "index"), "elec-equip"
    title = "euro-area electrical equipment turnover (monthly, not seasonally adjusted)"
    if drop:
        frame, name, title = _drop(frame, drop, 51), f"{name}-{round(drop * 100)}", title + f", {drop:.0%} dropped"
    return Case(name, title.replace("%", " %"), frame, pd.DateOffset(months=12), "12mo", pd.DateOffset(months=1),
                YEAR)


def _danish_money() -> Case:
    from statsmodels.datasets import danish_data
    d = danish_data.load_pandas().data
    return Case("danish-lrm", "Danish log real money (quarterly 1974-1987, 55 points)",
                _frame(d.index, d["lrm"], "lrm"), pd.DateOffset(months=12), "12mo", pd.DateOffset(months=3), None,
                trend=True)


def _bond_rate() -> Case:
    from statsmodels.datasets import interest_inflation
    d = interest_inflation.load_pandas().data
    return Case("bond-rate", "German long-term interest rate (quarterly 1972-1998, 107 points)",
                _frame(_quarters(d), d["R"], "R"), pd.DateOffset(months=12), "12mo", pd.DateOffset(months=3), None)


def _seattle_wind() -> Case:
    from vega_datasets import local_data
    d = local_data.seattle_weather()
    frame = _drop(_frame(d["date"], d["wind"], "wind"), 0.10, 52)
    return Case("seattle-wind", "Seattle daily mean wind (10 % of days dropped)", frame, pd.DateOffset(days=30),
                "30d", pd.DateOffset(days=1), YEAR)


FRESH_CASES: dict[str, tuple[Callable[[], Case], tuple[str, ...]]] = {
    "elec-equip": (_elec_equip, ("statsmodels",)),
    "elec-equip-30": (lambda: _elec_equip(0.30), ("statsmodels",)),
    "msft": (lambda: _stock("MSFT"), ("vega_datasets",)),
    "amzn": (lambda: _stock("AMZN"), ("vega_datasets",)),
    "manufacturing": (lambda: _sector("manufacturing"), ("vega_datasets",)),
    "government": (lambda: _sector("government"), ("vega_datasets",)),
    "realcons": (lambda: _macro("realcons", True), ("statsmodels",)),
    "infl": (lambda: _macro("infl", False), ("statsmodels",)),
    "tbilrate": (lambda: _macro("tbilrate", False), ("statsmodels",)),
    "m1": (lambda: _macro("m1", True), ("statsmodels",)),
    "seattle-wind": (_seattle_wind, ("vega_datasets",)),
    "danish-lrm": (_danish_money, ("statsmodels",)),
    "bond-rate": (_bond_rate, ("statsmodels",)),
}
# The unseen set (issue 51), chosen on 2026-12-07 and committed before its first run: ten
# series of the same packages that no set here holds and no one here has scored (a share
# price, three US employment sectors, three quarterly macro series, a Danish income series,
# German inflation, and a daily rainfall series with zeros and 10 % of days dropped).


def _danish(column: str, title: str) -> Case:
    from statsmodels.datasets import danish_data
    d = danish_data.load_pandas().data
    return Case(f"danish-{column}", f"Danish {title} (quarterly 1974-1987, 55 points)", _frame(d.index, d[column], column),
                pd.DateOffset(months=12), "12mo", pd.DateOffset(months=3), None, trend=True)


def _german_inflation() -> Case:
    from statsmodels.datasets import interest_inflation
    d = interest_inflation.load_pandas().data
    return Case("bond-dp", "German inflation (quarterly 1972-1998, 107 points)", _frame(_quarters(d), d["Dp"], "Dp"),
                pd.DateOffset(months=12), "12mo", pd.DateOffset(months=3), None)


def _seattle_rain() -> Case:
    from vega_datasets import local_data
    d = local_data.seattle_weather()
    frame = _drop(_frame(d["date"], d["precipitation"], "precipitation"), 0.10, 53)
    return Case("seattle-rain", "Seattle daily precipitation (mm, zeros on dry days; 10 % of days dropped)", frame,
                pd.DateOffset(days=30), "30d", pd.DateOffset(days=1), YEAR)


UNSEEN_CASES: dict[str, tuple[Callable[[], Case], tuple[str, ...]]] = {
    "goog": (lambda: _stock("GOOG"), ("vega_datasets",)),
    "retail": (lambda: _sector("retail_trade"), ("vega_datasets",)),
    "financial": (lambda: _sector("financial_activities"), ("vega_datasets",)),
    "information": (lambda: _sector("information"), ("vega_datasets",)),
    "realinv": (lambda: _macro("realinv", True), ("statsmodels",)),
    "realdpi": (lambda: _macro("realdpi", True), ("statsmodels",)),
    "realgovt": (lambda: _macro("realgovt", True), ("statsmodels",)),
    "danish-lry": (lambda: _danish("lry", "log real income"), ("statsmodels",)),
    "bond-dp": (_german_inflation, ("statsmodels",)),
    "seattle-rain": (_seattle_rain, ("vega_datasets",)),
}
# The rclassics set (issue 51): twelve series of R's datasets, committed before their first run
RCLASSICS_CASES = r_classics()
# The fpp set (issue 51): eleven series of R's fpp2 and forecast packages, committed before their first run
FPP_CASES = fpp_series()
SETS = {"anchors": CASES, "dev": DEV_CASES, "fresh": FRESH_CASES, "unseen": UNSEEN_CASES, "rclassics": RCLASSICS_CASES,
        "fpp": FPP_CASES}


def missing(package: str) -> bool:
    return importlib.util.find_spec(package) is None


def load_cases(names: Sequence[str] | None, say: Callable[[str], None] = print, which: str = "anchors") -> list[Case]:
    """The series ``names`` (of either set), or every series of the set ``which``."""
    known = {**CASES, **DEV_CASES, **FRESH_CASES, **UNSEEN_CASES, **RCLASSICS_CASES, **FPP_CASES}
    unknown = [n for n in names or () if n not in known]
    if unknown:
        raise SystemExit(f"unknown series {', '.join(unknown)}; choose from {', '.join(known)}")
    out = []
    for name in names or SETS[which]:
        builder, packages = known[name]
        absent = [p for p in packages if missing(p)]
        if absent:
            say(f"skipping series {name}: the package {', '.join(absent)} is not installed ({INSTALL})")
            continue
        out.append(builder())
    return out


# ---------------------------------------------------------------------------------------
# end points


def end_point(case: Case, k: int) -> pd.Timestamp:
    return case.frame["time"].max() - k * case.horizon


def split(case: Case, k: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.Timestamp]:
    """The k-th fit's data (time ≤ end_k) and its held-out points (end_k, end_k + H]."""
    end = end_point(case, k)
    t = case.frame["time"]
    train = case.frame[t <= end].reset_index(drop=True)
    test = case.frame[(t > end) & (t <= end + case.horizon)].reset_index(drop=True)
    return train, test, end


def _days(times) -> np.ndarray:
    return ((pd.to_datetime(pd.Series(times)) - pd.Timestamp("1970-01-01")) / DAY).to_numpy(np.float64)


def _horizon_days(case: Case, end: pd.Timestamp) -> float:
    return (end + case.horizon - end) / DAY


def _median_step_days(t: np.ndarray) -> float:
    d = np.diff(t)
    d = d[d > 0]
    return float(np.median(d)) if len(d) else 1.0


# ---------------------------------------------------------------------------------------
# trivial rows (one channel; times in days as floats)


def trivial_forecast(method: str, t: np.ndarray, y: np.ndarray, q: np.ndarray, season: float | None,
                     horizon: float) -> np.ndarray:
    """The method's point forecast at query times ``q`` (> t[-1]) from the history (t, y)."""
    end = t[-1]
    if method == "last":
        return np.full(len(q), y[-1])
    if method == "mean":
        return np.full(len(q), y.mean())
    if method == "seasonal_naive_drift" and not season:  # a trend without a season: drift from the last value
        last_w, prev_w = y[t > end - horizon], y[(t > end - 2 * horizon) & (t <= end - horizon)]
        slope = (last_w.mean() - prev_w.mean()) / horizon if len(prev_w) and len(last_w) else 0.0
        return y[-1] + slope * (q - end)
    if method not in ("seasonal_naive", "seasonal_naive_drift") or not season:
        raise ValueError(f"{method} needs a season")
    k = np.maximum(1, np.ceil((q - end) / season - 1e-9))
    lag = q - k * season
    i = np.clip(np.searchsorted(t, lag), 1, len(t) - 1) if len(t) > 1 else np.zeros(len(q), int)
    if len(t) > 1:
        i = np.where(np.abs(t[i - 1] - lag) <= np.abs(t[i] - lag), i - 1, i)
    out = y[i]
    if method == "seasonal_naive_drift":
        last_s, prev_s = y[t > end - season], y[(t > end - 2 * season) & (t <= end - season)]
        change = last_s.mean() - prev_s.mean() if len(prev_s) and len(last_s) else 0.0
        out = out + k * change
    return out


def _history_needed(method: str, season: float | None, horizon: float) -> float:
    if method == "seasonal_naive":
        return season or 0.0
    if method == "seasonal_naive_drift":
        return 2 * (season or horizon)
    return 0.0


def lead_spread(method: str, t: np.ndarray, y: np.ndarray, season: float | None, horizon: float,
                max_origins: int = 60, max_bins: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Per-lead spread: the RMS of the method's own errors in each lead bin over (0, H], from
    rolling origins inside (t, y) (at most ``max_origins``, evenly spaced; origins whose
    whole horizon lies inside the data, where there are at least 5 such). Returns the
    bins' leads H·i/n (days; a lead goes to the nearest) and their spreads; empty bins
    take the nearest filled bin's."""
    n = len(t)
    n_bins = int(np.clip(round(horizon / _median_step_days(t)), 1, max_bins))
    leads = horizon * np.arange(1, n_bins + 1) / n_bins
    need = _history_needed(method, season, horizon)
    eligible = np.flatnonzero((t >= t[0] + need) & (np.arange(n) < n - 1))
    full = eligible[t[eligible] <= t[-1] - horizon]
    pool = full if len(full) >= 5 else eligible if len(eligible) else np.arange(max(n - 1, 0))
    sq, counts = np.zeros(n_bins), np.zeros(n_bins)
    if len(pool):
        pick = np.unique(np.linspace(0, len(pool) - 1, min(max_origins, len(pool))).round().astype(int))
        for i in pool[pick]:
            ahead = (t > t[i]) & (t <= t[i] + horizon)
            if not ahead.any():
                continue
            err = y[ahead] - trivial_forecast(method, t[: i + 1], y[: i + 1], t[ahead], season, horizon)
            b = lead_bin(t[ahead] - t[i], horizon, n_bins)
            np.add.at(sq, b, err**2)
            np.add.at(counts, b, 1)
    filled = counts > 0
    if not filled.any():
        return leads, np.full(n_bins, float(np.std(y)) if n > 1 else 1.0)
    rms = np.sqrt(np.divide(sq, counts, out=np.zeros(n_bins), where=filled))
    idx = np.flatnonzero(filled)
    nearest = idx[np.abs(np.arange(n_bins)[:, None] - idx[None, :]).argmin(axis=1)]
    return leads, rms[nearest]


def lead_bin(lead: np.ndarray, horizon: float, n_bins: int) -> np.ndarray:
    """The lead's bin: the nearest of the bin leads H·i/n, i = 1 … n (so that monthly leads
    of a 12-month horizon, 28–31 days apart, fall one per bin)."""
    return np.clip(np.floor(np.asarray(lead) / horizon * n_bins + 0.5).astype(int) - 1, 0, n_bins - 1)


def spread_at(leads: np.ndarray, spread: np.ndarray, lead: np.ndarray) -> np.ndarray:
    """The spread of each query's lead bin (``leads``: the bins' leads from :func:`lead_spread`)."""
    return spread[lead_bin(lead, leads[-1], len(leads))]


def run_trivial(method: str, case: Case, train: pd.DataFrame, test: pd.DataFrame, end: pd.Timestamp,
                log: Callable[[str], None]) -> pd.DataFrame:
    season = case.season / DAY if case.season is not None else None
    horizon = _horizon_days(case, end)
    mean, sd = np.empty(len(test)), np.empty(len(test))
    for ch in case.channels:
        tr, te = train[train["channel"] == ch], (test["channel"] == ch).to_numpy()
        if not te.any():
            continue
        t, y, q = _days(tr["time"]), tr["value"].to_numpy(np.float64), _days(test.loc[te, "time"])
        mean[te] = trivial_forecast(method, t, y, q, season, horizon)
        leads, spread = lead_spread(method, t, y, season, horizon)
        sd[te] = spread_at(leads, spread, q - t[-1])
    return _band(mean, sd)


def _band(mean: np.ndarray, sd: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"mean": mean, "lo": mean - Z90 * sd, "hi": mean + Z90 * sd})


# ---------------------------------------------------------------------------------------
# the other methods


def gp_kernel(span: float, step: float, period: float | None):
    """A careful user's kernel, time in horizons: the trend, the season (period fixed) with a
    decay, short-term wiggles, noise."""
    from sklearn.gaussian_process.kernels import RBF, ExpSineSquared, WhiteKernel
    from sklearn.gaussian_process.kernels import ConstantKernel as C
    top = 1e3 * max(span, 1.0)
    kernel = C(1.0, (1e-3, 1e3)) * RBF(max(span / 2, 2.0), (1.0, top))
    if period:
        kernel += (C(1.0, (1e-3, 1e3))
                   * ExpSineSquared(1.0, period, length_scale_bounds=(0.05, 20.0), periodicity_bounds="fixed")
                   * RBF(max(10 * period, span / 2), (period, top)))
    short_lo = step / 2
    kernel += C(0.1, (1e-4, 1e2)) * RBF(min(max(3 * step, short_lo * 1.01), 0.99), (short_lo, 1.0))
    return kernel + WhiteKernel(0.1, (1e-6, 10.0))


def run_gp(case: Case, train: pd.DataFrame, test: pd.DataFrame, end: pd.Timestamp,
           log: Callable[[str], None]) -> pd.DataFrame:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    unit = _horizon_days(case, end)
    period = case.season / DAY / unit if case.season is not None else None
    mean, sd = np.empty(len(test)), np.empty(len(test))
    for ch in case.channels:
        tr, te = train[train["channel"] == ch], (test["channel"] == ch).to_numpy()
        if not te.any():
            continue
        if len(tr) > GP_MAX_POINTS:
            log(f"{case.name} end {end}: gp: {ch}: the last {GP_MAX_POINTS} of {len(tr)} training points")
            tr = tr.iloc[-GP_MAX_POINTS:]
        t0 = _days(tr["time"])[-1]
        x = ((_days(tr["time"]) - t0) / unit)[:, None]
        xq = ((_days(test.loc[te, "time"]) - t0) / unit)[:, None]
        kernel = gp_kernel(float(x[-1, 0] - x[0, 0]), _median_step_days(x[:, 0] * unit) / unit, period)
        gp = GaussianProcessRegressor(kernel=kernel, normalize_y=True, n_restarts_optimizer=0, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gp.fit(x, tr["value"].to_numpy(np.float64))
            m, s = gp.predict(xq, return_std=True)
        mean[te], sd[te] = m, s
        log(f"{case.name} end {end}: gp: {ch}: {gp.kernel_}")
    return _band(mean, sd)


def quiet_prophet() -> None:
    """Prophet's and cmdstanpy's INFO lines off (cmdstanpy sets its own level when it first
    makes its logger: make it first, then lower it)."""
    if not missing("cmdstanpy"):
        from cmdstanpy.utils import get_logger
        get_logger()
    for name in ("cmdstanpy", "prophet", "prophet.plot"):
        logging.getLogger(name).setLevel(logging.WARNING)


PROPHET_MAX_YEARS = 280


def within_years(times: pd.Series, years: int) -> pd.Series:
    """Which ``times`` lie less than ``years`` calendar years before the latest, by calendar
    fields: subtracting the years from a date-time (or differencing two) leaves pandas'
    nanosecond range before 1677 and past 292 years (the Nile ended in 1950 minus 280)."""
    latest = times.max()
    months = (latest.year - times.dt.year) * 12 + (latest.month - times.dt.month)
    return months < years * 12


def run_prophet(case: Case, train: pd.DataFrame, test: pd.DataFrame, end: pd.Timestamp,
                log: Callable[[str], None]) -> pd.DataFrame:
    from prophet import Prophet
    quiet_prophet()
    out = pd.DataFrame(index=test.index, columns=["mean", "lo", "hi"], dtype=np.float64)
    for ch in case.channels:
        tr, te = train[train["channel"] == ch], test["channel"] == ch
        if not te.any():
            continue
        # Prophet differences date-times in nanoseconds, which overflow past 292 years: it
        # gets the latest 280 years of a longer series (sunspots since 1700), as a user would
        recent = within_years(tr["time"], PROPHET_MAX_YEARS)
        if not recent.all():
            log(f"{case.name} end {end}: Prophet fitted on the last {PROPHET_MAX_YEARS} years "
                f"({int(recent.sum())} of {len(tr)} points): its date arithmetic overflows beyond 292")
            tr = tr[recent]
        model = Prophet(interval_width=0.9)
        model.fit(pd.DataFrame({"ds": tr["time"].to_numpy(), "y": tr["value"].to_numpy()}))
        np.random.seed(0)  # noqa: NPY002 -- Prophet samples its band from the global generator
        fc = model.predict(pd.DataFrame({"ds": test.loc[te, "time"].to_numpy()}))
        out.loc[te, ["mean", "lo", "hi"]] = fc[["yhat", "yhat_lower", "yhat_upper"]].to_numpy()
    return out.reset_index(drop=True)


def season_steps(case: Case) -> int:
    if case.season is None:
        return 1
    return max(1, round(case.season / DAY / _median_step_days(_days(case.frame["time"]))))


def run_ets(case: Case, train: pd.DataFrame, test: pd.DataFrame, end: pd.Timestamp,
            log: Callable[[str], None]) -> pd.DataFrame:
    from statsforecast.models import AutoETS
    m = season_steps(case)
    out = pd.DataFrame(index=test.index, columns=["mean", "lo", "hi"], dtype=np.float64)
    for ch in case.channels:
        tr, te = train[train["channel"] == ch], test["channel"] == ch
        if not te.any():
            continue
        step = (tr["time"].iloc[-1] + case.step) - tr["time"].iloc[-1]
        grid = pd.date_range(tr["time"].iloc[0], tr["time"].iloc[-1], freq=case.step)
        series = pd.Series(tr["value"].to_numpy(), index=pd.DatetimeIndex(tr["time"]))
        y = series.reindex(grid, method="nearest", tolerance=step / 2)
        filled = int(y.isna().sum())
        y = y.interpolate(limit_direction="both").to_numpy(np.float64)
        q = pd.DatetimeIndex(test.loc[te, "time"])
        h = int(math.ceil((q.max() - grid[-1]) / step)) + 1
        steps = pd.date_range(grid[-1], periods=h + 1, freq=case.step)[1:]
        fc = AutoETS(season_length=m).forecast(y=y, h=h, level=[90])
        nearest = np.abs(q.to_numpy()[:, None] - steps.to_numpy()[None, :]).argmin(axis=1)
        out.loc[te, ["mean", "lo", "hi"]] = np.column_stack([fc["mean"], fc["lo-90"], fc["hi-90"]])[nearest]
        log(f"{case.name} end {end}: ets: {ch}: season_length {m}, grid of {len(grid)} steps, "
            f"{filled} missing interpolated")
    return out.reset_index(drop=True)


def levy_frames(case: Case, train: pd.DataFrame, test: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The fit frame and the queries: unique_id/ds/y for one channel, the long
    series_id/time/channel/value form for several."""
    if len(case.channels) == 1:
        return (pd.DataFrame({"unique_id": "s", "ds": train["time"], "y": train["value"]}),
                pd.DataFrame({"unique_id": "s", "ds": test["time"]}))
    return (pd.DataFrame({"series_id": "s", "time": train["time"], "channel": train["channel"],
                          "value": train["value"]}),
            pd.DataFrame({"series_id": "s", "time": test["time"], "channel": test["channel"]}))


LEVY_SEED = 0  # --levy-seed: the Lévy fit's training seed (another draw of the network's training)


def run_levy(case: Case, train: pd.DataFrame, test: pd.DataFrame, end: pd.Timestamp,
             log: Callable[[str], None], epochs: int | None = None) -> pd.DataFrame:
    from levy_core import LevyForecaster
    fit_df, queries = levy_frames(case, train, test)
    f = LevyForecaster(seed=LEVY_SEED, horizon=case.horizon_text, **({"epochs": epochs} if epochs else {})).fit(fit_df)
    pred = f.predict(queries, level=[90])
    assert len(pred) == len(test)
    base = f.fitted.base_forecast.describe() if getattr(f.fitted, "base_forecast", None) is not None else None
    log(f"{case.name} end {end}: levy: training {json.dumps(f.fitted.training, default=str)}; base {base}")
    if base is not None:  # each candidate's squared error on the scored origins (normalised units)
        log(f"{case.name} end {end}: levy: base scores {json.dumps(f.fitted.base_forecast.scores)}")
    return pd.DataFrame({"mean": pred["Lévy"].to_numpy(np.float64), "lo": pred["Lévy-lo-90"].to_numpy(np.float64),
                         "hi": pred["Lévy-hi-90"].to_numpy(np.float64)})


def applicable(method: str, case: Case) -> str | None:
    """Why ``method`` does not run on ``case`` (None: it does)."""
    if method == "seasonal_naive" and case.season is None:
        return "no season"
    if method == "seasonal_naive_drift" and not case.trend:
        return "no trend"
    if method == "ets" and not case.regular:
        return "irregular steps (AutoETS needs a regular grid)"
    return None


# ---------------------------------------------------------------------------------------
# scores


def gaussian_crps(y, mean, sd) -> np.ndarray:
    """CRPS of N(mean, sd²) at y, closed form; |y − mean| where sd is 0."""
    y, mean, sd = (np.asarray(a, np.float64) for a in (y, mean, sd))
    safe = np.where(sd > 0, sd, 1.0)
    z = (y - mean) / safe
    crps = safe * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi))
    return np.where(sd > 0, crps, np.abs(y - mean))


def interval_crps(y, mean, lo, hi) -> np.ndarray:
    return gaussian_crps(y, mean, (np.asarray(hi) - np.asarray(lo)) / (2 * Z90))


def score(pred: pd.DataFrame) -> dict[str, float]:
    y, m, lo, hi = (pred[c].to_numpy(np.float64) for c in ("y", "mean", "lo", "hi"))
    return {"crps": float(interval_crps(y, m, lo, hi).mean()), "mae": float(np.abs(y - m).mean()),
            "coverage": float(((lo <= y) & (y <= hi)).mean()), "width": float((hi - lo).mean()),
            "seconds": float(pred["seconds"].iloc[0]), "n": len(pred)}


def fold_scores(predictions: pd.DataFrame) -> pd.DataFrame:
    rows = [{"series": s, "end": e, "method": m, **score(g)}
            for (s, e, m), g in predictions.groupby(["series", "end", "method"], sort=False)]
    return pd.DataFrame(rows)


def series_table(folds: pd.DataFrame) -> pd.DataFrame:
    cols = ["crps", "mae", "coverage", "width", "seconds"]
    table = folds.groupby(["series", "method"], sort=False)[cols].mean()
    table["ends"] = folds.groupby(["series", "method"], sort=False)["end"].nunique()
    return table.reset_index()


def report(predictions: pd.DataFrame) -> str:
    """The per-series table and the must-show lines, from the per-query predictions."""
    folds = fold_scores(predictions)
    table = series_table(folds)
    lines = ["| series | method | CRPS | CRPS ÷ best | MAE | 90 % coverage | mean width | fit + predict s | ends |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s, g in table.groupby("series", sort=False):
        best = g["crps"].min()
        for r in g.itertuples():
            lines.append(f"| {s} | {LABELS.get(r.method, r.method)} | {r.crps:.4g} | {r.crps / best:.3f} | "
                         f"{r.mae:.4g} | {r.coverage:.3f} | {r.width:.4g} | {r.seconds:.3g} | {r.ends} |")
    lines += ["", *must_show(table, folds), "", *coverage_by_lead(predictions), "", *standings(table, folds), "",
              *end_point_bootstrap(folds)]
    return "\n".join(lines)


def coverage_by_lead(predictions: pd.DataFrame) -> list[str]:
    """Each row's 90 % coverage by third of the window (each window's queries in time order,
    cut in three equal counts), pooled over the series' queries and end points: whether a band
    grows with the lead as the errors do (a band that covers its level on average can still
    cover too much early and too little late)."""
    p = predictions.sort_values(["series", "end", "method", "time"], kind="stable")
    window = p.groupby(["series", "end", "method"], sort=False)
    third = np.minimum(3 * window.cumcount() // window["y"].transform("size"), 2)
    covered = ((p["lo"] <= p["y"]) & (p["y"] <= p["hi"])).astype(float)
    table = covered.groupby([p["method"], third]).mean().unstack()
    lines = ["90 % coverage by third of the horizon (pooled over every query of every series and end point)",
             "| method | first third | middle third | last third |", "|---|---|---|---|"]
    for m in [m for m in METHODS if m in table.index]:
        lines.append(f"| {LABELS.get(m, m)} | " + " | ".join(f"{table.loc[m].get(j, np.nan):.3f}" for j in range(3))
                     + " |")
    return lines


def standings(table: pd.DataFrame, folds: pd.DataFrame) -> list[str]:
    """Every row held to the must-show's accuracy bars, and how firm Lévy's verdicts are.

    Per method: on how many series its mean CRPS is at or below the GP's and Prophet's
    (where both ran), on how many it is the best row, and the median over series of its
    CRPS ÷ the best *other* row's (what the must-show asks of Lévy). Then, per series, Lévy's
    CRPS ÷ the GP's and ÷ Prophet's at each end point: a verdict that flips between end
    points rests on which three windows were drawn.
    """
    crps = table.pivot(index="series", columns="method", values="crps")
    order = [m for m in METHODS if m in crps]
    lines = ["Standings: every row held to the same bars (means over end points; a row that did not run on a "
             "series is left out there)",
             "| method | series run | CRPS ≤ GP's | CRPS ≤ Prophet's | best row | median CRPS ÷ best other row |",
             "|---|---|---|---|---|---|"]
    for m in order:
        ran = crps[m].dropna()
        cells = []
        for other in ("gp", "prophet"):
            if other not in crps or other == m:
                cells.append("–")
                continue
            both = crps[[m, other]].dropna()
            cells.append(f"{int((both[m] <= both[other]).sum())} of {len(both)}")
        others = crps.drop(columns=m).loc[ran.index]
        ratio = (ran / others.min(axis=1)).dropna()
        best = int((ratio <= 1.0).sum())
        lines.append(f"| {LABELS.get(m, m)} | {len(ran)} | {cells[0]} | {cells[1]} | {best} | "
                     f"{ratio.median():.3f} |")
    if "levy" in crps:
        per_end = folds.pivot_table(index=["series", "end"], columns="method", values="crps", sort=False)
        lines += ["", "Lévy's CRPS ÷ the other's, per end point (1 = the latest end); 'split': the verdict "
                  "differs between end points", "| series | ÷ GP | ÷ Prophet |", "|---|---|---|"]
        for series, g in per_end.groupby(level="series", sort=False):
            cells = []
            for other in ("gp", "prophet"):
                if other not in g:
                    cells.append("–")
                    continue
                r = (g["levy"] / g[other]).dropna()
                split = " (split)" if (r <= 1).any() and (r > 1).any() else ""
                cells.append(" ".join(f"{v:.2f}" for v in r) + split)
            lines.append(f"| {series} | {cells[0]} | {cells[1]} |")
    return lines


def end_point_bootstrap(folds: pd.DataFrame, *, draws: int = 2000, seed: int = 0) -> list[str]:
    """How firm the must-show's accuracy verdicts are, given which end points were drawn.

    Each draw resamples every series' end points with replacement (the same end points for
    every method: the comparison stays paired) and recomputes the per-series mean CRPS,
    then the bars: on how many series Lévy is at or below the GP's and Prophet's CRPS, and
    the median over series of Lévy's CRPS ÷ the best other row's (the GP's row held to the
    same bar beside it). A verdict that flips in a large share of draws rests on the
    windows, not on the methods.
    """
    crps = folds.pivot_table(index=["series", "end"], columns="method", values="crps", sort=False)
    if "levy" not in crps or len(crps) < 2 or crps.shape[1] < 2:  # nothing to compare with (--methods levy)
        return []
    rng = np.random.default_rng(seed)
    methods = list(crps.columns)
    means = []  # per series: (draws, methods) mean CRPS over the resampled end points
    names = []
    for series, g in crps.groupby(level="series", sort=False):
        values = g.to_numpy(np.float64)  # (ends, methods)
        picks = rng.integers(0, len(values), size=(draws, len(values)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a row that never ran on a series: NaN
            means.append(np.nanmean(values[picks], axis=1))
        names.append(series)
    boot = np.stack(means, axis=1)  # (draws, series, methods)
    col = {m: i for i, m in enumerate(methods)}
    lines = [f"End-point bootstrap ({draws} draws of each series' end points, paired across methods):",
             "| bar | as run | 5 % – 95 % of draws | share of draws meeting it |", "|---|---|---|---|"]
    levy = boot[:, :, col["levy"]]
    for other in ("gp", "prophet"):
        if other not in col:
            continue
        rival = boot[:, :, col[other]]
        ran = ~np.isnan(rival[0]) & ~np.isnan(levy[0])
        wins = (levy[:, ran] <= rival[:, ran]).sum(axis=1)
        need = math.ceil(2 * int(ran.sum()) / 3)
        seen = int((crps["levy"].groupby(level="series", sort=False).mean()
                    <= crps[other].groupby(level="series", sort=False).mean())[np.array(names)[ran]].sum())
        lines.append(f"| Lévy CRPS ≤ {LABELS[other]}'s (of {int(ran.sum())}; need ≥ {need}) | {seen} | "
                     f"{np.percentile(wins, 5):.0f} – {np.percentile(wins, 95):.0f} | {np.mean(wins >= need):.2f} |")
    for m in ("levy", "gp"):
        if m not in col:
            continue
        others = np.delete(boot, col[m], axis=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ratio = boot[:, :, col[m]] / np.nanmin(others, axis=2)
            median = np.nanmedian(ratio, axis=1)
            seen = float(np.nanmedian(crps[m].groupby(level="series", sort=False).mean().to_numpy()
                                      / np.nanmin(crps.drop(columns=m).groupby(level="series", sort=False)
                                                  .mean().to_numpy(), axis=1)))
        lines.append(f"| median CRPS ÷ best other row, {LABELS.get(m, m)} (need ≤ 1.0) | {seen:.3f} | "
                     f"{np.percentile(median, 5):.3f} – {np.percentile(median, 95):.3f} | {np.mean(median <= 1.0):.2f} |")
    if "gp" in col:
        share = np.mean(levy <= boot[:, :, col["gp"]], axis=0)
        lines += ["", "Share of draws in which Lévy's CRPS is at or below the GP's, per series: "
                  + ", ".join(f"{n} {v:.2f}" for n, v in zip(names, share, strict=True))]
    return lines


def must_show(table: pd.DataFrame, folds: pd.DataFrame) -> list[str]:
    crps = table.pivot(index="series", columns="method", values="crps")
    secs = table.pivot(index="series", columns="method", values="seconds")
    if "levy" not in crps:
        return ["(no Lévy rows: no must-show lines)"]
    out = ["Must show (single series, means over end points):"]
    for other in ("gp", "prophet"):
        if other in crps:
            both = crps[["levy", other]].dropna()
            wins = int((both["levy"] <= both[other]).sum())
            need = math.ceil(2 * len(both) / 3)
            out.append(f"- Lévy CRPS ≤ {LABELS[other]}'s on {wins} of {len(both)} series (need ≥ {need}): "
                       f"{'yes' if wins >= need and len(both) else 'no'}")
        else:
            out.append(f"- Lévy CRPS ≤ {LABELS[other]}'s: no {LABELS[other]} rows in this run")
    others = crps.drop(columns="levy")
    if others.shape[1]:
        ratio = (crps["levy"] / others.min(axis=1)).dropna()
        best = others.idxmin(axis=1)
        detail = ", ".join(f"{s} {ratio[s]:.3f} vs {LABELS.get(best[s], best[s])}" for s in ratio.index)
        out.append(f"- median over series of CRPS(Lévy) / CRPS(best other row): {ratio.median():.3f} "
                   f"(need ≤ 1.0): {'yes' if ratio.median() <= 1.0 else 'no'}  [{detail}]")
    lf = folds[folds["method"] == "levy"]
    per_series = lf.groupby("series", sort=False)["coverage"].mean()
    pooled_q = float((lf["coverage"] * lf["n"]).sum() / lf["n"].sum())
    fold_mean = float(lf["coverage"].mean())
    out.append(f"- Lévy 90 % coverage pooled over all series and end points: {fold_mean:.3f} (mean of the "
               f"{len(lf)} (series, end) coverages; {pooled_q:.3f} pooled over all {int(lf['n'].sum())} queries) "
               f"(need 0.85–0.95): {'yes' if 0.85 <= fold_mean <= 0.95 else 'no'}")
    out.append(f"- lowest per-series mean coverage of Lévy: {per_series.min():.3f} ({per_series.idxmin()}) "
               f"(need ≥ 0.75): {'yes' if per_series.min() >= 0.75 else 'no'}")
    if "gp" in secs:
        both = secs[["levy", "gp"]].dropna()
        lv, gp = both["levy"].median(), both["gp"].median()
        out.append(f"- median over series of fit + predict seconds: Lévy {lv:.3g} s, GP {gp:.3g} s "
                   f"(need Lévy ≤ GP): {'yes' if lv <= gp else 'no'}")
    else:
        out.append(f"- median over series of Lévy's fit + predict seconds: {secs['levy'].median():.3g} s "
                   "(no GP rows in this run)")
    return out


# ---------------------------------------------------------------------------------------
# the run


def set_threads(n: int) -> None:
    """Every library's threads to ``n``, once, before anything is timed."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(n)
    import torch
    from threadpoolctl import threadpool_limits
    torch.set_num_threads(n)
    threadpool_limits(n)


def available_methods(methods: Sequence[str], say: Callable[[str], None]) -> list[str]:
    out = []
    for m in methods:
        pkg = PACKAGES.get(m)
        if pkg is not None and missing(pkg):
            say(f"skipping {LABELS[m]} rows: the package {pkg} is not installed here ({INSTALL})")
            continue
        out.append(m)
    return out


def synthetic_case(n: int = 240, seed: int = 0) -> Case:
    """A short hourly series with a daily cycle and a slow trend (warm-up and tests)."""
    rng = np.random.default_rng(seed)
    times = pd.date_range("2024-01-01", periods=n, freq="h")
    i = np.arange(n)
    y = 10 + 0.01 * i + 2 * np.sin(2 * np.pi * i / 24) + 0.3 * rng.normal(size=n)
    return Case("synthetic", "synthetic hourly (daily cycle)", _frame(times, y, "value"), pd.DateOffset(hours=12),
                "12h", pd.DateOffset(hours=1), pd.Timedelta(hours=24), trend=True)


def fit_predict(method: str, case: Case, train: pd.DataFrame, test: pd.DataFrame, end: pd.Timestamp,
                log: Callable[[str], None], epochs: int | None) -> pd.DataFrame:
    if method == "levy":
        return run_levy(case, train, test, end, log, epochs)
    if method == "gp":
        return run_gp(case, train, test, end, log)
    if method == "prophet":
        return run_prophet(case, train, test, end, log)
    if method == "ets":
        return run_ets(case, train, test, end, log)
    return run_trivial(method, case, train, test, end, log)


def warm_up(methods: Sequence[str]) -> None:
    """One untimed fit of every method on a tiny series: imports, JIT and model compilation
    land here rather than on the first timed fit."""
    case = synthetic_case(120)
    train, test, end = split(case, 1)
    for m in methods:
        fit_predict(m, case, train, test, end, lambda _: None, 1 if m == "levy" else None)


def run(cases: Sequence[Case], methods: Sequence[str] = METHODS, ends: int = 3, epochs: int | None = None,
        say: Callable[[str], None] = print, warm: bool = True,
        save_dir: Path | None = None, first_end: int = 1) -> tuple[pd.DataFrame, list[str]]:
    """Every method on every case and end point ``first_end … first_end + ends − 1``; returns
    the per-query predictions (series, end, end_time, method, time, channel, y, mean, lo, hi,
    seconds) and the log."""
    if first_end < 1 or ends < 1:
        raise ValueError(f"first_end and ends must be at least 1, got {first_end} and {ends}")
    log_lines: list[str] = []

    def log(line: str) -> None:
        log_lines.append(line)
        say(line)

    methods = available_methods(methods, log)
    if warm:
        warm_up(methods)
    parts = []
    for case in cases:
        for method in methods:
            why = applicable(method, case)
            if why:
                log(f"{case.name}: {LABELS[method]} not run: {why}")
        for k in range(first_end, first_end + ends):
            train, test, end = split(case, k)
            if test.empty or train.empty:
                log(f"{case.name} end {k}: no {'held-out' if test.empty else 'training'} points, skipped")
                continue
            for method in methods:
                if applicable(method, case):
                    continue
                t0 = time.perf_counter()
                try:
                    band = fit_predict(method, case, train, test, end, log, epochs)
                except Exception as exc:  # a method that fails on one fold is reported, the run goes on
                    log(f"{case.name} end {k}: {LABELS[method]} failed: {type(exc).__name__}: {exc}")
                    continue
                seconds = time.perf_counter() - t0
                part = pd.DataFrame({"series": case.name, "end": k, "end_time": end, "method": method,
                                     "time": test["time"], "channel": test["channel"], "y": test["value"]})
                parts.append(pd.concat([part, band.set_axis(part.index)], axis=1).assign(seconds=seconds))
                log(f"{case.name} end {k} ({end}): {LABELS[method]}: {len(train)} training points, "
                    f"{len(test)} queries, {seconds:.3g} s")
        if save_dir is not None and parts:
            save_predictions(pd.concat(parts, ignore_index=True), log_lines, save_dir)
    predictions = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["series", "end", "end_time", "method", "time", "channel", "y", "mean", "lo", "hi", "seconds"])
    return predictions, log_lines


def save_predictions(predictions: pd.DataFrame, log_lines: list[str], directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    predictions.to_csv(directory / "predictions.csv", index=False)
    (directory / "log.txt").write_text("\n".join(log_lines) + "\n")


def emit(text: str, out: Path | None) -> int:
    """Print a study's tables, and write them to ``out`` too when given; the exit code (0).
    (The screens that re-score this benchmark's saved predictions end with it.)"""
    print(text)
    if out is not None:
        out.write_text(text + "\n")
    return 0


def load_predictions(directory: Path) -> pd.DataFrame:
    return pd.read_csv(directory / "predictions.csv", parse_dates=["end_time", "time"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME",
                        help=f"series: {', '.join(CASES)} (anchors); {', '.join(DEV_CASES)} (dev); "
                             f"{', '.join(FRESH_CASES)} (fresh)")
    parser.add_argument("--set", choices=tuple(SETS), default="anchors",
                        help="the series run without --only: the anchors (the must-show), the development set, "
                             "or the fresh set (never tuned on)")
    parser.add_argument("--ends", type=int, default=3, help="rolling end points, one horizon apart")
    parser.add_argument("--first-end", type=int, default=1, metavar="K",
                        help="the first end point: K > 1 runs earlier windows (ends K … K + ends − 1)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--epochs", type=int, default=None, help="passed to LevyForecaster (default: its own)")
    parser.add_argument("--levy-seed", type=int, default=0, help="LevyForecaster's seed (default 0)")
    parser.add_argument("--out", type=Path, default=None, help="also write the tables and the log here")
    parser.add_argument("--save-predictions", type=Path, default=None, metavar="DIR",
                        help="write DIR/predictions.csv (per query) and DIR/log.txt")
    parser.add_argument("--tables-from", type=Path, default=None, metavar="DIR",
                        help="re-make the tables from a saved DIR/predictions.csv, fitting nothing")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    global LEVY_SEED
    LEVY_SEED = args.levy_seed
    if args.tables_from is not None:
        text, log_lines = report(load_predictions(args.tables_from)), []
    else:
        set_threads(args.threads)
        quiet_prophet()
        say = lambda line: print(line, flush=True)  # noqa: E731
        say(f"threads: {args.threads}; python {sys.version.split()[0]}; pandas {pd.__version__}")
        cases = load_cases(args.only, say, args.set)
        predictions, log_lines = run(cases, args.methods, args.ends, args.epochs, say=say,
                                     save_dir=args.save_predictions, first_end=args.first_end)
        if predictions.empty:
            print("nothing was run")
            return 1
        text = report(predictions)
    print("\n" + text)
    if args.out is not None:
        args.out.write_text(text + "\n\nLog:\n" + "\n".join(log_lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
