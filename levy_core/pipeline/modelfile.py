"""A fitted model on disk and in memory: [`FittedModel`][levy_core.pipeline.modelfile.FittedModel], ``save`` and [`load_model`][levy_core.pipeline.modelfile.load_model].

A model directory holds ``model.json`` (configs, split, scaler, calibrations, the baseline)
and safetensors weights; nothing executable is ever loaded.

Saving is all or nothing: ``save`` writes every file into a temporary directory beside the
target, fsyncs it and swaps it in with renames (`levy_core.runtime.atomic`), so the
target holds the complete old model or the complete new one after a kill at any instant, a
full disk or any write error; a target that is a link, a file or a directory holding anything
but a model is refused (`check_replaceable`). Recovery after SIGKILL: the next ``save``
to that target removes the dead writer's ``.NAME.tmp-PID-…`` temporaries, and ``save`` or
``load_model`` puts back an old model left aside (``.NAME.old-PID-…``) by a save cut between
its two renames (only on systems without ``renameat2`` exchange).
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from safetensors import SafetensorError
from safetensors.torch import save_model as save_weights

from levy_core.calibration.adaptive import AdaptiveConformal
from levy_core.calibration.calibrate import Calibrator, RowwiseCalibrator
from levy_core.calibration.horizon_scale import HorizonScale
from levy_core.calibration.learned_spread import LearnedSpread, query_columns
from levy_core.calibration.query_scale import QueryScale, query_context
from levy_core.data.drift import DriftReference
from levy_core.data.durations import say_duration
from levy_core.data.recorded import RecordedReading
from levy_core.episodes.baselines import LastValueForecaster
from levy_core.episodes.scaling import ChannelScaler
from levy_core.episodes.tasks import Split, TaskConfig
from levy_core.model.batch import Batch, ModelOutput
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.model.softmax_twin import SoftmaxTwin
from levy_core.offsets.spec import BaseForecastSpec
from levy_core.pipeline.left_out import left_out_note
from levy_core.pipeline.model_loading import (
    CALIBRATION_ATTRIBUTES,
    ModelLoadError,
    model_parts,
    read_meta,
)
from levy_core.pipeline.predictive import Predictive, predictives
from levy_core.pipeline.user_units import readable_summary
from levy_core.runtime.atomic import (
    UnsafeTargetError,
    check_directory_target,
    recover_directory,
    replace_directory,
    write_new_file,
)
from levy_core.training.train import TrainConfig

__all__ = ["CALIBRATION_ATTRIBUTES", "FORMAT", "MODEL_FILE_NAMES", "FittedModel", "ModelLoadError", "UnsafeTargetError", "check_replaceable",
           "check_save_target", "file_sha256", "learned_pass_spread", "load_model",
           "pass_columns"]

FORMAT = "levy-model/2"  # 2: offset + channel tokens + time decay + query read-out + prior
PERSISTENT_AUTOCORRELATION = 0.9  # a channel this autocorrelated (lag one) and without a season: band_note
_CHUNK = 2**20  # file_sha256 reads this many bytes at a time


@dataclass
class FittedModel:
    """A fitted Lévy model, its MC-Dropout twin and everything needed to use them."""

    levy: LevyModel
    twin: SoftmaxTwin | None
    model_config: ModelConfig
    task: TaskConfig
    train_config: TrainConfig
    split: Split
    scaler: ChannelScaler
    channels: list[str]
    levy_calibration: Calibrator
    mc_calibration: Calibrator | None
    mc_passes: int = 20
    data_hash: str = ""
    # SHA-256 of the file the model was fitted on, as read (``levy fit`` records it; "" when fitted in memory)
    source_sha256: str = ""
    training: dict[str, Any] = field(default_factory=dict)
    last_value: LastValueForecaster | None = None  # the baseline every table shows beside the model
    last_value_calibration: Calibrator | None = None
    # origin mode: ACI state after the walk over the test origins, per method and level
    adaptive: dict[str, dict[str, AdaptiveConformal]] = field(default_factory=dict)
    # whether that walk ran on each channel's calibrated σ (False: saved before, on the raw spread)
    adaptive_by_channel: bool = False
    # per-channel training statistics new data are checked against (None: saved before they were recorded)
    drift: DriftReference | None = None
    # origin mode: the classical forecaster each channel's offset b(q) is (None: the last value / season)
    base_forecast: BaseForecastSpec | None = None
    # origin mode: the band's spread per lead time, s(h)·σ̂ (None: σ̂ alone)
    horizon_scale: HorizonScale | None = None
    # panels: the band's spread per query, s(q) from σ̂'s two terms and the query's distance to the data
    # (levy_core.calibration.query_scale; None: σ̂ alone, or a model saved before it was fitted)
    query_scale: QueryScale | None = None
    # panels of at least learned_spread.MIN_QUERIES training queries: the band's spread learned from what a
    # query knows (levy_core.calibration.learned_spread; None: σ̂ alone, a smaller file, or saved before)
    learned_spread: LearnedSpread | None = None
    # how the fit's data were read (columns, time unit, dates), reused by later commands (None: saved before)
    reading: RecordedReading | None = None
    # panels: each method's calibration on the calibration and test series together, the band of
    # every series but those (None: the calibration split's for all; not a panel, or saved before)
    new_series_calibration: dict[str, Calibrator] | None = None

    def offset_description(self) -> str:
        """What the deterministic offset ``b(q)`` is, in words (durations in the data's clock)."""
        clock = self.reading.clock if self.reading is not None else None
        if self.base_forecast is not None:
            return f"a classical forecaster chosen on the rolling origins ({self.base_forecast.describe(clock)})"
        if self.model_config.season > 0:
            return f"the value one season ({say_duration(self.model_config.season, clock)}) before the query"
        rate = self.levy.backbone.revert_rate.tolist()
        reverting = [c for c, r in enumerate(rate) if r > 0]
        if not reverting:
            return "the last observed value of the query's channel"
        towards = {0.0: "the training mean", 0.5: "halfway to the series' mean", 1.0: "the series' mean"}
        weights = self.levy.backbone.revert_to_series.tolist()
        each = [f"{self.channels[c]}: half-life {say_duration(math.log(2) / rate[c] * self.model_config.time_scale, clock)}, "
                f"towards {towards.get(weights[c], f'{weights[c]:g} of the series mean')}" for c in reverting]
        return (f"the last observed value of the query's channel, reverting to its level as it ages on "
                f"{len(reverting)} of {len(rate)} channels ({'; '.join(each[:4])}{'; …' if len(each) > 4 else ''})")

    def training_note(self) -> str | None:
        """Plain words when the forecast is the offset: training could not improve on it on
        held-out episodes, or (one series or a few on rolling origins) the correction was measured but
        held back. None when the correction is applied, or for a model saved before this was
        measured."""
        info = (self.training or {}).get("levy") or {}
        if info.get("correction_held_back"):
            return (f"The forecast is the classical offset: on one series or a few, the network's learned correction is "
                    f"measured on held-out forecast origins (mean squared error {info.get('raw_mse', float('nan')):.3g} "
                    f"with it against {info.get('offset_mse', float('nan')):.3g} for the offset alone, normalised "
                    "units) but not applied: on held-out benchmark series, applying it cost more accuracy than it gained. "
                    "The band is the Lévy model's σ̂, calibrated: its evidence and disagreement say where the "
                    "forecast is uncertain.")
        if info.get("improves_on_offset", True):
            return None
        where = "forecast origins" if self.split.mode == "origin" else "series"
        kept = float(np.mean(info.get("correction_scale") or [1.0]))
        return (f"Training did not improve on the offset on held-out {where} (mean squared error "
                f"{info.get('mse', float('nan')):.3g} against {info.get('offset_mse', float('nan')):.3g} for the "
                f"offset alone, normalised units): the forecast is essentially the offset, with "
                f"{100 * kept:.0f} % of the learned correction kept. The band is "
                "still the Lévy model's σ̂, calibrated: its evidence and disagreement still say where the forecast "
                "is uncertain.")

    def left_out_note(self) -> str | None:
        """Plain words when the forecast cut-off left series of a panel out of the fit, the
        cut-off in the data's clock (`left_out_note`)."""
        return left_out_note(self.training, self.reading.clock if self.reading is not None else None)

    def band_note(self) -> str | None:
        """Plain words on what sizes the band where it is not σ̂ alone: the learned spread of a
        large forecast panel; or, where the band is known to fall short at long leads, a forecast
        on rolling origins with no season whose channels carry their past forward like a random
        walk (lag-one autocorrelation at least ``PERSISTENT_AUTOCORRELATION``: a price, a
        rate, employment). None otherwise, or for a model saved before this was measured."""
        if self.learned_spread is not None:
            return (f"The band's width is learned from this file's own errors ({self.learned_spread.n_queries:,} "
                    "training queries): besides σ̂'s evidence and disagreement, how long ago the query's channel was "
                    "seen, how far the forecast moves from that value and how much the channel moves in the series. "
                    "On unseen PhysioNet stays it ranks errors better than σ̂ alone; it is calibrated like σ̂ (split "
                    "conformal on held-out series). The evidence and disagreement shown are σ̂'s.")
        rho = (self.training or {}).get("persistence")
        persistent = {str(c): float(r) for c, r in (rho.items() if isinstance(rho, dict) else ())
                      if isinstance(r, (int, float)) and not isinstance(r, bool) and PERSISTENT_AUTOCORRELATION <= r <= 1}
        if self.split.mode != "origin" or self.task.kind != "forecast" or not persistent:
            return None
        named = ", ".join(f"{r:.2f} for {c}" for c, r in list(persistent.items())[:3]) + (" …" if len(persistent) > 3 else "")
        return (f"No season was found and the series carries its past forward like a random walk (lag-one "
                f"autocorrelation {named}). On such series the band is calibrated on the recent past's errors and has "
                "covered its level early in the horizon but less and less later (at 90 %: 0.89 of the first third, 0.67 of "
                "the last, on the 16 such benchmark series; a Gaussian process's band did worse): check it on this series "
                "with a backtest, and ask for a higher level where the far end of the horizon matters.")

    @property
    def mean_kappa(self) -> float:
        return float(self.levy.kappa.mean())

    def band_spread(self, batch: Batch, out: ModelOutput) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The band's spread at the queries of one Lévy pass ``out`` over ``batch``, (B, M)
        float64, before calibration: on panels the per-query map ``s(q)`` of σ̂'s evidence and
        disagreement terms and of the query's context (``query_scale``) or, on forecast panels
        past its gate, the spread learned from the training file's errors (``learned_spread``,
        `learned_pass_spread`), on rolling origins σ̂
        times the lead's factor ``s(h)`` (model time is the lead there), σ̂ otherwise; and the
        context summaries the map reads (``levy_core.calibration.query_scale.query_context``),
        (B, M) each. The one place a spread is made from a pass: prediction, advice and watch."""
        context = query_context(*(t.numpy() for t in (batch.qry_time, batch.qry_channel, batch.qry_mask, batch.ctx_time,
                                                        batch.ctx_channel, batch.ctx_value, batch.ctx_mask)))
        sigma = out.sigma.double().numpy()
        if self.query_scale is not None:
            spread = self.query_scale.spread(batch.qry_channel.numpy(), out.evidence_term.double().numpy(),
                                             out.disagreement_term.double().numpy(), context)
        elif self.learned_spread is not None:
            spread = learned_pass_spread(self.learned_spread, batch, out, context)
        elif self.horizon_scale is not None:
            spread = sigma * self.horizon_scale.factor(batch.qry_time.double().numpy())
        else:
            spread = sigma
        return spread, context

    def predictives(self, frame: pd.DataFrame) -> list[Predictive]:
        """Each method's predictive at the queries of a normalised prediction frame: Lévy,
        then MC-Dropout and the last-value baseline when the frame has their columns.

        On a panel, a query of a new series (or a training one) takes the band calibrated on
        the calibration and test series together; a query of one of those held-out series
        takes the band of the calibration split alone, which never saw the test series
        (`RowwiseCalibrator`): what ``evaluate`` scores on them stays out of sample."""
        calibrators: dict[str, Calibrator | RowwiseCalibrator | None] = {
            key: getattr(self, attribute) for key, attribute in CALIBRATION_ATTRIBUTES.items()}
        if self.new_series_calibration and "series_id" in frame:
            held = frame["series_id"].astype(str).isin(self.held_out_series()).to_numpy()
            for key, own in list(calibrators.items()):
                other = self.new_series_calibration.get(key)
                if own is not None and other is not None and not held.all():
                    calibrators[key] = other if not held.any() else RowwiseCalibrator(own, other, held)
        return predictives(frame, calibrators, self.scaler, self.adaptive, adaptive_by_channel=self.adaptive_by_channel)

    def calibration_for(self, series_id: str, key: str = "levy") -> Calibrator | None:
        """The calibrator of method ``key`` ("levy", "mc", "last_value") that a query of the
        model-space series ``series_id`` takes, as `predictives` picks it: the calibration
        split's for a calibration or test series, the new-series one for any other on a panel."""
        own = getattr(self, CALIBRATION_ATTRIBUTES[key])
        other = (self.new_series_calibration or {}).get(key)
        return own if own is None or other is None or str(series_id) in self.held_out_series() else other

    def held_out_series(self) -> set[str]:
        """The model-space series of the calibration and test splits: those that keep the
        calibration split's band on a panel (`predictives`)."""
        return set(self.split.calibration) | set(self.split.test)

    def conformal_scores_count(self, series_ids: Iterable[str]) -> int:
        """How many calibration scores the Lévy conformal band of ``series_ids`` (model space)
        rests on: the fewest among the calibrators those series take (`calibration_for`). A
        split-conformal band at level ``L`` is finite only from ``L / (1 − L)`` scores on."""
        own = self.levy_calibration.conformal.n_calibration_
        new = (self.new_series_calibration or {}).get("levy")
        if new is None:
            return own
        ids, held = {str(s) for s in series_ids}, self.held_out_series()
        counts = ([own] if ids & held else []) + ([new.conformal.n_calibration_] if ids - held else [])
        return min(counts, default=own)

    def new_series_note(self) -> str | None:
        """On a panel, in plain words: which band new series take and which band the test series
        are scored with (``levy fit``, ``levy evaluate``, the calibration page); None otherwise."""
        if not self.new_series_calibration or "levy" not in self.new_series_calibration:
            return None
        new, own = self.new_series_calibration["levy"], self.levy_calibration
        return (f"A new series (or a training series' forecast) takes the band calibrated on the calibration and "
                f"test series together ({new.conformal.n_calibration_:,} queries, c = {new.scale_:.3g}); the test "
                f"series are scored with the band of the calibration series alone "
                f"({own.conformal.n_calibration_:,} queries, c = {own.scale_:.3g}), which never saw them.")

    def prediction_range(self, times: np.ndarray) -> tuple[float, float]:
        """The span of time one series is predicted over, from its observation ``times`` (h):
        ``(cutoff, cutoff + horizon)`` for a forecast (to the series' last observation, or 5 %
        of its history past the cut-off, when no horizon was set), its observed span for
        interpolation.
        The one rule the grid and the ranking share."""
        if self.task.kind != "forecast":
            return float(times.min()), float(times.max())
        cutoff = self.task.series_cutoff(times)  # one for all, or this series' own
        if self.task.horizon is not None:
            return cutoff, cutoff + float(self.task.horizon)
        # past a series that ends before the cut-off: 5 % of its history (not of the clock's
        # value, so a shifted clock gives the same range shifted)
        return cutoff, max(float(times.max()), cutoff + 0.05 * max(cutoff - float(times.min()), 0.0), cutoff + 1e-6)

    def save(self, directory: str | Path) -> Path:
        """Write ``model.json`` (configs, split, scaler, calibration) and safetensors weights,
        all at once: into a temporary directory beside ``directory``, fsynced, then swapped in
        (`levy_core.runtime.atomic.replace_directory`), so that ``directory`` holds the
        complete old model or the complete new one whatever happens (a kill, a full disk).

        Raises
        ------
        UnsafeTargetError
            (a ValueError) ``directory`` is a symbolic link, a file, or a directory holding
            anything but a model's files (see `check_replaceable`).
        OSError
            A write failed (a full disk): the old model is intact, the temporary removed.
        """
        return replace_directory(directory, self._write_files, check_replaceable)

    def _write_files(self, out: Path) -> None:
        """Every file of the model into the empty directory ``out``."""
        _save_weights(self.levy, out / "levy.safetensors")
        if self.twin is not None:
            _save_weights(self.twin, out / "softmax.safetensors")
        meta = {
            "format": FORMAT,
            "model_config": self.model_config.to_dict(),
            "task": self.task.to_dict(),
            "train_config": self.train_config.to_dict(),
            "split": self.split.to_dict(),
            "scaler": self.scaler.to_dict(),
            "channels": self.channels,
            "levy_calibration": self.levy_calibration.to_dict(),
            "mc_calibration": self.mc_calibration.to_dict() if self.mc_calibration else None,
            "mc_passes": self.mc_passes,
            "data_hash": self.data_hash,
            "source_sha256": self.source_sha256,
            "training": self.training,
            "last_value": self.last_value.to_dict() if self.last_value else None,
            "last_value_calibration": self.last_value_calibration.to_dict() if self.last_value_calibration else None,
            "adaptive": {key: {level: aci.to_dict() for level, aci in by_level.items()}
                         for key, by_level in self.adaptive.items()},
            "adaptive_by_channel": self.adaptive_by_channel,
            "drift": self.drift.to_dict() if self.drift is not None else None,
            "base_forecast": self.base_forecast.to_dict() if self.base_forecast is not None else None,
            "horizon_scale": self.horizon_scale.to_dict() if self.horizon_scale is not None else None,
            "query_scale": self.query_scale.to_dict() if self.query_scale is not None else None,
            "learned_spread": self.learned_spread.to_dict() if self.learned_spread is not None else None,
            "reading": self.reading.to_dict() if self.reading is not None else None,
            # only what the test series add to the calibration split's scores (the model stays half the size)
            "new_series_calibration": ({key: {"scaled_gaussian": c.scaled_gaussian.to_dict(),
                                              "added_scores": c.conformal.added_to_dict()}
                                        for key, c in self.new_series_calibration.items()}
                                       if self.new_series_calibration else None),
            "summary": readable_summary(self),  # in words and the data's clock, for people; never read back
            "correction_scale": {"levy": self.levy.correction_scale.tolist(),
                                 "softmax": self.twin.correction_scale.tolist() if self.twin is not None else None},
            "correction_bound": {key: [None if math.isinf(b) else b for b in model.correction_bound.tolist()]
                                 for key, model in (("levy", self.levy), ("softmax", self.twin)) if model is not None},
            "mean_reversion": {key: {"rate": model.backbone.revert_rate.tolist(),
                                     "to_series": model.backbone.revert_to_series.tolist()}
                               for key, model in (("levy", self.levy), ("softmax", self.twin)) if model is not None},
        }
        write_new_file(out / "model.json", json.dumps(meta, indent=1).encode("utf-8"))


def _save_weights(model: torch.nn.Module, file: Path) -> None:
    """safetensors' save_model (it handles the tied query/key projections); its own error
    (a full disk seen from its Rust writer) as an OSError naming the file."""
    try:
        save_weights(model, str(file))
    except SafetensorError as exc:
        raise OSError(errno.EIO, f"could not write the model's weights ({exc})", file.name) from exc


MODEL_FILE_NAMES = ("model.json", "levy.safetensors", "softmax.safetensors")


def check_save_target(directory: str | Path) -> None:
    """Refuse, before a fit or a write, a ``directory`` that ``save`` would refuse: a symbolic
    link, a file, or a directory holding anything but a model (`UnsafeTargetError`)."""
    check_directory_target(Path(directory), check_replaceable)


def check_replaceable(directory: Path) -> None:
    """Refuse to replace an existing ``directory`` unless it holds a model's files only
    (`MODEL_FILE_NAMES`, plain files, its ``model.json`` one written by ``levy fit``) or nothing.

    Raises
    ------
    UnsafeTargetError
        Naming the entry that is not a model's and what to do.
    """
    how = "give a new directory, or remove it first if it is yours to replace"
    entries = sorted(directory.iterdir())
    for entry in entries:
        if entry.is_symlink():
            raise UnsafeTargetError(f"{directory} holds {entry.name}, a symbolic link (to {os.readlink(entry)}): a model "
                                    f"is never written through a link; {how}")
        if entry.name not in MODEL_FILE_NAMES or not entry.is_file():
            raise UnsafeTargetError(f"{directory} holds {entry.name}, which is not part of a saved model "
                                    f"({', '.join(MODEL_FILE_NAMES)}): it would be lost; {how}")
    if not entries:
        return
    meta_path = directory / "model.json"
    try:
        meta = read_meta(meta_path) if meta_path.is_file() else None
    except ModelLoadError:
        meta = None
    if not isinstance(meta, dict) or not str(meta.get("format", "")).startswith("levy-model/"):
        raise UnsafeTargetError(f"{directory} is not a saved model (its model.json is missing or was not written by "
                                f"`levy fit`): it would be overwritten; {how}")


def load_model(directory: str | Path) -> FittedModel:
    """Load a directory written by ``FittedModel.save``; anything else is refused."""
    path = Path(directory)
    if not path.exists():  # a save cut between its two renames: the old model back in place
        recover_directory(path)
    meta_path = path / "model.json"
    if not meta_path.is_file() or not (path / "levy.safetensors").is_file():
        raise ModelLoadError(f"{path} is not a model directory (model.json and levy.safetensors expected); "
                             "create one with `levy fit DATA --out DIR`")
    meta = read_meta(meta_path)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelLoadError(f"{meta_path} has format {meta.get('format') if isinstance(meta, dict) else None!r}, "
                             f"expected {FORMAT!r}; re-run `levy fit` with this version")
    try:
        parts, levy, twin = model_parts(meta, path)
        return FittedModel(levy=levy.eval(), twin=twin.eval() if twin else None, **parts)
    except ModelLoadError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError, RuntimeError, OSError,
            SafetensorError) as exc:
        # ValueError covers bad configs, scalers (DataError) and calibrations in model.json
        raise ModelLoadError(f"{path} is damaged, incomplete or from another version ({exc}); "
                             "re-run `levy fit`") from exc


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes as stored (a .csv.gz: of the compressed bytes), read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def pass_columns(batch: Batch, out: ModelOutput, context: dict[str, np.ndarray]) -> np.ndarray:
    """`query_columns` at the queries of one Lévy pass ``out`` over ``batch`` (on the CPU),
    shape (B·M, 13), ``context`` the pass's `query_context` summaries (B, M) each: σ̂'s terms,
    the heads' mean evidence and the forecast beside the context."""
    n_heads = out.log_evidence.shape[1]
    log_evidence = torch.logsumexp(out.log_evidence.double(), dim=1) - math.log(n_heads)
    return query_columns(*(t.detach().double().cpu().numpy().reshape(-1)
                           for t in (out.evidence_term, out.disagreement_term, out.sigma, log_evidence, out.mean,
                                     batch.qry_channel)),
                         {k: np.asarray(v).reshape(-1) for k, v in context.items()})


def learned_pass_spread(learned: LearnedSpread, batch: Batch, out: ModelOutput,
                        context: dict[str, np.ndarray]) -> np.ndarray:
    """The learned spread at the queries of one Lévy pass ``out`` over ``batch``, (B, M) float64,
    ``context`` the pass's `query_context` summaries (B, M) each."""
    return learned.spread(pass_columns(batch, out, context)).reshape(out.sigma.shape)
