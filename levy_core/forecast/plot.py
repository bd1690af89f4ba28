"""One series' history, forecast and band as a plotly figure: what
[`LevyForecaster.plot`][levy_core.forecast.forecaster.LevyForecaster.plot] returns.

plotly is the ``dashboard`` extra's (``pip install 'levy-core[dashboard]'``), not a dependency
of the library: it is imported when a figure is made, and its absence is an ``ImportError``
saying what to install. The dashboard draws its own, richer charts (``levy_dashboard.charts``);
the library does not import the dashboard, so this figure is built here, with the same
numbers as [`predict`][levy_core.forecast.forecaster.LevyForecaster.predict] (the same
forecast, the same band) and the two uncertainty signals of the operator beneath it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from levy_core.data import DATETIME, DataError, Observations, parse_duration, user_time_unit
from levy_core.forecast import windows as forecast_windows
from levy_core.forecast.results import fraction
from levy_core.pipeline.bands import method_bands, percent_levels
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import predict_future
from levy_core.pipeline.prepared import prepare

if TYPE_CHECKING:  # pragma: no cover - typing only
    import plotly.graph_objects as go

HISTORY, LEVY, EVIDENCE, DISAGREEMENT = "#444444", "#1f77b4", "#2ca02c", "#d62728"
SIGNALS = (("log_evidence", "log evidence", EVIDENCE), ("disagreement", "disagreement", DISAGREEMENT))


def _plotly() -> tuple[Any, Any]:
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError as exc:  # the optional extra is missing
        raise ImportError("LevyForecaster.plot draws with plotly, which is not installed: "
                          "pip install 'levy-core[dashboard]' (or pip install plotly)") from exc
    return go, make_subplots


def _pick(obs: Observations, unique_id: object, channel: str | None, channels: list[str]) -> tuple[str, str]:
    """The series (default: the first) and the channel (default: its first observed one the
    model knows), each checked against the data."""
    ids = obs.series_ids
    sid = ids[0] if unique_id is None else str(unique_id)
    if sid not in ids:
        shown = ", ".join(ids[:5]) + (", …" if len(ids) > 5 else "")
        raise DataError(f"unique_id {sid!r} is not among the {len(ids)} series of the data ({shown})")
    seen = set(obs.frame.loc[obs.frame["series_id"].astype(str) == sid, "channel"].astype(str))
    known = [c for c in channels if c in seen]
    if channel is None:
        if not known:
            raise DataError(f"series {sid!r} has no observation of a channel the model knows ({', '.join(channels)})")
        return sid, known[0]
    if str(channel) not in known:
        raise DataError(f"channel {channel!r} is not observed in series {sid!r} among the model's channels: "
                        f"{', '.join(known) or 'none'}")
    return sid, str(channel)


def forecast_frame(fitted: FittedModel, obs: Observations, sid: str, channel: str, h: str | float,
                   level: float, points: int, band: str) -> pd.DataFrame:
    """The forecast of one series and channel over ``h``: ``ds`` (the user's clock), ``Lévy``,
    ``Lévy-lo-<L>``, ``Lévy-hi-<L>``, ``log_evidence``, ``disagreement``; ``points`` rows."""
    frac = fraction(percent_levels(level)[0])
    one = obs.subset([sid])
    hours = parse_duration(h, obs.report.input_time_unit)
    pred = predict_future(fitted, prepare(fitted, one), hours, n_points=points,
                          series_ids=[sid], channels=[channel], level=None).reset_index(drop=True)
    levy = method_bands(pred, fitted, [frac], band)["levy"]  # the band, derived once
    pct = f"{100 * frac:g}"
    return pd.DataFrame({
        "ds": forecast_windows.user_times(pred["series_id"], pred["time"], one).array,
        "Lévy": pred["mean"].to_numpy(np.float64),
        f"Lévy-lo-{pct}": levy.lower_original[0].astype(np.float64),
        f"Lévy-hi-{pct}": levy.upper_original[0].astype(np.float64),
        "log_evidence": pred["log_evidence"].to_numpy(np.float64),
        "disagreement": pred["disagreement"].to_numpy(np.float64),
    })


def forecast_figure(fitted: FittedModel, obs: Observations, *, unique_id: object = None,
                    channel: str | None = None, h: str | float, level: float = 90, points: int = 100,
                    band: str = "auto", signals: bool = True) -> go.Figure:
    """History, forecast and band of one series and channel; with ``signals``, log evidence
    and disagreement in two rows beneath on the same time axis.

    Traces, in order: ``history`` (the observations, markers), ``Lévy-lo-<L>`` and
    ``Lévy-hi-<L>`` (the band's bounds, the area between them filled), ``Lévy`` (the
    forecast), then ``log evidence`` and ``disagreement`` (rows 2 and 3). Every trace's x
    is in the user's clock (numbers in the data's unit, or date-times).
    """
    go, make_subplots = _plotly()
    sid, channel = _pick(obs, unique_id, channel, list(fitted.channels))
    fc = forecast_frame(fitted, obs, sid, channel, h, level, points, band)
    lo, hi = (c for c in fc.columns if c.startswith(("Lévy-lo-", "Lévy-hi-")))
    mine = obs.frame[(obs.frame["series_id"].astype(str) == sid) & (obs.frame["channel"].astype(str) == channel)]
    mine = mine.sort_values("time")
    history_x = forecast_windows.user_times(mine["series_id"], mine["time"], obs).array
    rows = 3 if signals else 1
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        row_heights=[0.6, 0.2, 0.2] if signals else None)
    fig.add_trace(go.Scatter(x=history_x, y=mine["value"].to_numpy(np.float64), name="history", mode="markers",
                             marker={"color": HISTORY, "size": 5}), row=1, col=1)
    fig.add_trace(go.Scatter(x=fc["ds"], y=fc[lo], name=lo, mode="lines", line={"width": 0, "color": LEVY},
                             showlegend=False), row=1, col=1)
    fig.add_trace(go.Scatter(x=fc["ds"], y=fc[hi], name=hi, mode="lines", line={"width": 0, "color": LEVY},
                             fill="tonexty", fillcolor="rgba(31, 119, 180, 0.25)",
                             legendgroup="band"), row=1, col=1)
    fig.add_trace(go.Scatter(x=fc["ds"], y=fc["Lévy"], name="Lévy", mode="lines", line={"color": LEVY}),
                  row=1, col=1)
    if signals:
        for row, (column, name, colour) in enumerate(SIGNALS, start=2):
            fig.add_trace(go.Scatter(x=fc["ds"], y=fc[column], name=name, mode="lines", line={"color": colour}),
                          row=row, col=1)
            fig.update_yaxes(title_text=name, row=row, col=1)
    unit = user_time_unit(obs)
    fig.update_xaxes(title_text="date" if unit == DATETIME else f"time ({unit})", row=rows, col=1)
    fig.update_yaxes(title_text=channel, row=1, col=1)
    fig.update_layout(title=f"{sid} · {channel}: forecast with its {lo.removeprefix('Lévy-lo-')} % band",
                      template="plotly_white", hovermode="x unified")
    return fig
