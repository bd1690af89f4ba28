"""Tests of the per-channel normalisation (levy_core.episodes.scaling)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from data_files import LONG_CSV

from levy_core.data import DataError, read_csv
from levy_core.episodes.scaling import ChannelScaler


def test_scaler_round_trip() -> None:
    obs = read_csv(io.StringIO(LONG_CSV + "p3,1.0,Const,5\np3,2.0,Const,5\n"))
    scaler = ChannelScaler.fit(obs.frame, series_ids=["p1", "p2", "p3"])
    assert scaler.minimum["HR"] == 70.0 and scaler.maximum["HR"] == 80.0
    assert scaler.maximum["Const"] - scaler.minimum["Const"] == 1.0  # constant: range 1
    scaled = scaler.transform(obs.frame)
    assert list(scaled.columns) == list(obs.frame.columns)
    assert scaled["value"].between(0.0, 1.0).all()
    back = scaler.inverse_value(scaled["value"].to_numpy(), scaled["channel"].to_numpy())
    np.testing.assert_allclose(back, obs.frame["value"].to_numpy())
    np.testing.assert_allclose(
        scaler.scale_of(np.array(["HR", "Temp", "Const"])), [10.0, 37.2 - 36.9, 1.0]
    )
    restored = ChannelScaler.from_dict(json.loads(json.dumps(scaler.to_dict())))
    assert restored == scaler


def test_scaler_fit_on_subset_and_unseen_channel() -> None:
    obs = read_csv(io.StringIO(LONG_CSV + "p3,1.0,SpO2,97\n"))
    scaler = ChannelScaler.fit(obs.frame, series_ids=["p1"])
    assert scaler.minimum == {"HR": 70.0, "Temp": 37.2}
    with pytest.raises(DataError, match="'SpO2'"):
        scaler.transform(obs.frame)
    with pytest.raises(DataError):
        ChannelScaler.fit(obs.frame, series_ids=["nobody"])

