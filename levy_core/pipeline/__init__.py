"""fit → predict → evaluate → rank: the one path shared by the CLI and the dashboard.

A thin facade over the modules that do the work (see ``docs/architecture.md``):

* ``recipe`` — the fit in steps (prepare → train → calibrate), ``add_twin``;
* ``modelfile`` — [`FittedModel`][levy_core.pipeline.FittedModel], its save and [`load_model`][levy_core.pipeline.load_model];
* ``prepared`` — the data in the model's series space, prepared once ([`prepare`][levy_core.pipeline.prepare]);
* ``predict`` — at a split's observed queries, on a grid, at given queries, past each series' end;
* ``predictive`` — one method's predictive as an object (std, original units) and its ``Band`` (every level's bounds, derived once);
* ``evaluation`` — every method scored the same way, the coverage guarantee;
* ``ranking`` and ``diagnostics`` — trust ranking, attention weights, operator draws.

Units: the models work on per-channel min-max normalised values (recorded from the training
series). Everything returned to a user (``predict_grid``, ``predict_queries``, the PRED.csv
of ``evaluate``) is in the data's original units; the metrics of ``evaluate`` are on the
normalised scale (as t-PatchGNN reports) and coverage is scale-free.

The names load on first use (PEP 562): ``from levy_core.pipeline import fit`` imports the
recipe, not the evaluation, the ranking or the diagnostics.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from levy_core.calibration.over_time import GUARANTEE, rolling_coverage
    from levy_core.pipeline.diagnostics import (
        attention_weights,
        operator_draws,
        query_crps,
        width_factors,
    )
    from levy_core.pipeline.evaluation import (
        LEVELS,
        PRED_COLUMNS,
        calibration_curves,
        channel_coverage,
        coverage_checks,
        evaluate,
        evaluate_episodes,
        evaluation_note,
        sampler_check,
        timed,
    )
    from levy_core.pipeline.modelfile import FORMAT, FittedModel, ModelLoadError, load_model
    from levy_core.pipeline.predict import (
        predict_after_end,
        predict_future,
        predict_grid,
        predict_queries,
        split_predictions,
    )
    from levy_core.pipeline.predictive import add_bands
    from levy_core.pipeline.prepared import ModelData, prepare
    from levy_core.pipeline.query_context import predict_from_past, user_queries_to_model
    from levy_core.pipeline.ranking import rank
    from levy_core.pipeline.recipe import (
        AUTO_MEDIUM_MIN_SERIES,
        MODEL_SIZES,
        add_twin,
        calibrate,
        cutoff_range,
        fit,
        own_cutoffs_by_default,
        resolve_size,
        size_name,
    )
    from levy_core.pipeline.user_frames import (
        drift_report,
        predict_user_queries,
        user_predictions,
        with_bands,
    )

__all__ = [
    "AUTO_MEDIUM_MIN_SERIES",
    "FORMAT",
    "GUARANTEE",
    "LEVELS",
    "MODEL_SIZES",
    "PRED_COLUMNS",
    "FittedModel",
    "ModelData",
    "ModelLoadError",
    "add_bands",
    "add_twin",
    "attention_weights",
    "calibrate",
    "calibration_curves",
    "channel_coverage",
    "coverage_checks",
    "cutoff_range",
    "drift_report",
    "evaluate",
    "evaluate_episodes",
    "evaluation_note",
    "fit",
    "load_model",
    "operator_draws",
    "own_cutoffs_by_default",
    "predict_after_end",
    "predict_from_past",
    "predict_future",
    "predict_grid",
    "predict_queries",
    "predict_user_queries",
    "prepare",
    "query_crps",
    "rank",
    "resolve_size",
    "rolling_coverage",
    "sampler_check",
    "size_name",
    "split_predictions",
    "timed",
    "user_predictions",
    "user_queries_to_model",
    "width_factors",
    "with_bands",
]

_HOME = {  # the public names, and the others the module used to import (pipeline.DataError …)
    "ADAPTIVE_BAND_COLUMNS": "pipeline.evaluation",
    "add_bands": "pipeline.predictive",
    "add_twin": "pipeline.recipe",
    "as_model_data": "pipeline.prepared",
    "attention_weights": "pipeline.diagnostics",
    "AUTO_MEDIUM_MIN_SERIES": "pipeline.recipe",
    "calibrate": "pipeline.recipe",
    "calibration_curves": "pipeline.evaluation",
    "channel_coverage": "pipeline.evaluation",
    "check_drift": "data.drift",
    "coverage_checks": "pipeline.evaluation",
    "cutoff_range": "pipeline.recipe",
    "own_cutoffs_by_default": "pipeline.recipe",
    "DataError": "data",
    "drift_report": "pipeline.user_frames",
    "DriftReport": "data.drift",
    "evaluate": "pipeline.evaluation",
    "evaluate_episodes": "pipeline.evaluation",
    "evaluation_note": "pipeline.evaluation",
    "fit": "pipeline.recipe",
    "FittedModel": "pipeline.modelfile",
    "FORMAT": "pipeline.modelfile",
    "GUARANTEE": "calibration.over_time",
    "LEVELS": "pipeline.evaluation",
    "load_model": "pipeline.modelfile",
    "MODEL_SIZES": "pipeline.recipe",
    "ModelData": "pipeline.prepared",
    "ModelLoadError": "pipeline.modelfile",
    "Observations": "data",
    "operator_draws": "pipeline.diagnostics",
    "PRED_COLUMNS": "pipeline.evaluation",
    "predict_after_end": "pipeline.predict",
    "predict_from_past": "pipeline.query_context",
    "user_queries_to_model": "pipeline.query_context",
    "predict_future": "pipeline.predict",
    "predict_grid": "pipeline.predict",
    "predict_queries": "pipeline.predict",
    "predict_user_queries": "pipeline.user_frames",
    "prepare": "pipeline.prepared",
    "query_crps": "pipeline.diagnostics",
    "query_times": "pipeline.predict",
    "rank": "pipeline.ranking",
    "resolve_size": "pipeline.recipe",
    "rolling_coverage": "calibration.over_time",
    "size_name": "pipeline.recipe",
    "split_predictions": "pipeline.predict",
    "sampler_check": "pipeline.evaluation",
    "timed": "pipeline.evaluation",
    "to_user_time": "data",
    "user_predictions": "pipeline.user_frames",
    "width_factors": "pipeline.diagnostics",
    "with_bands": "pipeline.user_frames",
}


def __getattr__(name: str) -> Any:
    """A public name (or a submodule), imported from its module on first use."""
    if name not in _HOME:
        try:
            return importlib.import_module(f"levy_core.pipeline.{name}")
        except ModuleNotFoundError:
            raise AttributeError(f"module 'levy_core.pipeline' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"levy_core.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
