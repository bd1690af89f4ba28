"""Issue 52, memory: one budget (``levy_core.runtime.budget``) checked by every entry point
before it allocates, the same in the CLI and the API; the peak measured in a subprocess
(the process's own high-water mark, ``VmHWM``) stays under 1 GB, refused or not.

``ru_maxrss`` would not do: Linux keeps the larger of the pre-``exec`` image's peak and the
new one's, and the pre-``exec`` image is a fork of the test worker (1.08 GB in a full run of
the suite, whatever the child then does). ``VmHWM`` is the peak of the child's own memory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_helpers import assert_clean_error, run

from levy_core import LevyForecaster
from levy_core.runtime.budget import MAX_QUERIES_PER_PASS, BudgetError, check_budget

GB = 2**30

PEAK = textwrap.dedent("""
    import json, sys
    from levy_core import LevyForecaster
    from levy_core.cli.main import main
    import pandas as pd
    kind, model, data, out = sys.argv[1:5]
    result = {"refused": None}
    try:
        if kind == "cli":
            result["code"] = main(sys.argv[5:])
        else:
            f = LevyForecaster.load(model)
            df = pd.read_csv(data)
            points = int(kind)
            pred = f.predict(h="6h", points=points, df=df[df["series_id"] == df["series_id"].iloc[0]])
            result["rows"] = len(pred)
    except ValueError as exc:
        result["refused"] = str(exc)
    with open("/proc/self/status") as status:  # this image's own peak, not the forked parent's
        result["peak"] = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
    print(json.dumps(result))
""")


def _peak(tmp_path: Path, *args: object) -> dict:
    done = subprocess.run([sys.executable, "-c", PEAK, *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


@pytest.mark.integration
@pytest.mark.parametrize(("points", "refused"), [(10**7, True), (80_000, False)])
def test_the_api_predict_peak_stays_under_1_gb_or_is_refused(tmp_path, fitted_dir, fit_csv, points, refused):
    got = _peak(tmp_path, points, fitted_dir, fit_csv, "-")
    assert got["peak"] < GB, f"peak {got['peak'] / GB:.2f} GB"
    if refused:
        assert got["refused"] and f"{points:,} points" in got["refused"] and f"{MAX_QUERIES_PER_PASS:,}" in got["refused"]
    else:
        assert got["refused"] is None and got["rows"] == points * 3


@pytest.mark.integration
def test_advise_with_the_largest_points_and_draws_is_refused_under_1_gb(tmp_path, fitted_dir, fit_csv):
    got = _peak(tmp_path, "cli", fitted_dir, fit_csv, "-", "advise", fitted_dir, fit_csv, "--series", "s00",
                "--horizon", "12h", "--points", "1000", "--draws", "256", "--out", tmp_path / "a.csv")
    assert got["peak"] < GB, f"peak {got['peak'] / GB:.2f} GB"
    assert got["code"] == 2 and "256 draws" in got["stderr"] and "memory budget" in got["stderr"]


ADVISE_REFUSED = {  # (option values, the factor the message names)
    "points × draws": (["--points", "1000", "--draws", "256"], "256 draws"),
    "1,200 --at times": (["--at", ",".join(f"+{i / 100:g}h" for i in range(1, 1201)), "--draws", "64"],
                         "candidate measurements"),
}


@pytest.mark.parametrize("case", ADVISE_REFUSED)
def test_levy_advise_over_the_budget_is_refused_by_name(tmp_path, capsys, fitted_dir, fit_csv, case):
    options, named = ADVISE_REFUSED[case]
    code, out, err = run(capsys, "advise", fitted_dir, fit_csv, "--series", "s00", "--horizon", "12h",
                         *options, "--out", tmp_path / "a.csv")
    assert_clean_error(code, out, err)
    assert named in err and "memory budget" in err and f"{MAX_QUERIES_PER_PASS:,}" in err
    assert not (tmp_path / "a.csv").exists()


def test_the_api_refuses_what_the_cli_refuses(fitted_dir, fit_obs):
    f = LevyForecaster.load(fitted_dir)
    with pytest.raises(BudgetError, match=r"10,000,000 points × 3 channels .* memory budget"):
        f.predict(h="6h", points=10**7, df=fit_obs.frame)
    from levy_core.decisions.advise import advise
    with pytest.raises(BudgetError, match=r"256 draws"):
        advise(f.fitted, fit_obs, "s00", horizon=12.0, points=1000, draws=256)


def test_the_budget_names_each_factor_and_the_limit():
    assert check_budget("x", {"a": 10, "b": 20}, "less") == 200
    with pytest.raises(BudgetError, match=r"x: 1,000 a × 300 b = 300,000 model queries .* 250,000 .*; less"):
        check_budget("x", {"a": 1000, "b": 300}, "less")
