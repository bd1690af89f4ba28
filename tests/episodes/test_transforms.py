"""Per-channel value transforms (levy_core.episodes.transforms, ChannelScaler's use of them)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import skew

from levy_core.calibration.calibrate import Calibrator
from levy_core.data import DataError
from levy_core.episodes import transforms as tf
from levy_core.episodes.scaling import ChannelScaler
from levy_core.metrics import crps_lognormal_per_point
from levy_core.pipeline.predictive import METHODS, Predictive, to_original_units


def long_frame(columns: dict[str, np.ndarray], n_series: int = 20) -> pd.DataFrame:
    """A long frame: each channel's values spread over ``n_series`` series, one time each."""
    rows = []
    for channel, values in columns.items():
        for i, v in enumerate(values):
            rows.append({"series_id": f"s{i % n_series}", "time": float(i), "channel": channel, "value": float(v)})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def mixed() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    lognormal = np.exp(rng.normal(0.5, 1.0, 400))
    zeros = np.where(rng.random(400) < 0.2, 0.0, np.exp(rng.normal(1.0, 1.0, 400)))
    return long_frame({"bili": lognormal, "temp": rng.normal(37.0, 0.5, 400), "count": zeros,
                       "delta": rng.normal(0.0, 1.0, 400) ** 3})


def test_the_automatic_rule(mixed: pd.DataFrame) -> None:
    scaler = ChannelScaler.fit(mixed, transform="auto")
    # log-normal: log; symmetric: none; skewed with zeros: log1p; skewed with negatives: none
    assert {c: scaler.transform_of(c) for c in scaler.channels} == {
        "bili": "log", "count": "log1p", "delta": "none", "temp": "none"}
    assert scaler.transform_note() == "bili: log, count: log1p, delta: none, temp: none"
    # positive but symmetric (skewness ≤ 1): none; too few values: none
    assert tf.choose_transform(np.random.default_rng(1).uniform(10, 20, 500)) == "none"
    assert tf.choose_transform(np.array([1.0, 2.0, 100.0])) == "none"
    # mildly skewed but within 3 s.d. of zero (a Gaussian band would cross it): log, when the
    # log makes it more symmetric; a left-skewed one near zero (the log skews it more): none
    gamma = np.random.default_rng(3).gamma(6.0, 40.0, 2000)  # skewness ~0.8, mean 2.4 s.d. from 0
    assert skew(gamma) < tf.SKEW_THRESHOLD and gamma.mean() < tf.NEAR_ZERO_SDS * gamma.std()
    assert tf.choose_transform(gamma) == "log"
    assert tf.choose_transform(gamma.max() + 1.0 - gamma) == "none"
    # the skewness is measured on the training values, the sign on every value
    skewed = np.exp(np.random.default_rng(2).normal(0, 1, 300))
    assert tf.choose_transform(np.append(skewed, 0.0), skewed) == "log1p"


def test_values_round_trip_through_the_transform(mixed: pd.DataFrame) -> None:
    scaler = ChannelScaler.fit(mixed, transform="auto")
    scaled = scaler.transform(mixed)
    assert scaled["value"].between(0.0, 1.0).all()
    back = scaler.inverse_value(scaled["value"].to_numpy(), mixed["channel"].to_numpy())
    np.testing.assert_allclose(back, mixed["value"].to_numpy(), rtol=1e-9, atol=1e-9)
    bili = mixed[mixed["channel"] == "bili"]["value"]
    assert scaler.minimum["bili"] == pytest.approx(np.log(bili.min()))  # min-max of log v
    np.testing.assert_allclose(scaler.normalise(mixed["value"].to_numpy(), mixed["channel"].to_numpy()),
                               scaled["value"].to_numpy())


def test_scale_at_is_the_derivative_of_the_inverse_map(mixed: pd.DataFrame) -> None:
    scaler = ChannelScaler.fit(mixed, transform="auto")
    channels = np.array(["bili", "count", "temp"] * 3, dtype=object)
    v = np.repeat([0.1, 0.5, 0.9], 3)
    h = 1e-6
    numeric = (scaler.inverse_value(v + h, channels) - scaler.inverse_value(v - h, channels)) / (2 * h)
    np.testing.assert_allclose(scaler.scale_at(v, channels), numeric, rtol=1e-5)
    # no transform: the plain range, whatever the level
    np.testing.assert_allclose(scaler.scale_at(v, channels)[channels == "temp"], scaler.scale_of(channels)[channels == "temp"])


def test_the_scaling_round_trips_through_json_and_old_files_have_none(mixed: pd.DataFrame) -> None:
    scaler = ChannelScaler.fit(mixed, transform={"bili": "log", "temp": "none"})
    saved = json.loads(json.dumps(scaler.to_dict()))
    assert saved["transform"] == {"bili": "log", "count": "log1p", "delta": "none", "temp": "none"}
    assert ChannelScaler.from_dict(saved) == scaler
    old = {"minimum": saved["minimum"], "maximum": saved["maximum"]}  # saved before transforms existed
    assert ChannelScaler.from_dict(old).transforms == {}
    assert ChannelScaler.from_dict(old).transform_of("bili") == "none"
    with pytest.raises(DataError, match="'bili'"):
        ChannelScaler.from_dict({**saved, "transform": {**saved["transform"], "bili": "sqrt"}})


def test_overrides_are_parsed_and_refused_by_name(mixed: pd.DataFrame) -> None:
    assert tf.parse_transform("auto") == "auto"
    assert tf.parse_transform(" bili=log, albumin=none ") == {"bili": "log", "albumin": "none"}
    for bad in ("sqrt", "bili=sqrt", "bili", "=log", "bili:log,x"):
        with pytest.raises(ValueError, match="auto, none, log, log1p"):
            tf.parse_transform(bad)
    with pytest.raises(DataError, match=r"'delta'.*log.*minimum is -\d"):  # negative values: no log
        ChannelScaler.fit(mixed, transform={"delta": "log"})
    with pytest.raises(DataError, match=r"'count'.*minimum is 0.*count=log1p"):  # zeros: log1p, not log
        ChannelScaler.fit(mixed, transform={"count": "log"})
    with pytest.raises(DataError, match="'nosuch'"):
        ChannelScaler.fit(mixed, transform={"nosuch": "log"})
    forced = ChannelScaler.fit(mixed, transform={"temp": "log", "bili": "none"})
    assert forced.transform_of("temp") == "log" and forced.transform_of("bili") == "none"
    assert forced.transform_of("count") == "log1p"  # unnamed channels: auto


def test_new_data_a_log_channel_cannot_take_is_refused_by_name(mixed: pd.DataFrame) -> None:
    scaler = ChannelScaler.fit(mixed, transform="auto")
    new = pd.DataFrame({"series_id": ["n1", "n1"], "time": [0.0, 1.0], "channel": ["bili", "bili"],
                        "value": [1.0, -0.5]})
    with pytest.raises(DataError, match=r"'bili'.*minimum -0\.5.*log transform"):
        scaler.transform(new)


def _predictive(kind: str, n: int = 600, seed: int = 3) -> tuple[Predictive, ChannelScaler, np.ndarray]:
    """A calibrated predictive of one positive channel fitted with ``kind``, and the truth (original units)."""
    rng = np.random.default_rng(seed)
    level = rng.normal(0.0, 1.2, n)  # log of each query's true level: many near zero, a few large
    y = np.exp(level + rng.normal(0.0, 0.6, n))
    frame = long_frame({"v": y}, n_series=n)
    scaler = ChannelScaler.fit(frame, transform=kind)
    channels = np.full(n, "v", dtype=object)
    y_norm = scaler.normalise(y, channels)
    mean = scaler.normalise(np.exp(level), channels)  # the median as the point prediction
    spread = np.full(n, float(np.std(y_norm - mean)))
    cal = Calibrator().fit(y_norm[: n // 2], mean[: n // 2], spread[: n // 2], groups=channels[: n // 2])
    p = Predictive(METHODS[0], mean[n // 2:], spread[n // 2:], cal, channels[n // 2:], scaler)
    return p, scaler, y[n // 2:]


def test_a_positive_channel_keeps_its_band_above_zero_only_with_the_transform() -> None:
    p_log, _, y = _predictive("log")
    lo, hi = p_log.interval(0.9, "conformal", original=True)
    assert (lo > 0).all() and (hi > lo).all()
    glo, _ = p_log.interval(0.9, "gaussian", original=True)
    assert (glo > 0).all()
    p_none, _, _ = _predictive("none")
    lo_none, _ = p_none.interval(0.9, "conformal", original=True)
    assert (lo_none < 0).mean() > 0.5  # built to cross zero: a symmetric band around small values


def test_the_band_in_original_units_is_the_mapped_band_and_covers_alike() -> None:
    p, scaler, y = _predictive("log")
    lo_t, hi_t = p.interval(0.9, "conformal")
    lo, hi = p.interval(0.9, "conformal", original=True)
    np.testing.assert_allclose(lo, np.exp(lo_t * scaler.scale_of(p.channels) + scaler.minimum["v"]))
    np.testing.assert_allclose(hi, np.exp(hi_t * scaler.scale_of(p.channels) + scaler.minimum["v"]))
    y_t = scaler.normalise(y, p.channels)
    inside_t = (y_t >= lo_t) & (y_t <= hi_t)
    np.testing.assert_array_equal((y >= lo) & (y <= hi), inside_t)  # a monotone map: the same hits
    assert 0.85 <= inside_t.mean() <= 0.95
    median = p.original_mean()
    assert ((median > lo) & (median < hi)).all()  # the median sits inside its asymmetric band
    assert np.median((hi - median) / (median - lo)) > 1.2  # longer above than below


def test_original_unit_spreads_are_the_delta_method_at_the_mean() -> None:
    p, scaler, _ = _predictive("log")
    n = len(p.mean)
    frame = pd.DataFrame({"channel": p.channels, "mean_norm": p.mean, "sigma_norm": p.spread,
                          "spread_norm": p.spread, "disagreement_norm": p.spread**2,
                          "disagreement_term_norm": np.zeros(n)})
    out = to_original_units(frame, [p], scaler, 0.9)
    local = scaler.scale_of(p.channels) * out["mean"].to_numpy()  # (max - min) · exp(u) = range · median
    np.testing.assert_allclose(out["sigma"], p.spread * local)
    np.testing.assert_allclose(out["pred_std"], p.std() * local)
    np.testing.assert_allclose(out["disagreement"], p.spread**2 * local**2)
    np.testing.assert_allclose(out["disagreement_term"], np.log(local))
    np.testing.assert_allclose(out["lower_conf"], p.interval(0.9, original=True)[0])


def test_lognormal_crps_matches_its_definition() -> None:
    rng = np.random.default_rng(4)
    x = np.exp(rng.normal(0.3, 0.7, 200_000))
    x2 = rng.permutation(x)
    for y, shift in ((0.1, 0.0), (2.5, 0.0), (-0.5, 0.0), (0.0, 1.0), (4.0, 1.0)):
        closed = crps_lognormal_per_point([y], [0.3], [0.7], shift)[0]
        draws = x - shift  # Y = exp(X) - shift
        sampled = np.mean(np.abs(draws - y)) - 0.5 * np.mean(np.abs(draws - (x2 - shift)))
        assert closed == pytest.approx(sampled, rel=0.01, abs=2e-3)
    assert crps_lognormal_per_point([2.0], [0.0], [0.0])[0] == pytest.approx(1.0)  # a point mass at e^0
