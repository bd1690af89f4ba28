"""Reading, ranking and predicting a file in chunks of whole series: the same results as
the whole file in memory, bounded pieces, and a message when the series are not grouped."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from data_files import write

from levy_core.cli.main import main
from levy_core.data import DataError, Observations, read_csv
from levy_core.data import series_chunks as series_chunks_module
from levy_core.data.series_chunks import ChunkTotals, UngroupedSeriesError, iter_series_chunks
from levy_core.pipeline.predict import predict_grid
from levy_core.pipeline.ranking import SCORE_COLUMNS, rank
from levy_core.serving import chunked
from levy_core.serving.table_writer import TableWriter

SORT = ["series_id", "time", "channel"]


@pytest.fixture(scope="module")
def many_csv(synthetic_obs: Observations, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All 40 synthetic series as a long CSV, rows of each series together."""
    path = tmp_path_factory.mktemp("chunked") / "many.csv"
    synthetic_obs.frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def many_parquet(many_csv: Path) -> Path:
    """The same rows as Parquet, in row groups that cut series apart."""
    path = many_csv.with_suffix(".parquet")
    pd.read_csv(many_csv, dtype={"series_id": str}).to_parquet(path, row_group_size=333, index=False)
    return path


def joined(chunks: list[Observations]) -> pd.DataFrame:
    return pd.concat([c.frame for c in chunks], ignore_index=True).sort_values(SORT, ignore_index=True)


@pytest.mark.parametrize("chunk_series, batch_rows", [(1, 50), (7, 1000), (40, 100_000), (1000, 97)])
def test_chunks_hold_whole_series_and_add_up_to_the_file(many_csv: Path, many_parquet: Path, chunk_series: int,
                                                         batch_rows: int) -> None:
    whole = read_csv(many_csv)
    for path in (many_csv, many_parquet):
        totals = ChunkTotals()
        chunks = list(iter_series_chunks(path, chunk_series=chunk_series, batch_rows=batch_rows, totals=totals))
        assert all(c.n_series <= chunk_series for c in chunks)
        assert len(chunks) == -(-whole.n_series // chunk_series)
        ids = [s for c in chunks for s in c.series_ids]
        assert len(ids) == len(set(ids)) == whole.n_series  # no series split over two chunks
        pd.testing.assert_frame_equal(joined(chunks), whole.frame)
        assert totals.series == whole.n_series and totals.observations == whole.n_obs


def test_a_gzipped_csv_is_streamed(many_csv: Path, tmp_path: Path) -> None:
    gz = tmp_path / "many.csv.gz"
    gz.write_bytes(gzip.compress(many_csv.read_bytes()))
    pd.testing.assert_frame_equal(joined(list(iter_series_chunks(gz, chunk_series=9, batch_rows=211))),
                                  read_csv(many_csv).frame)


def test_a_chunk_never_exceeds_the_row_budget(many_csv: Path) -> None:
    chunks = list(iter_series_chunks(many_csv, chunk_series=40, max_rows=400, batch_rows=100))
    assert len(chunks) > 1
    assert all(c.report.n_rows_read <= 400 for c in chunks)


def test_messages_name_the_line_of_the_whole_file(tmp_path: Path) -> None:
    rows = ["series_id,time,value"] + [f"s{i // 3},{i % 3},1.0" for i in range(30)]
    rows[25] = "s8,0,abc"  # the 25th data row: line 26
    path = write(tmp_path, "\n".join(rows) + "\n")
    with pytest.raises(DataError, match=r"line 26 \('abc'\)"):
        list(iter_series_chunks(path, chunk_series=2, batch_rows=4))


def test_a_series_that_comes_back_is_refused_with_what_to_do(tmp_path: Path) -> None:
    text = "series_id,time,value\na,0,1\na,1,2\nb,0,1\nb,1,2\na,2,3\n"
    path = write(tmp_path, text)
    with pytest.raises(UngroupedSeriesError, match=r"series 'a' reappears at line 6.*sort the file by column "
                                                   r"'series_id'"):
        list(iter_series_chunks(path, chunk_series=1, batch_rows=2))


def test_a_line_without_end_is_refused_while_streaming(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(series_chunks_module, "MAX_LINE_CHARS", 1000)
    path = write(tmp_path, "series_id,time,value\n" + "a," * 2000 + "\n")
    with pytest.raises(DataError, match="a line of more than 1,000 characters"):
        list(iter_series_chunks(path))


def test_spreadsheets_and_empty_files_are_refused(tmp_path: Path) -> None:
    xlsx = tmp_path / "book.csv"
    xlsx.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    with pytest.raises(DataError, match="spreadsheet"):
        list(iter_series_chunks(xlsx))
    with pytest.raises(DataError, match="no data rows|empty"):
        list(iter_series_chunks(write(tmp_path, "series_id,time,value\n", "empty.csv")))
    with pytest.raises(DataError, match="chunk_series must be at least 1"):
        list(iter_series_chunks(xlsx, chunk_series=0))


def read_ranking(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_csv(path, dtype={"series_id": str})


@pytest.mark.parametrize("out_name", ["rank.csv", "rank.parquet"])
def test_rank_file_equals_the_in_memory_ranking(fitted, many_csv: Path, many_parquet: Path, tmp_path: Path,
                                                monkeypatch, out_name: str) -> None:
    expected, _ = rank(fitted, read_csv(many_csv))
    monkeypatch.setattr(chunked, "MERGE_FAN_IN", 3)  # 6 runs: merged in rounds
    for source in (many_csv, many_parquet):
        out = tmp_path / out_name
        done = []
        summary = chunked.rank_file(fitted, source, out, chunk_series=7, progress=done.append)
        got = read_ranking(out)
        assert summary.n_series == len(got) == len(expected) == 40 and sum(done) == 40
        assert list(got.columns) == ["rank", *SCORE_COLUMNS]
        assert got["series_id"].tolist() == expected["series_id"].tolist()
        assert got["rank"].tolist() == list(range(1, 41))
        np.testing.assert_allclose(got["trust_score"], expected["trust_score"], rtol=0, atol=1e-6)
        np.testing.assert_allclose(got["mean_log_evidence"], expected["mean_log_evidence"], rtol=0, atol=1e-5)
        assert (got["n_observations"].to_numpy() == expected["n_observations"].to_numpy()).all()


def test_a_small_file_with_series_out_of_place_is_ranked_whole(fitted, synthetic_obs: Observations,
                                                               tmp_path: Path) -> None:
    shuffled = tmp_path / "shuffled.csv"
    synthetic_obs.frame.sample(frac=1.0, random_state=0).to_csv(shuffled, index=False)
    expected, _ = rank(fitted, read_csv(shuffled))
    summary = chunked.rank_file(fitted, shuffled, tmp_path / "rank.csv", chunk_series=5)
    got = read_ranking(tmp_path / "rank.csv")
    assert summary.totals.chunks == 1 and got["series_id"].tolist() == expected["series_id"].tolist()


def test_a_big_file_with_series_out_of_place_says_to_sort_it(fitted, tmp_path: Path, monkeypatch) -> None:
    path = write(tmp_path, "series_id,time,value\na,0,1\na,1,2\nb,0,1\nb,1,2\na,2,3\n")
    monkeypatch.setattr(chunked, "read_observations", lambda *a, **k: (_ for _ in ()).throw(DataError("too big")))
    with pytest.raises(UngroupedSeriesError, match="sort the file by column 'series_id'"):
        chunked.rank_file(fitted, path, tmp_path / "rank.csv", chunk_series=1)


def test_predict_file_writes_what_the_whole_file_predicts(fitted, many_csv: Path, tmp_path: Path) -> None:
    def grid(obs: Observations) -> pd.DataFrame:
        return predict_grid(fitted, obs, n_points=5)[["series_id", "channel", "time", "mean_norm",
                                                              "sigma_norm"]]

    expected = grid(read_csv(many_csv)).sort_values(SORT, ignore_index=True)
    n, totals = chunked.predict_file(many_csv, tmp_path / "pred.parquet", grid, chunk_series=6)
    got = pd.read_parquet(tmp_path / "pred.parquet").sort_values(SORT, ignore_index=True)
    assert n == len(got) == len(expected) and totals.chunks == 7
    assert got["series_id"].tolist() == expected["series_id"].tolist()
    np.testing.assert_allclose(got[["time", "mean_norm", "sigma_norm"]], expected[["time", "mean_norm", "sigma_norm"]],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.integration
def test_levy_rank_and_predict_read_parquet_in_chunks(fitted_dir: Path, many_csv: Path, many_parquet: Path,
                                                      tmp_path: Path, capsys) -> None:
    assert main(["rank", str(fitted_dir), str(many_parquet), "--out", str(tmp_path / "r.parquet"),
                 "--chunk-series", "9"]) == 0
    out, err = capsys.readouterr()
    assert "scored 40 series in" in out and "in 5 chunks" in err and "series/s" in err  # the progress bar
    assert main(["rank", str(fitted_dir), str(many_csv), "--out", str(tmp_path / "r.csv"), "--quiet"]) == 0
    pd.testing.assert_frame_equal(read_ranking(tmp_path / "r.parquet"), read_ranking(tmp_path / "r.csv"),
                                  check_dtype=False, atol=1e-6)
    assert main(["predict", str(fitted_dir), str(many_parquet), "--out", str(tmp_path / "p.csv"), "--points", "4",
                 "--chunk-series", "16", "--quiet"]) == 0
    pred = pd.read_csv(tmp_path / "p.csv")
    assert pred["series_id"].nunique() == 40 and {"mean", "lower", "upper"} <= set(pred.columns)


def test_levy_rank_refuses_an_address_without_ray_and_a_missing_file(fitted_dir: Path, many_csv: Path,
                                                                     tmp_path: Path, capsys) -> None:
    assert main(["rank", str(fitted_dir), str(many_csv), "--out", str(tmp_path / "r.csv"),
                 "--address", "ray://x:1"]) == 2
    assert "--address names a Ray cluster" in capsys.readouterr().err
    assert main(["rank", str(fitted_dir), str(tmp_path / "none.parquet"), "--out", str(tmp_path / "r.csv")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["t.csv", "t.parquet"])
def test_table_writer_appends_frames_and_writes_an_empty_table_when_given_none(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    read = pd.read_parquet if name.endswith(".parquet") else pd.read_csv
    with TableWriter(path) as w:
        w.write(pd.DataFrame({"a": [1, 2], "b": ["=x", "y"]}))
        w.write(pd.DataFrame({"b": ["z"], "a": [3]}))  # columns in the first frame's order
    back = read(path)
    assert back["a"].tolist() == [1, 2, 3] and w.rows == 3
    csv_file = name.endswith(".csv")  # a CSV is opened in spreadsheets: its formulas are neutralised
    assert back["b"].tolist() == ["'=x" if csv_file else "=x", "y", "z"]
    with TableWriter(path, ["rank", "series_id"]):
        pass
    assert list(read(path).columns) == ["rank", "series_id"] and read(path).empty
