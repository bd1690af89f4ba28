"""levy_core.episodes.baselines: the last-value predictive against a pandas computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from levy_core.episodes.baselines import LastValueForecaster
from levy_core.episodes.tasks import EpisodeBuilder, TaskConfig


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for s in range(6):
        for c in ("a", "b"):
            times = np.sort(rng.uniform(0, 20, 12))
            for t in times:
                rows.append((f"s{s}", c, float(t), float(rng.normal(1 if c == "a" else 5, 1))))
    rows.append(("s5", "c", 3.0, 9.0))  # channel c: one series, only before the cut-off
    return pd.DataFrame(rows, columns=["series_id", "channel", "time", "value"]).sort_values(
        ["series_id", "time", "channel"]).reset_index(drop=True)


@pytest.fixture
def builder() -> EpisodeBuilder:
    return EpisodeBuilder(frame(), ["a", "b", "c"], TaskConfig("forecast", cutoff=10.0))


def test_last_value_and_spread_match_pandas(builder: EpisodeBuilder) -> None:
    df = frame()
    ids = ["s0", "s1", "s2", "s3"]
    lv = LastValueForecaster.fit(builder, ids, min_queries=5)
    train = df[df["series_id"].isin(ids)]
    means = train.groupby("channel")["value"].mean()
    np.testing.assert_allclose(lv.train_mean[:2], means[["a", "b"]].to_numpy())
    ctx, qry = train[train["time"] <= 10], train[train["time"] > 10]
    last = ctx.sort_values("time").groupby(["series_id", "channel"])["value"].last()
    q = qry.join(last.rename("last"), on=["series_id", "channel"])
    rms = q.assign(sq=(q["value"] - q["last"]) ** 2).groupby("channel")["sq"].mean() ** 0.5
    np.testing.assert_allclose(lv.spread[:2], rms[["a", "b"]].to_numpy())
    # channel c never had a training query: the pooled RMS
    pooled = np.sqrt(((q["value"] - q["last"]) ** 2).mean())
    assert lv.spread[2] == pytest.approx(pooled)

    mean, spread = lv.predict(builder, ["s4", "s5"])
    new = df[df["series_id"].isin(["s4", "s5"])]
    nq = new[new["time"] > 10]
    nlast = new[new["time"] <= 10].sort_values("time").groupby(["series_id", "channel"])["value"].last()
    expected = nq.join(nlast.rename("last"), on=["series_id", "channel"])["last"].to_numpy()
    order = np.concatenate([builder.split_indices(s)[1] for s in ["s4", "s5"]])
    assert len(mean) == len(order) == len(nq)
    np.testing.assert_allclose(mean, expected)
    assert (spread > 0).all()


def test_round_trip_and_refusals(builder: EpisodeBuilder) -> None:
    lv = LastValueForecaster.fit(builder, ["s0", "s1"])
    again = LastValueForecaster.from_dict(lv.to_dict())
    np.testing.assert_array_equal(again.train_mean, lv.train_mean)
    np.testing.assert_array_equal(again.spread, lv.spread)
    bad = lv.to_dict()
    bad["spread"][0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        LastValueForecaster.from_dict(bad)
    with pytest.raises(ValueError, match="one length"):
        LastValueForecaster.from_dict({"train_mean": [0.0], "spread": [1.0, 2.0]})
    with pytest.raises(ValueError, match="no training observations"):
        LastValueForecaster.fit(builder, [])
