"""Shared fixtures: the synthetic sample, and ONE tiny fitted model reused by the
pipeline and CLI tests (fitting is the expensive part; keep it to a single fit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from levy_core.data import Observations, load_sample, read_csv

N_FIT_SERIES = 16  # series of the synthetic sample the shared model is fitted on
MC_PASSES = 5  # MC-Dropout passes recorded with the shared model (small: tests stay fast)


@pytest.fixture(scope="session")
def synthetic_obs() -> Observations:
    """The bundled "Synthetic multichannel" sample (40 series, 3 channels, 0-48 h)."""
    return load_sample("Synthetic multichannel")


@pytest.fixture(scope="session")
def fit_csv(synthetic_obs: Observations, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first ``N_FIT_SERIES`` series written as a long CSV (what a user would pass)."""
    path = tmp_path_factory.mktemp("data") / "fit.csv"
    synthetic_obs.subset(synthetic_obs.series_ids[:N_FIT_SERIES]).frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def fit_obs(fit_csv: Path) -> Observations:
    """The fitted data exactly as the CLI reads it back (so its content hash matches)."""
    return read_csv(fit_csv)


@pytest.fixture(scope="session")
def new_obs(synthetic_obs: Observations) -> Observations:
    """Series the shared model never saw (a "new file")."""
    return synthetic_obs.subset(synthetic_obs.series_ids[N_FIT_SERIES + 4 : N_FIT_SERIES + 12])


@pytest.fixture(scope="session")
def fitted(fit_obs: Observations):
    """One tiny forecast model (Lévy + twin, 3 epochs, size "small"), in memory.
    Shared by many tests: do not modify it."""
    from levy_core import pipeline
    from levy_core.train import TrainConfig

    return pipeline.fit(
        fit_obs, train=TrainConfig(epochs=3, seed=0), size="small", mc_passes=MC_PASSES
    )


@pytest.fixture(scope="session")
def fitted_dir(fitted, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``fitted`` saved to a directory. Read-only: copy it before corrupting anything."""
    return fitted.save(tmp_path_factory.mktemp("model") / "levy_model")
