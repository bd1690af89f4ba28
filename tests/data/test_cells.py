"""Numbers read from text are the doubles that were written: ``levy_core.data.cells``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.data import cells, read_csv

# 23.956799999999998 is the nearest double to 23.9568 minus one unit in the last place:
# pandas 2's fast text parser reads it as 23.9568 (about 1 in 6 of 17-digit decimals land one
# unit off there), so a model's own CSV output read back by the library would move.
HARD = ["23.956799999999998", "24.340799999999998", "1.0000000000000002", "9007199254740993", "8811179250151975.0",
        "0.30000000000000004", "-7.105427357601002e-15"]


@pytest.mark.parametrize("reread", [False, True])
def test_text_reads_as_the_nearest_double(monkeypatch: pytest.MonkeyPatch, reread: bool) -> None:
    # this pandas' own path, and the re-read with Python's float (pandas 2's) under either
    if reread:
        monkeypatch.setattr(cells, "TO_NUMERIC_EXACT", False)
    col = pd.Series([*HARD, " 2.5 ", "", "n/a", "abc", "inf", "7"], dtype=object)
    got = cells.parse_numbers(col)
    np.testing.assert_array_equal(got.values[:len(HARD)], [float(t) for t in HARD])
    assert got.values[len(HARD)] == 2.5 and got.values[-1] == 7.0
    assert got.missing.tolist() == [False] * 8 + [True, True, False, False, False]
    assert got.bad.tolist() == [False] * 10 + [True, True, False]


def test_the_probe_matches_this_pandas() -> None:
    # the check at import time agrees with what to_numeric does on every hard case here
    nearest = all(pd.to_numeric(pd.Series([t], dtype=object)).iloc[0] == float(t) for t in HARD)
    if cells.TO_NUMERIC_EXACT:
        assert nearest
    else:
        assert int(pd.__version__.split(".")[0]) < 3


def test_a_csv_round_trip_keeps_every_bit(tmp_path: Path) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.floats(min_value=-1e30, max_value=1e30, allow_nan=False, width=64), min_size=2, max_size=40))
    def round_trip(values: list[float]) -> None:
        frame = pd.DataFrame({"time": np.arange(len(values), dtype=np.float64), "value": values})
        path = tmp_path / "values.csv"
        frame.to_csv(path, index=False)  # pandas writes the shortest text that reads back exactly
        # (values stay within float32's range: the model refuses larger ones by name)
        obs = read_csv(path)
        np.testing.assert_array_equal(obs.frame["value"].to_numpy(), np.asarray(values, np.float64))

    round_trip()
