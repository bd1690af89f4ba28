"""The notebook API: fit on a DataFrame, predict, evaluate and backtest DataFrames back, as
NeuralForecast and StatsForecast do.

>>> from levy_core import LevyForecaster
>>> f = LevyForecaster(size="small", epochs=20, seed=0).fit(df)      # unique_id, ds, y (or long/wide)
>>> f.predict(h="36h", level=[80, 90])                               # unique_id, ds, Lévy, Lévy-lo-90, …
>>> f.predict(queries, level=[90])                                   # at given (unique_id, ds[, channel])
>>> print(f.evaluate(df, level=[80, 90]))                            # Evaluation: MSE, CRPS, coverage, width
>>> f.backtest(df, n_windows=3, h="36h").to_frame()                  # rolling cut-offs, a model per window
>>> f.save("model_dir"); LevyForecaster.load("model_dir").predict(h="36h", df=df)   # or "model.zip"
>>> LevyForecaster(time_col="day", time_unit="days").fit(pbc)        # name the columns, once: recorded

A thin layer over [`levy_core.pipeline`][levy_core.pipeline] (``fit``, ``predict_future``,
``predict_user_queries``, ``evaluate``, ``predict_after_end``) and `levy_core.pipeline.bands`
(the output convention): the numbers are those of ``levy fit`` / ``levy predict --format
nixtla`` / ``levy evaluate`` on the same model and data. Levels are percents
(``level=[80, 90]``). Nothing is printed; progress only through the ``progress`` callback.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from levy_core.data import (
    TIME_UNITS,
    ColumnMapping,
    ColumnNames,
    DataError,
    Observations,
    RecordedReading,
    detect_mapping,
    from_frame,
    parse_duration,
    read_queries,
)
from levy_core.data.calendar import check_freq
from levy_core.data.drift import DriftReport
from levy_core.data.recorded import calendar_of
from levy_core.episodes.tasks import TaskConfig, cutoff_fraction_of
from levy_core.episodes.transforms import KINDS, TransformSpec, parse_transform
from levy_core.forecast import windows as forecast_windows
from levy_core.forecast.results import Backtest, Evaluation, fraction
from levy_core.forecast.saved import open_saved_model, saved_settings
from levy_core.forecast.verbs import FittedVerbs
from levy_core.pipeline import modelfile, prepared, recipe, user_frames
from levy_core.pipeline import predict as pipeline_predict
from levy_core.pipeline.bands import (
    BAND_KINDS,
    level_bands,
    nixtla_frame,
    percent_levels,
    unbounded_note,
)
from levy_core.serving.modelzip import model_zip_bytes
from levy_core.serving.table_writer import atomic_output
from levy_core.training.train import Progress, TrainConfig

__all__ = ["Backtest", "BeyondHorizonWarning", "DataNoteWarning", "Evaluation", "LevyForecaster", "UnboundedBandWarning"]


class BeyondHorizonWarning(UserWarning):
    """Queries further ahead than the fit on rolling origins was trained and calibrated for."""


class DataNoteWarning(UserWarning):
    """What reading the data changed, as ``levy`` notes it: duplicate rows averaged."""


class UnboundedBandWarning(UserWarning):
    """A band asked for came out infinite: too few calibration errors for its level."""


class LevyForecaster(FittedVerbs):
    """Fit once on a DataFrame; predict, evaluate and backtest, in the user's ids and clock.

    Parameters
    ----------
    size : {"auto", "small", "medium", "large"}
        The model's width (``levy fit --size``); ``"auto"``: medium on a frame of at least
        ``levy_core.model.sizes.AUTO_MEDIUM_MIN_SERIES`` series, small below.
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
    cutoff : float or str, optional
        Many series, forecast: where each series' history ends. One time for every series: a
        number (hours) or a duration text (``"730d"``, or a number in the data's unit as
        ``"667"``); or each series' own, at a share of its observed span: ``"60%"``, or
        ``"auto"`` (``"50%"``). Default (None): the median series midpoint, or each series'
        own midpoint where one time would leave series out that it keeps in (a panel with
        different follow-ups). The rule is recorded in the model (``task.cutoff_fraction``)
        and used again by [`evaluate`][levy_core.forecast.forecaster.LevyForecaster.evaluate] and the predictions' held-out split.
    max_seconds : float, optional
        Training time budget per model.
    twin : bool
        Also train the MC-Dropout twin (for comparisons; predictions do not need it).
    phi : {"rate", "count"}
    transform : str or mapping of str to str
        Each channel's value transform (``levy fit --transform``): ``"auto"`` (log for
        strictly positive skewed channels, log1p for non-negative skewed ones with zeros),
        ``"none"``, ``"log"``, ``"log1p"``, channel -> kind, or the text
        ``"bili=log,albumin=none"``. The model is fitted and calibrated on the transformed
        values; means and bands come back mapped with the inverse (the mean is the median).
    time_unit : {"hours", "minutes", "seconds", "days"}
        Unit of numeric times (date-times are read as such). Recorded in the saved model:
        [`load`][levy_core.forecast.forecaster.LevyForecaster.load] reads later frames in it.
    id_col, time_col, value_col, channel_col : str, optional
        The columns of series ids, times, values and channel names (NeuralForecast's
        ``id_col``, ``time_col``, ``target_col``); each left out is found by its name
        (``unique_id``/``id``, ``ds``/``time``/``date``/``day``, ``y``/``value``, ``channel``).
        ``value_col`` or ``channel_col``: the long form.
    channels : sequence of str, optional
        The wide form: the columns that hold measurements, one channel each (instead of
        ``value_col``/``channel_col``). The columns named are recorded in the saved model and
        reused for every later frame ([`predict`][levy_core.forecast.forecaster.LevyForecaster.predict]'s ``df=``, after [`load`][levy_core.forecast.forecaster.LevyForecaster.load] too).
    dayfirst : bool, optional
        Dates written as numbers (``02/01/2024``) in the frames and queries are day first
        (True) or month first (False); None: told from each column (a day over 12), refused
        when it cannot tell.
    date_format : str, optional
        The strptime format of every date-time text cell (``%d/%m/%Y %H:%M``), instead.
    freq : str, optional
        Date-time data: the calendar ``predict(h=…)`` steps on (``"W-SAT"``, ``"MS"``, …; default: found, and saved).
    progress : callable, optional
        Called with a [`Progress`][levy_core.training.train.Progress] after every epoch.

    Attributes
    ----------
    fitted : FittedModel or None
        The fitted model (None before [`fit`][levy_core.forecast.forecaster.LevyForecaster.fit] or [`load`][levy_core.forecast.forecaster.LevyForecaster.load]); [`save`][levy_core.forecast.forecaster.LevyForecaster.save] writes it
        as a directory or a zip of the same files.
    observations : Observations or None
        The data it was fitted on (None after [`load`][levy_core.forecast.forecaster.LevyForecaster.load]: pass ``df=`` to predict).
    mapping : ColumnMapping or None
        The column mapping given to [`fit`][levy_core.forecast.forecaster.LevyForecaster.fit] (None: detected on each frame).
    columns : ColumnNames
        The columns named (``id_col=``, ``time_col=``, ...; a loaded model's recorded ones).
    """

    def __init__(self, *, size: str = "auto", epochs: int = 40, seed: int = 0, season: str | float = "auto",
                 task: Literal["forecast", "interpolate"] = "forecast", horizon: str | float | None = None,
                 cutoff: float | str | None = None, max_seconds: float | None = None, twin: bool = False,
                 phi: Literal["rate", "count"] = "rate", time_unit: str = "hours",
                 progress: Callable[[Progress], None] | None = None, dayfirst: bool | None = None,
                 date_format: str | None = None, transform: TransformSpec = "auto", id_col: str | None = None,
                 time_col: str | None = None, value_col: str | None = None, channel_col: str | None = None,
                 channels: Sequence[str] | None = None, freq: str | None = None) -> None:
        recipe.resolve_size(size, 0)  # ValueError for an unknown name, before any data is read
        if time_unit not in TIME_UNITS:
            raise ValueError(f"time_unit must be one of {', '.join(TIME_UNITS)}, got {time_unit!r}")
        if isinstance(channels, str):
            raise ValueError(f"channels must be a list of column names, e.g. ['bili', 'albumin'], got {channels!r}")
        self.columns = ColumnNames(series=id_col, time=time_col, value=value_col, channel=channel_col,
                                   channels=tuple(channels or ()))
        if task not in ("forecast", "interpolate"):
            raise ValueError(f"task must be 'forecast' or 'interpolate', got {task!r}")
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be a whole number of at least 1, got {epochs!r}")
        self.size, self.epochs, self.seed, self.season, self.task = size, epochs, seed, season, task
        cutoff_fraction_of(cutoff)  # DataError for a share out of range, before any data is read
        self.horizon, self.cutoff, self.max_seconds, self.twin, self.phi = horizon, cutoff, max_seconds, twin, phi
        self.time_unit, self.progress = time_unit, progress
        self.transform = parse_transform(transform) if isinstance(transform, str) else dict(transform)
        bad = sorted(str(k) for k in (self.transform.values() if isinstance(self.transform, dict) else [])
                     if k not in ("auto", *KINDS))
        if bad:
            raise ValueError(f"transform kind(s) {bad} unknown: use auto, none, log or log1p")
        self.dayfirst, self.date_format = dayfirst, date_format
        self.freq = None if freq is None else check_freq(freq)  # DataError (a ValueError): not a calendar
        self.fitted: modelfile.FittedModel | None = None
        self.observations: Observations | None = None
        self.mapping: ColumnMapping | None = None

    def fit(self, df: pd.DataFrame, *, mapping: ColumnMapping | None = None) -> LevyForecaster:
        """Fit (split, train, calibrate) on ``df`` and return ``self``.

        ``df``: long (``unique_id, ds, y`` or ``series_id, time, channel, value`` and the
        other aliases of [`levy_core.data`][levy_core.data]) or wide, ``ds`` date-times or numbers;
        ``mapping`` overrides the detected columns (and is kept for the frames given to
        [`predict`][levy_core.forecast.forecaster.LevyForecaster.predict] and [`drift`][levy_core.forecast.forecaster.LevyForecaster.drift]), instead of ``id_col=``/``time_col=``/...; how the
        data were read (columns, ``time_unit``, dates) is recorded in the model
        (``model.json``'s ``reading``) and reused after [`load`][levy_core.forecast.forecaster.LevyForecaster.load]. ``DataError`` for
        unusable data; ValueError for a ``mapping`` beside named columns.
        """
        if mapping is not None and not self.columns.empty:
            raise ValueError("give either mapping= or the column names (id_col=, time_col=, ...), not both")
        self.mapping = mapping
        obs = self._read(df)
        fitted = self._fit_observations(obs)
        fitted.reading = RecordedReading(
            columns=ColumnNames.from_mapping(mapping) if mapping is not None else self.columns,
            mapping=obs.report.mapping, time_unit=self.time_unit, clock=obs.report.input_time_unit,
            dayfirst=self.dayfirst, date_format=self.date_format, freq=calendar_of(obs, self.freq))
        self.fitted, self.observations = fitted, obs
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
            channel the series has observed (on the data's calendar, ``freq``, if it has one).
        level : float or sequence of float
            Band levels in percent, as NeuralForecast and StatsForecast (``[80, 90]``), each
            strictly between 0 and 100; a fraction (``0.9``) is refused with a ValueError.
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
        levels = [fraction(p) for p in percent_levels(level)]
        if (queries is None) == (h is None):
            raise ValueError("give either h= (a horizon past each series' end, e.g. '36h') or a DataFrame of "
                             "queries, not both and not neither")
        data = prepared.prepare(fitted, obs)
        if queries is not None:
            asked = read_queries(queries, obs, dayfirst=self.dayfirst, date_format=self.date_format)
            pred = user_frames.predict_user_queries(fitted, data, asked, level=None)  # its bands: level_bands
        else:
            hours = parse_duration(h, obs.report.input_time_unit)
            pred = pipeline_predict.predict_future(fitted, data, hours, n_points=points, level=None,
                                                   freq=forecast_windows.calendar(self.freq, fitted, obs))
        if pred.attrs.get("beyond_horizon"):  # a library does not print: a warning the caller can filter
            warnings.warn(pred.attrs["beyond_horizon"], BeyondHorizonWarning, stacklevel=2)
        bands, _ = level_bands(pred, fitted, levels, band)
        # the scores of the band these series take (a panel's new series: both held-out splits')
        note = unbounded_note(bands, levels, fitted.conformal_scores_count(pred["series_id"].astype(str).unique()))
        if note:
            warnings.warn(note[0].upper() + note[1:], UnboundedBandWarning, stacklevel=2)
        return nixtla_frame(pred, forecast_windows.user_times(pred["series_id"], pred["time"], obs), bands, levels,
                            fitted)

    def notes(self) -> list[str]:
        """What ``levy fit`` and the dashboard say in plain words about this fit, as
        sentences: a forecast that is the offset (the correction held back on one series, or
        training that did not improve on it: ``FittedModel.training_note``), and a band known to fall short at long leads on a
        persistent series without a season (``FittedModel.band_note``). Empty when neither
        applies."""
        fitted = self._require_fitted()
        return [note for note in (fitted.training_note(), fitted.band_note()) if note]

    def drift(self, df: pd.DataFrame | None = None) -> DriftReport:
        """How ``df`` (default: the fitted data) differs from what the model learned from, per
        channel ([`levy_core.data.drift`][levy_core.data.drift]): ``.flags`` (a DataFrame) and ``.messages``."""
        return user_frames.drift_report(self._require_fitted(), self._observations(df))

    def evaluate(self, df: pd.DataFrame, *, level: Sequence[float] | float = (80, 90), band: str = "auto",
                 mc_passes: int | None = None) -> Evaluation:
        """Score the fitted model on held-out data, as ``levy evaluate`` does.

        Parameters
        ----------
        df : pandas.DataFrame
            Observations in the format [`fit`][levy_core.forecast.forecaster.LevyForecaster.fit] reads. The frame the model was fitted on
            is scored on its test split (the series, or on a fit of few series the forecast
            origins, held out from training and calibration); any other frame on every
            series with context and queries (the task's split of each series: its cut-off,
            or its rolling origins).
        level : float or sequence of float
            Band levels, percents (``[80, 90]``).
        band : {"auto", "conformal", "gaussian"}
            The band scored at each level: ``auto`` is the adaptive conformal walk over the
            test origins where the fit walks the level (few series: ``predict`` draws the
            walk's final state), split conformal otherwise.
        mc_passes : int, optional
            MC-Dropout passes for a forecaster fitted with ``twin=True`` (default: the
            fit's); 0 leaves MC-Dropout out.

        Returns
        -------
        Evaluation
            ``n_queries``, per method (Lévy, MC-Dropout with a twin, the last-value
            baseline) ``mse, mae, crps, nll`` on the normalised scale (of the transformed
            values on a log / log1p channel: ``transform``), ``coverage`` and
            ``width`` per percent level; ``.to_frame()``, ``.summary()``; the per-query
            frame in ``.predictions`` and the pipeline's dict in ``.details``. The
            50-draw sampler of ``levy evaluate`` is not run.

        Raises
        ------
        ValueError
            Not fitted, a level that is not a percent, an unknown band.
        DataError
            Unusable data, or no series with both context and observations to score.
        """
        fitted = self._require_fitted()
        levels = percent_levels(level)
        return forecast_windows.evaluation(fitted, self._read(df), levels, band, mc_passes)

    def backtest(self, df: pd.DataFrame, *, n_windows: int = 3, h: str | float | None = None,
                 step: str | float | None = None, level: Sequence[float] | float = (80, 90), band: str = "auto",
                 refit: bool = True) -> Backtest:
        """Forecasts from rolling cut-offs, each window scored (StatsForecast's
        ``cross_validation``, for irregular times).

        Per series, window ``w`` (0 the earliest) cuts at ``end - h - (n_windows - 1 - w)
        · step`` (``end`` the series' last observation): the model forecasts every
        observation within ``h`` after the cut-off from the observations up to it, as
        [`predict`][levy_core.forecast.forecaster.LevyForecaster.predict] with ``h=`` forecasts past a series' end. Series with fewer than
        two observations before a cut-off sit that window out.

        What is fitted: with ``refit=True`` (the default) a new model per window, with this
        forecaster's settings (size, epochs, seed, season, task, horizon, …) on the
        observations up to that window's cut-offs; with ``refit=False`` one model, on the
        observations up to the earliest cut-offs, forecasts every window from its history
        (cheaper; later windows are further from its training data). No model ever sees an
        observation after the cut-off it forecasts from; this forecaster's own fitted model
        (if any) is neither used nor changed.

        Parameters
        ----------
        df : pandas.DataFrame
            Observations in the format [`fit`][levy_core.forecast.forecaster.LevyForecaster.fit] reads.
        n_windows : int
            Windows, at least 1.
        h : str or float, optional
            How far past each cut-off to forecast ("36h", or a number in the data's unit);
            default the forecaster's ``horizon``, else the fitted model's (a fit of few
            series).
        step : str or float, optional
            Between consecutive cut-offs; default ``h`` (windows that do not overlap).
        level : float or sequence of float
            Band levels, percents (``[80, 90]``).
        band : {"auto", "gaussian", "conformal", "adaptive"}
            As [`predict`][levy_core.forecast.forecaster.LevyForecaster.predict].
        refit : bool

        Returns
        -------
        Backtest
            ``.to_frame()``: ``unique_id, ds, [channel,] cutoff, window, y, Lévy,
            Lévy-lo-<L>, …, Lévy-hi-<L>``, one row per held-out observation;
            ``.scores()`` and ``.windows``: per window ``n_queries, mse, mae, crps, nll``
            (the normalised scale of the window's model, transformed values included), ``coverage`` and ``width`` per
            level; ``.overall()``, ``.summary()``. Beside them the last-value baseline,
            scored on the same queries the same way (``.baselines``, ``.scores("last
            value")``, ``.comparison()``: one row per method; ``.to_frame(baselines=True)``
            adds its forecasts).

        Raises
        ------
        ValueError
            No ``h`` to be found, a bad ``n_windows``, ``step``, level or band.
        DataError
            Unusable data, or a window without history or queries (its message says which).
        """
        if isinstance(n_windows, bool) or not isinstance(n_windows, int) or n_windows < 1:
            raise ValueError(f"n_windows must be a whole number of at least 1, got {n_windows!r}")
        if band not in BAND_KINDS:
            raise ValueError(f"band must be one of {', '.join(BAND_KINDS)}, got {band!r}")
        levels = percent_levels(level)
        obs = self._read(df)
        unit = obs.report.input_time_unit
        hours = self._backtest_horizon(h, unit)
        step_hours = hours if step is None else parse_duration(step, unit)
        scored, model = [], None
        for index, cut in enumerate(forecast_windows.cutoffs(obs, n_windows, hours, step_hours)):
            win = forecast_windows.window(obs, index, cut, hours, n_windows)
            if model is None or refit:
                model = self._fit_observations(win.history)
            scored.append(forecast_windows.score_window(model, win, obs, levels, band))
        notes = [w.note for w in scored if w.note]
        if notes:  # a library does not print: one warning the caller can filter
            warnings.warn(f"{len(notes)} of {n_windows} backtest windows: {notes[0]}", BeyondHorizonWarning,
                          stacklevel=2)
        baselines = sorted((b for w in scored for b in w.baselines), key=lambda b: b.method)  # stable: by window
        return Backtest(levels=tuple(levels), h=hours, step=step_hours, refit=refit,
                        windows=tuple(w.scores for w in scored),
                        forecasts=pd.concat([w.forecasts for w in scored], ignore_index=True),
                        baselines=tuple(baselines),
                        baseline_forecasts=pd.concat([w.baseline_forecasts for w in scored], ignore_index=True),
                        notes=forecast_windows.backtest_notes(pd.concat([w.forecasts for w in scored],
                                                                        ignore_index=True), levels), clock=obs.report.input_time_unit)

    def save(self, path: str | Path) -> Path:
        """Write the fitted model: a directory (``model.json`` and safetensors weights, as
        ``levy fit --out`` writes it), or, for a path ending in ``.zip``, the same files
        zipped (``levy_core.serving.modelzip``: the dashboard's download). Returns the path."""
        fitted = self._require_fitted()
        target = Path(path)
        if target.suffix.lower() != ".zip":
            return fitted.save(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(target) as tmp:  # renamed into place once complete
            tmp.write_bytes(model_zip_bytes(fitted))
        return target

    @classmethod
    def load(cls, path: str | Path | bytes) -> LevyForecaster:
        """A forecaster around a saved model; predict with ``df=``.

        Parameters
        ----------
        path : str, Path or bytes
            A model directory ([`save`][levy_core.forecast.forecaster.LevyForecaster.save], ``FittedModel.save``, ``levy fit --out``), its
            ``model.json``, a model zip ([`save`][levy_core.forecast.forecaster.LevyForecaster.save] to ``….zip``,
            ``modelzip.model_zip_bytes``, the dashboard's download), or a zip's bytes.
            Validated as [`load_model`][levy_core.pipeline.modelfile.load_model] and
            [`load_model_zip`][levy_core.serving.modelzip.load_model_zip] do (safetensors and bounded JSON
            only; nothing executable is loaded).

        Returns
        -------
        LevyForecaster
            Its settings (size, epochs, seed, task, phi, twin, max_seconds, transform) those the model
            was fitted with, so that [`backtest`][levy_core.forecast.forecaster.LevyForecaster.backtest] refits alike; the columns, ``time_unit`` and
            date options those it recorded (a model saved before they were recorded: found by
            name, hours); ``observations`` None.

        Raises
        ------
        ModelLoadError
            Nothing at ``path``, or not a saved model.
        """
        fitted = open_saved_model(path)
        forecaster = cls(**saved_settings(fitted))
        forecaster.fitted = fitted
        return forecaster

    @property
    def cutoff_share(self) -> float | None:
        """The share of each series' span where its own cut-off sits (``cutoff="60%"``: 0.6,
        ``"auto"``: 0.5); None for one time for every series (or the default)."""
        return cutoff_fraction_of(self.cutoff)

    @classmethod
    def open_model(cls, directory: str | Path) -> LevyForecaster:
        """A forecaster around the model directory ``levy fit --out`` writes, read and checked as
        ``levy predict MODEL`` reads it (no zip); settings as [`load`][levy_core.forecast.forecaster.LevyForecaster.load]'s.
        ``ModelLoadError``: nothing there, or not a saved model."""
        fitted = modelfile.load_model(directory)
        forecaster = cls(**saved_settings(fitted))
        forecaster.fitted = fitted
        return forecaster

    def fit_observations(self, obs: Observations) -> LevyForecaster:
        """Fit (split, train, calibrate) on observations already read (``levy fit``: a file read
        by chunks, its options recorded by the caller) with this forecaster's settings; ``self``.
        A number ``cutoff`` is hours; ``horizon`` and ``season`` are read on ``obs``'s clock."""
        self.fitted, self.observations = self._fit_observations(obs), obs
        return self

    def plot(self, unique_id: object = None, *, channel: str | None = None, h: str | float | None = None,
             level: float = 90, df: pd.DataFrame | None = None, points: int = 100, band: str = "auto",
             signals: bool = True) -> Any:
        """A plotly figure of one series (default: the first) and channel (default: its first):
        its history, the forecast over ``h`` (default: the forecaster's ``horizon=``) with its
        ``level`` percent band, the numbers [`predict`][levy_core.forecast.forecaster.LevyForecaster.predict]
        gives; with ``signals``, log evidence and disagreement beneath. Needs plotly (the
        ``dashboard`` extra); traces and errors: [`levy_core.forecast.plot`][levy_core.forecast.plot]."""
        from levy_core.forecast.plot import forecast_figure  # plotly is optional: imported here

        if h is None and self.horizon is None:
            raise ValueError("give h=, how far past the series' end to forecast (e.g. h='6h' or a number in "
                             "the data's unit)")
        return forecast_figure(self._require_fitted(), self._observations(df), unique_id=unique_id, channel=channel,
                               h=self.horizon if h is None else h, level=level, points=points, band=band,
                               signals=signals)

    def _read(self, df: pd.DataFrame) -> Observations:
        """``df`` as observations, read with the fit's column mapping (detected when none)."""
        if not isinstance(df, pd.DataFrame):
            raise DataError(f"expected a pandas DataFrame of observations, got {type(df).__name__}")
        if df.empty:
            raise DataError("the DataFrame is empty: give observations (e.g. columns unique_id, ds, y), at least two")
        mapping = self.mapping
        if mapping is None and not self.columns.empty:  # the named columns, the others found by name
            mapping = detect_mapping(df.loc[:, ~df.columns.duplicated()], self.columns)
        obs = from_frame(df, mapping=mapping, time_unit=self.time_unit, dayfirst=self.dayfirst,
                         date_format=self.date_format)
        for message in obs.report.messages:  # as the CLI's notes ("10 duplicates averaged"): a library does not print
            if "averaged" in message or "duplicate" in message:
                warnings.warn(message, DataNoteWarning, stacklevel=3)
        return obs

    def _observations(self, df: pd.DataFrame | None) -> Observations:
        if df is not None:
            return self._read(df)
        if self.observations is None:
            raise ValueError("this forecaster holds no data (it was loaded from a directory): pass df=, the "
                             "observations to predict from")
        return self.observations

    def _fit_observations(self, obs: Observations) -> modelfile.FittedModel:
        """Split, train and calibrate on ``obs`` with this forecaster's settings."""
        unit = obs.report.input_time_unit
        fraction = cutoff_fraction_of(self.cutoff)  # "auto", "60%": each series' own cut-off
        cutoff = self._hours(self.cutoff, unit) if isinstance(self.cutoff, str) and fraction is None else self.cutoff
        task = TaskConfig(self.task, cutoff=None if fraction is not None else cutoff,
                          horizon=self._hours(self.horizon, unit), season=_season_hours(self.season, unit),
                          cutoff_fraction=fraction)
        train = TrainConfig(epochs=self.epochs, seed=self.seed, max_seconds=self.max_seconds)
        return recipe.fit(obs, task=task, train=train, size=self.size, train_twin=self.twin, phi=self.phi,
                            progress=self.progress, transform=self.transform)

    def _backtest_horizon(self, h: str | float | None, unit: str) -> float:
        """The backtest's ``h`` in hours: given, the forecaster's horizon, or the fitted model's."""
        if h is not None:
            return parse_duration(h, unit)
        if self.horizon is not None:
            return parse_duration(self.horizon, unit)
        plan = self.fitted.split.origin_plan if self.fitted is not None and self.fitted.split.mode == "origin" else None
        if plan:
            return float(plan["horizon"])
        raise ValueError("give h=, how far past each cut-off to forecast (e.g. h='36h'), or set the forecaster's "
                         "horizon=")

    @staticmethod
    def _hours(value: str | float | None, unit: str) -> float | None:
        return None if value is None else parse_duration(value, unit)


def _season_hours(season: str | float, unit: str) -> float | None:
    """``"auto"`` -> None (detect), ``"none"`` -> 0, a duration -> hours (as ``levy fit --season``)."""
    if isinstance(season, str) and season.strip().lower() in ("auto", "none"):
        return None if season.strip().lower() == "auto" else 0.0
    return parse_duration(season, unit)
