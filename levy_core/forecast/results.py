"""What [`LevyForecaster.evaluate`][levy_core.forecast.forecaster.LevyForecaster.evaluate] and
[`backtest`][levy_core.forecast.forecaster.LevyForecaster.backtest] return: typed, frozen results, each with
``.to_frame()`` and a readable ``summary()`` (also its ``str``).

Scores are those of ``levy evaluate`` ([`levy_core.pipeline.evaluate`][levy_core.pipeline.evaluation.evaluate]): MSE, MAE, CRPS
and the Gaussian NLL on the model's per-channel min-max normalised scale (as t-PatchGNN
reports them, so channels of different units average), each band's coverage (scale-free)
and its mean width on the same normalised scale. Levels are percents (``{80: 0.81, 90:
0.9}``), as ``level=[80, 90]`` asked for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from levy_core import metrics
from levy_core.data import duration_text, say_duration
from levy_core.pipeline.bands import fraction, percent_levels
from levy_core.pipeline.predictive import Band

__all__ = ["DATA_UNIT_COLUMNS", "Backtest", "Evaluation", "Scores", "WindowScores", "band_scores", "fraction"]

DATA_UNIT_COLUMNS = ["method", "channel", "n_queries", "mae", "rmse", "crps"]
SCALE_NOTE = "MSE, MAE, CRPS, NLL and widths on the normalised scale (each channel's training range = 1)"


def band_scores(y: np.ndarray, band: Band, levels: Sequence[float]) -> tuple[dict[float, float], dict[float, float]]:
    """Coverage and mean width of each row of ``band``, keyed by the percent it was asked at.

    Parameters
    ----------
    y : ndarray, shape (n,)
        The truth, normalised units.
    band : Band
        One method's band at the same ``n`` queries, ``k`` rows (`Predictive.band`).
    levels : sequence of float
        The ``k`` percents of its rows, in order (a fraction is refused, as
        `percent_levels` does).

    Returns
    -------
    (dict, dict)
        Percent -> share of ``y`` inside the band; percent -> the band's mean width
        (normalised units).
    """
    coverage, width = {}, {}
    for i, level in enumerate(levels):
        if not 1 <= level < 100 or round(float(level) / 100, 10) != band.levels[i]:
            percent_levels(level)  # a ValueError that says the level is a fraction
            raise ValueError(f"level {level!r} is not the {band.labels[i]} % of the band's row {i}")
        coverage[level] = metrics.interval_coverage(y, band.lower[i], band.upper[i])
        width[level] = metrics.interval_mean_width(band.lower[i], band.upper[i])
    return coverage, width


def _level_columns(scores: Any, levels: Sequence[float]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for name in ("coverage", "width", "band"):
        row.update({f"{name}_{level:g}": getattr(scores, name).get(level) for level in levels})
    return row


def _table(rows: list[dict[str, Any]]) -> str:
    """Rows as aligned text, floats to 4 significant digits."""
    frame = pd.DataFrame(rows)
    return frame.to_string(index=False, float_format=lambda x: f"{x:.4g}")


@dataclass(frozen=True)
class Scores:
    """One method's scores on held-out queries.

    Attributes
    ----------
    method : str
        ``"Lévy"``, ``"MC-Dropout"`` (a forecaster fitted with ``twin=True``) or
        ``"last value"`` (the last observation carried forward, with its own calibrated band).
    n_queries : int
    mse, mae, crps, nll : float
        Normalised scale (`SCALE_NOTE`).
    coverage : dict of float to float
        Percent -> the share of the queries inside the band.
    width : dict of float to float
        Percent -> the band's mean width, normalised scale.
    band : dict of float to str
        Percent -> the band scored: ``"adaptive"`` (the adaptive conformal walk over the
        test origins of a fit on few series; ``predict`` draws its final state),
        ``"conformal"`` (split conformal) or ``"gaussian"``.
    """

    method: str
    n_queries: int
    mse: float
    mae: float
    crps: float
    nll: float
    coverage: Mapping[float, float]
    width: Mapping[float, float]
    band: Mapping[float, str]

    def row(self) -> dict[str, Any]:
        """The scores as one flat row (``coverage_80``, ``width_80``, ``band_80``, …)."""
        return {"method": self.method, **self._score_columns()}

    def _score_columns(self) -> dict[str, Any]:
        """``n_queries, mse, mae, crps, nll`` and the per-level columns, as [`row`][levy_core.forecast.results.Scores.row] has them."""
        return {"n_queries": self.n_queries, "mse": self.mse, "mae": self.mae, "crps": self.crps, "nll": self.nll,
                **_level_columns(self, list(self.coverage))}


@dataclass(frozen=True)
class Evaluation:
    """A fitted forecaster scored on held-out data ([`LevyForecaster.evaluate`][levy_core.forecast.forecaster.LevyForecaster.evaluate]).

    Attributes
    ----------
    n_queries : int
        Held-out observations scored.
    levels : tuple of float
        The band levels, percents.
    scope : str
        ``"test split"`` (the frame the model was fitted on: its held-out test series or
        origins) or ``"every series"`` (new data: every series with context and queries).
    scores : tuple of Scores
        Lévy first, then MC-Dropout (with a twin) and the last-value baseline.
    predictions : pandas.DataFrame
        One row per query in the user's ids and clock (``levy evaluate --predictions``:
        ``series_id, channel, time, y_true, mean, lower_90, upper_90, …``).
    details : dict
        The pipeline's full result (``levy evaluate --json``: the levels 50/80/90/95, the
        Gaussian band's coverage, timings, the adaptive walk's bound, ``coverage_note``).
    notes : tuple of str
        In plain words, each Lévy band whose coverage lies further from its level than its
        per-series standard error allows (or is worth watching), with what to do
        (``levy_core.calibration.coverage.coverage_note``); empty when every band is within.
    data_units : pandas.DataFrame
        Each method's scores per channel in the channel's own units (not normalised), one
        row per (method, channel): ``method, channel, n_queries, mae, rmse, crps`` (the CRPS
        of the log-normal predictive on a log / log1p channel;
        ``levy_core.pipeline.evaluation.per_channel_data_units``, ``levy evaluate --json``'s
        ``per_channel_data_units``); also [`data_unit_frame`][levy_core.forecast.results.Evaluation.data_unit_frame].
    """

    n_queries: int
    levels: tuple[float, ...]
    scope: str
    scores: tuple[Scores, ...]
    predictions: pd.DataFrame = field(repr=False, compare=False)
    details: Mapping[str, Any] = field(repr=False, compare=False)
    notes: tuple[str, ...] = ()
    data_units: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=DATA_UNIT_COLUMNS), repr=False,
                                     compare=False)

    @property
    def levy(self) -> Scores:
        """The Lévy model's scores."""
        return self.scores[0]

    @property
    def mse(self) -> float:
        return self.levy.mse

    @property
    def mae(self) -> float:
        return self.levy.mae

    @property
    def crps(self) -> float:
        return self.levy.crps

    @property
    def coverage(self) -> Mapping[float, float]:
        """The Lévy band's coverage per percent level."""
        return self.levy.coverage

    @property
    def width(self) -> Mapping[float, float]:
        """The Lévy band's mean width per percent level (normalised scale)."""
        return self.levy.width

    def method(self, name: str) -> Scores:
        """The scores of one method by name (``"Lévy"``, ``"MC-Dropout"``, ``"last value"``)."""
        for s in self.scores:
            if s.method == name:
                return s
        raise KeyError(f"no method {name!r}; scored: {[s.method for s in self.scores]}")

    def to_frame(self) -> pd.DataFrame:
        """One row per method: ``method, n_queries, mse, mae, crps, nll, coverage_<L>, …,
        width_<L>, …, band_<L>, …`` (``L`` each percent level)."""
        return pd.DataFrame([s.row() for s in self.scores])

    def data_unit_frame(self) -> pd.DataFrame:
        """One row per (method, channel): ``method, channel, n_queries, mae, rmse, crps``, each
        channel in its own units (a copy of `data_units`)."""
        return self.data_units.copy()

    def summary(self) -> str:
        """The scores as a few lines of text (and, per channel, in the data's units)."""
        rows = [{k: v for k, v in s.row().items() if not k.startswith("band_")} for s in self.scores]
        bands = ", ".join(f"{level:g} %: {kind}" for level, kind in self.levy.band.items())
        per_channel = ("" if self.data_units.empty else
                       f"\nPer channel, in its own units:\n{_table(self.data_units.to_dict('records'))}")
        return (f"Evaluation on the {self.scope}: {self.n_queries:,} queries\n{_table(rows)}\n"
                f"Lévy bands: {bands}. {SCALE_NOTE}; coverage is scale-free.{per_channel}"
                + "".join(f"\nNote: {note}" for note in self.notes))

    def __str__(self) -> str:
        return self.summary()


@dataclass(frozen=True, kw_only=True)
class WindowScores(Scores):
    """One method's forecasts of one backtest window, scored (the Lévy model's, or a
    baseline's): the attributes of [`Scores`][levy_core.forecast.results.Scores], on the window's queries, and where they
    lie (``window``, ``n_series`` and ``method`` given by keyword).

    Attributes
    ----------
    window : int
        0 for the earliest cut-off.
    n_series : int
        Series with at least one observation in the window.
    n_queries : int
        Observations in the window (after each series' cut-off, within ``h`` of it).
    mse, mae, crps, nll : float
        Normalised scale of the model that forecast the window.
    coverage, width, band : dict
        Per percent level, as [`Scores`][levy_core.forecast.results.Scores].
    method : str
        ``"Lévy"`` (the default), or ``"last value"`` (the baseline: each channel's last
        observation before the cut-off carried forward, with its own calibrated band).
    """

    method: str = "Lévy"
    window: int
    n_series: int

    def row(self) -> dict[str, Any]:
        """The scores as one flat row (``window, n_series, n_queries, mse, …``; no method)."""
        return {"window": self.window, "n_series": self.n_series, **self._score_columns()}


@dataclass(frozen=True)
class Backtest:
    """Forecasts from rolling cut-offs, scored window by window ([`LevyForecaster.backtest`][levy_core.forecast.forecaster.LevyForecaster.backtest]),
    beside the trivial baseline scored on the same queries the same way.

    Attributes
    ----------
    levels : tuple of float
        Percents.
    h, step : float
        The forecast horizon and the spacing of the cut-offs, hours.
    refit : bool
        True: a model fitted for each window on the observations up to its cut-offs;
        False: one model, fitted on the observations up to the earliest cut-offs.
    windows : tuple of WindowScores
        The Lévy model's, earliest cut-off first.
    forecasts : pandas.DataFrame
        The forecasts, one row per held-out observation (see [`to_frame`][levy_core.forecast.results.Backtest.to_frame]).
    baselines : tuple of WindowScores
        The last-value baseline's scores per window (``method == "last value"``), on each
        window's queries: each channel's last observation before the cut-off (in the
        context the model forecast from) carried forward, with a Gaussian spread fitted on
        the training part's own errors and calibrated like the model (its band: the
        model's kind at each level, split conformal where the model's is the adaptive
        walk, which the baseline has not). Empty for a model saved without it.
    baseline_forecasts : pandas.DataFrame
        The baseline's forecasts, row by row beside `forecasts` (``last value,
        last value-lo-<L>, …, last value-hi-<L>``; see [`to_frame`][levy_core.forecast.results.Backtest.to_frame]).
    notes : tuple of str
        In plain words, each Lévy band whose coverage over every window's queries lies
        further from its level than its per-series standard error allows (or is worth
        watching), with what to do; empty when every band is within.
    clock : str or None
        The data's clock ("days", "datetime", …): `summary` says ``h`` and ``step``
        in it ("90 days", "3 months"); None: short durations ("2.5 w").
    """

    levels: tuple[float, ...]
    h: float
    step: float
    refit: bool
    windows: tuple[WindowScores, ...]
    forecasts: pd.DataFrame = field(repr=False, compare=False)
    baselines: tuple[WindowScores, ...] = ()
    baseline_forecasts: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False, compare=False)
    notes: tuple[str, ...] = ()
    clock: str | None = None

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods scored: ``("Lévy", "last value")`` (``("Lévy",)`` without a baseline)."""
        return ("Lévy", *dict.fromkeys(w.method for w in self.baselines))

    def method_windows(self, method: str = "Lévy") -> tuple[WindowScores, ...]:
        """One method's scores per window, earliest first; ``KeyError`` for a method not scored."""
        if method == "Lévy":
            return self.windows
        found = tuple(w for w in self.baselines if w.method == method)
        if not found:
            raise KeyError(f"no method {method!r}; scored: {list(self.methods)}")
        return found

    def to_frame(self, baselines: bool = False) -> pd.DataFrame:
        """The forecasts as StatsForecast's ``cross_validation`` writes them: ``unique_id,
        ds, [channel,] cutoff, window, y, Lévy, Lévy-lo-<L>, …, Lévy-hi-<L>`` (``channel``
        when the model has several; ``ds`` and ``cutoff`` in the user's clock);
        ``baselines=True`` adds each baseline's columns after them, as StatsForecast puts
        each model's (``last value, last value-lo-<L>, …, last value-hi-<L>``)."""
        if not baselines:
            return self.forecasts.copy()
        return pd.concat([self.forecasts, self.baseline_forecasts], axis=1)

    def scores(self, method: str = "Lévy") -> pd.DataFrame:
        """One row per window of ``method`` (default the Lévy model's): ``window, n_series,
        n_queries, mse, mae, crps, nll, coverage_<L>, …, width_<L>, …, band_<L>, …``."""
        return pd.DataFrame([w.row() for w in self.method_windows(method)])

    def overall(self, method: str = "Lévy") -> dict[str, float]:
        """Every window's queries together: each score of ``method`` (default the Lévy
        model's) as its mean over all of them (the windows' scores weighted by their
        queries), keyed as [`scores`][levy_core.forecast.results.Backtest.scores]' columns."""
        table = self.scores(method)
        weights = table["n_queries"].to_numpy(np.float64)
        numbers = [c for c in table.columns if c not in ("window", "n_series", "n_queries")
                   and not c.startswith("band_")]
        out = {"n_queries": float(weights.sum())}
        out.update({c: float(np.average(table[c].to_numpy(np.float64), weights=weights)) for c in numbers})
        return out

    def comparison(self) -> pd.DataFrame:
        """The accuracy and uncertainty table, the trivial baseline beside the model: one row
        per method over every window's queries ([`overall`][levy_core.forecast.results.Backtest.overall]), ``method, n_queries, mse,
        mae, crps, nll, coverage_<L>, …, width_<L>, …, band_<L>, …`` (each band as the
        first window scored it)."""
        rows = []
        for method in self.methods:
            overall = self.overall(method)
            first = self.method_windows(method)[0]
            rows.append({"method": method, **overall, "n_queries": int(overall["n_queries"]),
                         **{f"band_{level:g}": kind for level, kind in first.band.items()}})
        return pd.DataFrame(rows)

    def summary(self) -> str:
        """The windows' scores, the overall ones, and the baseline's beside them, as a few
        lines of text."""
        rows = [{k: v for k, v in w.row().items() if not k.startswith("band_")} for w in self.windows]
        overall = self.overall()
        total = {"window": "all", "n_series": "", **{k: overall[k] for k in rows[0] if k in overall}}
        total["n_queries"] = int(overall["n_queries"])
        how = "one model per window" if self.refit else "one model, fitted before the first window"

        def say(hours: float) -> str:  # in the data's clock when it is known
            return duration_text(hours, " ") if self.clock is None else say_duration(hours, self.clock)

        text = (f"Backtest over {len(self.windows)} windows of h = {say(self.h)} every "
                f"{say(self.step)} ({how})\n{_table([*rows, total])}\n")
        if self.baselines:
            table = self.comparison()
            shown = table[[c for c in table.columns if not c.startswith("band_")]]
            text += f"Every window, beside the trivial baseline:\n{_table(shown.to_dict('records'))}\n"
        bands = "; ".join(f"{method} bands: " + ", ".join(f"{level:g} %: {kind}" for level, kind in
                                                        self.method_windows(method)[0].band.items())
                          for method in self.methods)
        return f"{text}{bands}. {SCALE_NOTE}; coverage is scale-free." + "".join(f"\nNote: {n}" for n in self.notes)

    def __str__(self) -> str:
        return self.summary()
