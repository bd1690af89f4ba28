"""The defaults and the check ``levy advise`` and ``levy watch`` put in their options, apart
from the computations so that the command line's parser loads neither PyTorch nor SciPy."""

from __future__ import annotations

import math

__all__ = ["DEFAULT_ALPHA", "DEFAULT_DRAWS", "DEFAULT_MAX_CONTEXT", "DEFAULT_POINTS", "check_alpha"]

DEFAULT_POINTS = 12  # advise: target grid points per channel over the horizon
DEFAULT_DRAWS = 8  # advise: values per candidate the disagreement part averages over
DEFAULT_ALPHA = 0.01  # watch: the false-alarm rate
DEFAULT_MAX_CONTEXT = 2000  # watch: latest observations a step's context holds (many series)


MIN_ALPHA = 1e-12  # 1 - alpha still a level below 1 with room to spare in float64


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float in (0, 1); ValueError naming it otherwise."""
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise ValueError(f"alpha must be a number in (0, 1), e.g. 0.01; got {alpha!r}") from None
    if math.isfinite(a) and 0.0 < a < MIN_ALPHA:
        raise ValueError(f"alpha {alpha!r} is too small: its band (1 - alpha) cannot be told from 1 at this "
                         f"precision; give an alpha of at least {MIN_ALPHA:g}, e.g. 0.01")
    if not (math.isfinite(a) and 0.0 < a < 1.0):
        raise ValueError(f"alpha must lie strictly between 0 and 1 (the false-alarm rate, e.g. 0.01); got {alpha!r}")
    return a
