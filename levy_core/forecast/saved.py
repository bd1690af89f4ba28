"""A saved model opened for ``LevyForecaster.load``: the model from any of the forms a save
writes, and the constructor settings it records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from levy_core.data import RecordedReading
from levy_core.pipeline.modelfile import FittedModel, ModelLoadError, load_model
from levy_core.pipeline.recipe import MODEL_SIZES, size_name
from levy_core.serving.modelzip import MAX_ZIP_BYTES, load_model_zip

__all__ = ["open_saved_model", "saved_settings"]


def open_saved_model(path: str | Path | bytes) -> FittedModel:
    """A model directory, its model.json, a model zip or a zip's bytes, validated."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        return load_model_zip(bytes(path))
    source = Path(path)
    if source.is_dir():
        return load_model(source)
    if source.is_file() and source.name == "model.json":
        return load_model(source.parent)
    if source.is_file():
        if source.stat().st_size > MAX_ZIP_BYTES:
            raise ModelLoadError(f"{source} holds {source.stat().st_size:,} bytes, more than a saved model's "
                                          f"{MAX_ZIP_BYTES:,}; give a model directory or its zip")
        return load_model_zip(source.read_bytes(), name=source.name)
    raise ModelLoadError(f"{source} does not exist: give a model directory or its .zip "
                                  "(LevyForecaster.save, `levy fit --out DIR`)")


def _reading_settings(reading: RecordedReading | None) -> dict[str, Any]:
    """The constructor's column, clock and date settings a saved model records (none: as before)."""
    if reading is None:
        return {}
    names = reading.columns
    return {"time_unit": reading.time_unit, "dayfirst": reading.dayfirst, "date_format": reading.date_format,
            "id_col": names.series, "time_col": names.time, "value_col": names.value, "channel_col": names.channel,
            "channels": names.channels, "freq": reading.freq}


def saved_settings(fitted: FittedModel) -> dict[str, Any]:
    """The ``LevyForecaster`` settings a saved model records: how it was fitted (size, epochs,
    seed, task, budget, twin, ``phi``, transform) and how its data were read (columns, clock,
    dates, calendar), so that a loaded forecaster refits and reads alike."""
    size = size_name(fitted.model_config)
    return {"size": size if size in MODEL_SIZES else "auto", "epochs": fitted.train_config.epochs,
            "seed": fitted.train_config.seed, "task": fitted.task.kind, "max_seconds": fitted.train_config.max_seconds,
            "twin": fitted.twin is not None, "phi": fitted.model_config.phi,
            "transform": fitted.scaler.to_dict()["transform"], **_reading_settings(fitted.reading)}
