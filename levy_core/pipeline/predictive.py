"""One method's predictive distribution at a set of queries, as one object.

A prediction frame (one row per query) holds, for every method it scored, a mean and a
raw spread in the model's normalised units: ``mean_norm``/``spread_norm`` (Lévy: σ̂, times the
lead's factor ``s(h)`` on rolling origins, ``levy_core.calibration.horizon_scale``; ``sigma_norm`` is σ̂),
``mc_mean_norm``/``mc_std_norm`` (MC-Dropout), ``lv_mean_norm``/``lv_std_norm`` (last value
carried forward). [`Predictive`][levy_core.pipeline.predictive.Predictive] puts one such pair together with the method's fitted
calibrator, the queries' channels and the scaler. Its bands are derived once, as one
[`Band`][levy_core.pipeline.predictive.Band] (``Predictive.band(levels, kinds)``: every
level's lower and upper bounds in normalised and original units, with σ̂, the calibrated
std, the evidence and the disagreement), and every consumer (scores, the prediction frames'
``lower``/``upper`` columns, the backtest's forecasts, the dashboard's chart, the report)
reads that value instead of deriving the band again.

Original units of a channel with a transform ``g`` (log, log1p; the model is fitted and
calibrated on ``g(v)``): the point prediction and every band end are mapped back exactly
with ``g⁻¹`` (the ``mean`` column is then the predictive's *median* ``g⁻¹(m)``, and the band
is asymmetric around it); a spread (``sigma``, ``pred_std``, ``<prefix>std``,
``disagreement``) goes back by the delta method at the point prediction,
``spread · (max − min) · dg⁻¹/du(m)`` (`ChannelScaler.scale_at`): a local scale, not the
band's half-width. Normalised columns (``*_norm``) stay in the transformed space.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from levy_core.calibration.adaptive import AdaptiveConformal
from levy_core.calibration.calibrate import Calibrator, RowwiseCalibrator
from levy_core.episodes.scaling import ChannelScaler

__all__ = ["METHODS", "Band", "Method", "Predictive", "add_bands", "level_label", "predictives",
           "to_original_units"]

IntervalKind = Literal["gaussian", "conformal", "adaptive"]


@dataclass(frozen=True)
class Method:
    """Where one method's columns live in a prediction frame."""

    name: str  # shown to users: "Lévy", "MC-Dropout", "last value"
    key: str  # the JSON key of ``evaluate`` and the calibrator's name
    mean_column: str
    spread_column: str
    prefix: str  # of its original-unit columns: "" (Lévy), "mc_", "lv_"


METHODS: tuple[Method, ...] = (
    Method("Lévy", "levy", "mean_norm", "spread_norm", ""),  # σ̂, times s(h) on rolling origins
    Method("MC-Dropout", "mc", "mc_mean_norm", "mc_std_norm", "mc_"),
    Method("last value", "last_value", "lv_mean_norm", "lv_std_norm", "lv_"),
)


def level_label(level: float) -> str:
    """A level's percent as column names write it, to 15 significant digits: 0.9 -> "90",
    0.975 -> "97.5", 0.500000001 -> "50.0000001"."""
    return f"{100 * level:.15g}"  # exact: 0.500000001 -> "50.0000001", never rounded to "50"


@dataclass(frozen=True)
class Band:
    """One method's bands at ``k`` levels for ``n`` queries, derived once from its
    predictive (`Predictive.band`): what scoring, the prediction frames, the backtest's
    forecasts, the dashboard's chart and the report read.

    Attributes
    ----------
    method : Method
    levels : tuple of float, length k
        Fractions, in the order asked (a level may come twice, with two kinds).
    kinds : tuple of str, length k
        ``"gaussian"``, ``"conformal"`` or ``"adaptive"``: the band at each level.
    labels : tuple of str, length k
        Each level as column names write it (`level_label`: ``"90"``).
    lower, upper : ndarray, shape (k, n)
        The bounds, normalised units (a transformed channel: in its transformed space).
    lower_original, upper_original : ndarray, shape (k, n)
        The same bounds in the data's units (``g⁻¹`` of each end).
    mean, mean_original : ndarray, shape (n,)
        The point prediction, normalised and in the data's units.
    sigma : ndarray, shape (n,)
        The spread the band scales, before calibration (`Predictive.spread`: Lévy's σ̂,
        times the lead's factor ``s(h)`` on rolling origins), normalised units.
    std : ndarray, shape (n,)
        The calibrated standard deviation ``c_channel · sigma``, normalised units.
    evidence, disagreement : ndarray of shape (n,) or None
        The Lévy model's ``log_evidence`` and ``disagreement_norm`` at the queries (None
        for another method, or a frame without them).
    """

    method: Method
    levels: tuple[float, ...]
    kinds: tuple[str, ...]
    labels: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    lower_original: np.ndarray
    upper_original: np.ndarray
    mean: np.ndarray
    mean_original: np.ndarray
    sigma: np.ndarray
    std: np.ndarray
    evidence: np.ndarray | None = None
    disagreement: np.ndarray | None = None

    def row(self, level: float, kind: str | None = None) -> int:
        """The row of ``level`` (a fraction; of ``kind`` when given) in ``lower``/``upper``;
        ValueError when the band was not derived at it."""
        for i, (lv, kd) in enumerate(zip(self.levels, self.kinds, strict=True)):
            if lv == level and (kind is None or kd == kind):
                return i
        derived = list(zip(self.levels, self.kinds, strict=True))
        raise ValueError(f"the {self.method.name} band was derived at {derived}, not at level {level} "
                         f"({kind or 'any kind'})")

    def bounds(self, level: float, kind: str | None = None, *,
               original: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The lower and upper bounds at ``level`` (of ``kind``), each (n,): normalised, or
        with ``original`` in the data's units."""
        i = self.row(level, kind)
        if original:
            return self.lower_original[i], self.upper_original[i]
        return self.lower[i], self.upper[i]


@dataclass(frozen=True)
class Predictive:
    """A calibrated Gaussian-or-conformal predictive at ``n`` queries.

    Attributes
    ----------
    method : Method
    mean : ndarray, shape (n,)
        Point prediction, normalised units.
    spread : ndarray, shape (n,)
        The method's raw spread (σ̂, the MC standard deviation, the baseline's spread),
        normalised units, before calibration.
    calibrator : Calibrator or RowwiseCalibrator
        Fitted on the calibration split (a panel's new series: on its calibration and test
        series): a scale ``c`` and per-channel split conformal.
    channels : ndarray, shape (n,)
        Each query's channel (conformal groups, and the scaler's lookup).
    scaler : ChannelScaler
    adaptive : mapping of str to AdaptiveConformal, optional
        Rolling origins: the adaptive walk's state after the test origins, by level.
    adaptive_by_channel : bool
        The walk ran on each channel's calibrated σ (models saved before it: the raw spread).
    evidence, disagreement : ndarray of shape (n,), optional
        Lévy: the frame's ``log_evidence`` and ``disagreement_norm``, carried into its `Band`.
    """

    method: Method
    mean: np.ndarray
    spread: np.ndarray
    calibrator: Calibrator | RowwiseCalibrator
    channels: np.ndarray
    scaler: ChannelScaler
    adaptive: Mapping[str, AdaptiveConformal] | None = None  # origin mode: ACI after the test walk, by level
    # the walk ran on each channel's calibrated σ (models saved before it: on the raw spread)
    adaptive_by_channel: bool = False
    evidence: np.ndarray | None = None  # Lévy: the frame's log_evidence, (n,)
    disagreement: np.ndarray | None = None  # Lévy: the frame's disagreement_norm, (n,)

    @property
    def name(self) -> str:
        return self.method.name

    def std(self, *, original: bool = False) -> np.ndarray:
        """The calibrated standard deviation ``c_channel · spread``, shape (n,); with
        ``original``, in data units by the delta method at the mean (exact for a channel
        without transform)."""
        std = self.calibrator.predict_std(self.spread, self.channels)
        return std * self.scaler.scale_at(self.mean, self.channels) if original else std

    def interval(self, level: float, kind: IntervalKind = "conformal", *,
                 original: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The central band at ``level``: ``kind="gaussian"`` is ``mean ± z c·spread``,
        ``"conformal"`` the per-channel split-conformal band, ``"adaptive"`` the band of
        adaptive conformal inference after its walk over the test origins (a fit on rolling
        origins, at the levels it walked: ``levy_core.calibration.over_time``; where the walk
        ended with more misses than its step absorbs, ACI's band would be infinite, and the
        largest score it has seen is taken instead: a band as wide as the worst error of
        the calibration and test origins); each (n,)."""
        if kind == "adaptive":
            aci = (self.adaptive or {}).get(str(level))
            if aci is None:
                raise ValueError(f"no adaptive band at level {level} for {self.name}: fits on rolling origins walk "
                                 f"the levels {sorted(self.adaptive or {})}; use one of them or kind='conformal'")
            sigma = self.std() if self.adaptive_by_channel else self.spread  # the σ the walk ran on
            lo, hi = aci.next_interval(self.mean, sigma, finite=True)  # a forecast never gets ±inf
        else:
            lo, hi = self.calibrator.interval(self.mean, self.spread, level, kind=kind, groups=self.channels)
        if original:
            return self.scaler.inverse_value(lo, self.channels), self.scaler.inverse_value(hi, self.channels)
        return lo, hi

    def original_mean(self) -> np.ndarray:
        """The point prediction in the data's units, shape (n,)."""
        return self.scaler.inverse_value(self.mean, self.channels)

    def band(self, levels: Sequence[float], kinds: Sequence[str] | str = "conformal") -> Band:
        """The bands at ``levels`` (fractions, ``k`` of them) of ``kinds`` (one kind for
        all, or one per level), derived once: the one place a band is computed from the
        predictive (`interval` at each level; ValueError as it raises them, e.g. no adaptive
        band at a level). Returns a `Band` of ``k`` rows over the ``n`` queries."""
        levels = tuple(float(lv) for lv in levels)
        kinds = (kinds,) * len(levels) if isinstance(kinds, str) else tuple(kinds)
        if len(kinds) != len(levels):
            raise ValueError(f"give one band kind for all levels or one per level: {len(levels)} levels, "
                             f"{len(kinds)} kinds")
        rows = [self.interval(lv, kd) for lv, kd in zip(levels, kinds, strict=True)]  # type: ignore[arg-type]
        n = len(self.mean)
        lower = np.array([lo for lo, _ in rows]).reshape(len(rows), n)
        upper = np.array([hi for _, hi in rows]).reshape(len(rows), n)
        original = [(self.scaler.inverse_value(lo, self.channels), self.scaler.inverse_value(hi, self.channels))
                    for lo, hi in rows]
        return Band(self.method, levels, kinds, tuple(level_label(lv) for lv in levels), lower, upper,
                    np.array([lo for lo, _ in original]).reshape(len(rows), n),
                    np.array([hi for _, hi in original]).reshape(len(rows), n),
                    self.mean, self.original_mean(), self.spread, self.std(), self.evidence, self.disagreement)


def predictives(frame: pd.DataFrame, calibrators: Mapping[str, Calibrator | RowwiseCalibrator | None],
                scaler: ChannelScaler,
                adaptive: Mapping[str, Mapping[str, AdaptiveConformal]] | None = None, *,
                adaptive_by_channel: bool = False) -> list[Predictive]:
    """The predictive of every method whose columns are in ``frame`` and whose calibrator
    (``calibrators[method.key]``) is fitted, in the order of `METHODS`
    (``adaptive_by_channel``: the adaptive states were walked on each channel's calibrated σ)."""
    channels = frame["channel"].to_numpy()
    out = []
    for method in METHODS:
        cal = calibrators.get(method.key)
        spread = method.spread_column
        if method.key == "levy" and spread not in frame:  # a frame without lead factors: σ̂ is the spread
            spread = "sigma_norm"
        if cal is None or method.mean_column not in frame or spread not in frame:
            continue
        signals = [frame[c].to_numpy() if method.key == "levy" and c in frame else None
                   for c in ("log_evidence", "disagreement_norm")]
        out.append(Predictive(method, frame[method.mean_column].to_numpy(np.float64),
                              frame[spread].to_numpy(np.float64), cal, channels, scaler,
                              (adaptive or {}).get(method.key), adaptive_by_channel, *signals))
    return out


def to_original_units(frame: pd.DataFrame, methods: list[Predictive], scaler: ChannelScaler,
                      level: float | None) -> pd.DataFrame:
    """A copy of a normalised prediction frame with its original-unit columns: ``mean,
    sigma, spread, pred_std, disagreement, disagreement_term, lower_gauss, upper_gauss, lower_conf,
    upper_conf`` (Lévy), ``y_true`` and ``abs_error_norm`` when the truth is known, and ``<prefix>mean, <prefix>std,
    <prefix>lower, <prefix>upper`` (Gaussian band at ``level``) for the other methods. ``level``
    None: no band columns (a caller that reads the bands it asks for from `Band` values)."""
    channels = frame["channel"].to_numpy()
    # each spread's local scale at its point prediction (the delta method for a log channel)
    scale = scaler.scale_at(frame["mean_norm"].to_numpy(), channels) if "mean_norm" in frame \
        else scaler.scale_of(channels)
    out = frame.copy()
    if "y_norm" in frame:
        out["y_true"] = scaler.inverse_value(frame["y_norm"].to_numpy(), channels)
        if "mean_norm" in frame:  # comparable across channels: the scatter's colour
            out["abs_error_norm"] = np.abs(frame["y_norm"].to_numpy() - frame["mean_norm"].to_numpy())
    for p in methods:
        if p.method.key == "levy":  # its bands at the level: Gaussian, conformal, adaptive where walked
            kinds = ("gaussian", "conformal") + (("adaptive",) if p.adaptive and str(level) in p.adaptive else ())
            kinds = () if level is None else kinds
            band = p.band((level,) * len(kinds), kinds)
            out["mean"] = band.mean_original
            out["sigma"] = (frame["sigma_norm"].to_numpy() if "sigma_norm" in frame else p.spread) * scale
            out["spread"] = p.spread * scale  # the band's spread before calibration: σ̂, or s(q) on panels
            out["pred_std"] = p.std(original=True)
            disagreement = frame["disagreement_norm"].to_numpy() if band.disagreement is None else band.disagreement
            out["disagreement"] = disagreement * scale**2
            # the evidence term is scale-free; the disagreement term moves with the units
            out["disagreement_term"] = frame["disagreement_term_norm"].to_numpy() + np.log(scale)
            for i, suffix in enumerate(("gauss", "conf", "adaptive")[:len(kinds)]):
                out[f"lower_{suffix}"], out[f"upper_{suffix}"] = band.lower_original[i], band.upper_original[i]
        else:  # MC-Dropout (mc_…), the last-value baseline (lv_…)
            prefix = p.method.prefix
            band = p.band(() if level is None else (level,), "gaussian")
            out[f"{prefix}mean"] = band.mean_original
            out[f"{prefix}std"] = p.std(original=True)
            if level is not None:
                out[f"{prefix}lower"], out[f"{prefix}upper"] = band.lower_original[0], band.upper_original[0]
    return out


def add_bands(frame: pd.DataFrame, methods: list[Predictive], level: float,
              kind: IntervalKind) -> pd.DataFrame:
    """A copy of ``frame`` with ``lower, upper`` (Lévy) and ``mc_lower, mc_upper`` at
    ``level`` of the given ``kind``, original units. Cheap (no model pass): moving a level
    slider only re-runs this."""
    out = frame.copy()
    for p in methods:
        if p.method.key in ("levy", "mc"):
            band = p.band((level,), kind)
            prefix = p.method.prefix
            out[f"{prefix}lower"], out[f"{prefix}upper"] = band.lower_original[0], band.upper_original[0]
    return out
