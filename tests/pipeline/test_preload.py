"""levy_core/pipeline/preload.py: after ``preload_fit`` a fit imports nothing heavy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from levy_core.pipeline.preload import FIT_MODULES, preload_fit

ROOT = Path(__file__).resolve().parents[2]

# Both tasks with their twins and the zip round trip a fit worker makes
# (dashboard/fitting/fit_pool.py: _fit_job, _checked_zip), after preload_fit, in a fresh process.
_FIT_AFTER_PRELOAD = """
import sys
from levy_core.pipeline.preload import preload_fit
preload_fit()
from levy_core.pipeline.recipe import fit
from levy_core.data import SAMPLES, read_csv
from levy_core.episodes.tasks import TaskConfig
from levy_core.serving.modelzip import load_model_zip, model_zip_bytes
from levy_core.training.train import TrainConfig
samples = {"Synthetic multichannel": "interpolate", "Single sensor series": "forecast"}
observations = {name: read_csv(SAMPLES[name]) for name in samples}
before = set(sys.modules)
for name, kind in samples.items():
    fitted = fit(observations[name], task=TaskConfig(kind=kind), train=TrainConfig(epochs=1),
                          size="small", train_twin=True, mc_passes=2)
    load_model_zip(model_zip_bytes(fitted))
heavy = ("torch", "scipy", "sklearn", "pandas", "pyarrow", "numpy", "levy_core")
print(sorted(m for m in set(sys.modules) - before if m.split(".")[0] in heavy))
"""


@pytest.mark.integration
def test_a_fit_after_the_preload_imports_no_heavy_module() -> None:
    run = subprocess.run([sys.executable, "-c", _FIT_AFTER_PRELOAD], capture_output=True, text=True, cwd=ROOT,
                         timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    late = run.stdout.strip().splitlines()[-1]
    assert late == "[]", f"imported during the fit, not by preload_fit (add them to FIT_MODULES): {late}"


def test_preload_imports_every_listed_module_and_is_idempotent() -> None:
    preload_fit()
    preload_fit()
    assert all(name in sys.modules for name in FIT_MODULES)
