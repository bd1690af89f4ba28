"""levy_core.pipeline.predictive: one method's predictive (std, intervals, original units) against the
calibrator and the scaler it wraps, the frame -> predictives rule, and the original-unit
columns of a prediction frame checked by hand.

Everything is built from real parts: a ``ChannelScaler`` fitted on two channels whose ranges
differ by three orders of magnitude ("hr" ~ 60..140, "lactate" ~ 0.5..0.6), and
``Calibrator`` objects fitted per channel on random calibration data whose normalised errors
differ between the channels (so per-channel conformal quantiles differ from the pooled one).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special

from levy_core.calibration.calibrate import Calibrator
from levy_core.episodes.scaling import ChannelScaler
from levy_core.pipeline.predictive import (
    METHODS,
    Method,
    Predictive,
    add_bands,
    predictives,
    to_original_units,
)

EPS = np.finfo(np.float64).eps
CHANNELS = ("hr", "lactate")
N_CAL = 400  # per channel: above DEFAULT_MIN_GROUP_SIZE (50), so each channel has its own quantile
LEVEL = 0.9


def raw_frame(rng: np.random.Generator) -> pd.DataFrame:
    """Observations of two channels on very different scales (what the scaler is fitted on)."""
    n = 200
    return pd.DataFrame({
        "series_id": np.repeat(["a", "b"], n),
        "channel": np.tile(np.repeat(CHANNELS, n // 2), 2),
        "time": np.tile(np.arange(n, dtype=float), 2),
        "value": np.concatenate([rng.uniform(60.0, 140.0, n // 2), rng.uniform(0.5, 0.6, n // 2)] * 2),
    })


@pytest.fixture(scope="module")
def scaler() -> ChannelScaler:
    return ChannelScaler.fit(raw_frame(np.random.default_rng(1)))


def fitted_calibrator(seed: int) -> Calibrator:
    """A calibrator fitted per channel: "hr" errors are 3x wider (relative to sigma) than
    "lactate" errors, so the per-channel conformal quantiles differ."""
    rng = np.random.default_rng(seed)
    channel = np.repeat(CHANNELS, N_CAL)
    sigma = rng.uniform(0.02, 0.2, 2 * N_CAL)
    mean = rng.uniform(0.0, 1.0, 2 * N_CAL)
    width = np.where(channel == "hr", 3.0, 1.0)
    y = mean + width * sigma * rng.standard_normal(2 * N_CAL)
    return Calibrator().fit(y, mean, sigma, groups=channel)


@pytest.fixture(scope="module")
def calibrators() -> dict[str, Calibrator]:
    return {"levy": fitted_calibrator(10), "mc": fitted_calibrator(11), "last_value": fitted_calibrator(12)}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    """A normalised prediction frame with every method's columns, mixed channels."""
    rng = np.random.default_rng(2)
    n = 60
    channel = rng.choice(CHANNELS, n)
    disagreement = rng.uniform(0.001, 0.05, n)
    out = pd.DataFrame({
        "series_id": rng.choice(["a", "b", "c"], n),
        "channel": channel,
        "time": rng.uniform(0, 48, n),
        "y_norm": rng.uniform(0, 1, n),
        "mean_norm": rng.uniform(0, 1, n),
        "sigma_norm": rng.uniform(0.01, 0.3, n),
        "disagreement_norm": disagreement,
        "disagreement_term_norm": 0.5 * np.log(disagreement),
        "evidence_term": rng.normal(0, 1, n),
        "mc_mean_norm": rng.uniform(0, 1, n),
        "mc_std_norm": rng.uniform(0.01, 0.3, n),
        "lv_mean_norm": rng.uniform(0, 1, n),
        "lv_std_norm": rng.uniform(0.01, 0.3, n),
    })
    out["spread_norm"] = out["sigma_norm"]  # no lead factor: the band's spread is σ̂
    assert set(channel) == set(CHANNELS)
    return out


def levy_of(frame: pd.DataFrame, cal: Calibrator, scaler: ChannelScaler) -> Predictive:
    return Predictive(METHODS[0], frame["mean_norm"].to_numpy(np.float64),
                      frame["sigma_norm"].to_numpy(np.float64), cal, frame["channel"].to_numpy(), scaler)


def by_hand_scale(scaler: ChannelScaler, channels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row (minimum, max - min), straight from the scaler's dicts."""
    lo = np.array([scaler.minimum[c] for c in channels])
    return lo, np.array([scaler.maximum[c] for c in channels]) - lo


# ----------------------------------------------------------------------------- the scaler used here


def test_the_two_channels_really_are_on_different_scales(scaler: ChannelScaler) -> None:
    _, rng_ = by_hand_scale(scaler, np.array(CHANNELS))
    assert rng_[0] / rng_[1] > 100, "otherwise a channel mix-up in original units would go unnoticed"


# ----------------------------------------------------------------------------- std


def test_std_is_the_calibrators_and_original_multiplies_by_the_channel_scale(frame, calibrators, scaler) -> None:
    cal = calibrators["levy"]
    p = levy_of(frame, cal, scaler)
    spread = frame["sigma_norm"].to_numpy()
    channels = frame["channel"].to_numpy()
    np.testing.assert_array_equal(p.std(), cal.predict_std(spread, channels))
    # by hand: c_channel * max(spread, floor) (every spread here is far above the 1e-6-relative floor),
    # c_channel² = (Σ r² + k c²) / (n + k) over the channel's calibration scores
    sg = cal.scaled_gaussian
    assert sg.group_scales_["hr"] > 2 * sg.group_scales_["lactate"]  # hr's errors are 3× wider
    np.testing.assert_allclose(p.std(), sg.scales_for(channels, len(channels)) * spread, rtol=2 * EPS, atol=0)
    _, scale = by_hand_scale(scaler, channels)
    # one extra product (and max - min, computed the same way): at most 1 ulp each → 4 eps
    np.testing.assert_allclose(p.std(original=True), cal.predict_std(spread, channels) * scale, rtol=4 * EPS,
                               atol=0)
    hr = frame["channel"].to_numpy() == "hr"
    ratio = p.std(original=True) / p.std()
    assert ratio[hr].min() > 100 * ratio[~hr].max(), "each row scaled by its own channel"


# ----------------------------------------------------------------------------- intervals


def test_gaussian_interval_is_the_calibrators_and_mean_plus_minus_z_c_spread(frame, calibrators, scaler) -> None:
    cal = calibrators["levy"]
    p = levy_of(frame, cal, scaler)
    mean, spread = frame["mean_norm"].to_numpy(), frame["sigma_norm"].to_numpy()
    lo, hi = p.interval(LEVEL, "gaussian")
    channels = frame["channel"].to_numpy()
    ref_lo, ref_hi = cal.interval(mean, spread, LEVEL, kind="gaussian", groups=channels)
    np.testing.assert_array_equal(lo, ref_lo)
    np.testing.assert_array_equal(hi, ref_hi)
    # each channel's own scale c_channel (shrunk towards the global c)
    half = special.ndtri(0.5 + 0.5 * LEVEL) * cal.scaled_gaussian.scales_for(channels, len(channels)) * spread
    # mean (≤ 1) ± half (≤ 1): a handful of roundings, each ≤ eps relative to ≤ 2
    np.testing.assert_allclose(lo, mean - half, rtol=0, atol=8 * EPS)
    np.testing.assert_allclose(hi, mean + half, rtol=0, atol=8 * EPS)


def test_conformal_interval_uses_the_channels_as_groups(frame, calibrators, scaler) -> None:
    cal = calibrators["levy"]
    p = levy_of(frame, cal, scaler)
    channels = frame["channel"].to_numpy()
    mean, spread = frame["mean_norm"].to_numpy(), frame["sigma_norm"].to_numpy()
    lo, hi = p.interval(LEVEL, "conformal")
    ref_lo, ref_hi = cal.interval(mean, spread, LEVEL, kind="conformal", groups=channels)
    np.testing.assert_array_equal(lo, ref_lo)
    np.testing.assert_array_equal(hi, ref_hi)
    # the groups matter: the normalised half width is each channel's own quantile
    q = (hi - lo) / (2 * spread)
    hr = channels == "hr"
    for mask, channel in ((hr, "hr"), (~hr, "lactate")):
        # q·s/s: two roundings of a number near 1-5 → 4 eps relative
        np.testing.assert_allclose(q[mask], cal.conformal.quantile(LEVEL, channel), rtol=4 * EPS)
    assert q[hr].min() > 2 * q[~hr].max(), "hr errors are 3x wider: its band must be wider"
    # the default kind is conformal
    np.testing.assert_array_equal(p.interval(LEVEL)[0], lo)


@pytest.mark.parametrize("kind", ["gaussian", "conformal"])
def test_original_interval_maps_both_bounds_through_the_scaler(kind, frame, calibrators, scaler) -> None:
    p = levy_of(frame, calibrators["levy"], scaler)
    channels = frame["channel"].to_numpy()
    lo, hi = p.interval(LEVEL, kind)
    olo, ohi = p.interval(LEVEL, kind, original=True)
    np.testing.assert_array_equal(olo, scaler.inverse_value(lo, channels))
    np.testing.assert_array_equal(ohi, scaler.inverse_value(hi, channels))
    minimum, scale = by_hand_scale(scaler, channels)
    # v·(max-min)+min: two roundings relative to |result| (values ~ 1e-1..1e2) → 4 eps
    np.testing.assert_allclose(olo, lo * scale + minimum, rtol=4 * EPS)
    np.testing.assert_allclose(ohi, hi * scale + minimum, rtol=4 * EPS)
    np.testing.assert_allclose(p.original_mean(), frame["mean_norm"].to_numpy() * scale + minimum, rtol=4 * EPS)


# ----------------------------------------------------------------------------- predictives()


def test_predictives_one_per_present_method_in_methods_order(frame, calibrators, scaler) -> None:
    # the mapping's own order must not matter
    reversed_cals = dict(reversed(list(calibrators.items())))
    out = predictives(frame, reversed_cals, scaler)
    assert [p.method for p in out] == list(METHODS)
    assert [p.name for p in out] == ["Lévy", "MC-Dropout", "last value"]
    for p in out:
        assert isinstance(p.method, Method)
        assert p.calibrator is calibrators[p.method.key] and p.scaler is scaler
        np.testing.assert_array_equal(p.mean, frame[p.method.mean_column].to_numpy())
        np.testing.assert_array_equal(p.spread, frame[p.method.spread_column].to_numpy())
        np.testing.assert_array_equal(p.channels, frame["channel"].to_numpy())
        assert p.mean.dtype == np.float64 and p.spread.dtype == np.float64


def test_predictives_skip_methods_without_columns_or_calibrator(frame, calibrators, scaler) -> None:
    no_mc = {**calibrators, "mc": None}
    assert [p.method.key for p in predictives(frame, no_mc, scaler)] == ["levy", "last_value"]
    missing_key = {k: v for k, v in calibrators.items() if k != "last_value"}
    assert [p.method.key for p in predictives(frame, missing_key, scaler)] == ["levy", "mc"]
    # a method needs both its mean and its spread column
    assert [p.method.key for p in predictives(frame.drop(columns="mc_std_norm"), calibrators, scaler)] == [
        "levy", "last_value"]
    assert [p.method.key for p in predictives(frame.drop(columns="lv_mean_norm"), calibrators, scaler)] == [
        "levy", "mc"]
    only_levy = frame[["series_id", "channel", "time", "mean_norm", "sigma_norm"]]
    assert [p.method.key for p in predictives(only_levy, calibrators, scaler)] == ["levy"]
    assert predictives(frame, {}, scaler) == []


# ----------------------------------------------------------------------------- to_original_units


def test_to_original_units_columns_by_hand(frame, calibrators, scaler) -> None:
    before = frame.copy()
    methods = predictives(frame, calibrators, scaler)
    out = to_original_units(frame, methods, scaler, LEVEL)
    pd.testing.assert_frame_equal(frame, before)  # the input is not touched
    pd.testing.assert_frame_equal(out[list(frame.columns)], frame)  # normalised columns kept as they were

    ch = frame["channel"].to_numpy()
    minimum, scale = by_hand_scale(scaler, ch)
    levy, mc = calibrators["levy"], calibrators["mc"]
    mean, sigma = frame["mean_norm"].to_numpy(), frame["sigma_norm"].to_numpy()
    z = special.ndtri(0.5 + 0.5 * LEVEL)
    # Every column is a few float64 roundings of numbers of the result's own size (or of
    # |mean| + half width for the bands, ≤ 2 scaled units): 8 eps relative to the channel's
    # range covers them.
    tol = 8 * EPS * (scale + np.abs(minimum))

    def close(column: str, expected: np.ndarray) -> None:
        err = np.abs(out[column].to_numpy() - expected)
        assert (err <= tol).all(), f"{column}: error {err.max():.3g} above {tol[err.argmax()]:.3g}"

    close("y_true", frame["y_norm"].to_numpy() * scale + minimum)
    np.testing.assert_array_equal(out["abs_error_norm"], np.abs(frame["y_norm"] - frame["mean_norm"]).to_numpy())
    close("mean", mean * scale + minimum)
    close("sigma", sigma * scale)
    close("pred_std", levy.scaled_gaussian.scales_for(ch, len(ch)) * sigma * scale)
    np.testing.assert_allclose(out["disagreement"], frame["disagreement_norm"].to_numpy() * scale**2, rtol=4 * EPS)
    # the disagreement term moves with the units: ½ log(tr Σ · scale²) = ½ log tr Σ + log scale
    term = out["disagreement_term"].to_numpy()
    # one addition: ≤ ½ ulp of the result's size (here |term| < 8), with slack → 2 eps · max|term|
    np.testing.assert_allclose(term, frame["disagreement_term_norm"].to_numpy() + np.log(scale),
                               rtol=0, atol=2 * EPS * np.abs(term).max())
    # and it is ½ log of the original-unit disagreement: log of a product with ≤ 3 roundings
    # (≤ 3 eps relative → ≤ 1.5 eps absolute after ½ log), plus the sums above → 8 eps · max|term|
    np.testing.assert_allclose(term, 0.5 * np.log(out["disagreement"].to_numpy()),
                               rtol=0, atol=8 * EPS * np.abs(term).max())
    np.testing.assert_array_equal(out["evidence_term"], frame["evidence_term"])  # scale-free: unchanged
    c_channel = levy.scaled_gaussian.scales_for(ch, len(ch))
    close("lower_gauss", (mean - z * c_channel * sigma) * scale + minimum)
    close("upper_gauss", (mean + z * c_channel * sigma) * scale + minimum)
    q = np.array([levy.conformal.quantile(LEVEL, c) for c in ch])
    close("lower_conf", (mean - q * sigma) * scale + minimum)
    close("upper_conf", (mean + q * sigma) * scale + minimum)
    mc_mean, mc_std = frame["mc_mean_norm"].to_numpy(), frame["mc_std_norm"].to_numpy()
    close("mc_mean", mc_mean * scale + minimum)
    c_mc = mc.scaled_gaussian.scales_for(ch, len(ch))
    close("mc_std", c_mc * mc_std * scale)
    close("mc_lower", (mc_mean - z * c_mc * mc_std) * scale + minimum)
    close("mc_upper", (mc_mean + z * c_mc * mc_std) * scale + minimum)


def test_to_original_units_without_truth_or_twin(frame, calibrators, scaler) -> None:
    grid = frame.drop(columns=["y_norm", "mc_mean_norm", "mc_std_norm"])
    methods = predictives(grid, calibrators, scaler)
    out = to_original_units(grid, methods, scaler, LEVEL)
    assert not {"y_true", "abs_error_norm", "mc_mean", "mc_std", "mc_lower", "mc_upper"} & set(out.columns)
    assert {"mean", "sigma", "pred_std", "lower_conf", "upper_conf"} <= set(out.columns)


# ----------------------------------------------------------------------------- add_bands


@pytest.mark.parametrize("kind", ["gaussian", "conformal"])
@pytest.mark.parametrize("level", [0.5, 0.95])
def test_add_bands_are_the_predictives_intervals(kind, level, frame, calibrators, scaler) -> None:
    methods = predictives(frame, calibrators, scaler)
    before = frame.copy()
    out = add_bands(frame, methods, level, kind)
    pd.testing.assert_frame_equal(frame, before)
    assert not {"lower", "upper", "mc_lower", "mc_upper"} & set(frame.columns), "input frame unchanged"
    assert set(out.columns) - set(frame.columns) == {"lower", "upper", "mc_lower", "mc_upper"}
    levy, mc = methods[0], methods[1]
    lo, hi = levy.interval(level, kind, original=True)
    np.testing.assert_array_equal(out["lower"], lo)
    np.testing.assert_array_equal(out["upper"], hi)
    mlo, mhi = mc.interval(level, kind, original=True)
    np.testing.assert_array_equal(out["mc_lower"], mlo)
    np.testing.assert_array_equal(out["mc_upper"], mhi)
    assert (out["lower"] < out["upper"]).all()


def test_add_bands_without_twin_adds_only_the_levy_band(frame, calibrators, scaler) -> None:
    methods = predictives(frame, {**calibrators, "mc": None}, scaler)
    out = add_bands(frame, methods, LEVEL, "conformal")
    assert set(out.columns) - set(frame.columns) == {"lower", "upper"}


def test_the_levy_band_uses_the_lead_scaled_spread_and_sigma_stays_exact(frame, calibrators, scaler) -> None:
    """On rolling origins the band's spread is s(h)·σ̂ (``spread_norm``): bands and the
    calibrated std follow it, while the ``sigma`` column stays the operator's σ̂."""
    scaled = frame.assign(spread_norm=frame["sigma_norm"] * np.linspace(0.5, 2.0, len(frame)))
    levy = predictives(scaled, calibrators, scaler)[0]
    np.testing.assert_array_equal(levy.spread, scaled["spread_norm"].to_numpy())
    out = to_original_units(scaled, [levy], scaler, 0.9)
    channel_scale = scaler.scale_of(scaled["channel"].to_numpy())
    np.testing.assert_allclose(out["sigma"], scaled["sigma_norm"].to_numpy() * channel_scale)
    np.testing.assert_allclose(out["pred_std"], levy.std(original=True))
    # a frame without the column (written before lead factors) falls back to σ̂
    plain = predictives(scaled.drop(columns=["spread_norm"]), calibrators, scaler)[0]
    np.testing.assert_array_equal(plain.spread, scaled["sigma_norm"].to_numpy())


# ----------------------------------------------------------------------------- the band, derived once


def test_a_band_holds_each_levels_interval_in_both_units(frame, calibrators, scaler) -> None:
    """``Predictive.band`` is ``interval`` at each (level, kind), bit for bit, as (k, n)
    arrays, with the spread, the calibrated std and the Lévy signals of the frame."""
    levy = predictives(frame, calibrators, scaler)[0]
    asked = [(0.5, "gaussian"), (0.9, "conformal"), (0.9, "gaussian")]
    band = levy.band([lv for lv, _ in asked], [kd for _, kd in asked])
    n = len(frame)
    assert band.lower.shape == band.upper_original.shape == (3, n)
    assert band.labels == ("50", "90", "90") and band.kinds == ("gaussian", "conformal", "gaussian")
    for i, (level, kind) in enumerate(asked):
        lo, hi = levy.interval(level, kind)
        olo, ohi = levy.interval(level, kind, original=True)
        np.testing.assert_array_equal(band.lower[i], lo)
        np.testing.assert_array_equal(band.upper[i], hi)
        np.testing.assert_array_equal(band.lower_original[i], olo)
        np.testing.assert_array_equal(band.upper_original[i], ohi)
        np.testing.assert_array_equal(band.bounds(level, kind, original=True)[1], ohi)
    np.testing.assert_array_equal(band.std, levy.std())
    np.testing.assert_array_equal(band.sigma, frame["spread_norm"].to_numpy())
    np.testing.assert_array_equal(band.mean_original, levy.original_mean())
    np.testing.assert_array_equal(band.disagreement, frame["disagreement_norm"].to_numpy())
    assert band.row(0.9, "gaussian") == 2 and band.row(0.9) == 1  # the first row of the level
    with pytest.raises(ValueError, match="not at level 0.8"):
        band.row(0.8)
    with pytest.raises(ValueError, match="one band kind for all levels or one per level"):
        levy.band([0.5, 0.9], ["gaussian"])


def test_a_band_is_derived_once_per_level_and_kind(frame, calibrators, scaler, monkeypatch) -> None:
    """The prediction frame's columns read one band per method: each (method, level, kind)
    asks its calibrator once (the interval is derived nowhere else)."""
    calls: list[tuple[str, float, str]] = []
    interval = Predictive.interval

    def counted(self, level, kind="conformal", *, original=False):  # noqa: ANN001, ANN202
        calls.append((self.method.key, level, kind))
        return interval(self, level, kind, original=original)

    monkeypatch.setattr(Predictive, "interval", counted)
    to_original_units(frame, predictives(frame, calibrators, scaler), scaler, LEVEL)
    assert sorted(calls) == sorted([("levy", LEVEL, "gaussian"), ("levy", LEVEL, "conformal"),
                                    ("mc", LEVEL, "gaussian"), ("last_value", LEVEL, "gaussian")])


def test_without_a_level_the_frame_gets_no_band_columns(frame, calibrators, scaler) -> None:
    """``level=None``: the original-unit columns without bands (a caller that derives its
    own), the rest as with a level."""
    methods = predictives(frame, calibrators, scaler)
    plain, banded = to_original_units(frame, methods, scaler, None), to_original_units(frame, methods, scaler, LEVEL)
    bands = {"lower_gauss", "upper_gauss", "lower_conf", "upper_conf", "mc_lower", "mc_upper", "lv_lower", "lv_upper"}
    assert set(banded.columns) - set(plain.columns) == bands
    pd.testing.assert_frame_equal(plain, banded.drop(columns=sorted(bands)))
