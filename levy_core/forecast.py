"""The notebook API: fit on a DataFrame, predict DataFrames back, as NeuralForecast does.

>>> from levy_core import LevyForecaster
>>> f = LevyForecaster(size="small", epochs=20, seed=0).fit(df)      # unique_id, ds, y (or long/wide)
>>> f.predict(h="36h", level=[80, 90])                               # unique_id, ds, Lévy, Lévy-lo-90, …
>>> f.predict(queries, level=[90])                                   # at given (unique_id, ds[, channel])
>>> f.save("model_dir"); LevyForecaster.load("model_dir").predict(h="36h", df=new_df)

A thin layer over :mod:`levy_core.pipeline` (``fit``, ``predict_future``,
``predict_user_queries``) and :mod:`levy_core.nixtla` (the output convention): the numbers
are those of ``levy fit`` / ``levy predict --format nixtla`` on the same model and data.
Nothing is printed; progress only through the ``progress`` callback.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import pandas as pd

from levy_core import pipeline
from levy_core.data import (
    DATETIME,
    ColumnMapping,
    DataError,
    Observations,
    from_frame,
    parse_duration,
    read_queries,
    to_user_time,
    user_time_unit,
)
from levy_core.drift import DriftReport
from levy_core.nixtla import BAND_KINDS, band_levels, level_bands, nixtla_frame
from levy_core.tasks import TaskConfig
from levy_core.train import Progress, TrainConfig

__all__ = ["BeyondHorizonWarning", "LevyForecaster"]


class BeyondHorizonWarning(UserWarning):
    """Queries further ahead than the fit on rolling origins was trained and calibrated for."""


class LevyForecaster:
    """Fit once on a DataFrame, predict DataFrames back, in the user's ids and clock.

    Parameters
    ----------
    size : {"auto", "small", "medium", "large"}
        The model's width (``levy fit --size``); ``"auto"``: medium on a frame of at least
        ``pipeline.AUTO_MEDIUM_MIN_SERIES`` series, small below.
    epochs : int
        Training epochs at most (early stopping may end sooner), at least 1.
    seed : int
        Seeds the split, the training and everything random: the same data and seed give the
        same model.
    season : str or float
        Few series: the seasonal offset's period ("24h", "1y", a number in the data's unit),
        "none", or "auto" (detected on the training part).
    task : {"forecast", "interpolate"}
    horizon : str or float, optional
        Forecast: how far ahead each training episode predicts ("36h", or a number in the
        data's unit); default as ``levy fit``.
    cutoff : float, optional
        Many series, forecast: where each series' history ends (hours).
    max_seconds : float, optional
        Training time budget per model.
    twin : bool
        Also train the MC-Dropout twin (for comparisons; predictions do not need it).
    phi : {"rate", "count"}
    time_unit : {"hours", "minutes", "seconds", "days"}
        Unit of numeric times (date-times are read as such).
    dayfirst : bool, optional
        Dates written as numbers (``02/01/2024``) in the frames and queries are day first
        (True) or month first (False); None: told from each column (a day over 12), refused
        when it cannot tell.
    date_format : str, optional
        The strptime format of every date-time text cell (``%d/%m/%Y %H:%M``), instead.
    progress : callable, optional
        Called with a :class:`~levy_core.train.Progress` after every epoch.

    Attributes
    ----------
    fitted : FittedModel or None
        The fitted model (None before :meth:`fit` or :meth:`load`).
    observations : Observations or None
        The data it was fitted on (None after :meth:`load`: pass ``df=`` to predict).
    mapping : ColumnMapping or None
        The column mapping given to :meth:`fit` (None: detected on each frame).
    """

    def __init__(self, *, size: str = "auto", epochs: int = 40, seed: int = 0, season: str | float = "auto",
                 task: Literal["forecast", "interpolate"] = "forecast", horizon: str | float | None = None,
                 cutoff: float | None = None, max_seconds: float | None = None, twin: bool = False,
                 phi: Literal["rate", "count"] = "rate", time_unit: str = "hours",
                 progress: Callable[[Progress], None] | None = None, dayfirst: bool | None = None,
                 date_format: str | None = None) -> None:
        pipeline.resolve_size(size, 0)  # ValueError for an unknown name, before any data is read
        if task not in ("forecast", "interpolate"):
            raise ValueError(f"task must be 'forecast' or 'interpolate', got {task!r}")
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be a whole number of at least 1, got {epochs!r}")
        self.size, self.epochs, self.seed, self.season, self.task = size, epochs, seed, season, task
        self.horizon, self.cutoff, self.max_seconds, self.twin, self.phi = horizon, cutoff, max_seconds, twin, phi
        self.time_unit, self.progress = time_unit, progress
        self.dayfirst, self.date_format = dayfirst, date_format
        self.fitted: pipeline.FittedModel | None = None
        self.observations: Observations | None = None
        self.mapping: ColumnMapping | None = None

    def fit(self, df: pd.DataFrame, *, mapping: ColumnMapping | None = None) -> LevyForecaster:
        """Fit (split, train, calibrate) on ``df`` and return ``self``.

        ``df``: long (``unique_id, ds, y`` or ``series_id, time, channel, value`` and the
        other aliases of :mod:`levy_core.data`) or wide, ``ds`` date-times or numbers;
        ``mapping`` overrides the detected columns (and is kept for the frames given to
        :meth:`predict` and :meth:`drift`). ``DataError`` for unusable data.
        """
        self.mapping = mapping
        obs = self._read(df)
        unit = obs.report.input_time_unit
        task = TaskConfig(self.task, cutoff=self.cutoff, horizon=self._hours(self.horizon, unit),
                          season=_season_hours(self.season, unit))
        train = TrainConfig(epochs=self.epochs, seed=self.seed, max_seconds=self.max_seconds)
        self.fitted = pipeline.fit(obs, task=task, train=train, size=self.size, train_twin=self.twin, phi=self.phi,
                                   progress=self.progress)
        self.observations = obs
        return self

    def predict(self, queries: pd.DataFrame | None = None, *, h: str | float | None = None,
                level: Sequence[float] | float = (90,), df: pd.DataFrame | None = None, points: int = 100,
                band: str = "auto") -> pd.DataFrame:
        """Forecasts past each series' end (``h``) or at given ``queries``, with bands.

        Parameters
        ----------
        queries : pandas.DataFrame, optional
            One row per query: a time (``ds``/``time``: date-times for date-time data, numbers
            in the data's unit otherwise) and, where the data have several, the series
            (``unique_id``/``series_id``) and channel.
        h : str or float, optional
            How far past each series' last observation: "36h", "2w", or a number in the
            data's unit (as ``levy predict --horizon``); ``points`` steps over it, for every
            channel the series has observed.
        level : float or sequence of float
            Band levels in percent as NeuralForecast (``[80, 90]``), or fractions (0.9).
        df : pandas.DataFrame, optional
            The observations to predict from (new series, or later data); default: the data
            the model was fitted on.
        points : int
            Steps per series and channel over ``h``.
        band : {"auto", "gaussian", "conformal", "adaptive"}
            As ``levy predict --band``: ``auto`` is adaptive conformal for a fit on rolling
            origins (few series), split conformal otherwise.

        Returns
        -------
        pandas.DataFrame
            ``unique_id, ds, [channel,] Lévy, Lévy-lo-<L>, …, Lévy-hi-<L>`` (``channel``
            when the model has several), one row per query (``queries``: in their order) or
            per (series, channel, step); ``ds`` in the user's clock: date-times (naive when
            the input's were, UTC otherwise) or numbers in the data's unit.
        """
        fitted, obs = self._require_fitted(), self._observations(df)
        if band not in BAND_KINDS:
            raise ValueError(f"band must be one of {', '.join(BAND_KINDS)}, got {band!r}")
        levels = band_levels(level)
        if (queries is None) == (h is None):
            raise ValueError("give either h= (a horizon past each series' end, e.g. '36h') or a DataFrame of "
                             "queries, not both and not neither")
        data = pipeline.prepare(fitted, obs)
        if queries is not None:
            asked = read_queries(queries, obs, dayfirst=self.dayfirst, date_format=self.date_format)
            pred = pipeline.predict_user_queries(fitted, data, asked, level=levels[0])
        else:
            hours = parse_duration(h, obs.report.input_time_unit)
            pred = pipeline.predict_future(fitted, data, hours, n_points=points, level=levels[0])
        if pred.attrs.get("beyond_horizon"):  # a library does not print: a warning the caller can filter
            warnings.warn(pred.attrs["beyond_horizon"], BeyondHorizonWarning, stacklevel=2)
        bands, _ = level_bands(pred, fitted, levels, band)
        return nixtla_frame(pred, _user_times(pred, obs), bands, levels, fitted)

    def drift(self, df: pd.DataFrame | None = None) -> DriftReport:
        """How ``df`` (default: the fitted data) differs from what the model learned from, per
        channel (:mod:`levy_core.drift`): ``.flags`` (a DataFrame) and ``.messages``."""
        return pipeline.drift_report(self._require_fitted(), self._observations(df))

    def save(self, directory: str | Path) -> Path:
        """Write the model directory (``model.json`` and safetensors, as ``levy fit --out``)."""
        return self._require_fitted().save(directory)

    @classmethod
    def load(cls, directory: str | Path) -> LevyForecaster:
        """A forecaster around a model directory (``levy fit --out`` or :meth:`save`),
        validated as :func:`~levy_core.pipeline.load_model` does; predict with ``df=``."""
        forecaster = cls()
        forecaster.fitted = pipeline.load_model(directory)
        return forecaster

    def _read(self, df: pd.DataFrame) -> Observations:
        """``df`` as observations, read with the fit's column mapping (detected when none)."""
        if not isinstance(df, pd.DataFrame):
            raise DataError(f"expected a pandas DataFrame of observations, got {type(df).__name__}")
        return from_frame(df, mapping=self.mapping, time_unit=self.time_unit, dayfirst=self.dayfirst,
                          date_format=self.date_format)

    def _observations(self, df: pd.DataFrame | None) -> Observations:
        if df is not None:
            return self._read(df)
        if self.observations is None:
            raise ValueError("this forecaster holds no data (it was loaded from a directory): pass df=, the "
                             "observations to predict from")
        return self.observations

    def _require_fitted(self) -> pipeline.FittedModel:
        if self.fitted is None:
            raise ValueError("fit the forecaster first (f.fit(df)) or load one (LevyForecaster.load(directory))")
        return self.fitted

    @staticmethod
    def _hours(value: str | float | None, unit: str) -> float | None:
        return None if value is None else parse_duration(value, unit)


def _season_hours(season: str | float, unit: str) -> float | None:
    """``"auto"`` -> None (detect), ``"none"`` -> 0, a duration -> hours (as ``levy fit --season``)."""
    if isinstance(season, str) and season.strip().lower() in ("auto", "none"):
        return None if season.strip().lower() == "auto" else 0.0
    return parse_duration(season, unit)


def _user_times(pred: pd.DataFrame, obs: Observations) -> pd.Series:
    """Prediction times in the user's clock; date-times naive when the input's were."""
    times = to_user_time(pred["series_id"], pred["time"], obs)
    if user_time_unit(obs) == DATETIME and not obs.report.input_has_offsets:
        times = times.dt.tz_localize(None)  # naive in, naive out: the user's frames join on it
    return times
