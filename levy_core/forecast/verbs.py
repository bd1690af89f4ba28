"""The verbs a front end runs on a fitted model, on data it has read once (``Observations``)
and prepared once ([`prepare`][levy_core.forecast.verbs.FittedVerbs.prepare]): what ``levy fit`` /
``predict`` / ``evaluate`` / ``advise`` / ``rank`` and the dashboard's panels ask of a model.
[`LevyForecaster`][levy_core.forecast.forecaster.LevyForecaster] inherits them (its ``fitted``);
``FittedVerbs(fitted)`` wraps a model a front end already holds (a cached fit, an upload).
Each verb is one step of the library's internal pipeline (``levy_core.pipeline``) on the
same model: the numbers of the DataFrame verbs (``LevyForecaster.predict``, ``evaluate``),
which read a frame and prepare it on every call.

>>> f = LevyForecaster.open_model("runs/demo")            # levy fit --out; load_model's checks
>>> data = f.prepare(read_csv("data.csv"))                # the model's series space, built once
>>> grid = f.predict_grid(data, n_points=100, level=0.9)   # model-space rows, original units
>>> scores, pred = f.evaluate_data(data)                   # every method on the test split

Levels here are fractions (``0.9``), as ``levy predict --level`` reads them once
([`band_levels`][levy_core.forecast.verbs.FittedVerbs.band_levels]); times are hours on the
model's clock, said in the user's by the clock verbs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from levy_core.episodes.origins import plan_origins
from levy_core.episodes.tasks import MIN_SERIES_FOR_SERIES_SPLIT, TaskConfig
from levy_core.episodes.transforms import TransformSpec, parse_transform
from levy_core.pipeline import (
    band_per_query,
    bands,
    diagnostics,
    evaluation,
    modelfile,
    predict,
    prepared,
    ranking,
    recipe,
    user_frames,
    user_units,
)
from levy_core.pipeline.band_per_query import CONSTANT, GROUPINGS, SelectiveRisk
from levy_core.pipeline.evaluation import LEVELS, PRED_COLUMNS
from levy_core.pipeline.modelfile import FittedModel, ModelLoadError
from levy_core.pipeline.prepared import ModelData
from levy_core.training.train import Progress, TrainConfig

if TYPE_CHECKING:
    from levy_core.data import Observations
    from levy_core.data.drift import DriftReport

__all__ = ["CONSTANT", "GROUPINGS", "LEVELS", "MIN_SERIES_FOR_SERIES_SPLIT", "PRED_COLUMNS",
           "FittedModel", "FittedVerbs", "ModelData", "ModelLoadError", "SelectiveRisk"]
# the types and constants the verbs' arguments and results use: a fitted model, prepared data, the
# per-query groupings and their reference spread, the levels scored, the columns of a per-query frame


class FittedVerbs:
    """A fitted model and the verbs every front end runs on it (the base of
    [`LevyForecaster`][levy_core.forecast.forecaster.LevyForecaster]).

    Parameters
    ----------
    fitted : FittedModel, optional
        The model (``LevyForecaster``: set by ``fit``, ``load``, ``open_model``). A verb that
        needs it raises ``ValueError`` while it is None.
    """

    def __init__(self, fitted: FittedModel | None = None) -> None:
        self.fitted = fitted

    def _require_fitted(self) -> FittedModel:
        """The fitted model; ValueError before ``fit`` or ``load``."""
        if self.fitted is None:
            raise ValueError("fit the forecaster first (f.fit(df)) or load one (LevyForecaster.load(path))")
        return self.fitted

    # ------------------------------------------------------------------ fitting
    @staticmethod
    def fitted_on(obs: Observations, *, task: Mapping[str, Any] | None = None,
                  train: Mapping[str, Any] | None = None, size: str = "auto", twin: bool = True,
                  mc_passes: int = 20, phi: Literal["rate", "count"] = "rate",
                  progress: Callable[[Progress], None] | None = None,
                  preview: Callable[[Progress, Callable[[], FittedModel]], None] | None = None,
                  transform: TransformSpec = "auto") -> FittedVerbs:
        """Split, train and calibrate on ``obs``: ``task`` and ``train`` the fields of a task
        (kind, cutoff, horizon, season, …) and of a training run (epochs, seed, max_seconds,
        …), as plain mappings (they cross process boundaries); ``twin`` trains the MC-Dropout
        twin with ``mc_passes``; ``preview(progress, build)`` is called as the model improves
        (``build()`` a model of the epoch); ``transform`` per channel (a text is parsed). The
        verbs of the new model (``LevyForecaster`` fits with ``fit`` / ``fit_observations``)."""
        spec = parse_transform(transform) if isinstance(transform, str) else transform
        return FittedVerbs(recipe.fit(obs, task=None if task is None else TaskConfig(**task),
                                      train=None if train is None else TrainConfig(**train), size=size,
                                      train_twin=twin, mc_passes=mc_passes, phi=phi, progress=progress,
                                      preview=preview, transform=spec))

    def with_twin(self, obs: Observations, *, mc_passes: int = 20,
                  progress: Callable[[Progress], None] | None = None) -> FittedModel:
        """A copy of the model with its MC-Dropout twin, trained and calibrated on ``obs`` as a
        fit with the twin would have (same split and seed)."""
        return recipe.add_twin(self._require_fitted(), obs, mc_passes=mc_passes, progress=progress)

    @staticmethod
    def parse_transform(text: str) -> TransformSpec:
        """``"auto"``, ``"none"``, ``"log"``, ``"log1p"`` or ``"bili=log,albumin=none"`` as a
        transform spec; ``ValueError`` naming a bad kind."""
        return parse_transform(text)

    @staticmethod
    def preload() -> None:
        """Import what a fit imports on first use, now (a server before its first fit)."""
        from levy_core.pipeline.preload import preload_fit

        preload_fit()

    @staticmethod
    def cutoff_range(obs: Observations, seed: int = 0) -> tuple[float, float, float]:
        """(min, max, default) of one forecast cut-off for every series of ``obs``, hours."""
        return recipe.cutoff_range(obs, seed)

    @staticmethod
    def own_cutoffs_by_default(obs: Observations, seed: int = 0) -> bool:
        """Whether a forecast fit of ``obs`` gives each series its own cut-off by default."""
        return recipe.own_cutoffs_by_default(obs, seed)

    @staticmethod
    def default_horizon(frame: pd.DataFrame) -> float:
        """The horizon (hours) a fit on rolling origins plans for ``frame`` when none is given."""
        return plan_origins(frame).horizon

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
    def predict_grid(self, data: Observations | ModelData, series_ids: list[str] | None = None,
                     channels: list[str] | None = None, *, n_points: int = 200, level: float = 0.9,
                     mc_passes: int = 0) -> pd.DataFrame:
        """Mean, σ̂, bands at ``level`` and diagnostics on a grid of ``n_points`` times per series
        and channel (default: every series, the channels each observed), MC-Dropout beside with
        ``mc_passes``; model-space series and hours (``data.clock.to_user`` maps them), values in
        original units. ``attrs["skipped_series"]``: series with nothing to predict from."""
        return predict.predict_grid(self._require_fitted(), data, series_ids, channels, n_points=n_points,
                                    level=level, mc_passes=mc_passes)

    def predict_future(self, data: Observations | ModelData, horizon: float, *, n_points: int = 50,
                       series_ids: list[str] | None = None, channels: list[str] | None = None,
                       level: float = 0.9, mc_passes: int = 0, freq: str | None = None) -> pd.DataFrame:
        """Forecasts past each series' last observation, up to ``horizon`` hours after it
        (``n_points`` steps; on the calendar ``freq`` if given), in the user's ids and clock.
        ``attrs["beyond_horizon"]``: a note when the steps pass the horizon a fit on rolling
        origins was made for."""
        return predict.predict_future(self._require_fitted(), data, horizon, n_points=n_points, series_ids=series_ids,
                                      channels=channels, level=level, mc_passes=mc_passes, freq=freq)

    def predict_queries(self, data: Observations | ModelData, queries: pd.DataFrame, *, level: float = 0.9,
                        mc_passes: int = 0) -> pd.DataFrame:
        """Predictions at ``n`` queries given in the model's space (``series_id, channel, time``),
        each from its series' held-out context; one row each."""
        return predict.predict_queries(self._require_fitted(), data, queries, level=level, mc_passes=mc_passes)

    def predict_user_queries(self, data: Observations | ModelData, queries: pd.DataFrame, *,
                             level: float = 0.9, mc_passes: int = 0) -> pd.DataFrame:
        """Predictions at ``n`` queries (``series_id, channel, time`` in the user's ids and
        clock, as ``read_queries`` returns them), one row each, in their order; MC-Dropout
        beside with ``mc_passes``."""
        return user_frames.predict_user_queries(self._require_fitted(), data, queries, level=level,
                                                mc_passes=mc_passes)

    def split_predictions(self, data: Observations | ModelData, role: str = "test", *, mc_passes: int = 0,
                          level: float = 0.9) -> pd.DataFrame:
        """Predictions at every observed query of a split (``"test"``; every series when the
        data are not the fit's), model space."""
        return predict.split_predictions(self._require_fitted(), data, role, mc_passes=mc_passes, level=level)

    # ------------------------------------------------------------------ bands
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

    def with_bands(self, frame: pd.DataFrame, level: float, kind: str) -> pd.DataFrame:
        """``frame`` (rows of a prediction) with ``lower``/``upper`` of the ``kind`` band at
        ``level``, in original units."""
        return user_frames.with_bands(frame, self._require_fitted(), level, kind)

    def nixtla_frame(self, pred: pd.DataFrame, times: pd.Series | np.ndarray, band_columns: pd.DataFrame,
                     levels: Sequence[float]) -> pd.DataFrame:
        """``pred`` in NeuralForecast's columns: ``unique_id, ds, [channel,] Lévy, Lévy-lo-<L>,
        …, Lévy-hi-<L>``, ``ds`` the user's ``times``, the bands those of ``band_columns``
        ([`level_bands`][levy_core.forecast.verbs.FittedVerbs.level_bands])."""
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
        """Durations ``(n,)`` in hours as ``(n,)`` numbers in the unit of
        [`duration_unit`][levy_core.forecast.verbs.FittedVerbs.duration_unit]."""
        return user_units.in_unit_of(self._require_fitted(), hours)

    def duration_text(self, hours: float) -> str:
        """A duration on the model's clock in the user's words (``"730 days"``, ``"6.9 months"``)."""
        return user_units.duration_of(self._require_fitted(), hours)

    def time_text(self, hours: float) -> str:
        """A time of the model's clock (hours) in the user's words (for date-times: a duration
        after each series' first observation)."""
        return user_units.time_of(self._require_fitted(), hours)

    def cutoff_text(self) -> str:
        """Where a forecast fit's history ends, in the user's words."""
        return user_units.cutoff_of(self._require_fitted())

    def readable_summary(self) -> dict[str, str | None]:
        """The fit in words on the data's clock (``model.json``'s summary)."""
        return user_units.readable_summary(self._require_fitted())

    # ------------------------------------------------------------------ scores
    def evaluate_data(self, data: Observations | ModelData, *, mc_passes: int | None = None,
                      sampler_draws: int = 50, sampler_queries: int = 4000) -> tuple[dict[str, Any], pd.DataFrame]:
        """Every method scored on the test split (every series when the data are new): the
        JSON-ready dict ``levy evaluate`` writes and the per-query frame (model space,
        `PRED_COLUMNS` and more)."""
        return evaluation.evaluate(self._require_fitted(), data, mc_passes=mc_passes, sampler_draws=sampler_draws,
                                   sampler_queries=sampler_queries)

    @staticmethod
    def user_predictions(pred: pd.DataFrame, data: ModelData, *, fill_missing: bool = True) -> pd.DataFrame:
        """[`evaluate_data`][levy_core.forecast.verbs.FittedVerbs.evaluate_data]'s per-query frame
        in the user's ids and clock (``levy evaluate --predictions``); ``fill_missing``: the
        MC-Dropout columns kept (empty) for a model without its twin (False: only those present)."""
        return user_frames.user_predictions(pred, data, fill_missing=fill_missing)

    def coverage_checks(self, pred: pd.DataFrame, *, levels: tuple[float, ...] = LEVELS,
                        calibration_series: int | None = None, z: float = 3.0) -> pd.DataFrame:
        """Does each method's conformal band hold its level on the test split (one row per
        method and level of ``levels``, from a per-query frame)?"""
        return evaluation.coverage_checks(self._require_fitted(), pred, levels=levels,
                                          calibration_series=calibration_series, z=z)

    def calibration_curves(self, pred: pd.DataFrame, levels: np.ndarray | None = None) -> dict[str, Any]:
        """Reliability, PIT, risk and oracle curves of each method on a per-query frame."""
        return evaluation.calibration_curves(self._require_fitted(), pred, levels)

    def channel_coverage(self, pred: pd.DataFrame, level: float) -> pd.DataFrame:
        """Each method's conformal band at ``level``, per channel: ``channel, method, coverage, n``."""
        return evaluation.channel_coverage(self._require_fitted(), pred, level)

    def sampler_check(self, data: Observations | ModelData, *, n_draws: int = 50,
                      max_queries: int = 4000) -> dict[str, Any]:
        """The ``n_draws``-draw sampler's CRPS beside the closed form's, on at most
        ``max_queries`` test queries."""
        return evaluation.sampler_check(self._require_fitted(), data, n_draws=n_draws, max_queries=max_queries)

    def rank(self, data: Observations | ModelData, *, points_per_channel: int = 2,
             batch_series: int = ranking.RANK_BATCH_SERIES) -> tuple[pd.DataFrame, float]:
        """Every series ranked by trust, and the seconds scoring took (``levy rank``)."""
        return ranking.rank(self._require_fitted(), data, points_per_channel=points_per_channel,
                            batch_series=batch_series)

    def coverage_by_group(self, pred: pd.DataFrame, level: float = 0.9, n_bins: int = 5) -> pd.DataFrame:
        """Coverage of the ``level`` band per quantile bin of its width, of ``n_eff`` and of the lead."""
        return band_per_query.coverage_by_group(self._require_fitted(), pred, level, n_bins)

    def selective_risk(self, pred: pd.DataFrame, level: float = 0.9, n_points: int = 101) -> SelectiveRisk:
        """Risk against coverage as queries are kept by their ``level`` band's half-width, beside
        the per-channel constant spread (`CONSTANT`)."""
        return band_per_query.selective_risk(self._require_fitted(), pred, level, n_points)

    @staticmethod
    def off_bins(table: pd.DataFrame, level: float, *, tolerance: float = 0.03, z: float = 3.0) -> pd.DataFrame:
        """The rows of a [`coverage_by_group`][levy_core.forecast.verbs.FittedVerbs.coverage_by_group]
        table more than ``tolerance`` and ``z`` standard errors from ``level``."""
        return band_per_query.off_bins(table, level, tolerance=tolerance, z=z)

    # ------------------------------------------------------------------ one query, looked into
    def attention_weights(self, data: Observations | ModelData, series_id: str, channel: str,
                          time_: float) -> pd.DataFrame:
        """The attention one query (series, channel, hour) pays each observation of its context."""
        return diagnostics.attention_weights(self._require_fitted(), data, series_id, channel, time_)

    def operator_draws(self, data: Observations | ModelData, series_id: str, channel: str, time_: float, *,
                       n_draws: int = 2000, seed: int = 0) -> dict[str, Any]:
        """``n_draws`` Monte-Carlo draws of the operator at one query, beside its closed form."""
        return diagnostics.operator_draws(self._require_fitted(), data, series_id, channel, time_, n_draws=n_draws,
                                          seed=seed)

    @staticmethod
    def query_crps(draws: dict[str, Any], y_true: float, n_sampler: int = 50) -> dict[str, float]:
        """The CRPS of one query's closed form and of its first ``n_sampler`` draws at ``y_true``."""
        return diagnostics.query_crps(draws, y_true, n_sampler)

    @staticmethod
    def width_factors(query: pd.Series, reference: pd.DataFrame) -> dict[str, float | str]:
        """One query's σ̂ against the median reference query's, factor by factor (evidence,
        disagreement)."""
        return diagnostics.width_factors(query, reference)
