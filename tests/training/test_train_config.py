"""TrainConfig refuses settings that would train nothing or fail later, naming the field
(levy_core.training.train)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from levy_core.training.train import TrainConfig

BAD = [
    ("epochs", 0),
    ("epochs", -1),
    ("epochs", 2.5),
    ("epochs", True),
    ("epochs", "40"),
    ("batch_size", 0),
    ("batch_size", -4),
    ("batch_size", 8.0),
    ("lr", 0.0),
    ("lr", -1e-3),
    ("lr", math.nan),
    ("lr", math.inf),
    ("weight_decay", -1e-5),
    ("weight_decay", math.nan),
    ("patience", -1),
    ("nll_weight", -0.1),
    ("nll_weight", math.inf),
    ("channel_weighting", math.nan),
    ("channel_weighting", -0.5),
    ("max_seconds", 0.0),
    ("max_seconds", -1.0),
    ("max_seconds", math.nan),
    ("max_seconds", math.inf),
    ("seed", -1),
    ("seed", 1.5),
    ("nll_beta", -0.5),
    ("nll_beta", 1.5),
    ("nll_beta", math.nan),
    ("ema_decay", -0.1),
    ("ema_decay", 1.0),
    ("ema_decay", math.nan),
]


@pytest.mark.parametrize(("name", "value"), BAD, ids=[f"{n}={v!r}" for n, v in BAD])
def test_bad_setting_is_refused_by_name(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"^TrainConfig\.{name} must be .*, got {value!r}$".replace("(", r"\(")):
        TrainConfig(**{name: value})


GOOD = [
    ("epochs", 1),
    ("epochs", np.int64(3)),
    ("batch_size", None),
    ("batch_size", 1),
    ("lr", 1e-6),
    ("weight_decay", 0.0),
    ("patience", 0),
    ("nll_weight", 0.0),
    ("channel_weighting", 0),
    ("channel_weighting", 1.0),
    ("max_seconds", None),
    ("max_seconds", 1e-6),
    ("seed", 0),
    ("ema_decay", 0.0),
    ("ema_decay", 0.995),
    ("nll_beta", 0.0),
    ("nll_beta", 0.5),
]


@pytest.mark.parametrize(("name", "value"), GOOD, ids=[f"{n}={v!r}" for n, v in GOOD])
def test_good_setting_is_kept(name: str, value: object) -> None:
    assert getattr(TrainConfig(**{name: value}), name) == value


def test_defaults_are_valid_and_round_trip() -> None:
    cfg = TrainConfig(epochs=3, batch_size=4, max_seconds=2.5, seed=7)
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    assert TrainConfig.from_dict({}) == TrainConfig()


def test_from_dict_refuses_unknown_keys() -> None:
    with pytest.raises(ValueError, match=r"unknown train_config keys \['epoch', 'learning_rate'\]"):
        TrainConfig.from_dict({"epoch": 3, "learning_rate": 0.1})


def test_from_dict_refuses_bad_values_and_non_mappings() -> None:
    with pytest.raises(ValueError, match=r"TrainConfig\.epochs must be a whole number ≥ 1, got 0"):
        TrainConfig.from_dict({"epochs": 0})
    with pytest.raises(ValueError, match="train_config must be a mapping"):
        TrainConfig.from_dict([("epochs", 3)])  # type: ignore[arg-type]
