"""The size study's draw (issue 51): nested training files, unseen stays kept apart and fixed."""

import numpy as np
import pandas as pd
import pytest

from benchmarks.studies.ranking_by_size import nested_draw


def frame(n_series: int) -> pd.DataFrame:
    ids = [str(900000 + i) for i in range(n_series)] + ["132577"]  # the last is a bundled sample stay
    return pd.DataFrame({"series_id": np.repeat(ids, 2), "channel": "HR", "time": np.tile([1.0, 30.0], len(ids)),
                         "value": 80.0})


def test_files_nest_and_never_hold_an_unseen_or_a_bundled_stay() -> None:
    files, unseen = nested_draw(frame(60), seed=3, sizes=[10, 20, 40], n_unseen=15)
    ids = {n: set(f["series_id"]) for n, f in files.items()}
    assert [len(ids[n]) for n in (10, 20, 40)] == [10, 20, 40]
    assert ids[10] < ids[20] < ids[40]
    held = set(unseen["series_id"])
    assert len(held) == 15 and not held & ids[40]
    assert "132577" not in held | ids[40]
    again, unseen_again = nested_draw(frame(60), seed=3, sizes=[10], n_unseen=15)
    assert set(unseen_again["series_id"]) == held and set(again[10]["series_id"]) == ids[10]


def test_a_size_beyond_the_stays_left_is_refused() -> None:
    with pytest.raises(ValueError, match="at most 45 training stays"):
        nested_draw(frame(60), seed=0, sizes=[50], n_unseen=15)
