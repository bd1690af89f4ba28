"""A fitted model on disk and in memory: :class:`FittedModel`, ``save`` and :func:`load_model`.

A model directory holds ``model.json`` (configs, split, scaler, calibrations, the baseline)
and safetensors weights; nothing executable is ever loaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from safetensors import SafetensorError
from safetensors.torch import load_model as load_weights
from safetensors.torch import save_model as save_weights

from levy_core.adaptive import AdaptiveConformal
from levy_core.baselines import LastValueForecaster
from levy_core.calibrate import Calibrator
from levy_core.model import LevyModel, ModelConfig, SoftmaxTwin
from levy_core.predictive import Predictive, predictives
from levy_core.scaling import ChannelScaler
from levy_core.tasks import Split, TaskConfig
from levy_core.train import TrainConfig

__all__ = ["FORMAT", "FittedModel", "ModelLoadError", "load_model"]

FORMAT = "levy-model/2"  # 2: offset + channel tokens + time decay + query read-out + prior


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
    training: dict[str, Any] = field(default_factory=dict)
    last_value: LastValueForecaster | None = None  # the baseline every table shows beside the model
    last_value_calibration: Calibrator | None = None
    # origin mode: ACI state after the walk over the test origins, per method and level
    adaptive: dict[str, dict[str, AdaptiveConformal]] = field(default_factory=dict)

    @property
    def mean_kappa(self) -> float:
        return float(self.levy.kappa.mean())

    def predictives(self, frame: pd.DataFrame) -> list[Predictive]:
        """Each method's predictive at the queries of a normalised prediction frame: Lévy,
        then MC-Dropout and the last-value baseline when the frame has their columns."""
        calibrators = {"levy": self.levy_calibration, "mc": self.mc_calibration,
                       "last_value": self.last_value_calibration}
        return predictives(frame, calibrators, self.scaler, self.adaptive)

    def prediction_range(self, times: np.ndarray) -> tuple[float, float]:
        """The span of time one series is predicted over, from its observation ``times`` (h):
        ``(cutoff, cutoff + horizon)`` for a forecast (to the series' last observation, or
        5 % past the cut-off, when no horizon was set), its observed span for interpolation.
        The one rule the grid and the ranking share."""
        if self.task.kind != "forecast":
            return float(times.min()), float(times.max())
        cutoff = float(self.task.cutoff)
        if self.task.horizon is not None:
            return cutoff, cutoff + float(self.task.horizon)
        return cutoff, max(float(times.max()), cutoff + 0.05 * abs(cutoff), cutoff + 1e-6)

    def save(self, directory: str | Path) -> Path:
        """Write ``model.json`` (configs, split, scaler, calibration) and safetensors weights."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        # safetensors' save_model/load_model handle the tied query/key projections
        save_weights(self.levy, str(out / "levy.safetensors"))
        if self.twin is not None:
            save_weights(self.twin, str(out / "softmax.safetensors"))
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
            "training": self.training,
            "last_value": self.last_value.to_dict() if self.last_value else None,
            "last_value_calibration": self.last_value_calibration.to_dict() if self.last_value_calibration else None,
            "adaptive": {key: {level: aci.to_dict() for level, aci in by_level.items()}
                         for key, by_level in self.adaptive.items()},
        }
        (out / "model.json").write_text(json.dumps(meta, indent=1))
        return out


def load_model(directory: str | Path) -> FittedModel:
    """Load a directory written by ``FittedModel.save``; anything else is refused."""
    path = Path(directory)
    meta_path = path / "model.json"
    if not meta_path.is_file() or not (path / "levy.safetensors").is_file():
        raise ModelLoadError(f"{path} is not a model directory (model.json and levy.safetensors expected); "
                             "create one with `levy fit DATA --out DIR`")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise ModelLoadError(f"{meta_path} is not valid JSON ({exc}); re-run `levy fit`") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelLoadError(f"{meta_path} has format {meta.get('format') if isinstance(meta, dict) else None!r}, "
                             f"expected {FORMAT!r}; re-run `levy fit` with this version")
    try:
        return _from_meta(meta, path)
    except ModelLoadError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, OSError, SafetensorError) as exc:
        # ValueError covers bad configs, scalers (DataError) and calibrations in model.json
        raise ModelLoadError(f"{path} is damaged, incomplete or from another version ({exc}); "
                             "re-run `levy fit`") from exc


def _from_meta(meta: dict[str, Any], path: Path) -> FittedModel:
    cfg = ModelConfig.from_dict(meta["model_config"])
    levy = LevyModel(cfg)
    _load_weights(levy, path / "levy.safetensors")
    twin = None
    if (path / "softmax.safetensors").is_file():
        twin = SoftmaxTwin(cfg)
        _load_weights(twin, path / "softmax.safetensors")

    def calibrator(key: str) -> Calibrator | None:
        return Calibrator.from_dict(meta[key]) if meta.get(key) else None

    return FittedModel(
        levy=levy.eval(), twin=twin.eval() if twin else None, model_config=cfg,
        task=TaskConfig.from_dict(meta["task"]), train_config=TrainConfig.from_dict(meta["train_config"]),
        split=Split.from_dict(meta["split"]), scaler=ChannelScaler.from_dict(meta["scaler"]),
        channels=list(meta["channels"]), levy_calibration=Calibrator.from_dict(meta["levy_calibration"]),
        mc_calibration=calibrator("mc_calibration"),
        mc_passes=int(meta.get("mc_passes", 20)), data_hash=str(meta.get("data_hash", "")),
        training=dict(meta.get("training", {})),
        last_value=LastValueForecaster.from_dict(meta["last_value"]) if meta.get("last_value") else None,
        last_value_calibration=calibrator("last_value_calibration"),
        adaptive={str(key): {str(level): AdaptiveConformal.from_dict(state) for level, state in by_level.items()}
                  for key, by_level in (meta.get("adaptive") or {}).items()},
    )


def _load_weights(model: torch.nn.Module, file: Path) -> None:
    """safetensors only (no pickle): tensors, checked strictly against the architecture."""
    missing, unexpected = load_weights(model, str(file), strict=False)
    if missing or unexpected:
        raise ModelLoadError(f"{file} does not match the model (missing {sorted(missing)[:3]}, "
                             f"unexpected {sorted(unexpected)[:3]}); re-run `levy fit`")
