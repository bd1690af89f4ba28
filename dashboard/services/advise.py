"""Cached wrappers for the "Measure next" panel: ``levy_core.decisions.advise`` on one series.

Where advice starts from: on rolling origins (few series) the series' last observation, as
the forecast past the end of the data; on a fit on many series with a forecast cut-off, the
cut-off — the series' observations up to it are the data, and the held-out ones after it
show what was really measured next. Times go to the views in the user's clock
(``user_clock``). Typed cache wrappers keyed by the fit key around ``advise``; the view
gets the table and the chart's frames ready to lay out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from levy_dashboard.data import user_clock
from levy_dashboard.fitting.fits import FitResult

from levy_core.data import DataError, Observations, duration_text, say_duration
from levy_core.decisions.advise import Advice, advise
from levy_core.forecast.verbs import FittedVerbs

__all__ = ["AdviceChart", "AdviceView", "advice", "advice_chart", "advice_data", "advice_table", "band_frame",
           "default_horizon", "when_text"]

MAX_ROWS = 25  # suggestions the table lists


@dataclass(frozen=True)
class AdviceView:
    """One series' advice with what the chart needs, in the user's clock.

    Attributes
    ----------
    advice : Advice
    ranking : DataFrame
        ``Advice.ranking()`` with ``when`` (the user's clock) and ``measure`` (words).
    points : DataFrame
        The series' observations (``channel, time, value, when, role``): ``role`` "seen"
        (what the advice starts from) or "later" (really measured after, not used).
    start : str
        Where the advice starts, in words.
    """

    advice: Advice
    ranking: pd.DataFrame
    points: pd.DataFrame
    start: str


def _when(obs: Observations, series_id: str, hours: object, windowed: bool) -> pd.Series:
    """Hours in the user's clock (few series or many: ``windowed`` is kept for the callers);
    hours for observations built by hand."""
    hours = pd.Series(np.asarray(hours, np.float64))
    try:
        return user_clock.display_times(obs, series_id, hours)
    except DataError:
        return hours


def band_frame(res: FitResult, view: AdviceView, candidate: int | None) -> pd.DataFrame:
    """``Advice.band`` (today, or with ``candidate``) with ``when`` for the chart's axis."""
    frame = view.advice.band(candidate)
    frame["when"] = _when(res.obs, view.advice.series_id, frame["time"], user_clock.windowed(res.data)).to_numpy()
    return frame


def when_text(ahead: float, clock: str | None = None) -> str:
    """``0`` → "now", ``2.0`` → "in 2 h" ("in 2 hours", "in 3 days" in the data's ``clock``)."""
    if ahead <= 0:
        return "now"
    return f"in {duration_text(ahead, ' ') if clock is None else say_duration(ahead, clock)}"


def default_horizon(res: FitResult) -> float:
    """The fit's horizon, else a quarter of the median series span, rounded (at least an hour)."""
    if res.fitted.task.horizon:
        return float(res.fitted.task.horizon)
    spans = res.obs.frame.groupby("series_id")["time"].agg(lambda t: t.max() - t.min())
    return float(max(float(f"{np.median(spans) / 4:.1g}"), 1.0))  # a round number: 11.9 h → 10 h


def advice_data(res: FitResult, series_id: str) -> tuple[Observations, Observations | None, str]:
    """The observations advice starts from (one series), those after them (or None) and
    where it starts, in words."""
    obs = res.obs.subset([series_id])
    f = res.fitted
    if res.on_origins or f.task.kind != "forecast" or (f.task.cutoff is None and not f.task.per_series) \
            or obs.frame.empty:
        return obs, None, "the series' last observation"
    cutoff = f.task.series_cutoff(obs.frame["time"].to_numpy())  # one for all, or this series' own
    seen = obs.frame["time"] <= cutoff
    if not seen.any():
        return obs, None, "the series' last observation"
    before = Observations(frame=obs.frame[seen].reset_index(drop=True), report=obs.report)
    after = Observations(frame=obs.frame[~seen].reset_index(drop=True), report=obs.report) if (~seen).any() else None
    when = FittedVerbs(f).time_text(cutoff)
    where = f"{when}, {f.task.cutoff_text()}" if f.task.per_series else when
    return before, after, f"the forecast cut-off ({where}): the observations up to it"


@st.cache_data(show_spinner="Weighing every measurement…", max_entries=32)
def advice(key: str, _res: FitResult, series_id: str, targets: tuple[str, ...], horizon: float,
           level: float) -> AdviceView:
    """Every channel the model knows, now and about an eighth and a quarter of ``horizon`` ahead,
    for the ``targets`` over ``horizon`` hours (one batched pass; cached by the fit key)."""
    seen, later, start = advice_data(_res, series_id)
    result = advise(_res.fitted, seen, series_id, targets=list(targets) or None, horizon=horizon, level=level)
    windowed = user_clock.windowed(_res.data)
    ranking = result.ranking()
    total, _, _ = result.per_target()
    for t, name in enumerate(result.targets):  # the narrowing of each target channel's band
        ranking[f"{name} %"] = total[ranking["candidate"].to_numpy(), t]
    ranking = ranking.head(MAX_ROWS)
    ranking["when"] = _when(_res.obs, series_id, ranking["time"], windowed).to_numpy()
    clock = _res.verbs.clock()
    ranking["measure"] = [f"{c} {when_text(a, clock)}" for c, a in zip(ranking["channel"], ranking["ahead"],
                                                                         strict=True)]
    parts = [seen.frame.assign(role="seen")] + ([later.frame.assign(role="later")] if later is not None else [])
    points = pd.concat(parts, ignore_index=True)
    points = points[points["time"] <= result.now + horizon].reset_index(drop=True)
    points["when"] = _when(_res.obs, series_id, points["time"], windowed).to_numpy()
    return AdviceView(result, ranking.reset_index(drop=True), points, start)


def advice_table(view: AdviceView) -> pd.DataFrame:
    """The ranking as the panel lists it: rank, the measurement in words, how much it narrows
    the targets' bands (of which evidence, of which value) and each target's own narrowing (%)."""
    shown = view.ranking[["rank", "measure", "narrowing_pct", "evidence_pct", "value_pct",
                          *[f"{t} %" for t in view.advice.targets]]]
    return shown.rename(columns={"narrowing_pct": "narrowing %", "evidence_pct": "of which evidence %",
                                 "value_pct": "of which value %"}).round(1)


@dataclass(frozen=True)
class AdviceChart:
    """What ``charts.advice.advice_figure`` draws for one suggestion and one target channel:
    the channel's observations, its band today and with the measurement, and the measurement
    (``channel, when, label, value, std``)."""

    points: pd.DataFrame
    before: pd.DataFrame
    after: pd.DataFrame
    measure: dict[str, object]


def advice_chart(res: FitResult, view: AdviceView, pick: int, channel: str) -> AdviceChart:
    """The band of target ``channel`` today and with suggestion ``pick`` (a row of
    ``view.ranking``) measured."""
    row = view.ranking.iloc[pick]
    mark = {"channel": row["channel"], "when": row["when"], "label": row["measure"],
            "value": float(row["value_mean"]), "std": float(row["value_std"])}
    before = band_frame(res, view, None)
    after = band_frame(res, view, int(row["candidate"]))
    return AdviceChart(view.points[view.points["channel"] == channel], before[before["channel"] == channel],
                       after[after["channel"] == channel], mark)
