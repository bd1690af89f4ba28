"""``levy rank --engine ray``: the same scores as in this process, on a local Ray.

Ray is an optional extra (``pip install 'levy-core[ray]'``): without it these tests are
skipped locally, unless ``LEVY_REQUIRE_RAY=1`` (CI, which installs the extra), then they
fail. One local Ray is started for the module (about 10 s).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core import chunked
from levy_core.cli import main
from levy_core.data import DataError, Observations
from levy_core.ray_engine import RankScorer, add_bucket, model_bytes, rank_with_ray, require_ray

RAY_WORKERS = 2


@pytest.fixture(scope="module")
def local_ray():
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("LEVY_REQUIRE_RAY") == "1":
            pytest.fail("LEVY_REQUIRE_RAY=1 but ray is not installed (pip install -e '.[test,ray]')")
        pytest.skip("ray is not installed (pip install 'levy-core[ray]')")
    import ray

    ray.init(address="local", num_cpus=RAY_WORKERS + 1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def series_parquet(synthetic_obs: Observations, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 40 synthetic series, shuffled (Ray needs no order) in 8 row groups."""
    path = tmp_path_factory.mktemp("ray") / "series.parquet"
    synthetic_obs.frame.sample(frac=1.0, random_state=1).to_parquet(path, row_group_size=600, index=False)
    return path


def test_ray_scores_equal_in_process_scores(local_ray, fitted, fitted_dir: Path, series_parquet: Path,
                                            tmp_path: Path) -> None:
    # in this process the rows must come grouped by series: the same rows, sorted
    grouped = tmp_path / "grouped.parquet"
    pd.read_parquet(series_parquet).sort_values("series_id", kind="stable").to_parquet(grouped, index=False)
    chunked.rank_file(fitted, grouped, tmp_path / "local.csv", chunk_series=7)
    n, seconds = rank_with_ray(fitted_dir, series_parquet, tmp_path / "ray.parquet", workers=RAY_WORKERS)
    local = pd.read_csv(tmp_path / "local.csv", dtype={"series_id": str})
    on_ray = pd.read_parquet(tmp_path / "ray.parquet")
    assert n == len(on_ray) == len(local) == 40 and seconds > 0
    assert list(on_ray.columns) == list(local.columns)
    assert on_ray["series_id"].tolist() == local["series_id"].tolist()
    assert on_ray["rank"].tolist() == list(range(1, 41))
    for column in ["trust_score", "mean_sigma", "mean_log_evidence", "mean_n_eff", "mean_disagreement"]:
        np.testing.assert_allclose(on_ray[column], local[column], rtol=0, atol=1e-5, err_msg=column)
    assert (on_ray["n_queries"].to_numpy() == local["n_queries"].to_numpy()).all()


def test_levy_rank_engine_ray_on_the_command_line(local_ray, fitted_dir: Path, series_parquet: Path,
                                                  tmp_path: Path, capsys) -> None:
    out = tmp_path / "rank.csv"
    assert main(["rank", str(fitted_dir), str(series_parquet), "--out", str(out), "--engine", "ray",
                 "--workers", str(RAY_WORKERS)]) == 0
    assert "scored 40 series in" in capsys.readouterr().out
    assert pd.read_csv(out)["rank"].tolist() == list(range(1, 41))


def test_a_bad_bucket_is_refused_with_the_data_message(local_ray, fitted_dir: Path, series_parquet: Path,
                                                       tmp_path: Path) -> None:
    bad = pd.read_parquet(series_parquet)
    bad.loc[bad.index[5], "value"] = np.inf
    bad.to_parquet(tmp_path / "bad.parquet", index=False)
    with pytest.raises(DataError, match="not finite numbers"):
        rank_with_ray(fitted_dir, tmp_path / "bad.parquet", tmp_path / "r.csv", workers=1)


def test_the_actor_loads_the_model_from_bytes_and_scores_a_bucket(fitted, fitted_dir: Path,
                                                                  synthetic_obs: Observations) -> None:
    pytest.importorskip("ray")
    rows = add_bucket(synthetic_obs.frame.iloc[::-1].reset_index(drop=True), "series_id", 3)
    assert set(rows["__levy_bucket"]) <= {0, 1, 2}
    assert (add_bucket(rows, "series_id", 3)["__levy_bucket"] == rows["__levy_bucket"]).all()  # stable
    scorer = RankScorer(model_bytes(fitted_dir), synthetic_obs.report.mapping, "hours")
    scores = scorer(rows[rows["__levy_bucket"] == 1])
    assert scores["series_id"].nunique() == len(scores) > 0
    assert set(scores["series_id"]) == set(rows.loc[rows["__levy_bucket"] == 1, "series_id"])


def test_without_ray_the_message_says_how_to_install_it(monkeypatch, fitted_dir: Path, series_parquet: Path,
                                                        tmp_path: Path, capsys) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    with pytest.raises(ValueError, match=r"pip install 'levy-core\[ray\]'"):
        require_ray()
    assert main(["rank", str(fitted_dir), str(series_parquet), "--out", str(tmp_path / "r.csv"),
                 "--engine", "ray"]) == 2
    assert "pip install 'levy-core[ray]'" in capsys.readouterr().err


def test_ray_reads_parquet_only(local_ray, fitted_dir: Path, tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    csv.write_text("series_id,time,value\na,0,1\na,1,2\n")
    with pytest.raises(DataError, match="--engine ray reads Parquet"):
        rank_with_ray(fitted_dir, csv, tmp_path / "r.csv")
