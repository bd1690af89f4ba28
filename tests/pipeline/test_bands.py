"""levy_core.pipeline.bands.unbounded_note: what a user is told when a band comes out infinite."""

from __future__ import annotations

import numpy as np
import pandas as pd

from levy_core.pipeline.bands import unbounded_note


def _bands(**columns: list[float]) -> pd.DataFrame:
    return pd.DataFrame(columns)


def test_finite_bands_say_nothing() -> None:
    assert unbounded_note(_bands(lower_90=[1.0, 2.0], upper_90=[3.0, 4.0]), [0.9]) is None


def test_the_widest_unbounded_band_is_named_with_the_errors_its_level_needs() -> None:
    bands = _bands(lower_90=[1.0, 2.0], upper_90=[3.0, 4.0], lower_98=[-np.inf, 0.0], upper_98=[np.inf, 5.0])
    note = unbounded_note(bands, [0.9, 0.98], n_scores=40)
    assert note is not None and note.startswith("the 98 % band is unbounded (±inf) on 1 of 2 queries")
    assert "holds 40 errors" in note and "needs at least 49 per channel; bounded up to 97.56 % here" in note
    assert note.endswith("Use the 90 % band, or fit on a longer history.")  # a finite level was asked for


def test_several_unbounded_levels_and_none_finite() -> None:
    inf = [-np.inf], [np.inf]
    note = unbounded_note(_bands(lower_95=inf[0], upper_95=inf[1], lower_99=inf[0], upper_99=[5.0]), [0.95, 0.99])
    assert note is not None and note.startswith("the 95 % and 99 % bands are unbounded (±inf) on 1 of 1 queries")
    assert "one at 99 % needs at least 99 per channel)" in note and "holds" not in note  # no count: not claimed
    assert note.endswith("Ask for a lower level (90 % or less), or fit on a longer history.")
