"""Does a fitted model's band still hold on new data? Coverage per level and per channel.

A saved model is applied to data it never saw; where that data has observed futures (the
observations after the forecast cut-off, or the held-out share for interpolation — what
``levy evaluate`` scores), its conformal band is checked against them with the verdicts
``levy evaluate`` gives ([`levy_core.pipeline.evaluation.coverage_checks`][levy_core.pipeline.evaluation.coverage_checks]: the window
``level − 3 s.e. .. level + 1/(n+1) + 3 s.e.`` with the per-series s.e.), overall and per
channel. The band's guarantee assumed data exchangeable with the calibration data: a level
or a channel outside its window says the new data is not like it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from levy_core.calibration.coverage import coverage_check
from levy_core.data import Observations
from levy_core.pipeline.evaluation import LEVELS, coverage_checks
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import split_predictions
from levy_core.pipeline.prepared import ModelData, as_model_data
from levy_core.pipeline.user_units import cutoff_of

__all__ = ["CHANNEL_COLUMNS", "CoverageMonitor", "monitor_coverage"]

CHANNEL_COLUMNS = ["channel", "level", "coverage", "lower", "upper", "holds", "n", "n_series"]


@dataclass(frozen=True)
class CoverageMonitor:
    """The Lévy band's coverage on observed queries of (new) data.

    Attributes
    ----------
    observed : bool
        The data has queries with an observed outcome; when False every frame is empty and
        ``note`` says why.
    new_data : bool
        The data is not the data the model was fitted on (then every series is scored;
        otherwise its test split).
    n_queries, n_series : int
        Observed queries and the model-space series they come from (``unit``).
    checks : DataFrame
        [`coverage_checks`][levy_core.pipeline.evaluation.coverage_checks] of the Lévy band, one row per level.
    by_channel : DataFrame
        `CHANNEL_COLUMNS`, one row per (channel, level): the conformal coverage, the
        window it should lie in (per-series s.e. with two series or more, binomial
        otherwise) and whether it does.
    note : str
        What was scored, or why nothing could be.
    unit : str
        What ``n_series`` counts: "series", or the "forecast origins" / "windows" a model
        fitted on few series cuts each series into.
    """

    observed: bool
    new_data: bool
    n_queries: int
    n_series: int
    checks: pd.DataFrame
    by_channel: pd.DataFrame
    note: str
    unit: str = "series"

    def failing(self) -> tuple[list[float], list[str]]:
        """(levels whose band is outside its window, channels outside theirs at some level)."""
        if not self.observed:
            return [], []
        verdict = self.checks["holds_series"].where(self.checks["holds_series"].notna(), self.checks["holds_binomial"])
        levels = [float(lv) for lv, ok in zip(self.checks["level"], verdict, strict=True) if not ok]
        channels = list(dict.fromkeys(self.by_channel.loc[~self.by_channel["holds"].astype(bool), "channel"]))
        return levels, channels

    def verdicts(self) -> str:
        """Per level, as ``levy evaluate`` prints them: ``"50 % 0.503 holds [holds], …"``
        (per-series s.e.; "?" with one series; the binomial verdict in brackets)."""
        parts = []
        for r in self.checks.itertuples():
            series = "?" if r.holds_series is None else ("holds" if r.holds_series else "OUTSIDE")
            parts.append(f"{100 * r.level:.0f} % {r.coverage:.3f} {series} [{'holds' if r.holds_binomial else 'outside'}]")
        return ", ".join(parts)

    def summary(self) -> str:
        """The verdict in one or two plain sentences."""
        if not self.observed:
            return self.note
        levels, channels = self.failing()
        where = f"{self.n_queries:,} observed queries of {self.n_series:,} {self.unit}"
        if not levels and not channels:
            return (f"The band still holds: on {where}, its coverage lies in its window at every level "
                    f"({', '.join(f'{100 * lv:.0f} %' for lv in self.checks['level'])}) and in every channel.")
        parts = []
        for lv in levels:
            row = self.checks[self.checks["level"] == lv].iloc[0]
            lo, hi = (row["lower_series"], row["upper_series"]) if row["holds_series"] is not None else (None, None)
            window = "" if lo is None else f" (window {100 * max(lo, 0.0):.1f} – {100 * min(hi, 1.0):.1f} %)"
            parts.append(f"{100 * lv:.0f} %: coverage {100 * row['coverage']:.1f} %{window}")
        text = f"The band does not hold everywhere on {where}."
        if parts:
            text += " Outside its window overall at " + "; ".join(parts) + "."
        if channels:
            text += (f" Channels outside their window at some level (too narrow, or too wide): "
                     f"{', '.join(map(str, channels))}.")
        return text + " The guarantee assumed data like the calibration data: this data differs."


def monitor_coverage(fitted: FittedModel, data: Observations | ModelData, *, levels: tuple[float, ...] = LEVELS,
                     z: float = 3.0) -> CoverageMonitor:
    """Check the Lévy conformal band of ``fitted`` on the observed queries of ``data``.

    Parameters
    ----------
    fitted : FittedModel
        A fitted or loaded model (``load_model``, ``load_model_zip``).
    data : Observations or ModelData
        New observations (every series scored), or the fitted data (its test split).
    levels : tuple of float
        Band levels in (0, 1) to check.
    z : float
        Width of each window in standard errors (as ``levy evaluate``: 3).

    Returns
    -------
    CoverageMonitor
        ``observed`` False (and a plain ``note``) when no series has both context and an
        observed outcome to check.
    """
    data = as_model_data(fitted, data)
    ids = data.series_in("test")
    if not ids:
        return _nothing_observed(fitted, data)
    pred = split_predictions(fitted, data, "test")  # the Lévy model (and the last-value baseline) only
    checks = coverage_checks(fitted, pred, levels=levels, z=z)
    checks = checks[checks["method"] == checks["method"].iloc[0]].reset_index(drop=True)  # the Lévy band
    n_series = int(pred["series_id"].nunique())
    unit = {"origin": "forecast origins", "window": "windows"}.get(fitted.split.mode, "series")
    what = "all of the new data" if not data.same_data else "the test split of the data it was fitted on"
    note = (f"Scored {len(pred):,} observed queries of {n_series:,} {unit} ({what}) with the model's conformal "
            f"band at {', '.join(f'{100 * lv:.0f} %' for lv in levels)}.")
    return CoverageMonitor(True, not data.same_data, int(len(pred)), n_series, checks,
                           _channel_checks(fitted, pred, levels, z), note, unit)


def _nothing_observed(fitted: FittedModel, data: ModelData) -> CoverageMonitor:
    n = len(data.builder.series)
    if fitted.task.kind == "forecast" and fitted.split.mode != "origin":
        why = (f"none of its {n:,} series has observations both before and after the model's cut-off "
               f"({cutoff_of(fitted)}): there is no observed future to check the band against")
    else:
        why = f"none of its {n:,} series has both context and observations to predict"
    empty = pd.DataFrame(columns=CHANNEL_COLUMNS)
    return CoverageMonitor(False, not data.same_data, 0, 0, pd.DataFrame(), empty,
                           f"Nothing to monitor yet: {why}. Add the observations that came after, then check again.")


def _channel_checks(fitted: FittedModel, pred: pd.DataFrame, levels: tuple[float, ...], z: float) -> pd.DataFrame:
    """Per channel and level: the Lévy conformal band's coverage and its window, the quantile
    taken from the channel's own calibration scores (their count sets the slack)."""
    levy = fitted.predictives(pred)[0]
    n_series = fitted.training.get("n_series", {}) if fitted.training else {}
    calibration_series = int(n_series.get("calibration") or len(fitted.split.calibration) or 1)
    y, series = pred["y_norm"].to_numpy(np.float64), pred["series_id"].astype(str).to_numpy()
    counts = levy.calibrator.conformal.calibration_counts(levy.channels)
    rows = []
    band = levy.band(levels, "conformal")  # every level's band, derived once
    for level, lo, hi in zip(levels, band.lower, band.upper, strict=True):
        for channel in sorted(pd.unique(levy.channels), key=str):
            m = levy.channels == channel
            groups = series[m] if len(np.unique(series[m])) >= 2 else None
            n_cal = int(counts[m][0])
            b = coverage_check(y[m], lo[m], hi[m], level=level, n_calibration=max(n_cal, 1), z=z,
                               groups=groups, calibration_groups=calibration_series if groups is not None else None,
                               slack=1.0 / (n_cal + 1))
            rows.append({"channel": str(channel), "level": float(level), "coverage": b.coverage, "lower": b.lower_bound,
                         "upper": b.upper_bound, "holds": bool(b.holds), "n": int(m.sum()),
                         "n_series": int(len(np.unique(series[m])))})
    return pd.DataFrame(rows, columns=CHANNEL_COLUMNS)
