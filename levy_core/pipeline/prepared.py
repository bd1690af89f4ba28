"""Observations as one fitted model sees them, prepared once.

[`prepare`][levy_core.pipeline.prepared.prepare] maps the user's observations into the model's series space (through the
split's `SeriesClock`), normalises them into an
`EpisodeBuilder` and records which split role each series has.
Every prediction, evaluation, ranking and diagnostic function takes the result, so the
episodes are built once per (model, data), however many views ask.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from levy_core.data import DataError, Observations
from levy_core.data.drift import refuse_unknown_channels
from levy_core.episodes.origins import OriginClock
from levy_core.episodes.tasks import EpisodeBuilder, SeriesClock, Split
from levy_core.offsets.base_forecast import BaseForecast
from levy_core.pipeline.modelfile import FittedModel

__all__ = ["ModelData", "as_model_data", "natural_key", "prepare"]

ROLES = ("train", "calibration", "test")


def natural_key(text: str) -> tuple:
    """Sort key that orders "s2" before "s10" (numbers compared as numbers)."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(text)))


@dataclass(frozen=True)
class ModelData:
    """One data set in one model's series space.

    Attributes
    ----------
    obs : Observations
        The user's observations, as loaded.
    clock : SeriesClock
        User ids/clock ↔ the model's (windows in few-series mode).
    builder : EpisodeBuilder
        The normalised episodes of every model-space series.
    fitted_split : Split
        The split the model was fitted under.
    fitted_hash : str
        ``Observations.content_hash`` of the data the model was fitted on ("" if unknown).
    """

    obs: Observations
    clock: SeriesClock
    builder: EpisodeBuilder
    fitted_split: Split
    fitted_hash: str

    @cached_property
    def same_data(self) -> bool:
        """``obs`` is the data the model was fitted on, so the model's split roles apply;
        otherwise every series is new (role "unseen"). Hashed on first use only: scoring
        new data (``levy rank``, ``levy predict``) never needs it."""
        return bool(self.fitted_hash) and self.obs.content_hash() == self.fitted_hash

    @cached_property
    def roles(self) -> dict[str, str]:
        """Model-space series id → "train", "calibration" or "test" (empty unless ``same_data``)."""
        if not self.same_data:
            return {}
        return {sid: r for r in ROLES for sid in getattr(self.fitted_split, r)}

    def role_of(self, series_id: str) -> str:
        return self.roles.get(series_id, "unseen")

    def series_in(self, role: str) -> list[str]:
        """The series of one split role with both context and queries (every such series
        when the data is new)."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        ids = [s for s, r in self.roles.items() if r == role] if self.same_data else sorted(self.builder.series)
        return self.builder.usable(sorted(ids))

    def points(self) -> pd.DataFrame:
        """Every observation in the model's series space with its role in the task.

        Columns ``series_id, channel, time, value`` (original units), ``role`` ("context",
        "held-out", "unused") and ``split`` ("train", "calibration", "test", "unseen")."""
        frame = self.clock.frame_to_model(self.obs.frame).reset_index(drop=True)
        role = np.full(len(frame), "unused", dtype=object)
        for sid, s in self.builder.series.items():
            ctx, qry = self.builder.split_indices(sid)
            role[s.row[ctx]] = "context"
            role[s.row[qry]] = "held-out"
        out = frame.copy()
        out["role"] = role
        out["split"] = [self.roles.get(sid, "unseen") for sid in out["series_id"]]
        return out

    def series_choices(self) -> list[str]:
        """Series with context, test first (held out from training), then calibration, then
        training; naturally sorted within each."""
        order = {"test": 0, "calibration": 1, "train": 2}
        with_context = [s for s in self.builder.series if len(self.builder.split_indices(s)[0])]
        ids = with_context or list(self.builder.series)
        return sorted(ids, key=lambda s: (order.get(self.role_of(s), 3), natural_key(s)))

    def channels_of(self, series_id: str, channels: list[str]) -> list[str]:
        """Channels observed in one series, those with most held-out observations first."""
        s = self.builder.series[series_id]
        _, qry = self.builder.split_indices(series_id)
        held = np.bincount(s.channel[qry], minlength=len(channels))
        names = sorted({channels[c] for c in np.unique(s.channel)}, key=natural_key)
        index = {c: i for i, c in enumerate(channels)}
        return sorted(names, key=lambda c: -int(held[index[c]]))


def prepare(fitted: FittedModel, obs: Observations) -> ModelData:
    """``obs`` in ``fitted``'s series space, normalised with its scaler (built once).
    ``DataError`` naming any channel the model was never trained on (and those it knows)."""
    refuse_unknown_channels(obs.channels, fitted.channels)
    fitted.scaler.check_range(obs.frame)  # values the model's float32 would overflow: named
    clock = fitted.split.clock(obs.frame)
    frame = clock.frame_to_model(obs.frame)
    builder = EpisodeBuilder(frame, fitted.channels, fitted.task, seed=fitted.train_config.seed,
                             scaler=fitted.scaler)
    if fitted.base_forecast is not None and isinstance(clock, OriginClock):
        builder.base = BaseForecast(fitted.base_forecast, fitted.scaler.transform(obs.frame), clock.origins,
                                    fitted.channels)
    return ModelData(obs, clock, builder, fitted.split, fitted.data_hash)


def as_model_data(fitted: FittedModel, data: Observations | ModelData) -> ModelData:
    """``data`` prepared for ``fitted`` (as is when it already is)."""
    if isinstance(data, ModelData):
        return data
    if not isinstance(data, Observations):
        raise DataError(f"expected Observations or ModelData, got {type(data).__name__}")
    return prepare(fitted, data)
