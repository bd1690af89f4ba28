"""The user's series ids and clock for every view.

A fit on few series works on model-space pseudo-series: time windows ``"<id>@<k>"``
(interpolation) or forecast episodes ``"<id>@<k>"`` / ``"<id>@end"`` (rolling origins), with
time relative to the window or the origin. None of that may reach a view: every frame a view
draws or lists goes through :func:`to_user` (``ModelData.clock.to_user``: the user's ids and
hours) and gets a ``when`` column (``levy_core.data.to_user_time``: date-times in UTC for
date-time data, numbers in the data's unit otherwise) that the charts put on the time axis.
A query picked in a view (the user's id and hours, and on rolling origins the origin it was
forecast from) goes back to the model's space through :func:`model_query`.

Many-series fits: the model's series are the user's; the band, advice and watch views draw
them on the user's clock too (``when``; :func:`user_axis`: "time (days)" for data in days),
the other many-series tables keep the model's hours.

Pure mapping through ``levy_core``'s clocks; nothing here is cached (``services`` caches).
"""

from __future__ import annotations

import pandas as pd

from levy_core.data import (
    DATETIME,
    DataError,
    Observations,
    duration_text,
    to_user_time,
    user_time_label,
    user_time_unit,
)
from levy_core.forecast.verbs import ModelData

__all__ = ["HOURS_AXIS", "display_times", "duration_text", "model_ids_of", "model_query", "on_origins",
           "series_test_origins", "time_axis", "time_text", "to_user", "user_axis", "user_series", "windowed",
           "with_when"]

HOURS_AXIS = "time (h)"  # many series: the model's clock is the user's hours


def windowed(data: ModelData) -> bool:
    """The model's series are windows or forecast episodes of the user's (few series)."""
    return bool(data.clock.windowed)


def on_origins(data: ModelData) -> bool:
    """The fit runs on rolling forecast origins (``OriginClock``)."""
    return hasattr(data.clock, "origins")


def time_axis(data: ModelData) -> str:
    """The time axis title of the views: the user's clock for few series, hours otherwise."""
    return user_time_label(data.obs) if windowed(data) else HOURS_AXIS


def display_times(obs: Observations, series_ids: object, hours: object) -> pd.Series:
    """The user's hours as the user wrote them: naive UTC date-times (plotly draws them as
    written; the axis says UTC) or numbers in the data's unit."""
    when = to_user_time(series_ids, hours, obs)
    if isinstance(when.dtype, pd.DatetimeTZDtype):
        when = when.dt.tz_convert("UTC").dt.tz_localize(None)
    return when


def with_when(data: ModelData, frame: pd.DataFrame, *, column: str = "time", name: str = "when") -> pd.DataFrame:
    """``frame`` (user ids and hours) with ``name``: its ``column`` in the user's clock (few
    series only; many-series views stay in hours)."""
    if not windowed(data) or frame.empty:
        return frame
    out = frame.copy()
    out[name] = display_times(data.obs, out["series_id"].astype(str).to_numpy(), out[column].to_numpy()).to_numpy()
    return out


def to_user(data: ModelData, frame: pd.DataFrame) -> pd.DataFrame:
    """A model-space frame (columns ``series_id, time``) in the user's ids and hours, with
    ``when`` and, on rolling origins, ``origin`` (the user hours each row was forecast from)
    and ``origin_when``."""
    if not windowed(data):
        return frame
    if frame.empty:
        return frame.assign(when=pd.Series(dtype=object))
    out = frame
    if on_origins(data) and "origin" not in frame.columns:
        out = frame.assign(origin=[data.clock.origins[str(m)][1] for m in frame["series_id"]])
    out = with_when(data, data.clock.to_user(out.reset_index(drop=True)))
    if "origin" in out.columns:
        out = with_when(data, out, column="origin", name="origin_when")
    return out


def user_series(data: ModelData, model_ids: list[str]) -> list[str]:
    """The user's series of model ids, each once, in order."""
    return list(dict.fromkeys(data.clock.user_series([str(m) for m in model_ids]))) if windowed(data) else model_ids


def model_ids_of(data: ModelData, series_id: str, model_ids: list[str]) -> list[str]:
    """The model ids among ``model_ids`` that belong to the user's ``series_id``."""
    if not windowed(data):
        return [m for m in model_ids if m == series_id]
    owners = data.clock.user_series([str(m) for m in model_ids])
    return [m for m, s in zip(model_ids, owners, strict=True) if s == series_id]


def series_test_origins(data: ModelData, series_id: str) -> list[float]:
    """Rolling origins: the user hours of the series' test origins, oldest first."""
    if not on_origins(data):
        return []
    origins = data.clock.origins
    return sorted(origins[m][1] for m in data.series_in("test") if origins[m][0] == series_id)


def model_query(data: ModelData, series_id: str, time_: float, origin: float | None = None) -> tuple[str, float]:
    """A query in the user's id and hours → (model id, model time). On rolling origins the
    query of the origin given (the nearest of the series' origins), else the latest origin
    at or before it; in windows the window holding it."""
    if not windowed(data):
        return str(series_id), float(time_)
    if on_origins(data) and origin is not None:
        mine = [(abs(o - float(origin)), m, o) for m, (s, o) in data.clock.origins.items()
                if s == str(series_id) and not m.endswith("@end")]
        if mine:
            _, model_id, o = min(mine)
            return model_id, float(time_) - o
    q = data.clock.queries_to_model(pd.DataFrame({"series_id": [str(series_id)], "time": [float(time_)]}))
    return str(q["series_id"].iloc[0]), float(q["time"].iloc[0])


def user_axis(data: ModelData) -> str:
    """The time axis title of a view drawn on the user's clock ("time (days)", "time (UTC)"),
    few series or many; :data:`HOURS_AXIS` for observations built by hand."""
    try:
        return user_time_label(data.obs)
    except DataError:
        return HOURS_AXIS


def time_text(data: ModelData, series_id: str, hours: float) -> str:
    """One time for a label: "2024-03-29 14:05 UTC", "12.5 days" (the user's clock, few
    series or many), or "t = 12.500 h" for observations built by hand."""
    try:
        user_time_unit(data.obs)
    except DataError:
        return f"t = {float(hours):.3f} h"
    when = display_times(data.obs, [str(series_id)], [float(hours)]).iloc[0]
    if user_time_unit(data.obs) == DATETIME:
        return f"{pd.Timestamp(when):%Y-%m-%d %H:%M} UTC"
    return f"{float(when):.4g} {user_time_unit(data.obs)}"


def data_time_label(obs: Observations) -> str:
    """The time axis title of the user's own data ("time (UTC)", "time (minutes)")."""
    return user_time_label(obs)
