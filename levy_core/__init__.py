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

PUBLIC_MODULES = (
    "levy_core",
    "levy_core.forecast.forecaster", "levy_core.forecast.verbs", "levy_core.forecast.results", "levy_core.forecast.plot",
    "levy_core.decisions.advise", "levy_core.decisions.watch", "levy_core.decisions.watch_calibration",
    "levy_core.decisions.defaults",
    "levy_core.serving.chunked", "levy_core.serving.ray_engine", "levy_core.serving.modelzip",
    "levy_core.serving.monitoring", "levy_core.serving.table_writer", "levy_core.serving.csv_safety",
    "levy_core.calibration.calibrate", "levy_core.calibration.scaled_gaussian", "levy_core.calibration.split_conformal",
    "levy_core.calibration.scores", "levy_core.calibration.adaptive", "levy_core.calibration.recency",
    "levy_core.calibration.coverage", "levy_core.calibration.over_time", "levy_core.calibration.query_scale",
    "levy_core.calibration.learned_spread",
    "levy_core.training.train",
    "levy_core.offsets.base_forecast", "levy_core.offsets.candidates", "levy_core.offsets.harmonic",
    "levy_core.offsets.seasonality", "levy_core.offsets.spec",
    "levy_core.model.levy_model", "levy_core.model.config", "levy_core.model.batch", "levy_core.model.encoder",
    "levy_core.model.cross_heads", "levy_core.model.softmax_twin", "levy_core.model.sizes",
    "levy_core.operator.attention", "levy_core.operator.types", "levy_core.operator.layers",
    "levy_core.metrics", "levy_core.metrics.conditional",
    "levy_core.data", "levy_core.data.drift", "levy_core.data.recorded", "levy_core.data.calendar",
    "levy_core.data.series_chunks",
    "levy_core.runtime.threads", "levy_core.runtime.priority", "levy_core.runtime.atomic",
)
"""The public API, in one place: the modules the API reference documents (``docs/reference``;
``tests/project/test_public_api.py`` keeps the two equal). The CLI (``levy_core.cli``) and the
dashboard import nothing else of the library; ``levy_core.pipeline`` and the packages' other
modules are internal. The way in is [`LevyForecaster`][levy_core.forecast.forecaster.LevyForecaster]
and its fitted-model verbs (``levy_core.forecast.verbs``)."""

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
