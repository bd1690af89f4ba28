"""Lévy attention: single-pass predictive uncertainty for irregularly sampled time series.

The public names load on first use (PEP 562), so ``import levy_core.runtime.threads`` and the
``levy`` command's entry do not load torch: OpenMP's wait policy can still be chosen
before its runtime starts (`levy_core.runtime.threads`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from levy_core.forecast.forecaster import LevyForecaster
    from levy_core.forecast.results import Backtest, Evaluation, Scores, WindowScores
    from levy_core.operator.attention import LevyOutput, LevyPrior, TimeDecay, levy_attention
    from levy_core.operator.layers import LevyAttention
    from levy_core.operator.sampling import sample_levy_attention

__all__ = ["Backtest", "Evaluation", "LevyAttention", "LevyForecaster", "LevyOutput", "LevyPrior", "Scores", "TimeDecay",
           "WindowScores", "levy_attention", "sample_levy_attention"]
__version__ = "0.2.0"

_HOME = {"Backtest": "forecast.results", "Evaluation": "forecast.results", "LevyAttention": "operator.layers",
         "LevyForecaster": "forecast.forecaster", "LevyOutput": "operator.types", "LevyPrior": "operator.types",
         "Scores": "forecast.results", "TimeDecay": "operator.types", "WindowScores": "forecast.results",
         "levy_attention": "operator.attention", "sample_levy_attention": "operator.sampling"}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    if name not in _HOME:
        raise AttributeError(f"module 'levy_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"levy_core.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
