"""What the wheel installs: every package of the two folders, the dashboard under its own
name (``levy_dashboard``, not a generic ``dashboard`` in site-packages), the bundled samples
with their shipped models (``levy_core/sample_data``) but not the scripts that make them, and
Streamlit and plotly only with the ``dashboard`` extra. The wheel is built from a copy of the checkout and installed into a
throwaway folder, then used from a directory where the checkout is not importable."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from levy_core.data import SAMPLES

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]
DATA_PACKAGES = {"levy_core.sample_data": "sample_data", "levy_core.sample_data.models": "sample_data/models"}
"""Packages of data only (no ``__init__.py``): the repository's ``sample_data/``."""
SOURCES = ("pyproject.toml", "setup.py", "README.md", "levy_core", "dashboard", "sample_data")
"""What a build reads (copied, so that no build/ or egg-info is left in the checkout)."""


def test_pyproject_lists_every_package_under_its_import_name() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {"levy_core": "levy_core", "levy_dashboard": "dashboard"}
    on_disk = set()
    for name, folder in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            on_disk.add(".".join((name, *init.parent.relative_to(ROOT / folder).parts)))
    assert set(config["packages"]) == on_disk | set(DATA_PACKAGES)
    assert config["package-dir"] == {"levy_dashboard": "dashboard", "levy_core.sample_data": "sample_data"}
    assert not any(p == "dashboard" or p.startswith("dashboard.") for p in config["packages"])
    assert all((ROOT / folder).is_dir() and not (ROOT / folder / "__init__.py").exists()
               for folder in DATA_PACKAGES.values())


def test_the_library_needs_no_streamlit() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower() for r in project["dependencies"]}
    assert not names & {"streamlit", "plotly"}
    assert {re.split(r"[<>=]", r)[0] for r in project["optional-dependencies"]["dashboard"]} == {"streamlit", "plotly"}
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert '-c constraints.txt -e ".[dashboard,test,ray,docs]"' in makefile
    pins = (ROOT / "constraints.txt").read_text(encoding="utf-8").split()
    assert "torch==2.13.0" in pins and any(p.startswith("streamlit==") for p in pins)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("source")
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=junk)
        else:
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out)], check=True, capture_output=True, text=True, timeout=600)
    found, = out.glob("levy_core-*.whl")
    return found


@pytest.mark.slow
def test_the_wheel_holds_two_packages_the_samples_and_their_models(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist_info, = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        metadata = zf.read(f"{dist_info}/METADATA").decode()
    assert {n.split("/")[0] for n in names} == {"levy_core", "levy_dashboard", dist_info}
    assert "levy_dashboard/app.py" in names and not any(n.startswith("dashboard/") for n in names)
    manifest = json.loads((ROOT / "sample_data" / "models" / "manifest.json").read_text())
    shipped = [entry["model"] for entry in manifest["models"].values()]
    assert set(manifest["models"]) == set(SAMPLES) and shipped
    wanted = {*(f"sample_data/{p.name}" for p in SAMPLES.values()), *shipped, "sample_data/models/manifest.json",
              "sample_data/README.md"}  # the README: where the data come from, and their licence
    assert {f"levy_core/{w}" for w in wanted} <= names
    # the scripts that make the samples and models are the developers' (`make sample-models`
    # runs them from the checkout; setup.py leaves every module of a data package out)
    scripts = sorted(p.name for p in (ROOT / "sample_data").rglob("*.py"))
    assert {"make_models.py", "make_samples.py"} <= set(scripts)
    assert not [n for n in names if n.startswith("levy_core/sample_data/") and not n.endswith(("/", ".csv", ".csv.gz",
                                                                                                ".zip", ".json", ".md"))]
    assert not [n for n in names if n.rsplit("/", 1)[-1] in scripts], "a sample-making script in the wheel"
    requires = [line.removeprefix("Requires-Dist: ") for line in metadata.splitlines()
                if line.startswith("Requires-Dist: ")]
    assert requires and "Provides-Extra: dashboard" in metadata.splitlines()
    for line in requires:
        if re.match(r"(streamlit|plotly)\b", line, re.IGNORECASE):
            assert re.search(r"""extra\s*==\s*["']dashboard["']""", line), line
    assert {r.split(">")[0] for r in requires if "extra" not in r} >= {"torch", "numpy", "pandas"}
    assert {r.split(">")[0] for r in requires if re.search(r"""extra == ["']dashboard""", r)} == \
        {"streamlit", "plotly"}


# run from a folder of its own, with the installed wheel, never the checkout, on sys.path
INSTALLED = """
import hashlib, sys
from pathlib import Path
site = Path(sys.argv[1]).resolve()
import levy_core, levy_dashboard
from levy_core.cli.server import dashboard_app, streamlit_command
from levy_core.data import SAMPLE_DIR, SAMPLES, load_sample
from levy_dashboard.fitting.shipped import MODELS_DIR, load_shipped, manifest
from levy_dashboard.data.sources import DEFAULT_SAMPLE
for path in (levy_core.__file__, levy_dashboard.__file__, SAMPLE_DIR, MODELS_DIR, dashboard_app()):
    assert Path(path).resolve().is_relative_to(site), path
assert SAMPLE_DIR == site / "levy_core" / "sample_data", SAMPLE_DIR
for name in SAMPLES:
    obs = load_sample(name)
    print("sample", name, len(obs.series_ids))
digest = hashlib.sha256(SAMPLES[DEFAULT_SAMPLE].read_bytes()).hexdigest()
assert manifest()["models"][DEFAULT_SAMPLE]["sha256"] == digest
shipped = load_shipped(digest)
assert shipped is not None and shipped.path.resolve().is_relative_to(site), shipped
assert "--client.showErrorDetails" in streamlit_command(8501)
print("shipped", shipped.sample, shipped.path.name, shipped.fitted.source_sha256 == digest)
"""

# the app itself, from the installed wheel: its first page opens the default sample on its
# shipped model (no fit) and draws the band
FIRST_PAGE = """
import sys
from pathlib import Path
from streamlit.testing.v1 import AppTest
app = Path(sys.argv[1]).resolve() / "levy_dashboard" / "app.py"
at = AppTest.from_file(str(app), default_timeout=120).run()
assert not at.exception and not at.error, (at.exception, at.error)
import levy_dashboard
assert Path(levy_dashboard.__file__).resolve().parent == app.parent, levy_dashboard.__file__
print("first page", at.session_state["_fit_key"].startswith("shipped-"), len(at.get("plotly_chart")) > 0)
"""


@pytest.mark.slow
def test_the_installed_wheel_finds_its_samples_and_shipped_models(wheel: Path, tmp_path: Path) -> None:
    site, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "-q", "--target",
                    str(site), str(wheel)], check=True, capture_output=True, text=True, timeout=600)
    env = {**os.environ, "PYTHONPATH": str(site)}  # ahead of the checkout's editable finder
    proc = subprocess.run([sys.executable, "-c", INSTALLED, str(site)], cwd=elsewhere, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [line.split()[0] for line in proc.stdout.splitlines()] == ["sample"] * len(SAMPLES) + ["shipped"]
    assert proc.stdout.splitlines()[-1] == "shipped Synthetic multichannel synthetic_multichannel.zip True"
    page = subprocess.run([sys.executable, "-c", FIRST_PAGE, str(site)], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=600)
    assert page.returncode == 0, page.stderr[-3000:]
    assert page.stdout.splitlines()[-1] == "first page True True", page.stdout[-2000:]
    help_ = subprocess.run([sys.executable, "-m", "levy_core", "dashboard", "--help"], cwd=elsewhere, env=env,
                           capture_output=True, text=True, timeout=600)
    assert help_.returncode == 0 and help_.stdout.startswith("usage: levy dashboard"), help_.stderr
