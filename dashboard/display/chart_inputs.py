"""What each band chart is drawn from, assembled from frames ``services`` computed.

``BandInputs`` (the band of one series and channel), ``FutureInputs`` (the forecast past the
end of the data, rolling origins) and ``OriginInputs`` (one test origin of the backtest)
carry the frames and the labels a chart builder takes (``figure_arguments``); the view and
the HTML report both draw from them; ``ReportInputs`` is everything the report draws.
Pure selection and mapping: no ``levy_core`` pass here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
from levy_dashboard.data import user_clock

from levy_core.data import say_duration
from levy_core.forecast.verbs import ModelData, SelectiveRisk

__all__ = ["BAND_LABELS", "BandInputs", "FutureInputs", "OriginInputs", "ReportInputs", "history_frame",
           "infinite_somewhere", "origin_frames", "parse_query_id", "query_id"]

BAND_LABELS = {"gaussian": "scaled Gaussian", "conformal": "conformal", "adaptive": "adaptive conformal"}


def infinite_somewhere(grid: pd.DataFrame) -> bool:
    """The band's upper edge is infinite (or missing) at some time: a conformal band at a
    level its calibration queries are too few for."""
    return not grid["upper"].replace([float("inf")], float("nan")).notna().all()


def query_id(series_id: str, channel: str, time_: float) -> str:
    """A held-out query as a chart point's ``customdata`` (a click on it selects the query)."""
    return f"{series_id}|{channel}|{float(time_)!r}"


def parse_query_id(value: object) -> tuple[str, str, float] | None:
    """(series, channel, time) of a :func:`query_id` (a click's ``customdata``), else None."""
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    if not isinstance(value, str) or value.count("|") < 2:
        return None
    sid, ch, t = value.rsplit("|", 2)
    try:
        return sid, ch, float(t)
    except ValueError:
        return None


@dataclass(frozen=True)
class BandInputs:
    """What ``charts.band_figure`` draws for one series and channel."""

    grid: pd.DataFrame  # the grid with ``lower, upper`` (and MC-Dropout's) at the level
    points: pd.DataFrame  # the series' observations of the channel that are context or held out
    series_id: str
    channel: str
    level: float
    band_label: str  # BAND_LABELS[kind]
    show_mc: bool
    cutoff: float | None  # forecast cut-off (model time), None for interpolation
    time_axis: str = user_clock.HOURS_AXIS  # the time axis title (the user's clock for few series)

    @property
    def infinite(self) -> bool:
        return infinite_somewhere(self.grid)

    def figure_arguments(self) -> dict[str, Any]:
        return {"series_id": self.series_id, "channel": self.channel, "level": self.level,
                "band_label": self.band_label, "show_mc": self.show_mc, "cutoff": self.cutoff,
                "time_axis": self.time_axis}


@dataclass(frozen=True)
class FutureInputs:
    """What ``charts.future_figure`` draws: the band past the end of one series and channel."""

    grid: pd.DataFrame  # predict_future with ``lower, upper`` (and MC-Dropout's) at the level
    points: pd.DataFrame  # the series' observations of the channel (roles "context", "history")
    series_id: str
    channel: str
    level: float
    band_label: str
    show_mc: bool
    horizon: float  # hours past the last observation
    last: Any  # the series' last observation in the user's clock (date-time or number)
    time_axis: str
    clock: str | None = None  # the data's clock: the horizon is said in it ("30 days", "3 months")

    @property
    def infinite(self) -> bool:
        return infinite_somewhere(self.grid)

    def figure_arguments(self) -> dict[str, Any]:
        label = (user_clock.duration_text(self.horizon, " ") if self.clock is None
                 else say_duration(self.horizon, self.clock))
        return {"series_id": self.series_id, "channel": self.channel, "level": self.level,
                "band_label": self.band_label, "show_mc": self.show_mc, "last": self.last,
                "horizon_label": label, "time_axis": self.time_axis}


@dataclass(frozen=True)
class OriginInputs:
    """What ``charts.origin_band_figure`` draws: one test origin's forecast against what happened."""

    queries: pd.DataFrame  # the origin's queries of the channel: y_true, mean and both 90 % bands
    context: pd.DataFrame  # the observations of the channel it was forecast from
    series_id: str
    channel: str
    origin: Any  # the origin in the user's clock
    time_axis: str

    def figure_arguments(self) -> dict[str, Any]:
        return {"series_id": self.series_id, "channel": self.channel, "origin": self.origin,
                "time_axis": self.time_axis}


@dataclass(frozen=True)
class ReportInputs:
    """Everything the HTML report draws and lists (``report.build_report``): what was fitted,
    the evaluation's tables and curves, and the band of one series and channel (on rolling
    origins: the forecast past the end and the backtest's coverage over time)."""

    description: str  # FitResult.describe()
    n_test: int
    mc_passes: int
    level: float  # the level of the coverage-by-channel chart
    curves: dict[str, Any]  # pipeline.calibration_curves: reliability, pit, risk, oracle
    channel_coverage: pd.DataFrame  # pipeline.channel_coverage at ``level``
    timing: pd.DataFrame  # tables.timing_rows
    metrics: pd.DataFrame  # tables.metrics_table
    guarantee: pd.DataFrame  # tables.guarantee_table
    extra: dict[str, Any]  # further results listed by name (the softmax twin, the 50-draw sampler)
    guarantee_text: str  # the adaptive band's guarantee in words
    band: BandInputs | None = None  # many series: the band of the chosen series and channel
    future: FutureInputs | None = None  # rolling origins: the forecast past the end of the data
    rolling: pd.DataFrame | None = None  # rolling origins: pipeline.rolling_coverage of the backtest
    time_axis: str = user_clock.HOURS_AXIS
    # the band per query (services.per_query): coverage by quintile of width, evidence and lead at ``level``
    quantile_coverage: pd.DataFrame | None = None
    quantile_caption: str = ""
    selective: SelectiveRisk | None = None  # risk–coverage against the per-channel constant
    selective_caption: str = ""
    data_units: pd.DataFrame | None = None  # tables.data_units_table: scores per channel in its own units


def history_frame(data: ModelData, points: pd.DataFrame, series_id: str, channel: str) -> pd.DataFrame:
    """One series' observations of one channel in the user's clock: role "context" for those
    a forecast past the end draws on (``points`` of its end episode; model space), "history"
    for the earlier ones."""
    cols = ["series_id", "channel", "time", "value", "role"]
    end_id, _ = data.clock.end_episode(series_id)
    ctx = user_clock.to_user(data, points[(points["series_id"] == end_id) & (points["channel"] == channel)])
    obs = data.obs.frame
    mine = obs[(obs["series_id"].astype(str) == series_id) & (obs["channel"] == channel)]
    earlier = mine[mine["time"] < (ctx["time"].min() if len(ctx) else float("inf"))].assign(role="history")
    both = pd.concat([earlier[cols], ctx.assign(role="context")[cols]], ignore_index=True)
    return user_clock.with_when(data, both)


def origin_frames(data: ModelData, pred: pd.DataFrame, points: pd.DataFrame, series_id: str, channel: str,
                  origin: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The backtest at one test origin (user hours): its queries of the channel in ``pred``
    (the user-space backtest frame) and the context it was forecast from (``points``, model
    space), both in the user's clock."""
    here = (pred["series_id"] == series_id) & (pred["channel"] == channel)
    queries = pred[here & ((pred["origin"] - float(origin)).abs() < 1e-9)].sort_values("time", kind="stable")
    model_id, _ = user_clock.model_query(data, series_id, float(origin), float(origin))
    ctx = points[(points["series_id"] == model_id) & (points["channel"] == channel) & (points["role"] == "context")]
    return queries, user_clock.to_user(data, ctx)
