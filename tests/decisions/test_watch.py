"""Watch: each observation scored against the band issued before it (levy_core.decisions.watch)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from levy_core.data import DataError, from_frame
from levy_core.decisions.watch import (
    WATCH_COLUMNS,
    WatchCalibration,
    WatchTally,
    calibrate_watch,
    iter_watch,
    watch,
)
from levy_core.decisions.watch_calibration import between_series_se


@pytest.fixture(scope="module")
def held_out(synthetic_obs):
    """Series the shared model never saw, apart from ``new_obs``: the watch's calibration."""
    return synthetic_obs.subset(synthetic_obs.series_ids[28:])


@pytest.fixture(scope="module")
def calibration(fitted, held_out):
    return calibrate_watch(fitted, held_out)


@pytest.fixture(scope="module")
def watched(fitted, new_obs, calibration):
    return watch(fitted, new_obs, alpha=0.1, calibration=calibration)


def test_rows_columns_and_the_band_agree_with_the_flag(watched, new_obs) -> None:
    frame = watched.to_frame()
    assert list(frame.columns) == WATCH_COLUMNS
    first_times = new_obs.frame.groupby("series_id")["time"].transform("min")
    assert len(frame) == int((new_obs.frame["time"] > first_times).sum())  # all but each series' first time
    assert (frame["lead"] > 0).all() and (frame["n_context"] >= 1).all()
    outside = (frame["value"] < frame["lower"]) | (frame["value"] > frame["upper"])
    assert (frame["flagged"] == outside).all()  # p <= alpha exactly outside the (1 - alpha) band
    assert frame["p_value"].between(0, 1).all() and frame[["mean", "lower", "upper", "score"]].notna().all().all()


def test_p_values_are_the_conformal_count(fitted, watched, calibration) -> None:
    frame = watched.frame
    for ch, g in frame.groupby("channel"):
        cal = calibration.scores_for(ch)
        by_hand = [(1 + int(np.sum(cal >= s))) / (cal.size + 1) for s in g["score"]]
        assert g["p_value"].tolist() == pytest.approx(by_hand, rel=1e-12)


def test_no_lookahead_a_changed_future_never_moves_an_earlier_row(fitted, new_obs, calibration) -> None:
    before = watch(fitted, new_obs, alpha=0.05, calibration=calibration).frame
    frame = new_obs.frame.copy()
    sid = new_obs.series_ids[0]
    times = np.sort(frame.loc[frame["series_id"] == sid, "time"].unique())
    pivot = times[len(times) // 2]
    later = (frame["series_id"] == sid) & (frame["time"] >= pivot)
    frame.loc[later, "value"] += 5.0 * frame["value"].std()
    after = watch(fitted, from_frame(frame), alpha=0.05, calibration=calibration).frame
    earlier = (before["series_id"] != sid) | (before["time"] < pivot)
    cols = ["mean", "lower", "upper", "score", "p_value", "flagged"]
    pd.testing.assert_frame_equal(before.loc[earlier, cols], after.loc[earlier, cols])
    at_pivot = (before["series_id"] == sid) & (before["time"] == pivot)
    assert (before.loc[at_pivot, "mean"] == after.loc[at_pivot, "mean"]).all()  # its band: from before it
    assert not np.allclose(before.loc[~earlier, "score"], after.loc[~earlier, "score"])  # the change is seen


def test_p_values_are_uniform_on_series_like_the_calibration(watched, calibration) -> None:
    # Held-out series exchangeable with the calibration ones: P(p <= a) <= a, and close to it.
    # Flags within a series are correlated, so the tolerance is the between-series s.e. of the
    # rate (WatchTally.standard_error), 3 of them, plus the conformal slack 1 / (n_cal + 1).
    frame = watched.frame
    n_cal = min(calibration.scores_for(c).size for c in frame["channel"].unique())
    for a in (0.1, 0.2, 0.5):
        tally = WatchTally(a)
        tally.add(frame.assign(flagged=frame["p_value"] <= a))
        se = tally.standard_error()
        assert 0 < se < 0.1
        assert abs(tally.flag_rate - a) <= 3 * se + 1 / (n_cal + 1), (a, tally.flag_rate, se)


def test_an_injected_spike_is_flagged(fitted, new_obs, calibration, watched) -> None:
    frame = new_obs.frame.copy()
    rows = watched.frame
    quiet = rows[(rows["channel"] == "smooth") & ~rows["flagged"]].iloc[len(rows) // 10]
    hit = ((frame["series_id"] == quiet["series_id"]) & (frame["channel"] == "smooth")
           & (frame["time"] == quiet["time"]))
    assert hit.sum() == 1
    frame.loc[hit, "value"] += 4 * (quiet["upper"] - quiet["lower"])
    spiked = watch(fitted, from_frame(frame), alpha=0.1, calibration=calibration).frame
    row = spiked[(spiked["series_id"] == quiet["series_id"]) & (spiked["channel"] == "smooth")
                 & (spiked["time"] == quiet["time"])].iloc[0]
    assert row["flagged"] and row["p_value"] == pytest.approx(1 / (calibration.scores_for("smooth").size + 1))
    assert row["mean"] == quiet["mean"]


def test_the_fits_own_scores_by_default(fitted, new_obs) -> None:
    result = watch(fitted, new_obs, alpha=0.05)
    assert "fit's calibration" in result.calibration
    assert result.frame["p_value"].between(0, 1).all()


def test_calibrating_on_the_fitted_data_replays_its_calibration_series_only(fitted, fit_obs) -> None:
    cal = calibrate_watch(fitted, fit_obs)
    assert "calibration series" in cal.source
    direct = watch(fitted, fit_obs.subset(fitted.split.calibration), alpha=0.5)
    assert cal.pooled.size == len(direct.frame)
    assert np.array_equal(cal.pooled, np.sort(direct.frame["score"].to_numpy()))
    again = WatchCalibration.from_dict(cal.to_dict())
    assert np.array_equal(again.pooled, cal.pooled) and again.source == cal.source


def test_streaming_by_chunks_gives_the_same_rows_and_tally(fitted, new_obs, calibration, watched) -> None:
    ids = new_obs.series_ids
    tally = WatchTally(0.1, calibration_se=calibration.standard_error(0.1))
    parts = list(iter_watch(fitted, [new_obs.subset(ids[:3]), new_obs.subset(ids[3:])], alpha=0.1,
                            calibration=calibration, tally=tally))
    # batches padded to another width sum in another order: float32 rounding only
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), watched.frame, check_exact=False, rtol=1e-4)
    assert tally.n_flagged == int(watched.frame["flagged"].sum()) and tally.n_series == len(ids)
    assert tally.standard_error() == pytest.approx(watched.tally.standard_error())


def test_deterministic(fitted, new_obs, calibration, watched) -> None:
    pd.testing.assert_frame_equal(watch(fitted, new_obs, alpha=0.1, calibration=calibration).frame, watched.frame)


def test_start_and_end_only_score_inside(fitted, new_obs, calibration, watched) -> None:
    part = watch(fitted, new_obs, alpha=0.1, calibration=calibration, start=10.0, end=30.0).frame
    assert part["time"].between(10.0, 30.0).all()
    same = watched.frame[watched.frame["time"].between(10.0, 30.0)].reset_index(drop=True)
    # earlier observations are still the context (other batches: float32 rounding only)
    pd.testing.assert_frame_equal(part, same, check_exact=False, rtol=1e-4)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, math.nan, "often"])
def test_alpha_outside_the_unit_interval_is_named(fitted, new_obs, alpha) -> None:
    with pytest.raises(ValueError, match="alpha"):
        watch(fitted, new_obs, alpha=alpha)


def test_bad_input_is_named(fitted, new_obs) -> None:
    frame = new_obs.frame.copy()
    with pytest.raises(DataError, match="'lactate'"):
        watch(fitted, from_frame(frame.assign(channel=frame["channel"].where(frame.index > 3, "lactate"))))
    shuffled = frame.sample(frac=1.0, random_state=0)
    with pytest.raises(DataError, match="not sorted.*sort_values"):
        watch(fitted, shuffled)
    with pytest.raises(DataError, match="columns"):
        watch(fitted, frame.drop(columns="value"))
    with pytest.raises(ValueError, match="start"):
        watch(fitted, new_obs, start=5.0, end=1.0)
    with pytest.raises(DataError, match="start 500 hours lies after every observation"):
        watch(fitted, new_obs, start=500.0)
    with pytest.raises(DataError, match="end -5 hours lies before every observation"):
        watch(fitted, new_obs, end=-5.0)
    with pytest.raises(ValueError, match="max_context"):
        watch(fitted, new_obs, max_context=0)
    first = frame[frame["time"] == frame.groupby("series_id")["time"].transform("min")]
    with pytest.raises(DataError, match="no calibration score"):
        calibrate_watch(fitted, from_frame(first))


def test_mc_dropouts_band_is_watched_the_same_way(fitted, new_obs, held_out) -> None:
    few = new_obs.subset(new_obs.series_ids[:2])
    cal = calibrate_watch(fitted, held_out.subset(held_out.series_ids[:4]), mc_passes=3)
    mc = watch(fitted, few, alpha=0.1, calibration=cal, mc_passes=3).frame
    levy = watch(fitted, few, alpha=0.1, calibration=cal).frame
    assert len(mc) == len(levy) and not np.allclose(mc["mean"], levy["mean"])
    outside = (mc["value"] < mc["lower"]) | (mc["value"] > mc["upper"])
    assert (mc["flagged"] == outside).all()
    pd.testing.assert_frame_equal(watch(fitted, few, alpha=0.1, calibration=cal, mc_passes=3).frame, mc)
    with pytest.raises(ValueError, match="mc_passes"):
        watch(fitted, few, mc_passes=1)


def test_the_rates_standard_error_has_the_calibrations_share(fitted, held_out, calibration, watched) -> None:
    own = watch(fitted, held_out, alpha=0.1, calibration=calibration).frame  # calibration rows against themselves
    counts = own.groupby("series_id")["flagged"].agg(["size", "sum"])
    by_hand = between_series_se(counts["size"].to_numpy(), counts["sum"].to_numpy())
    assert 0 < calibration.standard_error(0.1) == pytest.approx(by_hand, rel=1e-6)
    assert watched.tally.calibration_se == pytest.approx(by_hand, rel=1e-6)
    test_only = WatchTally(0.1)
    test_only.add(watched.frame)
    assert watched.tally.standard_error() == pytest.approx(math.hypot(test_only.standard_error(), by_hand))
    assert "calibration included" in watched.summary()
    assert WatchCalibration.of_fit(fitted).standard_error(0.1) == 0.0  # series unknown


def test_progress_counts_every_series_once_as_it_is_done(fitted, new_obs, calibration, monkeypatch) -> None:
    """A chunk of many series reports its progress batch by batch (``levy watch``'s bar moves
    series by series, not once a chunk of 2,000 series is done), each series counted once."""
    import levy_core.decisions.watch as watch_module
    monkeypatch.setattr(watch_module, "BATCH_EPISODES", 8)  # several batches in this small chunk
    reported: list[int] = []
    list(iter_watch(fitted, [new_obs], alpha=0.1, calibration=calibration, progress=reported.append))
    assert sum(reported) == new_obs.n_series
    assert len(reported) > 1 and all(n > 0 for n in reported)
