"""Small CSV files the data-layer tests share (tests/data, tests/episodes, tests/serving).

Imported as ``from data_files import …``: tests/ is on ``sys.path`` because tests/conftest.py
is there (pytest's default ``prepend`` import mode), whichever sub-folder the test is in and
whether pytest runs as ``pytest`` or ``python -m pytest``."""

from __future__ import annotations

from pathlib import Path

# long form, unsorted, one duplicate-free (series, channel, time) per row
LONG_CSV = """\
patient_id,time_hours,parameter,value
p2,1.5,HR,80
p1,2.0,HR,72
p1,0.5,Temp,37.2
p1,0.5,HR,70
p2,0.25,Temp,36.9
"""


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    """``text`` as a UTF-8 file ``name`` in ``tmp_path``."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path
