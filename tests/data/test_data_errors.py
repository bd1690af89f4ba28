"""Tests of the data layer's refusals: one realistic malformed file each, and the
DataError message it gets (levy_core.data)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from data_files import LONG_CSV, write

from levy_core.data import MAX_ROWS, ColumnMapping, DataError, read_csv


# --------------------------------------------------------------------------------------
# DataError cases, one realistic malformed file each
# --------------------------------------------------------------------------------------
def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty"):
        read_csv(write(tmp_path, ""))


def test_whitespace_only_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty"):
        read_csv(write(tmp_path, "\n\n  \n"))


def test_header_only(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="header .* but no data rows"):
        read_csv(write(tmp_path, "series_id,time,channel,value\n"))


def test_no_time_column(tmp_path: Path) -> None:
    path = write(tmp_path, "patient,when,reading\nA,1,3.5\nA,2,3.7\n")
    with pytest.raises(DataError) as err:
        read_csv(path)
    msg = str(err.value)
    assert "No time column" in msg
    assert "'when'" in msg and "'reading'" in msg  # the columns seen
    assert "timestamp" in msg  # the accepted names


def test_no_value_column(tmp_path: Path) -> None:
    path = write(tmp_path, "id,time,comment\nA,1,ok\nA,2,late\n")
    with pytest.raises(DataError, match="No value column and no numeric channel column"):
        read_csv(path)


def test_channel_column_without_value_column(tmp_path: Path) -> None:
    path = write(tmp_path, "id,time,variable,reading\nA,1,HR,80\nA,2,HR,82\n")
    with pytest.raises(DataError, match="'variable' looks like a channel column"):
        read_csv(path)


def test_non_numeric_values_name_the_lines(tmp_path: Path) -> None:
    text = (
        "series_id,time,channel,value\n"  # line 1
        "a,0.0,HR,80\n"  # line 2
        "a,0.5,HR,81\n"  # line 3
        "a,1.0,HR,high\n"  # line 4
        "a,1.5,HR,\n"  # line 5: blank, not an error
        "a,2.0,HR,37,5\n"  # line 6: too many fields would be a parser error; quoted below
    )
    text = text.replace("a,2.0,HR,37,5\n", 'a,2.0,HR,"37,5"\n')
    text += "a,2.5,HR,82 bpm\n"  # line 7
    with pytest.raises(DataError) as err:
        read_csv(write(tmp_path, text))
    msg = str(err.value)
    assert "'value'" in msg
    assert "line 4 ('high')" in msg
    assert "line 6 ('37,5')" in msg
    assert "line 7 ('82 bpm')" in msg
    assert "line 5" not in msg and "line 2" not in msg
    assert "decimal point" in msg  # says what to do


def test_non_numeric_lists_at_most_five_lines(tmp_path: Path) -> None:
    rows = "".join(f"s,{i},HR,x{i}\n" for i in range(9))
    with pytest.raises(DataError) as err:
        read_csv(write(tmp_path, "series_id,time,channel,value\n" + rows))
    msg = str(err.value)
    assert "line 6 ('x4')" in msg and "line 7" not in msg
    assert "(and 4 more)" in msg


def test_non_numeric_wide_cell(tmp_path: Path) -> None:
    text = "time,temp,hum\n0,20.5,40\n1,21.0,n/a\n2,warm,41\n3,21.2,42\n"
    with pytest.raises(DataError) as err:
        read_csv(write(tmp_path, text))
    msg = str(err.value)
    assert "'temp'" in msg and "line 4 ('warm')" in msg


def test_single_observation(tmp_path: Path) -> None:
    path = write(tmp_path, "time,value\n0.5,1.0\n1.0,\n")
    with pytest.raises(DataError, match="Only 1 observation left"):
        read_csv(path)


def test_all_values_blank(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="Only 0 observations left"):
        read_csv(write(tmp_path, "time,value\n1,\n2,NA\n3,\n"))


def test_unparseable_times(tmp_path: Path) -> None:
    text = (
        "id,timestamp,value\n"
        "a,2024-01-01 10:00,1\n"
        "a,2024-01-01 11:00,2\n"
        "a,yesterday noon,3\n"  # line 4
        "a,2024-13-45 10:00,4\n"  # line 5
    )
    with pytest.raises(DataError) as err:
        read_csv(write(tmp_path, text))
    msg = str(err.value)
    assert "'timestamp'" in msg
    assert "line 4 ('yesterday noon')" in msg and "line 5 ('2024-13-45 10:00')" in msg


def test_numeric_time_with_a_typo(tmp_path: Path) -> None:
    text = "time,value\n0.5,1\n1.O,2\n1.5,3\n2.0,4\n"
    with pytest.raises(DataError, match=r"line 3 \('1.O'\)"):
        read_csv(write(tmp_path, text))


def test_too_many_rows(tmp_path: Path) -> None:
    rows = "".join(f"{i},{i * 0.1}\n" for i in range(20))
    with pytest.raises(DataError) as err:
        read_csv(write(tmp_path, "time,value\n" + rows), max_rows=10)
    assert "10 data rows" in str(err.value) and "split" in str(err.value)
    assert MAX_ROWS == 2_000_000


def test_blank_series_id(tmp_path: Path) -> None:
    text = "series_id,time,value\na,1,1\n,2,2\na,3,3\n"
    with pytest.raises(DataError, match=r"'series_id' \(series id\) is empty on 1 row: line 3"):
        read_csv(write(tmp_path, text))


def test_ragged_row(tmp_path: Path) -> None:
    text = "time,value\n1,2\n2,3,4\n"
    with pytest.raises(DataError, match="line 3"):
        read_csv(write(tmp_path, text))


def test_spreadsheet_upload_is_refused() -> None:
    fake_xlsx = io.BytesIO(b"PK\x03\x04" + b"\x00" * 100)
    with pytest.raises(DataError, match="CSV UTF-8"):
        read_csv(fake_xlsx)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        read_csv(tmp_path / "nope.csv")


def test_bad_time_unit(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="time_unit"):
        read_csv(write(tmp_path, LONG_CSV), time_unit="fortnights")


def test_mapping_with_unknown_column(tmp_path: Path) -> None:
    mapping = ColumnMapping(time="time_hours", value="val", layout="long")
    with pytest.raises(DataError, match="'val'"):
        read_csv(write(tmp_path, LONG_CSV), mapping=mapping)


def test_data_error_is_value_error() -> None:
    assert issubclass(DataError, ValueError)

