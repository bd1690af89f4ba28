"""A PBC-like follow-up panel the per-series cut-off tests share (tests/pipeline,
tests/dashboard), imported as ``from follow_up import …`` (tests/ is on ``sys.path``, as
for ``data_files``).

60 patients followed from 200 to 4,000 days (visits at 0, ~180, ~365 days, then about
yearly), wide form ``id,day,bili,albumin,platelet``, plus one patient seen once (``SINGLE``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

MIDPOINT = 0.5  # the default share, written out: the hand computation does not read the library's
SINGLE = "single"


def pbc_like(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """Wide form ``id, day, bili, albumin, platelet``: ``n`` patients with follow-ups spread
    from 200 to 4,000 days, and one seen once."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, span in enumerate(np.linspace(200, 4000, n)):
        days = [0.0, 180.0 + rng.uniform(-20, 20), 365.0 + rng.uniform(-30, 30)]
        days += [float(d) + rng.uniform(-40, 40) for d in np.arange(730, span, 365)]
        days = sorted({min(round(d, 1), float(span)) for d in days} | {float(span)})
        level = rng.uniform(0.5, 3.0)
        for d in days:
            rows.append((f"p{i:02d}", d, level * np.exp(d / 3000 + 0.1 * rng.standard_normal()),
                         3.6 - d / 8000 + 0.1 * rng.standard_normal(), 250 - d / 40 + 15 * rng.standard_normal()))
    rows.append((SINGLE, 0.0, 1.2, 3.5, 240.0))
    return pd.DataFrame(rows, columns=["id", "day", "bili", "albumin", "platelet"])


def own_split(wide: pd.DataFrame, share: float = MIDPOINT) -> tuple[set[str], set[str]]:
    """By hand: the patients with ≥ 2 visits at or before their own cut-off and ≥ 1 after
    it, and those with none after it (or none before)."""
    enough, out = set(), set()
    for sid, g in wide.groupby("id"):
        t = g["day"].to_numpy()
        cut = t.min() + share * (t.max() - t.min())
        before, after = int((t <= cut).sum()), int((t > cut).sum())
        if before >= 2 and after >= 1:
            enough.add(str(sid))
        if not (before and after):
            out.add(str(sid))
    return enough, out
