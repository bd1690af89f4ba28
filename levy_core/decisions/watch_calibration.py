"""The scores a watch's p-values are taken against: one-step-ahead scores of held-out series.

``levy_core.decisions.watch`` scores each observation against the band issued from the observations
before it: a forecast one step ahead. The fit's own calibration scores
(``FittedModel.levy_calibration``) come from forecasts at every lead of the fitted
horizon, from the cut-off's context: another score distribution, so p-values taken against
them are not uniform, and the flag rate is not α (measured in ``benchmarks/watch.py``). A
p-value is valid when the watched observation is exchangeable with the calibration points:
`calibrate_watch` replays series the model never trained on *exactly as the watch
does* and keeps their scores per channel — the calibration split of the data the model was
fitted on (recognised by its content hash), or any other held-out series.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from levy_core.calibration.scores import conformal_rank
from levy_core.calibration.split_conformal import DEFAULT_MIN_GROUP_SIZE
from levy_core.data import DataError, Observations
from levy_core.episodes.origins import OriginClock, OriginPlan
from levy_core.pipeline.modelfile import FittedModel

__all__ = ["WatchCalibration", "between_series_se", "calibration_part", "watched_part"]


def between_series_se(scored: np.ndarray, flagged: np.ndarray) -> float:
    """Standard error of a flag rate with the series as the unit: ``scored``, ``flagged``
    (S,) per series; the ratio estimator's ``sqrt(Σ_s (f_s − r n_s)² / (S (S − 1))) / n̄``
    (``r`` the pooled rate, ``n̄`` the mean ``n_s``). ``inf`` with fewer than two series."""
    n = np.asarray(scored, np.float64)
    f = np.asarray(flagged, np.float64)
    if n.size < 2 or not n.sum() > 0:
        return math.inf
    r = f.sum() / n.sum()
    return float(math.sqrt(np.sum((f - r * n) ** 2) / (n.size * (n.size - 1))) / n.mean())


@dataclass(frozen=True)
class WatchCalibration:
    """Sorted normalised scores ``|y − ŷ| / max(spread, floor)`` per channel (and pooled).

    Attributes
    ----------
    groups : dict of str to ndarray
        Each channel's sorted scores, shape (n_c,).
    pooled : ndarray, shape (n,)
        Every score, sorted.
    min_group_size : int
        A channel with fewer scores is calibrated against the pooled ones.
    source : str
        Where the scores come from, in words.
    series : ndarray or None
        Replayed scores only: each score's series, channel and score, in replay order
        (shape (n, 3), object) — the calibration's own between-series variability.
    """

    groups: dict[str, np.ndarray]
    pooled: np.ndarray
    min_group_size: int = DEFAULT_MIN_GROUP_SIZE
    source: str = ""
    series: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.pooled.size == 0:
            raise DataError("no calibration score: the calibration data has no observation with one before it "
                            "in its series; give held-out series with at least two times each")

    @classmethod
    def of_fit(cls, fitted: FittedModel, *, mc: bool = False) -> WatchCalibration:
        """The fit's own split-conformal scores (forecasts from the cut-off, not one step
        ahead); ``mc``: MC-Dropout's."""
        calibrator = fitted.mc_calibration if mc else fitted.levy_calibration
        conformal = calibrator.conformal if calibrator is not None else None
        if conformal is None or conformal.scores_ is None:
            raise DataError("the model has no conformal calibration scores: re-run `levy fit`")
        return cls(dict(conformal.group_scores_ or {}), conformal.scores_, conformal.min_group_size,
                   "the fit's calibration scores (forecasts from the cut-off over the fitted horizon)")

    @classmethod
    def of_scores(cls, scores: np.ndarray, channels: np.ndarray, source: str = "",
                  series: np.ndarray | None = None) -> WatchCalibration:
        """From replayed scores (n,), their channels (n,) and, optionally, their series (n,)."""
        scores = np.asarray(scores, np.float64)
        channels = np.asarray(channels).astype(str)
        if not np.isfinite(scores).all():
            raise DataError("calibration scores must be finite")
        groups = {str(c): np.sort(scores[channels == c]) for c in np.unique(channels)}
        by_series = None if series is None else np.column_stack([np.asarray(series).astype(str), channels,
                                                                   scores.astype(object)])
        return cls(groups, np.sort(scores), DEFAULT_MIN_GROUP_SIZE, source, by_series)

    def scores_for(self, channel: str) -> np.ndarray:
        own = self.groups.get(str(channel))
        return own if own is not None and own.size >= self.min_group_size else self.pooled

    def p_values(self, scores: np.ndarray, channels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``p = (1 + #{cal ≥ s}) / (n_cal + 1)`` of each score (n,) among its channel's
        calibration scores; returns the p-values and each one's ``n_cal``, each (n,)."""
        scores = np.asarray(scores, np.float64)
        channels = np.asarray(channels).astype(str)
        p, n_cal = np.empty(scores.size), np.empty(scores.size, np.int64)
        for ch in np.unique(channels):
            rows = channels == ch
            cal = self.scores_for(ch)
            at_least = cal.size - np.searchsorted(cal, scores[rows], side="left")
            p[rows] = (1.0 + at_least) / (cal.size + 1.0)
            n_cal[rows] = cal.size
        return p, n_cal

    def quantile(self, level: float, channel: str) -> float:
        """The split-conformal quantile at ``level`` of the channel's scores (``inf`` when
        the level needs more scores than there are): the band's half-width factor."""
        cal = self.scores_for(channel)
        k = conformal_rank(cal.size, level)
        return math.inf if k > cal.size else float(cal[k - 1])

    def standard_error(self, alpha: float) -> float:
        """The calibration's share of a flag rate's standard error at ``alpha``: the threshold
        is set on a finite sample of series, whose own exceedance share varies between
        series — the between-series s.e. of the calibration scores' flag rate against
        themselves. 0 when the series are not known (the fit's own scores)."""
        if self.series is None or len(self.series) == 0:
            return 0.0
        sid, ch, sc = self.series[:, 0], self.series[:, 1], self.series[:, 2].astype(np.float64)
        p, _ = self.p_values(sc, ch)
        frame = pd.DataFrame({"series": sid, "flag": p <= alpha})
        counts = frame.groupby("series", sort=False)["flag"].agg(["size", "sum"])
        se = between_series_se(counts["size"].to_numpy(), counts["sum"].to_numpy())
        return se if math.isfinite(se) else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"groups": {k: v.tolist() for k, v in self.groups.items()}, "min_group_size": self.min_group_size,
                "source": self.source}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WatchCalibration:
        groups = {str(k): np.sort(np.asarray(v, np.float64)) for k, v in dict(data["groups"]).items()}
        pooled = np.sort(np.concatenate(list(groups.values()))) if groups else np.zeros(0)
        return cls(groups, pooled, int(data.get("min_group_size", DEFAULT_MIN_GROUP_SIZE)), str(data.get("source", "")))


def calibration_part(fitted: FittedModel, obs: Observations) -> tuple[Observations, float | None, float | None, str]:
    """What of ``obs`` a watch may be calibrated on: when ``obs`` is the data the model was
    fitted on (same content hash), its calibration split only — the calibration series (a
    fit on many series) or the span of the calibration origins (rolling origins); any other
    data is taken as held out whole. Returns the observations, the scoring span (start,
    end; None: open) and a description."""
    same = bool(fitted.data_hash) and obs.content_hash() == fitted.data_hash
    if not same:
        return obs, None, None, f"{obs.n_series:,} series given as held out"
    split = fitted.split
    if split.mode == "series":
        ids = [s for s in split.calibration if s in set(obs.series_ids)]
        if not ids:
            raise DataError("the model's calibration series are not in the data")
        return obs.subset(ids), None, None, f"the fit's {len(ids):,} calibration series, replayed"
    if split.mode == "origin":
        clock = OriginClock.of(OriginPlan.from_dict(split.origin_plan or {}), obs.frame)
        starts = [clock.origins[m][1] for m in split.calibration if m in clock.origins]
        ends = [clock.origins[m][1] for m in split.test if m in clock.origins]
        if not starts:
            raise DataError("the model's calibration origins are not in the data")
        end = min(ends) if ends else None
        return obs, min(starts), end, "the span of the fit's calibration origins, replayed"
    raise DataError("a model fitted on windows of few series cannot tell its calibration windows from the data's "
                    "clock here: give held-out data (series or a later span the model never trained on) instead")


def watched_part(fitted: FittedModel, obs: Observations) -> tuple[Observations, float | None, str]:
    """What of ``obs`` a watch is honest on: the data the model was fitted on — its test
    split (the test series, or from the first test origin on); any other data, all of it.
    Returns the observations, the time scoring starts at (None: open) and a description."""
    same = bool(fitted.data_hash) and obs.content_hash() == fitted.data_hash
    split = fitted.split
    if same and split.mode == "series":
        ids = [s for s in split.test if s in set(obs.series_ids)]
        if ids:
            return obs.subset(ids), None, f"the {len(ids):,} test series (never trained or calibrated on)"
    if same and split.mode == "origin":
        clock = OriginClock.of(OriginPlan.from_dict(split.origin_plan or {}), obs.frame)
        starts = [clock.origins[m][1] for m in split.test if m in clock.origins]
        if starts:
            return obs, min(starts), "the span of the test origins (never trained or calibrated on)"
    return obs, None, f"all {obs.n_series:,} series of the data"
