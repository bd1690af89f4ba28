"""The band, per query: coverage by quintile of width, evidence and lead, and the risk–coverage
curves against the per-channel constant, with the plain-words captions that say what they show.

Cached wrappers of the fitted model's per-query verbs (``levy_core.forecast.verbs``) on the test split's evaluation
(``services.evaluation.evaluation``), keyed by the fit key, MC-Dropout's passes T and the level.
The lead is labelled in the data's time unit (date-times: the largest readable unit), the
width in quintiles (it is cut within each channel, so its range mixes channels), the evidence
by its ``n_eff`` range.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from levy_dashboard.fitting.fits import FitResult
from levy_dashboard.services.evaluation import evaluation

from levy_core.data import TIME_UNITS, DataError, Observations, user_time_unit
from levy_core.forecast.verbs import CONSTANT, GROUPINGS, FittedVerbs, SelectiveRisk

__all__ = ["CONSTANT", "GROUPINGS", "TOLERANCE", "Z_LIMIT", "bin_label", "lead_unit", "coverage_bins", "coverage_caption",
           "risk_caption", "selective_risk"]

TOLERANCE = 0.03  # a bin holds within this distance of the level …
Z_LIMIT = 3.0  # … or within this many standard errors of it


# a date-time clock has no unit of its own: the lead is given in the largest that keeps it readable
_READABLE: tuple[tuple[str, float], ...] = (("years", 24 * 365.2425), ("weeks", 168.0), ("days", 24.0),
                                            ("hours", 1.0), ("minutes", 1 / 60), ("seconds", 1 / 3600))


def lead_unit(obs: Observations, longest_hours: float) -> tuple[str, float]:
    """The unit the lead is shown in and its length in hours: the data's own time unit
    ("days" for data read in days), or, for date-times, the largest unit in which the
    longest lead (``longest_hours``) is at least 2."""
    try:
        unit = user_time_unit(obs)
    except DataError:  # observations built by hand: the model's hours
        return "hours", 1.0
    if unit in TIME_UNITS:
        return unit, TIME_UNITS[unit]
    return next(((name, size) for name, size in _READABLE if longest_hours >= 2 * size), ("seconds", 1 / 3600))


def bin_label(grouping: str, bin_: int, low: float, high: float, n_bins: int = 5, hours_per_unit: float = 1.0) -> str:
    """A bin's tick label: the width's quintile ("1 narrowest" … "5 widest"), the ``n_eff``
    range ("3.1–8"), the lead's range in the unit of ``hours_per_unit`` ("0–1.5")."""
    if grouping == "width":
        name = {1: "narrowest", n_bins: "widest"}.get(bin_, "")
        return f"{bin_} {name}".strip()
    if grouping == "lead":
        low, high = low / hours_per_unit, high / hours_per_unit
    return f"{low:.3g}" if f"{low:.3g}" == f"{high:.3g}" else f"{low:.3g}–{high:.3g}"


@st.cache_data(show_spinner=False, max_entries=32)
def coverage_bins(key: str, _res: FitResult, mc_passes: int, level: float) -> pd.DataFrame:
    """``coverage_by_group`` of the test split at ``level`` (quintiles), with
    each bin's tick ``label`` and the ``unit`` its key is in (the lead: the data's time unit)."""
    table = _res.verbs.coverage_by_group(evaluation(key, _res, mc_passes)[1], level)
    lead = table["grouping"] == "lead"
    unit, size = lead_unit(_res.obs, float(table.loc[lead, "key_high"].max()) if lead.any() else 1.0)
    labels = [bin_label(g, int(b), lo, hi, hours_per_unit=size) for g, b, lo, hi in
              table[["grouping", "bin", "key_low", "key_high"]].itertuples(index=False)]
    units = table["grouping"].map({"width": "normalised units", "evidence": "n_eff", "lead": unit})
    return table.assign(label=labels, unit=units)


@st.cache_data(show_spinner=False, max_entries=16)
def selective_risk(key: str, _res: FitResult, mc_passes: int, level: float = 0.9) -> SelectiveRisk:
    """``selective_risk`` of the test split (ranked by the ``level`` bands' half-widths)."""
    return _res.verbs.selective_risk(evaluation(key, _res, mc_passes)[1], level)


_BY = {"width": "by width", "evidence": "by n_eff", "lead": "by lead"}


def _bin_words(row: pd.Series) -> str:
    """One bin that does not hold: "quintile 2 (7.1–14 hours): 97.6 % ± 0.5 % s.e."."""
    if row["grouping"] == "width":
        bin_, _, name = str(row["label"]).partition(" ")
        where = f"quintile {bin_}" + (f" ({name})" if name else "")
    else:
        unit = f" {row['unit']}" if row["grouping"] == "lead" else ""
        where = f"quintile {int(row['bin'])} ({row['label']}{unit})"
    if row["n_series"] <= 1:
        spread = "one series: no standard error"
    else:
        spread = f"± {100 * row['se']:.1f} % s.e." if row["se"] > 0 else "alike in every series"
    return f"{where}: {100 * row['coverage']:.1f} % {spread}"


def coverage_caption(table: pd.DataFrame, level: float) -> str:
    """Which bins of ``coverage_bins`` fall farther than 0.03 from ``level`` *and* more than
    3 standard errors from it, named method by method and grouping by grouping; or that every
    bin holds."""
    off = FittedVerbs.off_bins(table, level, tolerance=TOLERANCE, z=Z_LIMIT)
    head = (f"How to read: the share of test queries inside the {100 * level:.0f} % conformal band within each "
            "fifth of the queries, cut by the band's own width (within each channel), by the evidence n_eff and by "
            "the lead (time from the query to the nearest observation); bars: ± 1.96 standard errors over series; "
            f"dashed: the level. A bin holds when it is within {TOLERANCE:.2f} of the level or within "
            f"{Z_LIMIT:.0f} s.e. of it. ")
    if off.empty:
        return head + "Every bin holds, for every method shown."
    groups = [f"{method} {_BY.get(grouping, grouping)}: " + ", ".join(_bin_words(row) for _, row in rows.iterrows())
              for (method, grouping), rows in off.groupby(["method", "grouping"], sort=False)]
    named = "; ".join(groups).removesuffix(".")  # a list ending in "s.e." takes no second full stop
    return (head + f"Outside {TOLERANCE:.2f} and {Z_LIMIT:.0f} s.e. of the level — " + named
            + ". Below the level the band is too narrow for those queries, above it wider than it needs to be.")


def risk_caption(sr: SelectiveRisk) -> str:
    """What the risk–coverage plot shows and each method's area ÷ the per-channel constant's,
    with a plain sentence when σ̂ does not beat the constant."""
    text = (f"How to read: keep only the x % of test queries a method trusts most (the narrowest "
            f"{100 * sr.level:.0f} % conformal bands) and read the mean squared error of what is kept (normalised "
            "units); the lower the curve, the better the spread ranks the errors. Each method ranks its own errors "
            "by its own band. Grey dashed: the Lévy model's errors ranked by a per-channel constant spread (each "
            "channel's last-value error spread on the training series): what knowing the channel alone gives. "
            "Dotted: the oracle, ranked by the actual error.")
    if not sr.ratios:
        return text + " (No per-channel constant in this evaluation.)"
    ratios = "; ".join(f"{name} {r:.2f}×" for name, r in sr.ratios.items())
    text += (" Area under each curve ÷ the constant's area on the same method's errors (below 1: the spread ranks "
             f"errors better than knowing the channel): {ratios}.")
    levy = sr.ratios.get("Lévy")
    if levy is not None and levy >= 1.0:
        text += " σ̂ ranks errors no better than knowing the channel here."
    elif levy is not None and levy > 0.95:
        text += f" σ̂ beats knowing the channel by only {100 * (1 - levy):.0f} % here."
    mc = sr.ratios.get("MC-Dropout")
    if levy is not None and mc is not None and mc < levy:
        text += " MC-Dropout's spread ranks its errors better than σ̂ ranks the Lévy model's."
    return text

