"""The models shipped for the bundled samples (sample_data/models/, ``make sample-models``).

Each one loads, was fitted on its sample's exact bytes (SHA-256 in the manifest and in its
``model.json``), is small enough to ship in git, and is what its recorded ``levy fit``
command produces. Tolerance of the refit: a fit is deterministic under its seed at a fixed
thread count (the commands run with one thread), so with the torch build the manifest
records the refit must be **bit-identical** (weights, calibration scale, predictions).
With another torch build, or on a CPU whose instruction set makes torch pick other float32
kernels (the manifest records the machine), they may round differently in the last bit;
training then amplifies that chaotically (weights 1e-4 apart after 40 epochs), so only the
calibration scale is compared, within 5 % (the spread of c between seeds on these samples
is larger than that: a refit on another build is the same model in distribution, not in
bits).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from levy_core.cli.main import main as levy
from levy_core.data import SAMPLES, read_csv
from levy_core.pipeline.modelfile import file_sha256, load_model
from levy_core.pipeline.predict import predict_grid
from levy_core.runtime.threads import using_threads
from levy_core.serving.modelzip import load_model_zip

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "sample_data"))
import make_models  # noqa: E402

MANIFEST = json.loads((make_models.MODELS / make_models.MANIFEST).read_text())
MAX_BYTES = 2_000_000  # per model zip: they ship in git (the one-series model's ACI state is most of its 1.4 MB)


def _weights(fitted) -> list[np.ndarray]:
    models = [fitted.levy] + ([fitted.twin] if fitted.twin is not None else [])
    return [t.numpy() for m in models for t in m.state_dict().values()]


def test_every_offered_sample_has_a_recorded_model() -> None:
    assert set(MANIFEST["models"]) == set(SAMPLES) == set(make_models.TASKS)
    assert MANIFEST["environment"]["OMP_NUM_THREADS"] == "1"
    assert set(MANIFEST["platform"]) == set(make_models.platform_record()), "the machine the models were made on"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_shipped_model_loads_matches_its_sample_and_is_small(name: str) -> None:
    entry = MANIFEST["models"][name]
    path = ROOT / entry["model"]
    fitted = load_model_zip(path.read_bytes())
    digest = file_sha256(SAMPLES[name])
    assert entry["sha256"] == digest == fitted.source_sha256, "fitted on these very bytes"
    assert fitted.data_hash == read_csv(SAMPLES[name]).content_hash(), "and read the way the dashboard reads them"
    assert fitted.twin is not None and fitted.mc_calibration is not None
    assert entry["stopped_by"]["levy"] != "time", "trained to convergence, not cut by the safety cap"
    assert path.stat().st_size < MAX_BYTES, f"{path} is {path.stat().st_size:,} bytes"
    assert entry["command"].startswith("levy fit ") and "--seed 0" in entry["command"]


def _refit(name: str, tmp_path: Path):
    argv = [a if a != "<model>" else str(tmp_path / "model") for a in MANIFEST["models"][name]["argv"]]
    with using_threads(1):
        assert levy(argv) == 0
    return load_model(tmp_path / "model")


def _check_same(name: str, tmp_path: Path) -> None:
    shipped = load_model_zip((ROOT / MANIFEST["models"][name]["model"]).read_bytes())
    refit = _refit(name, tmp_path)
    obs = read_csv(SAMPLES[name])
    here = {"torch": torch.__version__, **make_models.platform_record()}
    made = {"torch": MANIFEST["torch"], **MANIFEST.get("platform", {})}
    if here != made:
        c0, c1 = shipped.levy_calibration.scale_, refit.levy_calibration.scale_
        assert abs(c1 - c0) <= 0.05 * c0, (c0, c1)
        differs = ", ".join(f"{k} {here.get(k)} (made with {made.get(k)})" for k in here if here.get(k) != made.get(k))
        pytest.skip(f"{differs}: c compared only")
    for a, b in zip(_weights(shipped), _weights(refit), strict=True):
        np.testing.assert_array_equal(a, b)
    assert shipped.levy_calibration.scale_ == refit.levy_calibration.scale_
    p0 = predict_grid(shipped, obs, n_points=7)
    p1 = predict_grid(refit, obs, n_points=7)
    for col in ("mean", "sigma", "log_evidence", "disagreement"):
        np.testing.assert_array_equal(p0[col].to_numpy(), p1[col].to_numpy(), err_msg=col)


@pytest.mark.slow  # 25 s (synthetic), 2 min (one series: its classical offsets) and 2.5 min (PhysioNet) on 2 busy cores
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_shipped_model_is_what_its_recorded_command_makes(name: str, tmp_path: Path) -> None:
    _check_same(name, tmp_path)
