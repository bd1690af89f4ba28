"""Gzip input is unpacked as a stream with a cap, and the text's shape is bounded before
it is parsed (levy_core.data.decode, levy_core.data.reading).

The bombs are built in memory as gzip files of one 1 MiB chunk deflated once and its blocks
repeated (a 400 MB ``bytes`` object is never made), and read in a fresh Python process whose peak resident
memory (``ru_maxrss``) is measured, so that no other test's memory counts.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from levy_core.data import MAX_DECOMPRESSED_BYTES, DataError, read_csv
from levy_core.data import decode as decode_module
from levy_core.data import reading as reading_module

REPO = Path(__file__).resolve().parents[2]
CSV = b"series_id,time,value\na,0,1.5\na,1,2.5\nb,0,3.5\nb,2,4.5\n"

# Build a bomb of ``total`` bytes (the header, then ``block`` repeated) and read it; print
# the peak RSS before and after reading, the seconds and the outcome as one JSON line.
BOMB_SCRIPT = textwrap.dedent(
    """
    import gzip, io, json, resource, struct, sys, time, zlib
    from levy_core.data import DataError, read_csv

    def peak_rss():
        # VmHWM belongs to this process's memory map, which exec made new; ru_maxrss is kept
        # across exec, so after a fork from a big test process it would report the parent's
        try:
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    head, block, total = sys.argv[1].encode(), sys.argv[2].encode(), int(sys.argv[3])
    # a gzip file by hand: the 1 MiB chunk is deflated once and its blocks repeated (a full
    # flush ends them: a copy refers to nothing before it), where deflating all 400 MB took
    # 2-3 s a test; the same bytes unpacked, checked by gzip's CRC-32 and length
    chunk = block * max(1, (1 << 20) // len(block))
    n_chunks, rest = divmod(total - len(head), len(chunk))
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH)
    repeated = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    last = deflate.compress(chunk[:rest]) + deflate.flush(zlib.Z_FINISH)
    crc = zlib.crc32(head)
    for _ in range(n_chunks):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(chunk[:rest], crc)
    written = len(head) + n_chunks * len(chunk) + rest
    data = (bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 2, 0xFF]) + first + repeated * n_chunks + last
            + struct.pack("<II", crc, written & 0xFFFFFFFF))
    before = peak_rss()
    start = time.perf_counter()
    try:
        read_csv(io.BytesIO(data))
        outcome = "read"
    except DataError as exc:
        outcome = str(exc)
    seconds = time.perf_counter() - start
    peak = peak_rss()
    print(json.dumps({"gz_bytes": len(data), "unpacked": written, "before": before,
                      "peak": peak, "seconds": seconds, "outcome": outcome}))
    """
)


def run_bomb(head: str, block: str, total: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", BOMB_SCRIPT, head, block, str(total)],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("head", "block"),
    [("", "0"), ("time,value\n", "0,0\n")],
    ids=["one-line-of-zeros", "rows-of-zeros"],
)
@pytest.mark.integration
def test_400_mb_bomb_is_refused_in_seconds_under_1_gb(head: str, block: str) -> None:
    assert MAX_DECOMPRESSED_BYTES == 200_000_000
    result = run_bomb(head, block, 400_000_000)
    print(json.dumps(result))  # shown with -s: the measured numbers
    assert result["gz_bytes"] < 1_000_000  # a sub-megabyte upload ...
    assert result["unpacked"] == 400_000_000  # ... that unpacks to 400 MB
    assert "unpacks to more than 200 MB" in result["outcome"]
    assert "Split the data" in result["outcome"]
    assert result["seconds"] < 10.0
    assert result["peak"] < 1_000_000_000  # the whole process, imports included
    assert result["peak"] - result["before"] < 400_000_000  # the read itself: about the cap


@pytest.mark.integration
def test_text_just_under_the_cap_costs_bounded_memory() -> None:
    """190 MB of two-column rows: unpacked, then refused by the rows cap after parsing at
    most MAX_ROWS + 1 rows -- not 47 million."""
    result = run_bomb("a,b\n", "1,2\n", 190_000_000)
    print(json.dumps(result))
    assert "more than 2,000,000 data rows" in result["outcome"]
    assert result["seconds"] < 20.0
    assert result["peak"] < 1_500_000_000


def test_cap_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the cap a file is read; one byte over it is refused."""
    monkeypatch.setattr(decode_module, "MAX_DECOMPRESSED_BYTES", len(CSV))
    assert read_csv(io.BytesIO(gzip.compress(CSV))).n_obs == 4
    monkeypatch.setattr(decode_module, "MAX_DECOMPRESSED_BYTES", len(CSV) - 1)
    with pytest.raises(DataError, match="unpacks to more than"):
        read_csv(io.BytesIO(gzip.compress(CSV)))


def test_several_gzip_members_are_one_file() -> None:
    """As gzip itself reads them (``cat a.gz b.gz``)."""
    first, second = CSV[:30], CSV[30:]
    obs = read_csv(io.BytesIO(gzip.compress(first) + gzip.compress(second)))
    assert obs.n_obs == 4


def _bad_crc(data: bytes) -> bytes:
    crc = bytearray(data)
    crc[-8] ^= 0xFF  # the CRC-32 field of the trailer
    return bytes(crc)


def _bad_deflate(data: bytes) -> bytes:
    body = bytearray(data)
    body[10:14] = b"\xff\xff\xff\xff"  # the start of the deflate stream
    return bytes(body)


CORRUPT = {
    "truncated": lambda gz: gz[: len(gz) // 2],
    "header only": lambda gz: gz[:10],
    "magic only": lambda gz: gz[:2],
    "bad crc": _bad_crc,
    "bad deflate data": _bad_deflate,
    "bad length": lambda gz: gz[:-4] + b"\x00\x00\x00\x00",
    "trailing garbage": lambda gz: gz + b"not gzip",
}


@pytest.mark.parametrize("damage", list(CORRUPT), ids=list(CORRUPT))
def test_corrupt_gzip_is_a_data_error(damage: str) -> None:
    data = CORRUPT[damage](gzip.compress(CSV * 50))
    with pytest.raises(DataError, match=r"'upload.csv.gz' looks gzipped but could not be unpacked \(.+\)") as err:
        read_csv(_named(data, "upload.csv.gz"))
    assert "Re-create the .csv.gz file" in str(err.value)
    assert isinstance(err.value.__cause__, (OSError, EOFError, zlib.error))


def _named(data: bytes, name: str) -> io.BytesIO:
    stream = io.BytesIO(data)
    stream.name = name
    return stream


# --------------------------------------------------------------------------------------
# the text's shape, bounded before parsing
# --------------------------------------------------------------------------------------
def test_too_many_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading_module, "MAX_COLUMNS", 3)
    assert read_csv(io.StringIO("time,a,b\n0,1,2\n1,3,4\n")).n_channels == 2
    with pytest.raises(DataError, match="has 4 columns, more than the 3 accepted"):
        read_csv(io.StringIO("time,a,b,c\n0,1,2,3\n1,3,4,5\n"))


def test_too_long_a_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading_module, "MAX_LINE_CHARS", 20)
    assert read_csv(io.StringIO("time,value\n0,1\n1,12345678901234567\n")).n_obs == 2  # 19
    text = "time,value\n0,1\n1,123456789012345678\n2,3\n"  # line 3: 20 characters
    assert read_csv(io.StringIO(text)).n_obs == 3
    with pytest.raises(DataError, match="a line of more than 20 characters"):
        read_csv(io.StringIO(text.replace("678\n", "6789\n")))  # 21
    with pytest.raises(DataError, match="a line of more than 20 characters"):
        read_csv(io.StringIO("time,value\n0,1\n" + "1," * 30))  # the last line, no break


def test_too_many_cells_for_a_long_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Data rows × header fields are bounded: the rows are cut at MAX_CELLS // fields."""
    monkeypatch.setattr(reading_module, "MAX_CELLS", 12)
    assert read_csv(io.StringIO("time,value,note\n0,1,x\n1,2,y\n2,3,z\n3,4,w\n")).n_obs == 4
    with pytest.raises(DataError, match="more than 4 data rows of 3 fields each, more than the 12 cells"):
        read_csv(io.StringIO("time,value,note\n0,1,x\n1,2,y\n2,3,z\n3,4,w\n4,5,v\n"))


def test_wide_files_count_rows_times_channels() -> None:
    wide = "time,a,b,c\n" + "".join(f"{i},1,2,3\n" for i in range(4))  # 4 rows × 3 channels
    assert read_csv(io.StringIO(wide), max_rows=12).n_obs == 12
    with pytest.raises(DataError, match=r"4 rows × 3 channel columns = 12 cells, more than the 11"):
        read_csv(io.StringIO(wide), max_rows=11)
    long = "time,value\n" + "".join(f"{i},1\n" for i in range(12))
    assert read_csv(io.StringIO(long), max_rows=12).n_obs == 12  # long: rows only
