"""A fitted model on disk and in memory: :class:`FittedModel`, ``save`` and :func:`load_model`.

A model directory holds ``model.json`` (configs, split, scaler, calibrations, the baseline)
and safetensors weights; nothing executable is ever loaded.

Saving is all or nothing: ``save`` writes every file into a temporary directory beside the
target, fsyncs it and swaps it in with renames (:mod:`levy_core.runtime.atomic`), so the
target holds the complete old model or the complete new one after a kill at any instant, a
full disk or any write error; a target that is a link, a file or a directory holding anything
but a model is refused (:func:`check_replaceable`). Recovery after SIGKILL: the next ``save``
to that target removes the dead writer's ``.NAME.tmp-PID-…`` temporaries, and ``save`` or
``load_model`` puts back an old model left aside (``.NAME.old-PID-…``) by a save cut between
its two renames (only on systems without ``renameat2`` exchange).
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import numbers
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from safetensors import SafetensorError
from safetensors.torch import load_model as load_weights
from safetensors.torch import save_model as save_weights

from levy_core.calibration.adaptive import AdaptiveConformal
from levy_core.calibration.calibrate import Calibrator
from levy_core.calibration.horizon_scale import HorizonScale
from levy_core.calibration.query_scale import QueryScale, query_context
from levy_core.data.clock import duration_text
from levy_core.data.drift import DriftReference
from levy_core.data.recorded import RecordedReading
from levy_core.episodes.baselines import LastValueForecaster
from levy_core.episodes.scaling import ChannelScaler
from levy_core.episodes.tasks import Split, TaskConfig
from levy_core.model.batch import Batch, ModelOutput
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.model.limits import (
    LimitError,
    check_json_shape,
    check_numbers,
    check_weights_header,
    expected_tensors,
    read_header,
)
from levy_core.model.reversion import MAX_RATE
from levy_core.model.softmax_twin import SoftmaxTwin
from levy_core.offsets.spec import BaseForecastSpec
from levy_core.pipeline.left_out import left_out_note
from levy_core.pipeline.predictive import Predictive, predictives
from levy_core.runtime.atomic import (
    UnsafeTargetError,
    check_directory_target,
    recover_directory,
    replace_directory,
    write_new_file,
)
from levy_core.training.train import TrainConfig

__all__ = ["FORMAT", "MAX_JSON_DEPTH", "MAX_MC_PASSES", "MAX_MODEL_JSON_BYTES", "MODEL_FILE_NAMES", "FittedModel",
           "ModelLoadError", "UnsafeTargetError", "check_replaceable", "check_save_target", "file_sha256", "json_depth", "load_model"]

FORMAT = "levy-model/2"  # 2: offset + channel tokens + time decay + query read-out + prior

# A model directory is input: bounded before it is parsed or anything is built (sizes and
# depths of the networks: levy_core.model.config.CONFIG_BOUNDS).
MAX_MODEL_JSON_BYTES = 64 * 2**20  # a split of two million series ids fits
MAX_JSON_DEPTH = 32  # model.json nests 6 deep; json.loads recurses once per level
MAX_MC_PASSES = 10_000  # the prediction runs this many passes of the twin
PERSISTENT_AUTOCORRELATION = 0.9  # a channel this autocorrelated (lag one) and without a season: band_note
WEIGHTS_SLACK_BYTES = 2**20  # a weights file may exceed its tensors' bytes by its header, at most this
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_CHUNK = 2**20


class ModelLoadError(ValueError):
    """A model directory that is missing, incomplete or not written by ``levy fit``."""


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
    # how the fit's data were read (columns, time unit, dates), reused by later commands (None: saved before)
    reading: RecordedReading | None = None

    def offset_description(self) -> str:
        """What the deterministic offset ``b(q)`` is, in words."""
        if self.base_forecast is not None:
            return f"a classical forecaster chosen on the rolling origins ({self.base_forecast.describe()})"
        if self.model_config.season > 0:
            return f"the value one season ({self.model_config.season:g} h) before the query"
        rate = self.levy.backbone.revert_rate.tolist()
        reverting = [c for c, r in enumerate(rate) if r > 0]
        if not reverting:
            return "the last observed value of the query's channel"
        towards = {0.0: "the training mean", 0.5: "halfway to the series' mean", 1.0: "the series' mean"}
        weights = self.levy.backbone.revert_to_series.tolist()
        each = [f"{self.channels[c]}: half-life {duration_text(math.log(2) / rate[c] * self.model_config.time_scale, ' ')}, "
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
        cut-off in the data's unit (:func:`~levy_core.pipeline.left_out.left_out_note`)."""
        return left_out_note(self.training, self.reading.time_unit if self.reading is not None else None)

    def band_note(self) -> str | None:
        """Plain words when the band is known to fall short at long leads: a forecast on
        rolling origins with no season whose channels carry their past forward like a random
        walk (lag-one autocorrelation at least ``PERSISTENT_AUTOCORRELATION``: a price, a
        rate, employment). None otherwise, or for a model saved before this was measured."""
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
        disagreement terms and of the query's context (``query_scale``), on rolling origins σ̂
        times the lead's factor ``s(h)`` (model time is the lead there), σ̂ otherwise; and the
        context summaries the map reads (``levy_core.calibration.query_scale.query_context``),
        (B, M) each. The one place a spread is made from a pass: prediction, advice and watch."""
        context = query_context(*(t.numpy() for t in (batch.qry_time, batch.qry_channel, batch.qry_mask, batch.ctx_time,
                                                        batch.ctx_channel, batch.ctx_value, batch.ctx_mask)))
        sigma = out.sigma.double().numpy()
        if self.query_scale is not None:
            spread = self.query_scale.spread(batch.qry_channel.numpy(), out.evidence_term.double().numpy(),
                                             out.disagreement_term.double().numpy(), context)
        elif self.horizon_scale is not None:
            spread = sigma * self.horizon_scale.factor(batch.qry_time.double().numpy())
        else:
            spread = sigma
        return spread, context

    def predictives(self, frame: pd.DataFrame) -> list[Predictive]:
        """Each method's predictive at the queries of a normalised prediction frame: Lévy,
        then MC-Dropout and the last-value baseline when the frame has their columns."""
        calibrators = {"levy": self.levy_calibration, "mc": self.mc_calibration,
                       "last_value": self.last_value_calibration}
        return predictives(frame, calibrators, self.scaler, self.adaptive, adaptive_by_channel=self.adaptive_by_channel)

    def prediction_range(self, times: np.ndarray) -> tuple[float, float]:
        """The span of time one series is predicted over, from its observation ``times`` (h):
        ``(cutoff, cutoff + horizon)`` for a forecast (to the series' last observation, or 5 %
        of its history past the cut-off, when no horizon was set), its observed span for
        interpolation.
        The one rule the grid and the ranking share."""
        if self.task.kind != "forecast":
            return float(times.min()), float(times.max())
        cutoff = float(self.task.cutoff)
        if self.task.horizon is not None:
            return cutoff, cutoff + float(self.task.horizon)
        # past a series that ends before the cut-off: 5 % of its history (not of the clock's
        # value, so a shifted clock gives the same range shifted)
        return cutoff, max(float(times.max()), cutoff + 0.05 * max(cutoff - float(times.min()), 0.0), cutoff + 1e-6)

    def save(self, directory: str | Path) -> Path:
        """Write ``model.json`` (configs, split, scaler, calibration) and safetensors weights,
        all at once: into a temporary directory beside ``directory``, fsynced, then swapped in
        (:func:`levy_core.runtime.atomic.replace_directory`), so that ``directory`` holds the
        complete old model or the complete new one whatever happens (a kill, a full disk).

        Raises
        ------
        UnsafeTargetError
            (a ValueError) ``directory`` is a symbolic link, a file, or a directory holding
            anything but a model's files (see :func:`check_replaceable`).
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
            "reading": self.reading.to_dict() if self.reading is not None else None,
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
    link, a file, or a directory holding anything but a model (:class:`UnsafeTargetError`)."""
    check_directory_target(Path(directory), check_replaceable)


def check_replaceable(directory: Path) -> None:
    """Refuse to replace an existing ``directory`` unless it holds a model's files only
    (:data:`MODEL_FILE_NAMES`, plain files, its ``model.json`` one written by ``levy fit``) or nothing.

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
        meta = _read_meta(meta_path) if meta_path.is_file() else None
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
    meta = _read_meta(meta_path)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelLoadError(f"{meta_path} has format {meta.get('format') if isinstance(meta, dict) else None!r}, "
                             f"expected {FORMAT!r}; re-run `levy fit` with this version")
    try:
        return _from_meta(meta, path)
    except ModelLoadError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError, RuntimeError, OSError,
            SafetensorError) as exc:
        # ValueError covers bad configs, scalers (DataError) and calibrations in model.json
        raise ModelLoadError(f"{path} is damaged, incomplete or from another version ({exc}); "
                             "re-run `levy fit`") from exc


def json_depth(text: bytes) -> int:
    """How deep arrays and objects nest in JSON ``text`` (brackets inside strings ignored),
    without recursion and in bounded memory, so it can be asked before ``json.loads``
    (which recurses once per level)."""
    structure = np.frombuffer(_JSON_STRING.sub(b'""', text), dtype=np.uint8)
    deepest = depth = 0
    for start in range(0, len(structure), _CHUNK):
        chunk = structure[start:start + _CHUNK]
        steps = (chunk == ord("[")).astype(np.int64) + (chunk == ord("{")) - (chunk == ord("]")) - (chunk == ord("}"))
        levels = depth + np.cumsum(steps)
        if len(levels):
            deepest, depth = max(deepest, int(levels.max())), int(levels[-1])
    return deepest


def _read_meta(meta_path: Path) -> Any:
    """``model.json`` parsed, after its size and nesting depth are checked."""
    size = meta_path.stat().st_size
    if size > MAX_MODEL_JSON_BYTES:
        raise ModelLoadError(f"{meta_path} is {size:,} bytes, more than the {MAX_MODEL_JSON_BYTES:,} a model "
                             "description takes; it was not written by `levy fit`: re-run `levy fit`")
    raw = meta_path.read_bytes()
    try:  # depth, objects and values counted before json.loads builds them
        check_json_shape(raw, str(meta_path), MAX_JSON_DEPTH)
    except LimitError as exc:
        raise ModelLoadError(str(exc)) from None
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of 4,300+ digits
        raise ModelLoadError(f"{meta_path} is not valid JSON ({exc}); re-run `levy fit`") from exc


def _require_finite(section: str, value: Any, where: str = "") -> None:
    """``ModelLoadError`` for a NaN or ±inf anywhere in ``value`` (JSON: dicts, lists, numbers)."""
    if isinstance(value, dict):
        for key, item in value.items():
            _require_finite(section, item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _require_finite(section, item, f"{where}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ModelLoadError(f"model.json: {section}{where} is {value}, not a finite number; re-run `levy fit`")


def _check_meta(meta: dict[str, Any], cfg: ModelConfig) -> None:
    """What the configs' own checks do not cover: finite numbers, the channel list, the
    MC-Dropout pass count and seed."""
    for section in ("model_config", "task", "train_config", "split", "scaler"):
        if not isinstance(meta[section], dict):
            raise ModelLoadError(f"model.json: {section} must be an object, got {type(meta[section]).__name__}; "
                                 "re-run `levy fit`")
        _require_finite(section, meta[section])
    channels = meta["channels"]
    if (not isinstance(channels, list) or len(channels) != cfg.n_channels
            or not all(isinstance(c, str) for c in channels) or len(set(channels)) != len(channels)):
        raise ModelLoadError(f"model.json: channels must list the model's {cfg.n_channels} distinct channel "
                             "names; re-run `levy fit`")
    passes, seed = meta.get("mc_passes", 20), meta["train_config"].get("seed", 0)
    if isinstance(passes, bool) or not isinstance(passes, numbers.Integral) or not 0 <= passes <= MAX_MC_PASSES:
        raise ModelLoadError(f"model.json: mc_passes must be an integer in [0, {MAX_MC_PASSES}], got {passes!r}; "
                             "re-run `levy fit`")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**63:
        raise ModelLoadError(f"model.json: train_config.seed must be an integer in [0, 2^63), got {seed!r}; "
                             "re-run `levy fit`")


def _from_meta(meta: dict[str, Any], path: Path) -> FittedModel:
    # everything in model.json is checked before the networks are built
    cfg = ModelConfig.from_dict(meta["model_config"])
    _check_meta(meta, cfg)
    try:
        check_numbers(meta)  # every number within what the float32 pass and the bands carry
    except LimitError as exc:
        raise ModelLoadError(str(exc)) from None

    def calibrator(key: str) -> Calibrator | None:
        return Calibrator.from_dict(meta[key]) if meta.get(key) else None

    parts = dict(
        model_config=cfg, task=TaskConfig.from_dict(meta["task"]),
        train_config=TrainConfig.from_dict(meta["train_config"]),
        split=Split.from_dict(meta["split"]), scaler=ChannelScaler.from_dict(meta["scaler"]),
        channels=list(meta["channels"]), levy_calibration=Calibrator.from_dict(meta["levy_calibration"]),
        mc_calibration=calibrator("mc_calibration"),
        mc_passes=int(meta.get("mc_passes", 20)), data_hash=str(meta.get("data_hash", "")),
        source_sha256=_source_sha256(meta.get("source_sha256", "")),
        training=dict(meta.get("training", {})),
        last_value=LastValueForecaster.from_dict(meta["last_value"]) if meta.get("last_value") else None,
        last_value_calibration=calibrator("last_value_calibration"),
        adaptive={str(key): {str(level): AdaptiveConformal.from_dict(state) for level, state in by_level.items()}
                  for key, by_level in (meta.get("adaptive") or {}).items()},
        adaptive_by_channel=meta.get("adaptive_by_channel") is True,
        # absent from models saved before drift statistics were recorded: they still load
        drift=DriftReference.from_dict(meta["drift"], meta["channels"]) if meta.get("drift") is not None else None,
        base_forecast=(BaseForecastSpec.from_dict(meta["base_forecast"]) if meta.get("base_forecast") is not None
                       else None),
        horizon_scale=(HorizonScale.from_dict(meta["horizon_scale"]) if meta.get("horizon_scale") is not None
                       else None),
        query_scale=(QueryScale.from_dict(meta["query_scale"]) if meta.get("query_scale") is not None else None),
        reading=_reading(meta.get("reading")),
    )
    levy = LevyModel(cfg)
    _load_weights(levy, path / "levy.safetensors")
    twin = None
    if (path / "softmax.safetensors").is_file():
        twin = SoftmaxTwin(cfg)
        _load_weights(twin, path / "softmax.safetensors")
    scales = meta.get("correction_scale") or {}  # absent from models saved before it was fitted: γ = 1
    for key, model in (("levy", levy), ("softmax", twin)):
        if model is not None and scales.get(key) is not None:
            model.correction_scale.copy_(correction_scale(scales[key], cfg.n_channels, key))
    bounds = meta.get("correction_bound") or {}  # absent from models saved before it was fitted: none
    for key, model in (("levy", levy), ("softmax", twin)):
        if model is not None and bounds.get(key) is not None:
            model.correction_bound.copy_(correction_bound(bounds[key], cfg.n_channels, key))
    reversion = meta.get("mean_reversion") or {}  # absent from models saved before it was fitted: none
    for key, model in (("levy", levy), ("softmax", twin)):
        if model is not None and reversion.get(key) is not None:
            rate, to_series = mean_reversion(reversion[key], cfg.n_channels, key)
            model.backbone.revert_rate.copy_(rate)
            model.backbone.revert_to_series.copy_(to_series)
    return FittedModel(levy=levy.eval(), twin=twin.eval() if twin else None, **parts)


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes as stored (a .csv.gz: of the compressed bytes), read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _reading(value: Any) -> RecordedReading | None:
    """``model.json``'s ``reading`` (how the fit read its data), validated; None when absent
    (a model saved before it was recorded: its data are read as before)."""
    if value is None:
        return None
    try:
        return RecordedReading.from_dict(value)
    except (ValueError, TypeError) as exc:
        raise ModelLoadError(f"model.json: reading: {exc}; re-run `levy fit`") from None


def _source_sha256(value: Any) -> str:
    """``model.json``'s ``source_sha256``: 64 hexadecimal digits, or "" (absent: fitted in memory,
    or saved before it was recorded)."""
    if value == "" or value is None:
        return ""
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ModelLoadError("model.json: source_sha256 must be 64 lower-case hexadecimal digits (the SHA-256 of "
                             "the data file) or empty; re-run `levy fit`")
    return value


def correction_scale(values: Any, n_channels: int, key: str) -> torch.Tensor:
    """``model.json``'s correction scale of one model: ``n_channels`` numbers in (0, 1]."""
    if not isinstance(values, list) or len(values) != n_channels or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 < v <= 1 for v in values):
        raise ModelLoadError(f"model.json: correction_scale.{key} must list {n_channels} numbers in (0, 1]; "
                             "re-run `levy fit`")
    return torch.tensor(values, dtype=torch.float32)


def correction_bound(values: Any, n_channels: int, key: str) -> torch.Tensor:
    """``model.json``'s correction bound of one model: ``n_channels`` entries, each a
    number in [0, 1e6] (normalised units) or null (no bound)."""
    if not isinstance(values, list) or len(values) != n_channels or not all(
            v is None or (isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 <= v <= 1e6)
            for v in values):
        raise ModelLoadError(f"model.json: correction_bound.{key} must list {n_channels} numbers in [0, 1e6] or "
                             "null; re-run `levy fit`")
    return torch.tensor([math.inf if v is None else v for v in values], dtype=torch.float32)


def mean_reversion(value: Any, n_channels: int, key: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``model.json``'s mean reversion of one model: ``rate`` (``n_channels`` numbers in
    [0, MAX_RATE]) and ``to_series`` (``n_channels`` numbers in [0, 1])."""
    def numbers_in(values: Any, hi: float) -> bool:
        return isinstance(values, list) and len(values) == n_channels and all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) and 0 <= v <= hi for v in values)

    if not isinstance(value, dict) or not numbers_in(value.get("rate"), MAX_RATE) or not numbers_in(
            value.get("to_series"), 1.0):
        raise ModelLoadError(f"model.json: mean_reversion.{key} must hold rate ({n_channels} numbers in "
                             f"[0, {MAX_RATE:g}]) and to_series ({n_channels} numbers in [0, 1]); re-run `levy fit`")
    return (torch.tensor(value["rate"], dtype=torch.float32), torch.tensor(value["to_series"], dtype=torch.float32))


def _load_weights(model: torch.nn.Module, file: Path) -> None:
    """safetensors only (no pickle): tensors, checked strictly against the architecture, no
    larger than it, and finite (a NaN ``log_kappa`` would make every σ̂ 0)."""
    tensors = model.state_dict().values()
    expected = sum(t.numel() * t.element_size() for t in tensors) + WEIGHTS_SLACK_BYTES
    size = file.stat().st_size
    if size > expected:
        raise ModelLoadError(f"{file} is {size:,} bytes, more than the {expected:,} this model's weights take; "
                             "re-run `levy fit`")
    try:  # names, shapes and dtypes (float32 only) from the header, before any tensor is read
        with open(file, "rb") as stream:
            header, header_bytes = read_header(stream, size, str(file))
        check_weights_header(header, header_bytes, size, expected_tensors(model), str(file))
    except LimitError as exc:
        raise ModelLoadError(str(exc)) from None
    missing, unexpected = load_weights(model, str(file), strict=False)
    if missing or unexpected:
        raise ModelLoadError(f"{file} does not match the model (missing {sorted(missing)[:3]}, "
                             f"unexpected {sorted(unexpected)[:3]}); re-run `levy fit`")
    bad = [name for name, t in model.state_dict().items() if t.is_floating_point() and not torch.isfinite(t).all()]
    if bad:
        raise ModelLoadError(f"{file} holds non-finite weights (NaN or ±inf in {', '.join(bad[:3])}"
                             f"{' …' if len(bad) > 3 else ''}); re-run `levy fit`")
