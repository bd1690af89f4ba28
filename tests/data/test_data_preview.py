"""Tests of preview_table (levy_core.data): the first rows of an upload, decoded as
read_csv decodes them, cells left as text."""

from __future__ import annotations

import gzip
import io

import pandas as pd
import pytest

from levy_core.data import DataError, from_frame, preview_table, read_csv

WIDE_CSV = "id , time,HR,Temp\na,0,80,\na,1,,37.2\nb,0.5,NA,36.9\n"


def test_cells_stay_text() -> None:
    table = preview_table(WIDE_CSV.encode(), "vitals.csv")
    assert list(table.columns) == ["id", "time", "HR", "Temp"]  # names stripped
    assert table.to_dict("list") == {
        "id": ["a", "a", "b"],
        "time": ["0", "1", "0.5"],
        "HR": ["80", "", "NA"],  # blank is "", and "NA" is not guessed to be missing
        "Temp": ["", "37.2", "36.9"],
    }


def test_gzip_upload() -> None:
    table = preview_table(gzip.compress(WIDE_CSV.encode()), "vitals.csv.gz")
    pd.testing.assert_frame_equal(table, preview_table(WIDE_CSV.encode(), "vitals.csv"))


def test_nrows_respected() -> None:
    data = ("time,value\n" + "".join(f"{i},{i * 2}\n" for i in range(50))).encode()
    assert preview_table(data, "long.csv", nrows=7)["time"].tolist() == [str(i) for i in range(7)]
    assert len(preview_table(data, "long.csv")) == 50  # fewer rows than the default 500
    header_only = preview_table(data, "long.csv", nrows=0)
    assert list(header_only.columns) == ["time", "value"] and header_only.empty
    with pytest.raises(ValueError, match="nrows"):
        preview_table(data, "long.csv", nrows=-1)


def test_semicolon_separated() -> None:
    table = preview_table(b"time;value\n1;3,5\n2;4\n", "european.csv")
    assert table.to_dict("list") == {"time": ["1", "2"], "value": ["3,5", "4"]}


@pytest.mark.parametrize(
    "magic", [b"PK\x03\x04", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"], ids=["xlsx", "xls"]
)
def test_excel_refused(magic: bytes) -> None:
    with pytest.raises(DataError, match="'book.xlsx' is a spreadsheet .*CSV UTF-8"):
        preview_table(magic + b"\x00" * 100, "book.xlsx")


def test_bad_encodings_refused() -> None:
    with pytest.raises(DataError, match="'odd.csv' could not be decoded as UTF-16"):
        preview_table(b"\xff\xfet\x00i\x00m", "odd.csv")  # a BOM, then a cut-off character
    with pytest.raises(DataError, match="'image.png' is not a text file"):
        preview_table(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image.png")
    with pytest.raises(DataError, match="'cut.csv.gz' looks gzipped but could not be unpacked"):
        preview_table(gzip.compress(WIDE_CSV.encode())[:20], "cut.csv.gz")


def test_text_encodings_read() -> None:
    expected = preview_table(WIDE_CSV.encode(), "vitals.csv")
    for encoding in ("utf-8-sig", "utf-16"):
        pd.testing.assert_frame_equal(preview_table(WIDE_CSV.encode(encoding), "v.csv"), expected)
    latin = preview_table("name,time,value\nGewicht für,1,2\n".encode("latin-1"), "l.csv")
    assert latin["name"].tolist() == ["Gewicht für"]


@pytest.mark.parametrize("data", [b"", b"\n  \n"], ids=["empty", "blank"])
def test_empty_upload_refused(data: bytes) -> None:
    with pytest.raises(DataError, match="'empty.csv' is empty"):
        preview_table(data, "empty.csv")


def test_ragged_rows_refused() -> None:
    with pytest.raises(DataError, match="'ragged.csv' is not a well-formed CSV"):
        preview_table(b"time,value\n1,2\n3,4,5,6\n", "ragged.csv")


def test_preview_reads_what_read_csv_reads() -> None:
    data = gzip.compress(WIDE_CSV.encode("utf-16"))
    from_preview = from_frame(preview_table(data, "vitals.csv.gz"))
    assert from_preview.frame.equals(read_csv(io.BytesIO(data)).frame)
