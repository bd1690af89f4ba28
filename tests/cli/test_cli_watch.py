"""``levy watch MODEL DATA --alpha 0.01 --out FLAGS.csv`` (levy_core.cli.watch), in-process on
the shared tiny model: the rows are the library's, the last line is the flag rate against α,
bad input is ``error: …`` with exit 2, and nothing is written on an error."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.cli.main import main
from levy_core.data import read_csv
from levy_core.decisions.watch import WATCH_COLUMNS, calibrate_watch, watch


@pytest.fixture(scope="module")
def new_csv(new_obs, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("watch") / "new.csv"
    new_obs.frame.to_csv(path, index=False)
    return path


def test_flags_are_the_librarys_and_the_rate_is_printed(capsys, fitted_dir, fitted, fit_obs, fit_csv, new_csv,
                                                         tmp_path) -> None:
    out = tmp_path / "flags.csv"
    code = main(["watch", str(fitted_dir), str(new_csv), "--alpha", "0.2", "--calibration", str(fit_csv),
                 "--out", str(out), "--chunk-series", "3"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    table = pd.read_csv(out)
    assert list(table.columns) == WATCH_COLUMNS
    expected = watch(fitted, read_csv(new_csv), alpha=0.2, calibration=calibrate_watch(fitted, fit_obs)).frame
    assert len(table) == len(expected)
    assert table["flagged"].tolist() == expected["flagged"].tolist()
    assert np.allclose(table["p_value"], expected["p_value"], rtol=1e-3)
    last = captured.out.strip().splitlines()[-1]
    rate = expected["flagged"].mean()
    assert re.search(rf"flagged {int(expected['flagged'].sum()):,} of {len(expected):,} observations: "
                     rf"rate {rate:.4f} ± [0-9.]+ \(2 s\.e\. between \d+ series, calibration included\) against the nominal "
                     rf"α = 0\.2", last)
    assert "calibration series" in captured.err  # the fit's calibration split was replayed
    assert "series" in captured.err  # the tqdm bar of series


def test_only_flagged_and_the_fits_own_scores_say_so(capsys, fitted_dir, new_csv, tmp_path) -> None:
    out = tmp_path / "flags.parquet"
    assert main(["watch", str(fitted_dir), str(new_csv), "--out", str(out), "--only-flagged", "--quiet"]) == 0
    err = capsys.readouterr().err
    table = pd.read_parquet(out)
    assert table["flagged"].all() and (table["p_value"] <= 0.01).all()
    assert "fit's own calibration scores" in err and "--calibration" in err


@pytest.mark.parametrize("alpha", ["0", "1", "1.5", "-0.1", "nan", "often"])
def test_alpha_outside_the_unit_interval(capsys, fitted_dir, new_csv, tmp_path, alpha) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["watch", str(fitted_dir), str(new_csv), "--alpha", alpha, "--out", str(tmp_path / "f.csv")])
    assert exc.value.code == 2 and "alpha" in capsys.readouterr().err
    assert not (tmp_path / "f.csv").exists()


def test_bad_input_is_an_error_and_nothing_is_written(capsys, fitted_dir, new_obs, new_csv, tmp_path) -> None:
    out = tmp_path / "flags.csv"
    other = new_obs.frame.assign(channel=new_obs.frame["channel"].replace({"noisy": "lactate"}))
    bad = tmp_path / "lactate.csv"
    other.to_csv(bad, index=False)
    cases = [
        ([str(fitted_dir), str(bad)], "'lactate'"),
        ([str(fitted_dir), str(tmp_path / "missing.csv")], "no such file"),
        ([str(bad), str(new_csv)], "not a model directory"),
        ([str(fitted_dir), str(new_csv), "--calibration", str(bad)], "'lactate'"),
    ]
    for argv, message in cases:
        assert main(["watch", *argv, "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err, err
        assert not out.exists() and not list(tmp_path.glob(".flags.csv.*"))
    assert main(["watch", str(fitted_dir), str(new_csv), "--out", str(new_csv)]) == 2
    assert "--out" in capsys.readouterr().err
