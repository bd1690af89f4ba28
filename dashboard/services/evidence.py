"""Evidence: the held-out queries and what one of them drew on — predictions at the held-out
observations, the attention weights of a query, why its band is as wide as it is (its σ̂
against the median test query's, split into its evidence and disagreement factors), and
the sampled operator's draws at a query (the identity check).

Cache wrappers around the fitted model's verbs (``levy_core.forecast.verbs``: ``predict_queries``,
``split_predictions``,
``attention_weights``, ``operator_draws``, ``width_factors``, ``query_crps``) keyed by the
fit key; queries come in the user's ids and hours and go to the model's space through
``user_clock.model_query``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st
from levy_dashboard.data import user_clock
from levy_dashboard.fitting.fits import FitResult
from levy_dashboard.services.band import model_ids, model_points, time_axis

from levy_core.data import DataError
from levy_core.forecast.verbs import FittedVerbs

__all__ = ["QueryExplanation", "attention", "channel_queries", "draws", "explain_query", "heldout_predictions",
           "heldout_queries", "query_attention", "query_crps", "query_draws", "query_marks", "scatter_name",
           "test_predictions", "user_test_predictions", "width_factors"]

TOP_OBSERVATIONS = 10  # the observations a query draws on most, listed
TOP_CHANNELS = 6  # channels named in the attention-by-channel sentence


@st.cache_data(show_spinner=False, max_entries=64)
def heldout_predictions(key: str, _res: FitResult, series_id: str) -> pd.DataFrame:
    """Predictions at the held-out observations of one series (all channels), with ``y_true``;
    model series space (the queries never leave it)."""
    pts = model_points(key, _res)
    q = pts[(pts["series_id"] == series_id) & (pts["role"] == "held-out")].reset_index(drop=True)
    if q.empty:
        return pd.DataFrame(columns=["series_id", "channel", "time", "y_true", "mean", "pred_std"])
    pred = _res.verbs.predict_queries(_res.data, q[["series_id", "channel", "time"]])
    pred["y_true"] = q["value"].to_numpy()
    return pred


@st.cache_data(show_spinner=False, max_entries=8)
def test_predictions(key: str, _res: FitResult) -> pd.DataFrame:
    """``predict.split_predictions`` on the test split (empty when it has no queries)."""
    try:
        return _res.verbs.split_predictions(_res.data, "test")
    except DataError:
        return pd.DataFrame()


@st.cache_data(show_spinner=False, max_entries=8)
def user_test_predictions(key: str, _res: FitResult) -> pd.DataFrame:
    """``test_predictions`` in the user's ids and clock (with ``origin`` on rolling origins)."""
    return user_clock.to_user(_res.data, test_predictions(key, _res))


@st.cache_data(show_spinner=False, max_entries=64)
def heldout_queries(key: str, _res: FitResult, series_id: str, origin: float | None = None) -> pd.DataFrame:
    """``heldout_predictions`` of one user series in the user's ids and clock: over all its
    windows; on rolling origins those of one test origin (``origin``, user hours; default the
    latest), with ``origin``."""
    data = _res.data
    if not user_clock.windowed(data):
        return heldout_predictions(key, _res, series_id)
    ids = model_ids(key, _res, series_id)
    if user_clock.on_origins(data):
        origins = user_clock.series_test_origins(data, series_id)
        at = float(origin) if origin is not None else (origins[-1] if origins else None)
        ids = [] if at is None else [user_clock.model_query(data, series_id, at, at)[0]]
    parts = [heldout_predictions(key, _res, m) for m in ids]
    return user_clock.to_user(data, pd.concat(parts, ignore_index=True) if parts else heldout_predictions(key, _res, ""))


def channel_queries(key: str, res: FitResult, series_id: str, channel: str,
                    origin: float | None = None) -> pd.DataFrame:
    """``heldout_queries`` of one channel, oldest first (what a view offers to pick)."""
    held = heldout_queries(key, res, series_id, origin)
    return held[held["channel"] == channel].sort_values("time")


def scatter_name(res: FitResult) -> str:
    """What the held-out scatter's dots are: new data is scored whole, fitted data on its test part."""
    if not res.data.same_data:
        return "held-out queries (every new series)"
    return "held-out queries (test origins)" if res.on_origins else "held-out queries (test series)"


def width_factors(query: pd.Series, reference: pd.DataFrame) -> dict[str, float | str]:
    """``diagnostics.width_factors``: one query's σ̂ against the median reference query's."""
    return FittedVerbs.width_factors(query, reference)


@st.cache_data(show_spinner=False, max_entries=64)
def attention(key: str, _res: FitResult, series_id: str, channel: str, time_: float) -> pd.DataFrame:
    """``diagnostics.attention_weights`` of one query."""
    return _res.verbs.attention_weights(_res.data, series_id, channel, float(time_))


def query_attention(key: str, res: FitResult, series_id: str, channel: str, time_: float,
                    origin: float | None = None) -> pd.DataFrame:
    """``attention`` of a query given in the user's id and hours (and origin), with the
    observations it drew on in the user's clock."""
    model_id, t = user_clock.model_query(res.data, series_id, time_, origin)
    att = attention(key, res, model_id, channel, t)
    return user_clock.to_user(res.data, att.assign(series_id=model_id)) if user_clock.windowed(res.data) else att


def _query_row(held: pd.DataFrame, channel: str, time_: float) -> pd.DataFrame:
    return held[(held["channel"] == channel) & ((held["time"] - time_).abs() < 1e-9)]


def query_marks(key: str, res: FitResult, query: dict[str, Any] | None, series_id: str,
                channel: str) -> dict[str, Any]:
    """The selected query's overlays on the band of ``series_id`` and ``channel`` (``query``:
    the user's series, channel and hours, or None): the observations of this channel it drew
    on and its star (time, ``when``, and its observed value when it is of this channel)."""
    if query is None:
        return {"attended": None, "query": None}
    att = query_attention(key, res, query["series_id"], query["channel"], query["time"])
    row = _query_row(heldout_queries(key, res, series_id), query["channel"], query["time"])
    mark: dict[str, Any] = {"time": query["time"]}
    if len(row) and "when" in row.columns:
        mark["when"] = row["when"].iloc[0]
    if len(row) and query["channel"] == channel:
        mark["value"] = float(row["y_true"].iloc[0])
    return {"attended": att[att["channel"] == channel], "query": mark}


@dataclass(frozen=True)
class QueryExplanation:
    """Why one held-out query's band is as wide as it is.

    Attributes
    ----------
    row : Series
        Its prediction (``y_true, mean, pred_std, sigma, n_eff, log_evidence, disagreement``).
    error_ratio : float
        ``|y_true − mean| / (c·σ̂)``.
    factors : dict
        ``width_factors`` against the median test query (``ratio, evidence,
        disagreement, reason``).
    channel_shares : list of (str, float)
        The attention weight per channel, largest first (at most ``TOP_CHANNELS``).
    top : DataFrame
        The observations it draws on most (the time column named by the time axis, channel,
        value, weight).
    in_hours : bool
        ``top``'s time is in the model's hours (observations built by hand), not the user's clock.
    """

    row: pd.Series
    error_ratio: float
    factors: dict[str, float | str]
    channel_shares: list[tuple[str, float]]
    top: pd.DataFrame
    in_hours: bool


def explain_query(key: str, res: FitResult, query: dict[str, Any], test: pd.DataFrame) -> QueryExplanation | None:
    """The explanation of a selected query (the user's series, channel, hours and, on rolling
    origins, origin) against the test split's queries ``test`` (those of its own series when
    the test split has none); None when it is not a held-out query of that series."""
    origin = query.get("origin")
    held = heldout_queries(key, res, query["series_id"], origin)
    found = _query_row(held, query["channel"], query["time"])
    if found.empty:
        return None
    r = found.iloc[0]
    error_ratio = float(abs(r["y_true"] - r["mean"]) / max(r["pred_std"], 1e-12))
    factors = width_factors(r, test if len(test) else held)
    att = query_attention(key, res, query["series_id"], query["channel"], query["time"], origin)
    by_channel = att.groupby("channel")["weight"].sum().sort_values(ascending=False)
    shares = [(str(ch), float(w)) for ch, w in by_channel.head(TOP_CHANNELS).items()]
    top = att.sort_values("weight", ascending=False).head(TOP_OBSERVATIONS)
    axis = time_axis(res)
    if "when" not in top.columns and len(top):  # many series: the user's clock too, when it is known
        try:
            top = top.assign(when=user_clock.display_times(res.obs, str(query["series_id"]),
                                                           top["time"].to_numpy()).to_numpy())
            axis = user_clock.user_axis(res.data)
        except DataError:  # observations built by hand: the model's hours
            pass
    time_col = "when" if "when" in top.columns else "time"
    top = top[[time_col, "channel", "value", "weight"]].rename(columns={time_col: axis})
    return QueryExplanation(r, error_ratio, factors, shares, top, time_col != "when")


@st.cache_data(show_spinner=False, max_entries=32)
def draws(key: str, _res: FitResult, series_id: str, channel: str, time_: float, n_draws: int,
          seed: int = 0) -> dict[str, Any]:
    """``diagnostics.operator_draws`` at one query (with the RMSD's Monte-Carlo s.e.)."""
    return _res.verbs.operator_draws(_res.data, series_id, channel, float(time_), n_draws=n_draws, seed=seed)


def query_draws(key: str, res: FitResult, series_id: str, channel: str, time_: float, n_draws: int,
                origin: float | None = None) -> dict[str, Any]:
    """``draws`` at a query given in the user's id and hours (and origin)."""
    model_id, t = user_clock.model_query(res.data, series_id, time_, origin)
    return draws(key, res, model_id, channel, t, n_draws)


def query_crps(out: dict[str, Any], y_true: float, n_sampler: int = 50) -> dict[str, float]:
    """``diagnostics.query_crps``: closed form vs the first ``n_sampler`` scaled draws."""
    return FittedVerbs.query_crps(out, y_true, n_sampler)
