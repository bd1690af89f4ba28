"""Tests of the bundled sample data sets (levy_core.data.load_sample) and of the
synthetic generator that wrote some of them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.data import SAMPLES, DataError, load_sample
from levy_core.data.synthetic import CHANNELS, make_synthetic, synthetic_truth_at

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "sample_data"


@pytest.mark.parametrize("name", list(SAMPLES))
def test_samples_load(name: str) -> None:
    obs = load_sample(name)  # how fast it loads is the dashboard benchmark's (a timing assert failed under load)
    assert obs.n_obs > 500
    assert np.isfinite(obs.frame[["time", "value"]].to_numpy()).all()
    assert (obs.gaps() > 0).all()
    if name.startswith("PhysioNet"):
        assert obs.n_series == 300 and obs.n_channels >= 30
        lo, hi = obs.time_span
        assert 0.0 <= lo and hi <= 48.0
        assert SAMPLES[name].stat().st_size < 2_000_000
    elif name.startswith("Synthetic"):
        assert obs.n_series == 40 and obs.channels == sorted(CHANNELS)
    else:
        assert obs.n_series == 1 and obs.report.layout == "wide"
        assert obs.report.time_origin is not None
        assert 300.0 < obs.time_span[1] < 340.0  # two weeks of hours
        assert obs.report.n_nan_dropped > 0


def test_unknown_sample() -> None:
    with pytest.raises(DataError, match="Unknown sample"):
        load_sample("nope")


def test_synthetic_truth_consistent() -> None:
    obs, truth, gaps = make_synthetic(n_series=12, seed=3)
    assert list(obs.columns) == ["series_id", "channel", "time", "value"]
    assert list(truth.columns) == ["series_id", "channel", "time", "mean", "noise_std"]
    assert list(gaps.columns) == ["series_id", "start", "end"]
    assert (
        (obs[["series_id", "channel", "time"]] == truth[["series_id", "channel", "time"]])
        .all()
        .all()
    )
    counts = obs.groupby("series_id").size()
    assert len(counts) == 12 and counts.between(120, 350).all()
    assert obs["time"].between(0.0, 48.0).all()
    assert not obs.duplicated(["series_id", "channel", "time"]).any()
    # gaps: several hours with no observation of any channel strictly inside
    assert ((gaps["end"] - gaps["start"]) >= 3.0 - 0.02).all()
    merged = obs.merge(gaps, on="series_id")
    assert not ((merged["time"] > merged["start"]) & (merged["time"] < merged["end"])).any()
    # noise is what the truth says it is
    z = (obs["value"] - truth["mean"]) / truth["noise_std"]
    assert abs(z.mean()) < 0.1 and 0.9 < z.std() < 1.1
    coupled = truth[truth.channel == "coupled"]
    assert np.corrcoef(coupled["time"], coupled["noise_std"])[0, 1] > 0.99  # heteroscedastic
    # any time can be recomputed; a series does not depend on n_series
    rows = truth[(truth.series_id == "s05") & (truth.channel == "noisy")]
    mean, std = synthetic_truth_at("s05", "noisy", rows["time"].to_numpy(), seed=3)
    np.testing.assert_allclose(mean, rows["mean"]) and np.testing.assert_allclose(std, 6.0)
    obs_small = make_synthetic(n_series=6, seed=3).observations
    pd.testing.assert_frame_equal(obs_small, obs[obs.series_id < "s06"].reset_index(drop=True))


def test_synthetic_sample_files_match_generator() -> None:
    obs, truth, gaps = make_synthetic(n_series=40, seed=0)
    on_disk = pd.read_csv(SAMPLE_DIR / "synthetic_multichannel.csv", dtype={"series_id": str})
    np.testing.assert_allclose(on_disk["value"], obs["value"], rtol=1e-7)
    assert (on_disk["series_id"] == obs["series_id"]).all()
    truth_disk = pd.read_csv(SAMPLE_DIR / "synthetic_truth.csv")
    np.testing.assert_allclose(truth_disk["mean"], truth["mean"], rtol=1e-7)
    gaps_disk = pd.read_csv(SAMPLE_DIR / "synthetic_gaps.csv")
    np.testing.assert_allclose(gaps_disk[["start", "end"]], gaps[["start", "end"]])
