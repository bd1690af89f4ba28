"""A user's queries see everything before them (issue 51, "a silent stale answer"): asked
through ``--queries`` or ``--horizon``, the same time gives the same numbers; a forecast
query draws on the observations before it and on none after it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.cli.main import main
from levy_core.data import DataError, Observations, from_frame
from levy_core.episodes.tasks import TaskConfig
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import predict_after_end, predict_future, predict_queries
from levy_core.pipeline.prepared import prepare
from levy_core.pipeline.recipe import fit
from levy_core.pipeline.user_frames import predict_user_queries
from levy_core.training.train import TrainConfig

NUMBERS = ["mean", "sigma", "pred_std", "lower_gauss", "upper_gauss", "lower_conf", "upper_conf", "log_evidence",
           "disagreement", "n_eff"]
DAY = 24.0


def pbc_like(late: float = 0.01) -> pd.DataFrame:
    """12 patients seen over 400 days, a lab that climbs after day 60 (``late`` per day)
    and one that stays flat; times in hours."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(12):
        days = np.sort(rng.uniform(0, 400, 14))
        days[0] = 0.0
        bili = np.where(days < 60, 1.0, 1.0 + late * (days - 60)) + 0.1 * rng.standard_normal(len(days))
        for d, v in zip(days, bili, strict=True):
            rows += [(f"p{i:02d}", "bili", d * DAY, v), (f"p{i:02d}", "albumin", d * DAY, 3.5 + 0.1 * rng.standard_normal())]
    return pd.DataFrame(rows, columns=["series_id", "channel", "time", "value"])


@pytest.fixture(scope="module")
def pbc() -> tuple[Observations, FittedModel]:
    """A model cut off early (day 60) on a PBC-shaped panel: the fixed episodes end there."""
    obs = from_frame(pbc_like())
    fitted = fit(obs, task=TaskConfig("forecast", cutoff=60 * DAY), train=TrainConfig(epochs=1, seed=0),
                          size="small", train_twin=False)
    assert fitted.split.mode == "series"
    return obs, fitted


def test_a_query_long_after_the_cutoff_sees_the_latest_readings(pbc) -> None:
    """The stale answer of issue 51: 24 days after each patient's last reading, the query
    drew on the observations before the fit's cut-off (day 60) and answered the same
    level for every patient; it now draws on the whole series, as ``--horizon`` does."""
    obs, fitted = pbc
    frame = obs.frame
    last = frame.groupby("series_id")["time"].max()
    queries = pd.DataFrame({"series_id": last.index, "channel": "bili", "time": last.to_numpy() + 24 * DAY})
    asked = predict_user_queries(fitted, obs, queries)
    ahead = predict_after_end(fitted, obs, queries)
    np.testing.assert_array_equal(asked[NUMBERS].to_numpy(), ahead[NUMBERS].to_numpy())
    assert (asked["n_context"] == frame.groupby("series_id").size().loc[last.index].to_numpy()).all()
    stale = predict_queries(fitted, obs, queries)  # the held-out split's fixed episode
    latest = frame[frame["channel"] == "bili"].groupby("series_id")["value"].last().loc[last.index].to_numpy()
    assert (np.abs(asked["mean"] - latest) < np.abs(stale["mean"] - latest)).all()
    assert asked["mean"].std() > 3 * stale["mean"].std(), "each patient's own level, not one stale answer"


def with_row(obs: Observations, sid: str, channel: str, time: float, value: float) -> Observations:
    extra = pd.DataFrame({"series_id": [sid], "channel": [channel], "time": [time], "value": [value]})
    return from_frame(pd.concat([obs.frame, extra], ignore_index=True))


def test_a_forecast_query_uses_only_the_observations_before_it(pbc) -> None:
    obs, fitted = pbc
    sid = obs.series_ids[3]
    times = obs.frame.loc[obs.frame["series_id"] == sid, "time"].unique()
    t = float(times[6] + times[7]) / 2  # between two readings, after the cut-off
    query = pd.DataFrame({"series_id": [sid], "channel": ["bili"], "time": [t]})
    base = predict_user_queries(fitted, obs, query)
    assert int(base["n_context"].iloc[0]) == 2 * 7  # two labs at each of the 7 visits before t
    after = predict_user_queries(fitted, with_row(obs, sid, "bili", t + 1.0, 9.0), query)
    np.testing.assert_array_equal(after[NUMBERS].to_numpy(), base[NUMBERS].to_numpy())
    before = predict_user_queries(fitted, with_row(obs, sid, "bili", t - 1.0, 9.0), query)
    assert int(before["n_context"].iloc[0]) == 2 * 7 + 1
    assert float(before["mean"].iloc[0]) != pytest.approx(float(base["mean"].iloc[0]), rel=1e-4)
    with pytest.raises(DataError, match="nothing to forecast from"):  # nothing before it
        predict_user_queries(fitted, obs, query.assign(time=-DAY))


def test_queries_sharing_a_context_are_one_item(pbc) -> None:
    obs, fitted = pbc
    data = prepare(fitted, obs)
    sid = obs.series_ids[0]
    end = float(obs.frame.loc[obs.frame["series_id"] == sid, "time"].max())
    q = pd.DataFrame({"series_id": sid, "time": end + np.arange(1.0, 11.0), "code": 0})
    mid = pd.DataFrame({"series_id": [sid, sid], "time": [1.0, 2.0], "code": [0, 1]})  # after the day-0 visit
    from levy_core.pipeline.query_context import context_items

    items, rows = context_items(data, "forecast", pd.concat([q, mid], ignore_index=True))
    assert len(items) == 2 and sorted(len(r) for r in rows) == [2, 10]
    assert sorted(len(ctx) for _, ctx, _, _ in items) == [2, 28]


def test_rolling_origins_and_windows_answer_past_the_end_as_horizon(synthetic_obs: Observations) -> None:
    """One series forecast on rolling origins (model time = the lead) and three series
    interpolated in windows: a query after the end is the ``--horizon`` forecast."""
    for task, n in (("forecast", 1), ("interpolate", 3)):
        obs = synthetic_obs.subset(synthetic_obs.series_ids[-n:])
        fitted = fit(obs, task=TaskConfig(task), train=TrainConfig(epochs=1), train_twin=False)
        assert fitted.split.mode == ("origin" if task == "forecast" else "window")
        future = predict_future(fitted, obs, 6.0, n_points=4)
        asked = predict_user_queries(fitted, obs, future[["series_id", "channel", "time"]])
        np.testing.assert_array_equal(asked[NUMBERS].to_numpy(), future[NUMBERS].to_numpy())
        assert asked["time"].tolist() == future["time"].tolist()
        assert asked.attrs.get("beyond_horizon") == future.attrs.get("beyond_horizon")


def cli(*argv: object) -> None:
    assert main([str(a) for a in argv]) == 0


def test_levy_predict_queries_equals_horizon(fitted_dir: Path, fit_csv: Path, tmp_path: Path) -> None:
    """``levy predict --horizon 6 --points 3`` and a queries CSV at exactly those times."""
    ahead, asked, qfile = tmp_path / "ahead.csv", tmp_path / "asked.csv", tmp_path / "q.csv"
    cli("predict", fitted_dir, fit_csv, "--out", ahead, "--horizon", 6, "--points", 3)
    future = pd.read_csv(ahead, dtype={"series_id": str})
    future[["series_id", "channel", "time"]].to_csv(qfile, index=False)
    cli("predict", fitted_dir, fit_csv, "--out", asked, "--queries", qfile)
    answer = pd.read_csv(asked, dtype={"series_id": str})
    same = [c for c in future.columns if c in answer.columns and c not in ("series_id", "channel")]
    assert {"mean", "lower", "upper", "n_eff", "log_evidence"} <= set(same), same
    pd.testing.assert_frame_equal(answer[["series_id", "channel", *same]], future[["series_id", "channel", *same]])
