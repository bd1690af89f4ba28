"""A user's queries answered from everything before them.

``levy predict --queries`` and ``LevyForecaster.predict(queries=…)`` answer each query from
the observations of its series in the file given to ``predict``, not from the episode the
model was fitted and calibrated on:

* task ``forecast``: every observation of the query's series strictly before the query
  time; a query after the series' last observation thus sees the whole series — exactly the
  context ``--horizon`` ([`predict_after_end`][levy_core.pipeline.predict.predict_after_end]) forecasts
  from, so both give identical numbers at the same time;
* task ``interpolate``: every observation of the series.

In few-series modes the model works on pseudo-series: a query lands in the latest window
(window mode) or the latest forecast origin (rolling origins) starting at or before its
time — after the data's end, the series' end episode, as ``--horizon`` — and model time
stays relative to that episode's start (on rolling origins the lead the band's ``s(h)``
grows with). On rolling origins the context is that origin's history: the observations
in ``[o − history, o]``, as the model was trained and calibrated.

The held-out split's own queries (``evaluate``, ``calibrate``, the dashboard's held-out
points) keep their fixed episode — context before the cut-off, queries after — in
`observed_queries` and
[`predict_queries`][levy_core.pipeline.predict.predict_queries].
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from levy_core.data import DataError, Observations
from levy_core.episodes.origins import OriginClock
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import (
    checked_queries,
    horizon_note,
    in_original_units,
    refuse_unknown,
    run_pass,
)
from levy_core.pipeline.prepared import ModelData, as_model_data

__all__ = ["ITEMS_PER_BATCH", "context_items", "predict_from_past", "user_queries_to_model"]

ITEMS_PER_BATCH = 16  # (series, context) items per pass, as predict_after_end batches them


def user_queries_to_model(data: ModelData, queries: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``queries`` (``n`` rows, columns series_id, time in the user's ids and
    clock) in the model's series space: the series itself (many series), the latest
    window holding observations that starts at or before the query time (window mode,
    the first window for earlier times) or the latest origin at or before it (rolling
    origins; the end episode past the data's end); time relative to that episode's start.
    ``DataError`` for a series with no observations."""
    clock = data.clock
    if isinstance(clock, OriginClock):
        return clock.queries_to_model(queries)
    if not clock.windowed:
        return queries
    out = queries.copy()
    ids = out["series_id"].astype(str).to_numpy()
    unknown = sorted(set(ids) - set(clock.starts))
    if unknown:
        raise DataError(f"queries name series with no observations in the data: {unknown[:5]}")
    windows: dict[str, list[int]] = {}
    for m in data.builder.series:
        base, _, k = m.rpartition("@")
        windows.setdefault(base, []).append(int(k))
    offset = out["time"].to_numpy(np.float64) - np.array([clock.starts[s] for s in ids])
    model_ids, rel = np.empty(len(ids), dtype=object), np.empty(len(ids))
    for sid in set(ids):
        rows = np.flatnonzero(ids == sid)
        ks = np.sort(windows[sid])
        wanted = np.floor(offset[rows] / clock.window_hours)
        k = ks[np.clip(np.searchsorted(ks, wanted, side="right") - 1, 0, None)]
        model_ids[rows] = [f"{sid}@{i}" for i in k]
        rel[rows] = offset[rows] - k * clock.window_hours
    out["series_id"], out["time"] = model_ids, rel
    return out


def context_items(data: ModelData, kind: str, queries: pd.DataFrame,
                  ) -> tuple[list[tuple[str, np.ndarray, np.ndarray, np.ndarray]], list[np.ndarray]]:
    """Model-space ``queries`` (``n`` rows: series_id, time, channel code ``code``) grouped
    into episodes that share a context: forecast, the observations strictly before the
    query time (on rolling origins, of the episode's history ``time ≤ 0``); interpolate,
    all of the series. Queries with the same number of observations before them share one
    item, so a series' queries after its end are one item.

    Returns the items ``(series_id, context positions (N_i,), query times (M_i,), channel
    codes (M_i,))`` for ``EpisodeBuilder.collate`` and, per item, the row positions of its
    queries in ``queries`` (M_i,)."""
    builder, on_origins = data.builder, isinstance(data.clock, OriginClock)
    times, codes = queries["time"].to_numpy(np.float64), queries["code"].to_numpy(np.int64)
    items, rows_of = [], []
    for sid, rows in queries.groupby("series_id", sort=True).indices.items():
        s = builder.series[str(sid)]
        if kind == "forecast":
            seen = np.where(s.time <= 0, s.time, np.inf) if on_origins else s.time
            ordered = np.sort(seen)
            n_before = np.searchsorted(ordered, times[rows], side="left")
        else:
            ordered, n_before = s.time, np.full(len(rows), len(s.time))
        for n in np.unique(n_before):
            mine = rows[n_before == n]
            ctx = (np.flatnonzero(seen <= ordered[n - 1]) if kind == "forecast" and n > 0
                   else np.arange(len(s.time)) if n > 0 else np.arange(0))
            items.append((str(sid), ctx, times[mine], codes[mine]))
            rows_of.append(mine)
    return items, rows_of


def predict_from_past(fitted: FittedModel, data: Observations | ModelData, queries: pd.DataFrame, *,
                      level: float | None = 0.9, mc_passes: int = 0) -> pd.DataFrame:
    """Predictions at ``queries`` in the **model's series space** (``n`` rows, columns
    series_id, channel, time; map a user's with [`user_queries_to_model`][levy_core.pipeline.query_context.user_queries_to_model]), each from
    the context `context_items` gives it; ``n`` rows in the order given with the
    columns of ``predict_grid`` and ``n_context`` (observations the query drew on).
    ``attrs["beyond_horizon"]``: ``horizon_note``'s warning on rolling origins. ``level``: of
    the band columns (None: none, `in_original_units`).

    ``DataError`` for unknown series or channels, and in forecast mode for queries with no
    observation before them (nothing to forecast from)."""
    q = checked_queries(queries, "predict at")
    data = as_model_data(fitted, data)
    builder = data.builder
    refuse_unknown(q, builder)
    items, rows_of = context_items(data, fitted.task.kind, q.assign(code=q["channel"].map(builder.channel_index)))
    empty = np.concatenate([r for (_, ctx, _, _), r in zip(items, rows_of, strict=True) if not len(ctx)] or [[]])
    if empty.size:
        where = data.clock.to_user(q.iloc[empty.astype(int)[:3]])
        raise DataError(f"{empty.size} queries have no observation of their series before them, so there is "
                        f"nothing to forecast from (e.g. {list(zip(where['series_id'], where['time'], strict=True))}); "
                        "ask at times after a series' first observation")
    frames = []
    for start in range(0, len(items), ITEMS_PER_BATCH):
        part = items[start:start + ITEMS_PER_BATCH]
        res = run_pass(fitted, builder.collate(part), mc_passes)
        for b, (_, ctx, t, _) in enumerate(part):
            cols = {"order": rows_of[start + b], "n_context": len(ctx)}
            cols.update({k: v[b, :len(t)] for k, v in res.items()})
            frames.append(pd.DataFrame(cols))
    df = pd.concat(frames, ignore_index=True).sort_values("order").drop(columns="order").reset_index(drop=True)
    df = pd.concat([q, df], axis=1)
    out = in_original_units(fitted, df, level)
    note = horizon_note(fitted, q["time"].to_numpy())  # model time is the lead on rolling origins
    if note:
        out.attrs["beyond_horizon"] = note
    return out
