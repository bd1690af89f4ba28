"""levy_core.pipeline.prepared (``prepare``, ``ModelData``, ``as_model_data``, ``natural_key``) and the
one clock, ``Split.clock`` → ``SeriesClock``, on two tiny fits made once for this module:

* many series (16 ≥ 10: split by series), ids "s0" … "s15" so that natural and
  lexicographic order differ ("s2" < "s10" naturally, "s10" < "s2" as text);
* few series (3 < 10: window mode), each cut into windows "<id>@<k>".

Expected values are computed by hand from the raw observations and the recorded split and
task (the cut-off), not by calling the code under test again.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

from levy_core.data import DataError, Observations, from_frame, load_sample
from levy_core.episodes.tasks import (
    MIN_SERIES_FOR_SERIES_SPLIT,
    SeriesClock,
    TaskConfig,
    to_windows,
)
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.prepared import ModelData, as_model_data, natural_key, prepare
from levy_core.pipeline.ranking import rank
from levy_core.pipeline.recipe import fit
from levy_core.training.train import TrainConfig

POINT_COLUMNS = ["series_id", "channel", "time", "value", "role", "split"]
ROLE_ORDER = ("test", "calibration", "train")
EPS = np.finfo(np.float64).eps


def window_index(series_id: str) -> tuple[str, int]:
    base, _, k = series_id.rpartition("@")
    return base, int(k)


def by_number(series_id: str) -> tuple:
    """Independent natural order for this module's ids: "s<n>" and "s<n>@<k>"."""
    if "@" in series_id:
        base, k = window_index(series_id)
        return (*by_number(base), k)
    return (int(series_id[1:]),)


@pytest.fixture(scope="module")
def sample() -> Observations:
    return load_sample("Synthetic multichannel")


@pytest.fixture(scope="module")
def many(sample: Observations) -> tuple[Observations, FittedModel]:
    """16 series renamed "s0" … "s15", Lévy only, one epoch."""
    frame = sample.subset(sample.series_ids[:16]).frame.copy()
    frame["series_id"] = "s" + frame["series_id"].str[1:].astype(int).astype(str)
    obs = from_frame(frame)
    fitted = fit(obs, train=TrainConfig(epochs=1), train_twin=False)
    assert fitted.split.mode == "series" and fitted.task.kind == "forecast"
    return obs, fitted


@pytest.fixture(scope="module")
def few(sample: Observations) -> tuple[Observations, FittedModel]:
    """3 series (< MIN_SERIES_FOR_SERIES_SPLIT), interpolated: window mode."""
    obs = sample.subset(sample.series_ids[-3:])
    assert obs.n_series < MIN_SERIES_FOR_SERIES_SPLIT
    fitted = fit(obs, task=TaskConfig("interpolate"), train=TrainConfig(epochs=1), train_twin=False)
    assert fitted.split.mode == "window" and fitted.split.window_hours > 0
    return obs, fitted


@pytest.fixture(scope="module")
def origin(sample: Observations) -> tuple[Observations, FittedModel]:
    """3 series (< MIN_SERIES_FOR_SERIES_SPLIT) forecast: rolling origins."""
    obs = sample.subset(sample.series_ids[-3:])
    fitted = fit(obs, task=TaskConfig("forecast"), train=TrainConfig(epochs=1), train_twin=False)
    assert fitted.split.mode == "origin" and fitted.task.cutoff == 0.0
    return obs, fitted


def split_roles(fitted) -> dict[str, str]:
    return {sid: role for role in ("train", "calibration", "test") for sid in getattr(fitted.split, role)}


def model_frame(obs: Observations, fitted) -> pd.DataFrame:
    """The observations in model space, by hand (to_windows in window mode; the rolling
    origins' episodes in origin mode)."""
    if fitted.split.mode == "window":
        return to_windows(obs.frame, fitted.split.window_hours)
    if fitted.split.mode == "origin":
        return fitted.split.clock(obs.frame).frame_to_model(obs.frame)
    return obs.frame


def usable_by_hand(frame: pd.DataFrame, cutoff: float | None, holdout: float = 0.2) -> list[str]:
    """Forecast: series with an observation at or before the cut-off and one after it (no
    horizon). Interpolation (no cut-off): series where the hold-out keeps at least one
    observation out and one in (round(holdout · n) ≥ 1 and n ≥ 2)."""
    g = frame.groupby("series_id")["time"]
    if cutoff is None:
        n = g.size()
        ok = (n >= 2) & ((holdout * n).round() >= 1)
    else:
        ok = (g.min() <= cutoff) & (g.max() > cutoff)
    return sorted(str(s) for s in ok[ok].index)


# ----------------------------------------------------------------------------- natural_key


def test_natural_key_compares_numbers_as_numbers() -> None:
    ids = ["s10", "s2", "s1", "s2@10", "s2@9", "a"]
    assert sorted(ids, key=natural_key) == ["a", "s1", "s2", "s2@9", "s2@10", "s10"]
    assert sorted(["s10", "s2"]) == ["s10", "s2"], "text order differs: the key is what fixes it"
    assert natural_key(7) == natural_key("7")


# ----------------------------------------------------------------------------- prepare


@pytest.mark.parametrize("which", ["many", "few"])
def test_prepare_on_the_fitted_data_keeps_the_split_roles(which, request) -> None:
    obs, fitted = request.getfixturevalue(which)
    data = prepare(fitted, obs)
    assert isinstance(data, ModelData) and data.obs is obs
    assert data.same_data is True
    assert data.roles == split_roles(fitted)
    assert sorted(data.builder.series) == sorted(model_frame(obs, fitted)["series_id"].unique())
    for sid in fitted.split.test[:3] + fitted.split.train[:3]:
        assert data.role_of(sid) == fitted.split.role_of(sid)
    assert data.role_of("no such series") == "unseen"
    frame = model_frame(obs, fitted)
    for role in ("train", "calibration", "test"):
        expected = [s for s in usable_by_hand(frame, fitted.task.cutoff) if s in set(getattr(fitted.split, role))]
        assert data.series_in(role) == expected, role
        assert expected, f"no usable {role} series: the check above would be empty"
    with pytest.raises(ValueError, match="role must be one of"):
        data.series_in("stopping")


def test_prepare_on_other_data_treats_every_series_as_new(many) -> None:
    obs, fitted = many
    # a subset, and one series cut before the cut-off (it has context but nothing to predict)
    cutoff = fitted.task.cutoff
    keep = [s for s in obs.series_ids if s not in ("s3", "s5")]
    frame = obs.subset(keep).frame
    frame = frame[(frame["series_id"] != "s7") | (frame["time"] <= cutoff)]
    other = from_frame(frame)
    assert other.content_hash() != fitted.data_hash
    data = prepare(fitted, other)
    assert data.same_data is False and data.roles == {}
    expected = usable_by_hand(other.frame, cutoff)
    assert "s7" not in expected and "s3" not in expected and len(expected) == len(keep) - 1
    for role in ("test", "calibration", "train"):
        assert data.series_in(role) == expected, "new data: every usable series, whatever the role"
    assert set(data.points()["split"]) == {"unseen"}
    assert {data.role_of(s) for s in keep} == {"unseen"}


def test_points_on_new_data_emit_no_warning(many) -> None:
    obs, fitted = many
    data = prepare(fitted, obs.subset(obs.series_ids[:-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pts = data.points()
    assert set(pts["split"]) == {"unseen"}


def test_the_same_values_under_another_hash_are_other_data(many) -> None:
    """same_data is decided by the content hash: one changed value makes it new data."""
    obs, fitted = many
    frame = obs.frame.copy()
    frame.loc[0, "value"] += 1e-3
    data = prepare(fitted, from_frame(frame))
    assert data.same_data is False


def test_scoring_new_data_never_hashes_it(many, monkeypatch) -> None:
    """Whether data is the fitted data is decided when a view asks (hashing 1.5 M rows is
    ~4 % of ``levy rank``), never by preparing or scoring it."""
    obs, fitted = many
    other = from_frame(obs.subset(obs.series_ids[:-1]).frame)
    calls = []
    real = Observations.content_hash
    monkeypatch.setattr(Observations, "content_hash", lambda self: calls.append(1) or real(self))
    data = prepare(fitted, other)
    ranked, _ = rank(fitted, data)
    assert len(ranked) == other.n_series and calls == []
    assert data.same_data is False and calls == [1]
    assert data.roles == {} and calls == [1], "asked once, remembered"
    assert prepare(fitted, obs).same_data is True and len(calls) == 2


# ----------------------------------------------------------------------------- points


@pytest.mark.parametrize("which", ["many", pytest.param("origin", marks=pytest.mark.slow)])  # origin: a fit on rolling origins
def test_points_columns_roles_and_held_out_rows_are_the_episode_queries(which, request) -> None:
    obs, fitted = request.getfixturevalue(which)
    data = prepare(fitted, obs)
    pts = data.points()
    frame = model_frame(obs, fitted).reset_index(drop=True)
    assert list(pts.columns) == POINT_COLUMNS
    # original units, model series space, one row per observation
    pd.testing.assert_frame_equal(pts[["series_id", "channel", "time", "value"]], frame, check_dtype=False)
    cutoff = fitted.task.cutoff
    t = pts["time"].to_numpy()
    assert (pts["role"] == np.where(t <= cutoff, "context", "held-out")).all()
    roles = split_roles(fitted)
    assert (pts["split"] == pts["series_id"].map(roles).fillna("unseen")).all()
    assert (pts.loc[pts["series_id"].isin(fitted.split.test), "split"] == "test").all()
    # every held-out row is a query of its series' fixed episode, and nothing else is
    for sid in data.series_in("test")[:4] + data.series_in("train")[:2]:
        _, query_rows = data.builder.batch([sid])
        held = pts.index[(pts["series_id"] == sid) & (pts["role"] == "held-out")].to_numpy()
        np.testing.assert_array_equal(np.sort(query_rows[0]), held)
        assert (pts.loc[(pts["series_id"] == sid) & (pts["role"] == "context"), "time"] <= cutoff).all()


def test_points_with_a_horizon_leave_later_rows_unused(many) -> None:
    obs, fitted = many
    cutoff, horizon = fitted.task.cutoff, 3.0
    short = dataclasses.replace(fitted, task=TaskConfig("forecast", cutoff=cutoff, horizon=horizon))
    pts = prepare(short, obs).points()
    t = pts["time"].to_numpy()
    expected = np.where(t <= cutoff, "context", np.where(t <= cutoff + horizon, "held-out", "unused"))
    assert (pts["role"].to_numpy() == expected).all()
    assert set(pts["role"]) == {"context", "held-out", "unused"}


# ----------------------------------------------------------------------------- series_choices


@pytest.mark.parametrize("which", ["many", pytest.param("origin", marks=pytest.mark.slow)])  # origin: a fit on rolling origins
def test_series_choices_test_then_calibration_then_train_naturally_sorted(which, request) -> None:
    obs, fitted = request.getfixturevalue(which)
    data = prepare(fitted, obs)
    frame = model_frame(obs, fitted)
    with_context = set(frame.loc[frame["time"] <= fitted.task.cutoff, "series_id"])
    expected = [sid for role in ROLE_ORDER
                for sid in sorted((s for s in getattr(fitted.split, role) if s in with_context), key=by_number)]
    # then the series in no role: in origin mode each series' end episode (the future's context)
    roles = {s for role in ROLE_ORDER for s in getattr(fitted.split, role)}
    expected += sorted((s for s in with_context if s not in roles), key=natural_key)
    choices = data.series_choices()
    assert choices == expected
    # the natural order is really exercised: some neighbours are out of text order
    assert any(a > b for a, b in zip(choices, choices[1:], strict=False) if data.role_of(a) == data.role_of(b))


def test_series_choices_puts_s2_before_s10(many, few) -> None:
    obs, fitted = many
    choices = prepare(fitted, obs).series_choices()
    same_role = [(a, b) for a in choices for b in choices
                 if fitted.split.role_of(a) == fitted.split.role_of(b) and by_number(a) < by_number(b)]
    assert same_role and all(choices.index(a) < choices.index(b) for a, b in same_role)
    # window mode: "<id>@2" before "<id>@10" among one series' windows of one role
    obs, fitted = few
    choices = prepare(fitted, obs).series_choices()
    pairs = [(a, b) for a in choices for b in choices
             if fitted.split.role_of(a) == fitted.split.role_of(b) and window_index(a)[0] == window_index(b)[0]
             and window_index(a)[1] < window_index(b)[1] and a > b]  # text order would swap them
    assert pairs and all(choices.index(a) < choices.index(b) for a, b in pairs)
    # new data: no roles, natural order throughout
    obs, fitted = many
    new = prepare(fitted, obs.subset(obs.series_ids[:-1]))
    assert new.series_choices() == sorted(new.builder.series, key=by_number)


# ----------------------------------------------------------------------------- channels_of


def test_channels_of_orders_by_held_out_count(many) -> None:
    obs, fitted = many
    data = prepare(fitted, obs)
    cutoff = fitted.task.cutoff
    reordered = 0
    for sid in data.series_in("test") + data.series_in("calibration"):
        rows = obs.frame[obs.frame["series_id"] == sid]
        held = rows.loc[rows["time"] > cutoff, "channel"].value_counts()
        names = sorted(rows["channel"].unique())
        expected = sorted(names, key=lambda c: (-int(held.get(c, 0)), c))
        got = data.channels_of(sid, fitted.channels)
        assert got == expected, sid
        reordered += got != names
    assert reordered, "no series where the count order differs from the alphabetical one"


def test_channels_of_puts_a_channel_without_held_out_rows_last(many) -> None:
    obs, fitted = many
    cutoff = fitted.task.cutoff
    sid = fitted.split.test[0]
    frame = obs.frame
    # "smooth" (the most observed channel) only before the cut-off in this series
    drop = (frame["series_id"] == sid) & (frame["channel"] == "smooth") & (frame["time"] > cutoff)
    data = prepare(fitted, from_frame(frame[~drop]))
    got = data.channels_of(sid, fitted.channels)
    assert got[-1] == "smooth" and sorted(got) == sorted(fitted.channels)


# ----------------------------------------------------------------------------- as_model_data


def test_as_model_data_returns_model_data_as_is_and_refuses_other_types(many) -> None:
    obs, fitted = many
    data = prepare(fitted, obs)
    assert as_model_data(fitted, data) is data
    fresh = as_model_data(fitted, obs)
    assert isinstance(fresh, ModelData) and fresh.same_data and fresh.roles == data.roles
    for bad in (obs.frame, None, "data.csv"):
        with pytest.raises(DataError, match=f"expected Observations or ModelData, got {type(bad).__name__}"):
            as_model_data(fitted, bad)


# ----------------------------------------------------------------------------- SeriesClock


def test_clock_is_the_identity_in_series_mode(many) -> None:
    obs, fitted = many
    clock = fitted.split.clock(obs.frame)
    assert isinstance(clock, SeriesClock) and not clock.windowed and clock.window_hours is None
    queries = pd.DataFrame({"series_id": ["s2", "s10"], "channel": ["smooth", "noisy"], "time": [30.0, -1.0]})
    pd.testing.assert_frame_equal(clock.frame_to_model(obs.frame), obs.frame)
    pd.testing.assert_frame_equal(clock.queries_to_model(queries), queries)
    pd.testing.assert_frame_equal(clock.to_user(queries), queries)


def test_window_clock_cuts_the_frame_like_to_windows(few) -> None:
    obs, fitted = few
    clock = fitted.split.clock(obs.frame)
    assert clock.windowed and clock.window_hours == fitted.split.window_hours
    assert clock.starts == {s: float(obs.frame.loc[obs.frame["series_id"] == s, "time"].min())
                            for s in obs.series_ids}
    pd.testing.assert_frame_equal(clock.frame_to_model(obs.frame), to_windows(obs.frame, clock.window_hours))


def round_trip_tolerance(times: np.ndarray, clock: SeriesClock) -> float:
    """|user → model → user - user|: subtracting the start, k·w, the window offset, then adding
    them back is at most 6 float64 roundings (≤ ½ ulp each) of numbers no larger than
    max|t| + max start + w, plus the 1-ulp nudge ``to_user`` may apply at a window's first
    instant: 8 eps of that size."""
    size = np.abs(times).max() + max(abs(s) for s in clock.starts.values()) + clock.window_hours
    return 8 * EPS * size


def test_queries_round_trip_through_the_window_clock(few) -> None:
    obs, fitted = few
    clock = fitted.split.clock(obs.frame)
    w = clock.window_hours
    rng = np.random.default_rng(0)
    rows = []
    for sid, start in clock.starts.items():
        rows += [(sid, t) for t in start + rng.uniform(0, 20 * w, 30)]  # inside windows
        rows += [(sid, start + k * w) for k in range(21)]  # exactly at window boundaries
        rows += [(sid, start)]  # the series' first observation
    user = pd.DataFrame(rows, columns=["series_id", "time"])
    model = clock.queries_to_model(user)
    assert list(model.index) == list(user.index) and len(model) == len(user)
    base, k = zip(*(window_index(s) for s in model["series_id"]), strict=True)
    assert list(base) == list(user["series_id"])
    offset = user["time"].to_numpy() - user["series_id"].map(clock.starts).to_numpy()
    np.testing.assert_array_equal(np.array(k), np.floor(offset / w).astype(int))
    assert ((model["time"] >= 0) & (model["time"] <= w * (1 + 4 * EPS))).all(), "inside the window"
    back = clock.to_user(model)
    assert list(back["series_id"]) == list(user["series_id"])
    tol = round_trip_tolerance(user["time"].to_numpy(), clock)
    np.testing.assert_allclose(back["time"], user["time"], rtol=0, atol=tol)
    assert (user["time"] == model["time"]).sum() < len(user), "the times really were moved"


def test_a_window_start_maps_back_into_its_own_window(few) -> None:
    """Model time 0 of window k (its first instant) → user clock → model: window k again."""
    obs, fitted = few
    clock = fitted.split.clock(obs.frame)
    ids = [f"{sid}@{k}" for sid in clock.starts for k in range(25)]
    model = pd.DataFrame({"series_id": ids, "time": 0.0})
    user = clock.to_user(model)
    again = clock.queries_to_model(user)
    assert list(again["series_id"]) == ids
    np.testing.assert_allclose(again["time"], 0.0, rtol=0, atol=round_trip_tolerance(user["time"].to_numpy(), clock))


def test_a_query_at_an_observation_time_lands_in_that_observations_window(few) -> None:
    obs, fitted = few
    clock = fitted.split.clock(obs.frame)
    model = clock.queries_to_model(obs.frame[["series_id", "time"]])
    cut = to_windows(obs.frame, clock.window_hours)
    # to_windows sorts by window id: compare as (id, time) multisets
    key = ["series_id", "time"]
    pd.testing.assert_frame_equal(model[key].sort_values(key, kind="stable").reset_index(drop=True),
                                  cut[key].sort_values(key, kind="stable").reset_index(drop=True))


def test_times_before_a_series_first_observation_land_in_window_0(few) -> None:
    obs, fitted = few
    clock = fitted.split.clock(obs.frame)
    sid = obs.series_ids[1]
    start = clock.starts[sid]
    user = pd.DataFrame({"series_id": [sid, sid], "time": [start - 5.0, start - 1e-3]})
    model = clock.queries_to_model(user)
    assert list(model["series_id"]) == [f"{sid}@0"] * 2
    # one subtraction each: ½ ulp of |t - start| ≤ 5
    np.testing.assert_allclose(model["time"], [-5.0, -1e-3], rtol=0, atol=4 * EPS * 5)
    back = clock.to_user(model)
    np.testing.assert_allclose(back["time"], user["time"], rtol=0,
                               atol=round_trip_tolerance(user["time"].to_numpy(), clock))


def test_queries_naming_unknown_series_raise_naming_them(few) -> None:
    obs, fitted = few
    clock = fitted.split.clock(obs.frame)
    queries = pd.DataFrame({"series_id": [obs.series_ids[0], "ghost", "nobody"], "time": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError, match=r"\['ghost', 'nobody'\]"):
        clock.queries_to_model(queries)
