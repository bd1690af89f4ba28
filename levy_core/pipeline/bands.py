"""The band's levels and kinds for every front end, and predictions in NeuralForecast /
StatsForecast's convention.

Levels are read as fractions or percents ([`band_levels`][levy_core.pipeline.bands.band_levels], [`percent_levels`][levy_core.pipeline.bands.percent_levels]; the one
conversion, [`fraction`][levy_core.pipeline.bands.fraction]), each level gets its band of the kind asked for ([`band_kind`][levy_core.pipeline.bands.band_kind],
[`level_bands`][levy_core.pipeline.bands.level_bands]) and an infinite band is explained ([`unbounded_note`][levy_core.pipeline.bands.unbounded_note]).

NeuralForecast and StatsForecast return one row per ``(unique_id, ds)`` with the point
forecast in a column named after the model and each band in ``<model>-lo-<level>`` /
``<model>-hi-<level>``, levels in percent (``level=[80, 90]``), the lower bounds from the
widest band in, the upper bounds from the narrowest out. `nixtla_frame` writes a
prediction frame that way, with the model named `MODEL_NAME` and a ``channel`` column
for a model of several channels; ``levy predict --format nixtla`` and
[`levy_core.forecast.forecaster.LevyForecaster`][levy_core.forecast.forecaster.LevyForecaster] both use it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
import pandas as pd

from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predictive import Band, level_label

__all__ = ["BAND_KINDS", "MODEL_NAME", "band_frame", "band_kind", "band_levels", "fraction", "level_bands",
           "level_label", "method_bands", "nixtla_frame", "percent_levels", "unbounded_note"]

MODEL_NAME = "Lévy"
BAND_KINDS = ("auto", "gaussian", "conformal", "adaptive")
"""``auto``: the adaptive band where the fit walked it at the level (rolling origins), split
conformal otherwise."""


def fraction(percent: float) -> float:
    """A percent level (as `percent_levels` returns them) as the fraction the
    calibrators key their bands by: 90 -> 0.9, exactly as written (``round(p / 100, 10)``),
    the one conversion from percents to fractions."""
    return round(float(percent) / 100, 10)


def band_levels(values: Sequence[float] | float) -> list[float]:
    """Band levels as fractions, ascending and distinct.

    Parameters
    ----------
    values : float or sequence of float
        Each a fraction in (0, 1) (``0.9``) or a percent in [10, 100) (``90``, as
        NeuralForecast writes it); a number in [1, 10) is refused as ambiguous.

    Returns
    -------
    list of float, each in (0, 1)

    Raises
    ------
    ValueError
        No level, or one that is not a number in either range, saying how to write it.
    """
    items = [values] if isinstance(values, numbers.Real) else list(values)
    if not items:
        raise ValueError("give at least one band level, e.g. 90 (or 0.9) for a 90 % band")
    out = set()
    for v in items:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise ValueError(f"a band level must be a number such as 90 or 0.9, got {v!r}")
        if 0 < v < 1:
            out.add(float(v))
        elif 10 <= v < 100:
            out.add(fraction(v))  # 90 -> 0.9 exactly as written, the key of the adaptive bands
        else:
            raise ValueError(f"level {v:g} is neither a fraction strictly between 0 and 1 (0.9) nor a percent from "
                             "10 to under 100 (90): write 0.9 or 90 for a 90 % band")
    return sorted(out)


def percent_levels(values: Sequence[float] | float) -> list[int | float]:
    """Band levels written as percents, as NeuralForecast and StatsForecast take them
    (``level=[80, 90]``): ascending and distinct, whole numbers as ``int``.

    Parameters
    ----------
    values : float or sequence of float
        Each a percent strictly between 0 and 100; a fraction such as ``0.9`` is refused,
        so that ``0.9`` never silently means a 0.9 % band.

    Returns
    -------
    list of int or float
        The percents (``[80, 90]``, ``[97.5]``); [`fraction`][levy_core.forecast.results.fraction] gives each band's fraction.

    Raises
    ------
    ValueError
        No level, a fraction, or anything that is not a number in (0, 100).
    """
    items = [values] if isinstance(values, numbers.Real) else list(values)
    if not items:
        raise ValueError("give at least one band level: levels are percents, e.g. level=[80, 90]")
    out: set[int | float] = set()
    for v in items:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or not 0 < v < 100:
            raise ValueError(f"levels are percents, e.g. level=[80, 90]: each a number strictly between 0 and 100, "
                             f"got {v!r}")
        if v < 1:
            raise ValueError(f"levels are percents, e.g. level=[80, 90]: got {v!r}, a fraction; write "
                             f"{round(100 * float(v), 6):g} for a {round(100 * float(v), 6):g} % band")
        out.add(int(v) if float(v).is_integer() else float(v))
    return sorted(out)


def band_kind(requested: str, fitted: FittedModel, level: float) -> str:
    """The band drawn at ``level``: ``requested`` itself, or for ``"auto"`` the adaptive band
    where the fit walked it at this level (rolling origins), split conformal otherwise."""
    if requested not in BAND_KINDS:
        raise ValueError(f"band must be one of {', '.join(BAND_KINDS)}, got {requested!r}")
    if requested != "auto":
        return requested
    return "adaptive" if str(level) in fitted.adaptive.get("levy", {}) else "conformal"


def method_bands(pred: pd.DataFrame, fitted: FittedModel, levels: Sequence[float], band: str = "auto",
                 methods: Sequence[str] = ("levy",)) -> dict[str, Band]:
    """Each method's `Band` at every level, derived once, without another model pass.

    Parameters
    ----------
    pred : pandas.DataFrame
        A prediction frame of ``n`` rows (``channel, mean_norm, spread_norm``, and each
        method's columns: what ``pipeline.predict_*`` return).
    fitted : FittedModel
    levels : sequence of float
        ``k`` levels: fractions as `band_levels` returns them, or percents as
        `percent_levels` does (``[80, 90]``: each taken through `fraction`).
    band : {"auto", "gaussian", "conformal", "adaptive"}
        The Lévy band's kind (`band_kind`); another method has no adaptive walk of its own
        where Lévy's is asked for at a level it did not walk: split conformal in its place.
    methods : sequence of str
        The ``Method.key`` of each method wanted (``"levy"``, ``"mc"``, ``"last_value"``);
        one the frame or the model lacks is left out.

    Returns
    -------
    dict of str to Band
        ``Method.key`` -> its band, ``k`` rows in the order of ``levels``.
    """
    fractions = [fraction(lv) if lv >= 1 else float(lv) for lv in levels]
    kinds = [band_kind(band, fitted, f) for f in fractions]
    out = {}
    for p in fitted.predictives(pred):
        if p.method.key not in methods:
            continue
        own = kinds if p.method.key == "levy" else [
            "conformal" if kind == "adaptive" and str(f) not in (p.adaptive or {}) else kind
            for f, kind in zip(fractions, kinds, strict=True)]
        out[p.method.key] = p.band(fractions, own)  # ValueError: no adaptive band at a level
    return out


def band_frame(band: Band, index: pd.Index | None = None) -> pd.DataFrame:
    """``band``'s bounds in the data's units as columns ``lower_<L>, upper_<L>`` per level
    (``L`` = `level_label`), ``n`` rows (on ``index`` when given)."""
    columns: dict[str, np.ndarray] = {}
    for i, label in enumerate(band.labels):
        columns[f"lower_{label}"], columns[f"upper_{label}"] = band.lower_original[i], band.upper_original[i]
    return pd.DataFrame(columns, index=index)


def level_bands(pred: pd.DataFrame, fitted: FittedModel, levels: Sequence[float],
                band: str = "auto") -> tuple[pd.DataFrame, list[str]]:
    """The Lévy band at each level, in the data's units, without another model pass.

    Parameters
    ----------
    pred : pandas.DataFrame
        A prediction frame of ``n`` rows (``channel, mean_norm, spread_norm``: what
        ``pipeline.predict_*`` return).
    fitted : FittedModel
    levels : sequence of float
        Fractions, as `band_levels` returns them.
    band : {"auto", "gaussian", "conformal", "adaptive"}

    Returns
    -------
    (pandas.DataFrame, list of str)
        Columns ``lower_<L>, upper_<L>`` per level (``L`` = `level_label`), ``n`` rows
        on ``pred``'s index (`band_frame` of `method_bands`' Lévy band); and the band kind
        used at each level.
    """
    levy = method_bands(pred, fitted, levels, band)["levy"]
    return band_frame(levy, pred.index), list(levy.kinds)


def unbounded_note(bands: pd.DataFrame, levels: Sequence[float], n_scores: int = 0) -> str | None:
    """Plain words for bands that came out infinite (``bands``: `level_bands`' columns
    ``lower_<L>, upper_<L>`` for ``levels``, fractions; ``n_scores``: the calibration split's
    errors, 0 when unknown); None when every band is finite. (``levy predict`` refuses to
    write such a band: ``levy_core.cli.predict.refuse_infinite_bands``.)

    A split-conformal band at level ``L`` is finite only with at least ``⌈L / (1 − L)⌉``
    calibration errors (49 at 98 %), and an adaptive one only while its walk has not missed
    more often than its step absorbs; otherwise the honest band is the whole line, which a
    user who asked for it must be told of rather than find as ``inf`` in a column."""
    unbounded = []
    for level in levels:
        label = level_label(level)
        lo, hi = (bands[f"{side}_{label}"].to_numpy(np.float64) for side in ("lower", "upper"))
        rows = int(np.sum(~(np.isfinite(lo) & np.isfinite(hi))))
        if rows:
            unbounded.append((label, rows, len(lo)))
    if not unbounded:
        return None
    label, rows, n = unbounded[-1]  # the widest: the one the others are nested in
    which = " and ".join(f"{lab} %" for lab, _, _ in unbounded) + (" band is" if len(unbounded) == 1 else " bands are")
    finite = [level_label(v) for v in levels if level_label(v) not in {lab for lab, _, _ in unbounded}]
    held = f"the calibration split holds {n_scores:,} errors, " if n_scores else ""
    most = f"; bounded up to {100 * n_scores / (n_scores + 1):.4g} % here, less on a channel with fewer" if n_scores else ""
    return (f"the {which} unbounded (±inf) on {rows} of {n} queries: {held}too few for a conformal band that "
            f"wide (one at {label} % needs at least {math.ceil(round(float(label) / (100 - float(label)), 9))} per "
            f"channel{most}), or the adaptive walk missed more often than its step absorbs. "
            + (f"Use the {finite[-1]} % band, or fit on a longer history."
               if finite else "Ask for a lower level (90 % or less), or fit on a longer history."))


def nixtla_frame(pred: pd.DataFrame, times: pd.Series | np.ndarray, bands: pd.DataFrame | Band,
                 levels: Sequence[float] | None, fitted: FittedModel) -> pd.DataFrame:
    """Predictions as NeuralForecast / StatsForecast write them.

    Parameters
    ----------
    pred : pandas.DataFrame
        ``n`` predictions in the user's ids (``series_id, channel, mean``).
    times : array-like, shape (n,)
        Their times in the user's clock (date-times or numbers).
    bands : pandas.DataFrame or Band
        `level_bands`' frame for ``levels``, or the Lévy `Band` (its bounds in the data's
        units are read, at its own levels).
    levels : sequence of float, or None with a Band
    fitted : FittedModel
        Its channels decide the ``channel`` column (present when it has several).

    Returns
    -------
    pandas.DataFrame
        ``unique_id, ds, [channel,] Lévy, Lévy-lo-<widest>, …, Lévy-lo-<narrowest>,
        Lévy-hi-<narrowest>, …, Lévy-hi-<widest>``, ``n`` rows, index ``0..n-1``.
    """
    out = pd.DataFrame({"unique_id": pred["series_id"].astype(str).to_numpy()})
    out["ds"] = pd.Series(times).array  # date-times keep their time zone
    if len(fitted.channels) > 1:
        out["channel"] = pred["channel"].astype(str).to_numpy()
    out[MODEL_NAME] = pred["mean"].to_numpy(np.float64)
    if isinstance(bands, Band):  # read the band: its rows from the narrowest level out
        rows = sorted(range(len(bands.levels)), key=lambda i: bands.levels[i])
        for i in reversed(rows):
            out[f"{MODEL_NAME}-lo-{bands.labels[i]}"] = bands.lower_original[i]
        for i in rows:
            out[f"{MODEL_NAME}-hi-{bands.labels[i]}"] = bands.upper_original[i]
        return out
    if levels is None:
        raise ValueError("nixtla_frame needs the levels of a frame of bands (a Band carries its own)")
    ordered = sorted(levels)
    for level in reversed(ordered):
        out[f"{MODEL_NAME}-lo-{level_label(level)}"] = bands[f"lower_{level_label(level)}"].to_numpy()
    for level in ordered:
        out[f"{MODEL_NAME}-hi-{level_label(level)}"] = bands[f"upper_{level_label(level)}"].to_numpy()
    return out
