"""``levy advise``: the ranked table (the library's numbers, in the user's clock), a plain
line per top suggestion, and every bad input as ``error: …`` with exit code 2 and no file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.cli.advise import ADVICE_COLUMNS, parse_at
from levy_core.cli.main import main
from levy_core.data import DataError, Observations
from levy_core.decisions.advise import advise


@pytest.fixture(scope="module")
def one_csv(new_obs: Observations, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Observations]:
    obs = new_obs.subset([new_obs.series_ids[0]])
    path = tmp_path_factory.mktemp("advise") / "one.csv"
    obs.frame.to_csv(path, index=False)
    return path, obs


def test_advise_writes_the_ranked_table_and_says_it(fitted, fitted_dir, one_csv, tmp_path: Path, capsys) -> None:
    data, obs = one_csv
    out = tmp_path / "advice.csv"
    code = main(["advise", str(fitted_dir), str(data), "--targets", "noisy,smooth", "--horizon", "6h",
                 "--at", "now,+2h", "--points", "4", "--draws", "4", "--out", str(out), "--top", "2"])
    assert code == 0
    table = pd.read_csv(out)
    assert list(table.columns) == ADVICE_COLUMNS
    assert len(table) == len(fitted.channels) * 2 * 2  # channels × times × targets
    assert set(table["target"]) == {"noisy", "smooth"} and set(table["ahead_hours"]) == {0.0, 2.0}
    assert table["rank"].is_monotonic_increasing
    lib = advise(fitted, obs, targets=["noisy", "smooth"], horizon=6.0, at=[0.0, 2.0], points=4, draws=4)
    expected = lib.to_frame()
    np.testing.assert_allclose(table["narrowing_pct"], expected["narrowing_pct"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(table["time"], expected["time"])  # numeric data: the data's own hours
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == lib.sentences(2, clock="hours")  # the data are in hours: said in hours
    assert lines[0].startswith("measuring ") and "next 6 hours band of" in lines[0]


@pytest.mark.parametrize("extra, words", [
    (["--targets", "Lactate"], "unknown channel 'Lactate' among the targets"),
    (["--targets", ","], "target set is empty"),
    (["--at=-2h"], "before the series' last observation"),
    (["--at", "now,+99h", "--horizon", "6h"], "past the 6 hours horizon"),
    (["--series", "nope"], "unknown series 'nope'"),
    (["--candidates", "K"], "unknown channel 'K' among the candidates"),
])
def test_bad_input_is_an_error_line(fitted_dir, one_csv, tmp_path: Path, capsys, extra, words) -> None:
    data, _ = one_csv
    out = tmp_path / "advice.csv"
    assert main(["advise", str(fitted_dir), str(data), "--out", str(out), "--points", "2", "--draws", "2",
                 *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err
    assert not out.exists()


def test_the_output_may_not_be_the_data(fitted_dir, one_csv, capsys) -> None:
    data, _ = one_csv
    before = data.read_bytes()
    assert main(["advise", str(fitted_dir), str(data), "--out", str(data)]) == 2
    assert "error: " in capsys.readouterr().err
    assert data.read_bytes() == before


def test_parse_at() -> None:
    assert parse_at("now,+1h,+4h", "hours") == [0.0, 1.0, 4.0]
    assert parse_at("0, 30min", "hours") == [0.0, 0.5]
    assert parse_at("2", "days") == [48.0]
    assert parse_at("-1h", "hours") == [-1.0]
    with pytest.raises(DataError):
        parse_at("soon", "hours")
    with pytest.raises(ValueError, match="names no time"):
        parse_at(" , ", "hours")
