"""Parquet input: read as a CSV is read, and refused with a message when hostile."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from data_files import LONG_CSV, write

from levy_core.data import DataError, read_csv
from levy_core.data import parquet as parquet_module
from levy_core.data.parquet import MAX_TEXT_CHARS, is_parquet, read_parquet
from levy_core.data.series_chunks import read_observations


def long_table() -> pd.DataFrame:
    return pd.DataFrame({"patient_id": ["p2", "p1", "p1", "p1", "p2"], "time_hours": [1.5, 2.0, 0.5, 0.5, 0.25],
                         "parameter": ["HR", "HR", "Temp", "HR", "Temp"], "value": [80, 72, 37.2, 70, 36.9]})


def to_parquet(tmp_path: Path, table: pa.Table | pd.DataFrame, name: str = "data.parquet", **kwargs) -> Path:
    path = tmp_path / name
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    pq.write_table(table, path, **kwargs)
    return path


def test_a_parquet_file_reads_as_the_same_csv_does(tmp_path: Path) -> None:
    from_csv = read_csv(write(tmp_path, LONG_CSV))
    from_parquet = read_parquet(to_parquet(tmp_path, long_table()))
    pd.testing.assert_frame_equal(from_parquet.frame, from_csv.frame)
    assert from_parquet.report.mapping == from_csv.report.mapping


def test_the_file_ending_decides_the_reader(tmp_path: Path) -> None:
    path = to_parquet(tmp_path, long_table(), name="obs.PARQUET")
    assert is_parquet(path) and not is_parquet("obs.csv.gz")
    assert read_observations(path).n_obs == 5


def test_neuralforecast_long_format_with_dictionary_ids_and_timestamps(tmp_path: Path) -> None:
    stamps = pd.to_datetime(["2024-01-01 00:00", "2024-01-01 06:00", "2024-01-02 00:00"], utc=True)
    table = pa.table({"unique_id": pa.array(["a", "a", "b"]).dictionary_encode(),
                      "ds": pa.array(stamps), "y": [1.0, 2.0, 3.0]})
    obs = read_parquet(to_parquet(tmp_path, table))
    assert obs.report.input_time_unit == "datetime"
    assert obs.frame["series_id"].tolist() == ["a", "a", "b"]
    assert obs.frame["time"].tolist() == [0.0, 6.0, 0.0]  # hours since each series' first observation


def test_nan_values_are_dropped_as_blank_cells_and_inf_is_refused(tmp_path: Path) -> None:
    table = long_table().assign(value=[80, np.nan, 37.2, 70, 36.9])
    obs = read_parquet(to_parquet(tmp_path, table))
    assert obs.n_obs == 4 and obs.report.n_nan_dropped == 1
    with pytest.raises(DataError, match=r"'value'.*not finite numbers.*line 3"):
        read_parquet(to_parquet(tmp_path, long_table().assign(value=[80, np.inf, 37.2, 70, 36.9]), "inf.parquet"))


def test_text_where_numbers_belong_is_refused_naming_the_line(tmp_path: Path) -> None:
    table = long_table().assign(value=["80", "72", "high", "70", "36.9"])
    with pytest.raises(DataError, match=r"'value'.*line 4.*'high'"):
        read_parquet(to_parquet(tmp_path, table))


@pytest.mark.parametrize("column, message", [
    (pa.array([[1.0], [2.0], [3.0], [4.0], [5.0]]), "list"),
    (pa.array([{"a": 1}] * 5), "struct"),
    (pa.array([b"x"] * 5, pa.binary()), "binary"),
])
def test_nested_and_binary_columns_are_refused(tmp_path: Path, column: pa.Array, message: str) -> None:
    table = pa.Table.from_pandas(long_table(), preserve_index=False).append_column("extra", column)
    with pytest.raises(DataError, match=rf"'extra.*{message}.*Flatten or drop"):
        read_parquet(to_parquet(tmp_path, table))


def test_a_huge_text_cell_is_refused_before_decoding(tmp_path: Path) -> None:
    table = long_table().assign(patient_id=["p2", "p1", "x" * (MAX_TEXT_CHARS + 1), "p1", "p2"])
    with pytest.raises(DataError, match=r"'patient_id' has a text cell of 10,001 characters \(line 4\)"):
        read_parquet(to_parquet(tmp_path, table))


def test_not_parquet_and_truncated_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a Parquet file"):
        read_parquet(write(tmp_path, LONG_CSV, "data.parquet"))
    good = to_parquet(tmp_path, long_table(), "good.parquet").read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good[: len(good) // 2])
    with pytest.raises(DataError, match="could not be read as Parquet"):
        read_parquet(cut)
    with pytest.raises(DataError, match="no such file"):
        read_parquet(tmp_path / "missing.parquet")


def test_too_many_rows_are_refused_from_the_footer(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"5 rows, more than the 4 read at once.*--chunk-series"):
        read_parquet(to_parquet(tmp_path, long_table()), max_rows=4)


def test_a_row_group_too_big_to_decode_at_once_is_refused(tmp_path: Path, monkeypatch) -> None:
    path = to_parquet(tmp_path, long_table())
    monkeypatch.setattr(parquet_module, "MAX_ROW_GROUP_BYTES", 10)
    with pytest.raises(DataError, match=r"row group 0 would decode to .*smaller row groups"):
        read_parquet(path)


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="has no rows"):
        read_parquet(to_parquet(tmp_path, long_table().iloc[:0]))


def test_an_all_missing_column_is_read_as_missing_not_a_crash(tmp_path: Path) -> None:
    """pyarrow types a column with no value at all as ``null`` (pandas 2 writes an empty text
    column so): its width is no number, and asking for one raised a bare ValueError ('Non-fixed
    width type') from the row-group check, for an extra notes column as for an empty file."""
    notes = pa.table({"series_id": ["a", "a", "b", "b"], "time": [1.0, 2.0, 1.0, 2.0], "value": [1.0, 2.0, 3.0, 4.0],
                      "notes": pa.nulls(4)})
    pq.write_table(notes, tmp_path / "notes.parquet")
    obs = read_parquet(tmp_path / "notes.parquet")
    assert len(obs.frame) == 4 and list(obs.frame["value"]) == [1.0, 2.0, 3.0, 4.0]
    empty = pa.table({"series_id": pa.nulls(0), "time": pa.array([], pa.float64()), "value": pa.array([], pa.float64())})
    pq.write_table(empty, tmp_path / "empty.parquet")
    with pytest.raises(DataError, match="has no rows"):
        read_parquet(tmp_path / "empty.parquet")
    no_values = notes.set_column(2, "value", pa.nulls(4))
    pq.write_table(no_values, tmp_path / "no_values.parquet")
    with pytest.raises(DataError, match="column 'value' holds the measurements"):
        read_parquet(tmp_path / "no_values.parquet")


def test_levy_rank_refuses_a_hostile_parquet_file_with_a_message(fitted_dir: Path, tmp_path: Path, capsys) -> None:
    from levy_core.cli.main import main

    table = pa.Table.from_pandas(long_table(), preserve_index=False).append_column("tags", pa.array([["a"]] * 5))
    code = main(["rank", str(fitted_dir), str(to_parquet(tmp_path, table)), "--out", str(tmp_path / "r.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "error: 'data.parquet' has columns of types" in err and "'tags (list<" in err
    assert "Traceback" not in err and not (tmp_path / "r.csv").exists()
