"""The verbs a front end runs on a fitted [`LevyForecaster`][levy_core.forecast.forecaster.LevyForecaster],
on data it has read once (``Observations``) and prepared once (``prepare``): what ``levy
fit`` / ``predict`` / ``evaluate`` / ``advise`` / ``rank`` and the dashboard's panels ask of a
model. Each is one step of the library's internal pipeline (``levy_core.pipeline``), on
``self.fitted``: the same numbers as the DataFrame verbs (``predict``, ``evaluate``), which
read a frame and prepare it on every call.

>>> f = LevyForecaster.open_model("runs/demo")            # levy fit --out; load_model's checks
>>> data = f.prepare(read_csv("data.csv"))                # the model's series space, built once
>>> grid = f.predict_grid(data, n_points=100, level=0.9)   # model-space rows, original units
>>> scores, pred = f.evaluate_data(data)                   # every method on the test split
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from levy_core.pipeline import (
    bands,
    evaluation,
    modelfile,
    predict,
    prepared,
    recipe,
    user_frames,
    user_units,
)
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.prepared import ModelData

if TYPE_CHECKING:
    from levy_core.data import Observations
    from levy_core.data.drift import DriftReport

__all__ = ["FittedModel", "FittedVerbs", "ModelData"]  # the types of ``fitted`` and of ``prepare``'s data


class FittedVerbs:
    """The fitted-model verbs of [`LevyForecaster`][levy_core.forecast.forecaster.LevyForecaster]
    (its base class). Every method needs a fitted model (``fit``, ``fit_observations``,
    ``load``, ``open_model``); ``ValueError`` otherwise."""

    fitted: FittedModel | None

    def _require_fitted(self) -> FittedModel:
        """The fitted model; ValueError before ``fit`` or ``load``."""
        if self.fitted is None:
            raise ValueError("fit the forecaster first (f.fit(df)) or load one (LevyForecaster.load(path))")
        return self.fitted

    # ------------------------------------------------------------------ the model file
    @staticmethod
    def check_save_target(directory: str | Path) -> None:
        """Refuse, before a fit, a ``directory`` a save would refuse: a symbolic link, a file,
        or a directory holding anything but a model (``UnsafeTargetError``)."""
        modelfile.check_save_target(directory)

    @staticmethod
    def file_sha256(path: str | Path) -> str:
        """The SHA-256 of a file's bytes as stored (``model.json``'s ``source_sha256``: which
        file, byte for byte, a model was fitted on)."""
        return modelfile.file_sha256(path)

    def size_name(self) -> str:
        """The fitted model's size preset (``"small"``, ``"medium"``, ``"large"``; ``"custom"``)."""
        return recipe.size_name(self._require_fitted().model_config)

    # ------------------------------------------------------------------ data in the model's space
    def prepare(self, obs: Observations) -> ModelData:
        """``obs`` in the fitted model's series space, normalised with its scaler, built once
        for every verb below. ``DataError`` naming a channel the model was never trained on."""
        return prepared.prepare(self._require_fitted(), obs)

    def drift_report(self, data: Observations | ModelData) -> DriftReport:
        """How ``data`` differs from what the model learned from, per channel (values outside
        the training range, sampling far sparser or denser); "not checked" for a model saved
        before drift statistics were recorded."""
        return user_frames.drift_report(self._require_fitted(), data)

    # ------------------------------------------------------------------ predictions
    def predict_grid(self, data: Observations | ModelData, *, n_points: int = 200,
                     level: float = 0.9) -> pd.DataFrame:
        """Mean, σ̂, bands (``level`` a fraction) and diagnostics on a grid of ``n_points``
        times per series and channel; model-space series and hours (``data.clock.to_user``
        maps them), values in original units. ``attrs["skipped_series"]``: series with no
        observation to predict from."""
        return predict.predict_grid(self._require_fitted(), data, n_points=n_points, level=level)

    def predict_future(self, data: Observations | ModelData, horizon: float, *, n_points: int = 50,
                       level: float = 0.9, freq: str | None = None) -> pd.DataFrame:
        """Forecasts past each series' last observation, up to ``horizon`` hours after it, in
        the user's ids and clock (``n_points`` steps; on the calendar ``freq`` if given).
        ``attrs["beyond_horizon"]``: a note when the steps pass the horizon a fit on rolling
        origins was made for."""
        return predict.predict_future(self._require_fitted(), data, horizon, n_points=n_points, level=level, freq=freq)

    def predict_user_queries(self, data: Observations | ModelData, queries: pd.DataFrame, *,
                             level: float = 0.9) -> pd.DataFrame:
        """Predictions at ``n`` queries (``series_id, channel, time`` in the user's ids and
        clock, as ``read_queries`` returns them), one row each, in their order."""
        return user_frames.predict_user_queries(self._require_fitted(), data, queries, level=level)

    # ------------------------------------------------------------------ bands, in the user's units
    @staticmethod
    def band_levels(values: Sequence[float] | float) -> list[float]:
        """Band levels as fractions, from fractions (``0.9``) or percents (``90``); ``ValueError``
        for anything else (``levy predict --level``)."""
        return bands.band_levels(values)

    @staticmethod
    def level_label(level: float) -> str:
        """A level (fraction) as the percent its columns and messages write: ``0.9`` -> ``"90"``."""
        return bands.level_label(level)

    def band_kind(self, requested: str, level: float) -> str:
        """The band ``requested`` (``auto``, ``gaussian``, ``conformal``, ``adaptive``) resolved for
        this model at ``level``: ``auto`` is adaptive where the fit walked that level, split
        conformal otherwise."""
        return bands.band_kind(requested, self._require_fitted(), level)

    def level_bands(self, pred: pd.DataFrame, levels: Sequence[float],
                    band: str = "auto") -> tuple[pd.DataFrame, list[str]]:
        """``lower_<L>, upper_<L>`` per level (fractions) for the rows of ``pred``, and the kind
        of band each level got."""
        return bands.level_bands(pred, self._require_fitted(), levels, band)

    def nixtla_frame(self, pred: pd.DataFrame, times: pd.Series | np.ndarray, band_columns: pd.DataFrame,
                     levels: Sequence[float]) -> pd.DataFrame:
        """``pred`` in NeuralForecast's columns: ``unique_id, ds, [channel,] Lévy, Lévy-lo-<L>,
        …, Lévy-hi-<L>``, ``ds`` the user's ``times``, the bands those of ``band_columns`` (`level_bands`)."""
        return bands.nixtla_frame(pred, times, band_columns, levels, self._require_fitted())

    # ------------------------------------------------------------------ the model's clock in words
    def clock(self) -> str | None:
        """The clock of the data the model was fitted on (a time unit or ``"datetime"``; None
        for a model saved before it was recorded)."""
        return user_units.clock_of(self._require_fitted())

    def duration_unit(self) -> str:
        """The unit a column of durations is written in for this model (``horizon_<unit>``)."""
        return user_units.unit_of(self._require_fitted())

    def horizon_column(self) -> str:
        """The name of a column of hours after each series' end in the user's unit
        (``horizon_days``, ``horizon_hours``)."""
        return user_units.horizon_column(self._require_fitted())

    def in_duration_unit(self, hours: np.ndarray) -> np.ndarray:
        """Durations ``(n,)`` in hours as ``(n,)`` numbers in [`duration_unit`][levy_core.forecast.verbs.FittedVerbs.duration_unit]'s unit."""
        return user_units.in_unit_of(self._require_fitted(), hours)

    # ------------------------------------------------------------------ scores
    def evaluate_data(self, data: Observations | ModelData, *,
                      mc_passes: int | None = None) -> tuple[dict[str, Any], pd.DataFrame]:
        """Every method scored on the test split (every series when the data are new): the
        JSON-ready dict ``levy evaluate`` writes and the per-query frame (model space)."""
        return evaluation.evaluate(self._require_fitted(), data, mc_passes=mc_passes)

    @staticmethod
    def user_predictions(pred: pd.DataFrame, data: ModelData) -> pd.DataFrame:
        """[`evaluate_data`][levy_core.forecast.verbs.FittedVerbs.evaluate_data]'s per-query frame in the user's ids and clock
        (``levy evaluate --predictions``)."""
        return user_frames.user_predictions(pred, data)

    def coverage_checks(self, pred: pd.DataFrame) -> pd.DataFrame:
        """Does each method's conformal band hold its level on the test split (one row per
        method and level, from [`evaluate_data`][levy_core.forecast.verbs.FittedVerbs.evaluate_data]'s per-query frame)?"""
        return evaluation.coverage_checks(self._require_fitted(), pred)
