"""Train the models shipped for the bundled samples (``make sample-models``).

Usage, from the repository root::

    python sample_data/make_models.py [--only NAME ...] [--out sample_data/models]

For every sample the dashboard offers (``levy_core.data.SAMPLES``) this runs one recorded
``levy fit`` command — the dashboard's default settings for that data, seed 0, on one CPU
thread — and ships the model directory it writes as the project's model zip,
``sample_data/models/<file stem>.zip`` (deflated, fixed time stamps; what the dashboard's
"Download the fitted model" gives and ``levy_core.serving.modelzip.load_model_zip`` opens; a third
of the directory's size). The data file's SHA-256 is in its ``model.json``
(``source_sha256``, recorded by ``levy fit``).
``sample_data/models/manifest.json`` records, per sample, the file, its SHA-256, the
exact command and environment, and the torch version. ``make dashboard`` opens these
models with no fit (``dashboard/fitting/shipped.py``); ``tests/project/test_sample_models.py`` checks that
each one is what its recorded command produces.

One thread (``--threads 1``): a fit is bit-for-bit reproducible only with the same
number of intra-op threads (reductions are split differently), and the dashboard's fit
workers also run with one (``dashboard/fitting/fit_pool.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from levy_core.data import SAMPLES  # noqa: E402
from levy_core.pipeline.modelfile import file_sha256  # noqa: E402
from levy_core.serving.modelzip import model_zip_bytes  # noqa: E402

MODELS = HERE / "models"
MANIFEST = "manifest.json"
# The environment every shipped fit runs in: one intra-op thread (see the module docstring).
ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# The dashboard's default settings (dashboard/fitting/fits.py, FitSettings): seed 0, the small model,
# at most 40 epochs with early stopping, 20 MC-Dropout passes for the twin's calibration. No
# time cap: a shipped model is trained to the end (early stopping or the 40 epochs) however
# busy the machine (the dashboard's cap of 600 s per model changes nothing when not reached).
COMMON = ["--seed", "0", "--epochs", "40", "--size", "small", "--threads", "1", "--quiet"]
# the dashboard's default task: interpolation on many series, rolling-origin forecasts on few
TASKS = {"Synthetic multichannel": ["--task", "interpolate"],
         "Single sensor series": ["--task", "forecast"],
         "PhysioNet 2012 ICU (300 patients)": ["--task", "interpolate"]}


def platform_record() -> dict:
    """The machine's float32 kernels' identity: torch picks its CPU kernels by instruction
    set (``AVX2``, ``AVX512``, …), and another set rounds differently in the last bit."""
    import torch

    cpu = None
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), None)
    except OSError:
        pass
    if cpu is None:  # not Linux; on Linux platform.processor() would start `uname -p`
        cpu = platform.processor()
    return {"machine": platform.machine(), "cpu": cpu, "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def model_zip(sample_file: Path, out: Path = MODELS) -> Path:
    """Where the model of ``sample_file`` lives: ``out/<stem without .csv/.csv.gz>.zip``."""
    return out / (sample_file.name.split(".")[0] + ".zip")


def command(name: str, out_dir: str) -> list[str]:
    """The ``levy fit`` argument list of sample ``name`` (after ``python -m levy_core``)."""
    return ["fit", str(SAMPLES[name].relative_to(ROOT)), "--out", out_dir, *TASKS[name], *COMMON]


def build(name: str, out: Path) -> dict:
    """Fit sample ``name`` with its recorded command; replace its model zip; return its manifest entry."""
    target = model_zip(SAMPLES[name], out)
    with tempfile.TemporaryDirectory() as tmp:
        argv = command(name, str(Path(tmp) / "model"))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "levy_core", *argv], cwd=ROOT, env={**os.environ, **ENV}, check=True)
        seconds = time.perf_counter() - t0
        target.write_bytes(model_zip_bytes(Path(tmp) / "model"))
        meta = json.loads((Path(tmp) / "model" / "model.json").read_text())
    return {"file": str(SAMPLES[name].relative_to(ROOT)), "sha256": file_sha256(SAMPLES[name]),
            "model": str(target.relative_to(ROOT)),
            "command": " ".join(["levy", *command(name, "DIR")]) + f" (DIR zipped to {target.relative_to(ROOT)})",
            "bytes": target.stat().st_size,
            "argv": command(name, "<model>"), "seconds": round(seconds, 1),
            "epochs_run": {m: (meta["training"].get(m) or {}).get("epochs_run") for m in ("levy", "softmax")},
            "stopped_by": {m: (meta["training"].get(m) or {}).get("stopped_by") for m in ("levy", "softmax")},
            "calibration_scale": meta["levy_calibration"]["scaled_gaussian"]["scale"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="sample names (default: every sample)")
    parser.add_argument("--out", default=str(MODELS), help="where the model directories go")
    args = parser.parse_args(argv)
    if set(TASKS) != set(SAMPLES):
        parser.error(f"TASKS must name every bundled sample {sorted(SAMPLES)}; update make_models.py")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    import torch  # only for the record

    manifest.update({"made_by": "make sample-models (python sample_data/make_models.py)",
                     "environment": ENV, "torch": torch.__version__, "platform": platform_record(),
                     "python": sys.version.split()[0]})
    models = manifest.setdefault("models", {})
    for name in args.only or list(TASKS):
        if name not in TASKS:
            parser.error(f"unknown sample {name!r}; choose from {list(TASKS)}")
        print(f"fitting {name} …", file=sys.stderr)
        models[name] = build(name, out)
        print(f"  {models[name]['command']}: {models[name]['seconds']} s", file=sys.stderr)
        manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")  # after each model
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
