"""Lévy attention: single-pass predictive uncertainty for irregularly sampled time series.

The public names load on first use (PEP 562), so ``import levy_core.threads`` and the
``levy`` command's entry do not load torch: OpenMP's wait policy can still be chosen
before its runtime starts (:mod:`levy_core.threads`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from levy_core.attention import LevyOutput, LevyPrior, TimeDecay, levy_attention
    from levy_core.forecast import LevyForecaster
    from levy_core.layers import LevyAttention
    from levy_core.sampling import sample_levy_attention

__all__ = ["LevyAttention", "LevyForecaster", "LevyOutput", "LevyPrior", "TimeDecay", "levy_attention", "sample_levy_attention"]
__version__ = "0.2.0"

_HOME = {"LevyAttention": "layers", "LevyForecaster": "forecast", "LevyOutput": "attention", "LevyPrior": "attention",
         "TimeDecay": "attention", "levy_attention": "attention", "sample_levy_attention": "sampling"}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    if name not in _HOME:
        raise AttributeError(f"module 'levy_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"levy_core.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
