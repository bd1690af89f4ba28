"""One memory budget for every entry point that asks the model for many values at once.

A pass of the model holds about 1.5 KB per query (attention weights over the context, its
evidence, the outputs: 300,000 queries of the small model peaked 440 MB above the process's
360 MB, 2026-12-07). Each entry point (``predict`` on a horizon, ``advise`` with its points,
draws, candidates and ``--at`` times, in the CLI and in the Python API alike) counts the
queries one pass would hold, **before** it allocates, and refuses a count over
`MAX_QUERIES_PER_PASS` by name: the product, its factors, the limit and what to lower.
Below it, predictions run in passes of at most that many queries, so the peak stays flat
(about 0.4 GB above the process) however many series are asked for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["MAX_QUERIES_PER_PASS", "BudgetError", "check_budget"]

MAX_QUERIES_PER_PASS = 250_000
"""The most queries one pass of the model may hold (about 0.4 GB)."""


class BudgetError(ValueError):
    """A request that would hold more queries in memory than `MAX_QUERIES_PER_PASS`."""


def check_budget(what: str, factors: Mapping[str, int], advice: str, limit: int = MAX_QUERIES_PER_PASS) -> int:
    """The product of ``factors`` (name → count), refused when over ``limit``.

    Parameters
    ----------
    what : str
        What is being computed, for the message (``"predict"``).
    factors : mapping of str to int
        Each factor of the query count by name (``{"points": 10**7, "channels": 3}``).
    advice : str
        What to do instead (``"give fewer points"``).
    limit : int
        The budget (default `MAX_QUERIES_PER_PASS`).

    Returns
    -------
    int
        The product.

    Raises
    ------
    BudgetError
        Naming the product, its factors, the limit and ``advice``.
    """
    total = math.prod(int(v) for v in factors.values())
    if total > limit:
        shown = " × ".join(f"{int(v):,} {name}" for name, v in factors.items())
        raise BudgetError(f"{what}: {shown} = {total:,} model queries at once, more than the memory budget of "
                          f"{limit:,} (about {limit * 1.5e3 / 2**30:.1f} GiB); {advice}")
    return total
