"""levy_core.episodes.tasks: splits (by series / by time window), forecast and interpolation episodes,
the data-dependent task defaults and the padded batches the models consume."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import torch

from levy_core.data import DataError
from levy_core.episodes.tasks import (
    MIN_SERIES_FOR_SERIES_SPLIT,
    EpisodeBuilder,
    TaskConfig,
    make_split,
    resolve_task,
    to_windows,
)

CHANNELS = ["a", "b", "c"]


def long_frame(
    n_series: int, *, seed: int = 0, n_obs=(20, 60), start=0.0, span=48.0
) -> pd.DataFrame:
    """Random irregular long frame: series ``s000..``, channels a/b/c, times in
    ``[start, start + span]`` (``start``/``span`` scalars or one per series)."""
    rng = np.random.default_rng(seed)
    starts = np.broadcast_to(np.asarray(start, float), (n_series,))
    spans = np.broadcast_to(np.asarray(span, float), (n_series,))
    parts = []
    for i in range(n_series):
        n = int(rng.integers(*n_obs))
        t = np.sort(rng.uniform(0, spans[i], n))
        t[0], t[-1] = 0.0, spans[i]  # every series covers exactly its span
        parts.append(
            pd.DataFrame(
                {
                    "series_id": f"s{i:03d}",
                    "channel": rng.choice(CHANNELS, n),
                    "time": starts[i] + t,
                    "value": rng.normal(size=n),
                }
            )
        )
    frame = pd.concat(parts, ignore_index=True)
    return frame.sort_values(["series_id", "time", "channel"], kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------- series split


@pytest.mark.parametrize("n_series", [MIN_SERIES_FOR_SERIES_SPLIT, 25, 37])
def test_series_split_is_60_20_20_disjoint_and_covering(n_series: int) -> None:
    frame = long_frame(n_series)
    out, split = make_split(frame, seed=3)
    assert split.mode == "series" and split.seed == 3
    pd.testing.assert_frame_equal(out, frame)  # series mode keeps the frame as it is
    train, cal, test = set(split.train), set(split.calibration), set(split.test)
    assert len(train) == len(split.train) and len(cal) == len(split.calibration)
    assert not (train & cal) and not (train & test) and not (cal & test)
    assert train | cal | test == set(frame["series_id"])
    for part, share in ((train, 0.6), (cal, 0.2), (test, 0.2)):
        assert abs(len(part) - share * n_series) <= 1
    for sid in frame["series_id"].unique():
        expected = "train" if sid in train else "calibration" if sid in cal else "test"
        assert split.role_of(sid) == expected
    assert split.role_of("not-a-series") == "unseen"
    # early stopping: a sixth of the training series, held out of fitting, never calibration
    stopping = set(split.stopping)
    assert stopping < train and len(stopping) == max(1, round(len(train) / 6))
    assert set(split.fitting()) == train - stopping and not (stopping & cal)


def test_series_split_is_seeded() -> None:
    frame = long_frame(30)
    first, again = make_split(frame, seed=11)[1], make_split(frame, seed=11)[1]
    assert first == again
    trains = {tuple(sorted(make_split(frame, seed=s)[1].train)) for s in range(5)}
    assert len(trains) == 5, "different seeds must give different splits"


def test_split_round_trips_through_dict() -> None:
    from levy_core.episodes.tasks import Split

    split = make_split(long_frame(12), seed=2)[1]
    assert split.stopping
    assert Split.from_dict(split.to_dict()) == split
    # a model saved before early-stopping series existed loads with none
    older = {k: v for k, v in split.to_dict().items() if k != "stopping"}
    assert Split.from_dict(older).stopping == [] and Split.from_dict(older).fitting() == split.train


# ----------------------------------------------------------------------------- window split


def _window_parts(sid: str) -> tuple[str, int]:
    m = re.fullmatch(r"(.+)@(\d+)", sid)
    assert m, f"pseudo-series id {sid!r} is not '<id>@<k>'"
    return m.group(1), int(m.group(2))


def test_few_series_are_split_by_time_windows() -> None:
    # 3 series with different starts and spans (numeric times need not start at 0)
    frame = long_frame(
        3, n_obs=(150, 200), start=[0.0, 100.0, 7.5], span=[40.0, 48.0, 30.0], seed=1
    )
    assert frame["series_id"].nunique() < MIN_SERIES_FOR_SERIES_SPLIT
    windowed, split = make_split(frame, seed=0)
    assert split.mode == "window" and split.window_hours > 0
    assert len(windowed) == len(frame)
    all_ids = set(windowed["series_id"])
    assert set(split.train) | set(split.calibration) | set(split.test) == all_ids
    assert len(split.train) + len(split.calibration) + len(split.test) == len(all_ids)

    w = split.window_hours
    start = frame.groupby("series_id")["time"].min()
    base_k = windowed["series_id"].map(_window_parts)
    base = base_k.str[0]
    k = base_k.str[1].to_numpy()
    assert set(base) == set(frame["series_id"])
    # time relative to the window start, inside the window
    t = windowed["time"].to_numpy()
    assert (t >= -1e-9).all() and (t < w + 1e-9).all()
    # absolute times are recovered exactly: start of series + k * window + relative time
    absolute = start.loc[base].to_numpy() + k * w + t
    for sid in frame["series_id"].unique():
        got = np.sort(absolute[(base == sid).to_numpy()])
        np.testing.assert_allclose(
            got, np.sort(frame.loc[frame["series_id"] == sid, "time"]), atol=1e-9
        )

    # per series: train windows precede calibration windows precede test windows, in time
    k_of = dict(zip(windowed["series_id"], k, strict=False))
    base_of = dict(zip(windowed["series_id"], base, strict=False))
    for sid in frame["series_id"].unique():
        ks = {
            role: [k_of[p] for p in getattr(split, role) if base_of[p] == sid]
            for role in ("train", "calibration", "test")
        }
        assert all(ks.values()), f"{sid}: every role needs windows, got {ks}"
        assert max(ks["train"]) < min(ks["calibration"])
        assert max(ks["calibration"]) < min(ks["test"])
        # the early-stopping windows are the series' latest training windows
        stop = sorted(k_of[p] for p in split.stopping if base_of[p] == sid)
        assert stop and stop == sorted(ks["train"])[-len(stop):]
        assert len(stop) == max(1, round(len(ks["train"]) / 6))
    assert set(split.fitting()) == set(split.train) - set(split.stopping)


def test_to_windows_rejects_non_positive_window() -> None:
    with pytest.raises(ValueError):
        to_windows(long_frame(2), 0.0)


def test_window_split_of_single_instant_series_is_a_data_error() -> None:
    frame = pd.DataFrame(
        {
            "series_id": ["x", "x", "y"],
            "channel": ["a", "b", "a"],
            "time": [5.0, 5.0, 2.0],
            "value": [1.0, 2.0, 3.0],
        }
    )
    with pytest.raises(DataError):
        make_split(frame)


# ----------------------------------------------------------------------------- task defaults


@pytest.mark.parametrize("scale", [0.47, 47.56, 1234.0])
def test_default_cutoff_is_a_round_half_of_the_median_span(scale: float) -> None:
    spans = scale * np.array([0.8, 1.0, 1.3, 0.9, 1.1])
    frame = long_frame(5, span=spans)
    half = float(np.median(spans)) / 2
    task = resolve_task(TaskConfig("forecast", horizon=3.0, holdout_fraction=0.3), frame)
    assert task.kind == "forecast" and task.horizon == 3.0 and task.holdout_fraction == 0.3
    assert task.cutoff == pytest.approx(half, rel=0.05)
    assert float(f"{task.cutoff:.2g}") == task.cutoff, "a round number: two significant figures"


def test_default_cutoff_leaves_context_when_times_do_not_start_at_zero() -> None:
    frame = long_frame(5, start=100.0, span=48.0)
    task = resolve_task(TaskConfig("forecast"), frame)
    assert frame["time"].min() < task.cutoff < frame["time"].max()


def test_resolve_task_keeps_explicit_settings_and_checks_them() -> None:
    frame = long_frame(4)
    explicit = TaskConfig("forecast", cutoff=12.5, horizon=6.0)
    assert resolve_task(explicit, frame) == explicit
    interp = TaskConfig("interpolate", holdout_fraction=0.35)
    assert resolve_task(interp, frame) == interp
    with pytest.raises(ValueError):
        resolve_task(TaskConfig("extrapolate"), frame)  # type: ignore[arg-type]
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError):
            resolve_task(TaskConfig("interpolate", holdout_fraction=bad), frame)


# ----------------------------------------------------------------------------- episodes


@pytest.mark.parametrize("horizon", [None, 10.0])
def test_forecast_episodes_split_at_the_cutoff(horizon: float | None) -> None:
    frame = long_frame(6)
    cutoff = 20.0
    builder = EpisodeBuilder(frame, CHANNELS, TaskConfig("forecast", cutoff, horizon))
    end = np.inf if horizon is None else cutoff + horizon
    for sid, s in builder.series.items():
        ctx, qry = builder.split_indices(sid)
        assert (s.time[ctx] <= cutoff).all()
        assert (s.time[qry] > cutoff).all() and (s.time[qry] <= end).all()
        assert np.array_equal(np.sort(np.concatenate([ctx, qry])), np.flatnonzero(s.time <= end))
        assert len(ctx) and len(qry)


def test_interpolation_holdout_fraction_fixed_and_random() -> None:
    frame = long_frame(6, n_obs=(40, 80))
    task = TaskConfig("interpolate", holdout_fraction=0.25)
    builder = EpisodeBuilder(frame, CHANNELS, task, seed=4)
    same_seed = EpisodeBuilder(frame, CHANNELS, task, seed=4)
    other_seed = EpisodeBuilder(frame, CHANNELS, task, seed=5)
    differs_by_seed = 0
    for sid, s in builder.series.items():
        n = len(s.time)
        ctx, held = builder.split_indices(sid)
        assert len(held) == round(0.25 * n)
        assert not set(ctx) & set(held)
        assert np.array_equal(np.sort(np.concatenate([ctx, held])), np.arange(n))
        # the evaluation hold-out is fixed: same twice, same for the same seed
        for again in (builder.split_indices(sid), same_seed.split_indices(sid)):
            assert np.array_equal(again[0], ctx) and np.array_equal(again[1], held)
        differs_by_seed += not np.array_equal(other_seed.split_indices(sid)[1], held)
        # under an rng: a fresh hold-out each draw, reproducible from the rng's seed
        rng = np.random.default_rng(0)
        draws = [builder.split_indices(sid, rng)[1] for _ in range(3)]
        assert all(len(d) == len(held) for d in draws)
        assert not np.array_equal(draws[0], draws[1]) or not np.array_equal(draws[1], draws[2])
        replay = np.random.default_rng(0)
        assert np.array_equal(builder.split_indices(sid, replay)[1], draws[0])
    assert differs_by_seed == len(builder.series)


def test_interpolation_of_a_one_observation_series_has_no_queries() -> None:
    frame = pd.DataFrame({"series_id": ["x"], "channel": ["a"], "time": [1.0], "value": [0.5]})
    builder = EpisodeBuilder(frame, CHANNELS, TaskConfig("interpolate"))
    ctx, qry = builder.split_indices("x")
    assert len(ctx) == 1 and len(qry) == 0
    assert builder.usable(["x"]) == []


def test_usable_needs_context_and_queries() -> None:
    frame = long_frame(3)
    late = frame["series_id"] == "s001"
    frame.loc[late, "time"] += 100.0  # all after the cut-off: no context
    early = frame["series_id"] == "s002"
    frame.loc[early, "time"] *= 0.1  # all before the cut-off: no queries
    builder = EpisodeBuilder(frame, CHANNELS, TaskConfig("forecast", cutoff=20.0))
    assert builder.usable(["s000", "s001", "s002", "nope"]) == ["s000"]


def test_batch_padding_masks_targets_and_shapes() -> None:
    frame = long_frame(4, n_obs=(10, 90), seed=7)
    cutoff = 24.0
    builder = EpisodeBuilder(frame, CHANNELS, TaskConfig("forecast", cutoff), seed=0)
    ids = sorted(builder.series)[:3]
    batch, rows = builder.batch(ids)
    sizes = [tuple(len(x) for x in builder.split_indices(sid)) for sid in ids]
    n_max, m_max = max(n for n, _ in sizes), max(m for _, m in sizes)
    B = len(ids)
    for name in ("ctx_time", "ctx_channel", "ctx_value", "ctx_mask"):
        assert tuple(getattr(batch, name).shape) == (B, n_max), name
    for name in ("qry_time", "qry_channel", "qry_mask", "target"):
        assert tuple(getattr(batch, name).shape) == (B, m_max), name
    assert batch.ctx_channel.dtype == torch.int64 and batch.qry_channel.dtype == torch.int64
    assert batch.ctx_value.dtype == torch.float32 and batch.target.dtype == torch.float32
    assert len(rows) == B
    for b, (sid, (n, m)) in enumerate(zip(ids, sizes, strict=True)):
        # masks: real entries first, padding after, nothing else
        assert batch.ctx_mask[b, :n].eq(1).all() and batch.ctx_mask[b, n:].eq(0).all()
        assert batch.qry_mask[b, :m].eq(1).all() and batch.qry_mask[b, m:].eq(0).all()
        assert batch.target[b, m:].eq(0).all() and batch.ctx_value[b, n:].eq(0).all()
        # targets and query coordinates are the frame's rows for this series, after the cut-off
        q = frame.loc[rows[b]]
        assert (q["series_id"] == sid).all() and len(q) == m
        np.testing.assert_allclose(batch.target[b, :m].numpy(), q["value"], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(batch.qry_time[b, :m].numpy(), q["time"], rtol=1e-6)
        assert [CHANNELS[c] for c in batch.qry_channel[b, :m].tolist()] == q["channel"].tolist()
        assert (batch.qry_time[b, :m] > cutoff).all() and (batch.ctx_time[b, :n] <= cutoff).all()
        ctx_rows = frame[(frame["series_id"] == sid) & (frame["time"] <= cutoff)]
        np.testing.assert_allclose(
            batch.ctx_value[b, :n].numpy(), ctx_rows["value"], rtol=1e-6, atol=1e-6
        )


def test_query_batch_carries_arbitrary_queries_without_targets() -> None:
    frame = long_frame(2)
    builder = EpisodeBuilder(frame, CHANNELS, TaskConfig("forecast", cutoff=24.0))
    t = np.array([30.0, 31.0, 45.5])
    c = np.array([2, 0, 1])
    batch = builder.query_batch([("s000", t, c), ("s001", t[:1], c[:1])])
    assert batch.target is None
    assert batch.qry_time.shape == (2, 3)
    np.testing.assert_allclose(batch.qry_time[0].numpy(), t)
    assert batch.qry_channel[0].tolist() == c.tolist()
    assert batch.qry_mask.sum(1).tolist() == [3.0, 1.0]
    n_ctx = [len(builder.split_indices(s)[0]) for s in ("s000", "s001")]
    assert batch.ctx_mask.sum(1).tolist() == [float(n) for n in n_ctx]


def test_unknown_channel_is_a_data_error() -> None:
    frame = long_frame(3)
    with pytest.raises(DataError, match="channel"):
        EpisodeBuilder(frame, ["a", "b"], TaskConfig("forecast", cutoff=10.0))
