"""The per-query spread map: its context summaries against a brute-force reference, σ̂ at the
prior, recovery of a known spread, its saved form, and split conformal's guarantee kept."""

from __future__ import annotations

import math

import numpy as np
import pytest

from levy_core.calibration.query_scale import (
    CONTEXT_COLUMNS,
    FEATURES,
    PRIOR,
    QueryScale,
    fit_query_scale,
    query_context,
    query_features,
)
from levy_core.calibration.split_conformal import SplitConformal


def _random_batch(rng: np.random.Generator, B: int = 4, N: int = 12, M: int = 9, C: int = 3):
    ctx_time = np.sort(rng.uniform(0, 50, (B, N)), axis=1)
    ctx_channel = rng.integers(0, C, (B, N))
    ctx_value = rng.normal(size=(B, N))
    ctx_mask = (rng.uniform(size=(B, N)) < 0.8).astype(float)
    ctx_mask[0] = 0.0  # a series with no context at all
    qry_time = rng.uniform(0, 80, (B, M))
    qry_channel = rng.integers(0, C, (B, M))
    qry_mask = (rng.uniform(size=(B, M)) < 0.9).astype(float)
    return qry_time, qry_channel, qry_mask, ctx_time, ctx_channel, ctx_value, ctx_mask


def _reference(qt, qc, qm, ct, cc, cv, cm):
    """Query by query, with loops: the nearest observations and the channel's history."""
    B, M = qt.shape
    out = {k: np.full((B, M), np.inf if k.startswith("gap") else np.nan) for k in CONTEXT_COLUMNS}
    for b in range(B):
        obs = [(ct[b, n], cc[b, n], cv[b, n]) for n in range(ct.shape[1]) if cm[b, n] > 0]
        for j in range(M):
            if qm[b, j] <= 0 or not obs:
                continue
            out["gap_any"][b, j] = min(abs(qt[b, j] - t) for t, _, _ in obs)
            own = sorted((t, v) for t, c, v in obs if c == qc[b, j])
            if not own:
                continue
            gaps = [abs(qt[b, j] - t) for t, _ in own]
            i = int(np.argmin(gaps))
            out["gap_channel"][b, j] = gaps[i]
            out["near_value"][b, j] = own[i][1]
            values = np.array([v for _, v in own])
            out["own_spread"][b, j] = values.std()
            if len(values) >= 2:
                out["own_step"][b, j] = np.abs(np.diff(values)).mean()
    return out


@pytest.mark.parametrize("seed", range(5))
def test_query_context_matches_a_brute_force_reference(seed: int) -> None:
    arrays = _random_batch(np.random.default_rng(seed))
    got, want = query_context(*arrays), _reference(*arrays)
    for k in CONTEXT_COLUMNS:
        # the batch is searched on one key, series × span + time: rounding of that sum, ~1e-13 h
        np.testing.assert_allclose(got[k], want[k], rtol=1e-9, atol=1e-9, err_msg=k)


def test_the_prior_map_is_sigma_hat_up_to_a_channel_factor() -> None:
    rng = np.random.default_rng(1)
    n = 50
    evidence, disagreement = rng.normal(size=n), rng.normal(size=n)
    context = {k: rng.uniform(0.1, 5, n) for k in CONTEXT_COLUMNS}
    channel = rng.integers(0, 2, n)
    scale = QueryScale((0.0, math.log(2.0)), PRIOR, unit=1.0)
    s = scale.spread(channel, evidence, disagreement, context)
    np.testing.assert_allclose(s, np.exp(evidence + disagreement) * np.where(channel == 1, 2.0, 1.0), rtol=1e-12)
    terms = scale.terms(channel, query_features(evidence, disagreement, context, 1.0))
    np.testing.assert_allclose(sum(terms.values()), np.log(s), rtol=1e-12)


def _synthetic(rng: np.random.Generator, n: int, beta_level: float = 0.8, beta_gap: float = 0.5):
    """Errors whose scale follows the level and the distance, not σ̂'s disagreement term."""
    channel = rng.integers(0, 3, n)
    evidence, disagreement = rng.normal(0, 0.3, n), rng.normal(0, 0.3, n)
    context = {"gap_any": rng.uniform(0, 10, n), "near_value": rng.uniform(-1, 1, n),
               "own_spread": rng.uniform(0, 1, n), "own_step": rng.uniform(0, 1, n)}
    context["gap_channel"] = context["gap_any"] + rng.uniform(0, 5, n)
    x = query_features(evidence, disagreement, context, float(np.median(context["gap_any"])))
    log_s = np.array([0.0, 0.5, -0.5])[channel] + evidence + beta_level * x[:, 5] + beta_gap * x[:, 2]
    y = rng.normal(0, np.exp(log_s))
    return channel, y, evidence, disagreement, context, log_s


def test_the_fit_recovers_a_known_spread() -> None:
    rng = np.random.default_rng(7)
    channel, y, evidence, disagreement, context, log_s = _synthetic(rng, 6000)
    scale = fit_query_scale(channel, y, np.zeros_like(y), evidence, disagreement, context, n_channels=3)
    assert scale is not None and scale.n_queries == 6000
    beta = dict(zip(FEATURES, scale.coefficients, strict=True))
    assert beta["level"] == pytest.approx(0.8, abs=0.12)
    assert beta["gap_any"] == pytest.approx(0.5, abs=0.15)
    assert abs(beta["disagreement"]) < 0.3  # the prior's 1 was not what the errors followed
    x = query_features(evidence, disagreement, context, scale.unit)
    fitted_log_s = scale.log_spread(channel, x)
    # the recovered log-spread follows the true one (up to CRPS's constant offset of a Gaussian)
    assert np.corrcoef(fitted_log_s, log_s)[0, 1] > 0.95


def test_too_few_queries_give_no_map() -> None:
    rng = np.random.default_rng(3)
    channel, y, evidence, disagreement, context, _ = _synthetic(rng, 150)
    assert fit_query_scale(channel, y, np.zeros_like(y), evidence, disagreement, context, n_channels=3) is None


def test_saved_form_round_trips_and_bad_states_are_refused() -> None:
    scale = QueryScale((0.1, -0.2), tuple(float(i) / 10 for i in range(len(FEATURES))), unit=3.5, n_queries=400)
    assert QueryScale.from_dict(scale.to_dict()) == scale
    bad = scale.to_dict()
    bad["coefficients"] = {"evidence": 1.0}
    with pytest.raises(ValueError, match="coefficients must name exactly"):
        QueryScale.from_dict(bad)
    with pytest.raises(ValueError, match="finite numbers"):
        QueryScale((float("nan"),), PRIOR, unit=1.0)
    with pytest.raises(ValueError, match="positive number of hours"):
        QueryScale((0.0,), PRIOR, unit=0.0)


def test_split_conformal_on_the_map_keeps_its_guarantee() -> None:
    """The map fitted on one part, conformal on another, tested on a third: the 90 % band's
    coverage over many repetitions is at least 0.90 minus its Monte-Carlo error (each
    repetition's coverage has mean ≥ 0.9 by the guarantee; 4 s.e. of the mean of 30)."""
    rng = np.random.default_rng(11)
    coverages = []
    for _ in range(30):
        channel, y, evidence, disagreement, context, _ = _synthetic(rng, 1200)
        parts = np.array_split(rng.permutation(y.size), 3)
        fit, cal, test = parts
        sub = {k: v[fit] for k, v in context.items()}
        series = np.arange(fit.size) // 20  # 20 queries a series: the ridge is chosen on 20 series
        scale = fit_query_scale(channel[fit], y[fit], np.zeros(fit.size), evidence[fit], disagreement[fit], sub,
                                n_channels=3, series=series)
        s = scale.spread(channel, evidence, disagreement, context)
        band = SplitConformal().conformalize(y[cal], np.zeros(cal.size), s[cal])
        lo, hi = band.predict_interval(np.zeros(test.size), s[test], 0.9)
        coverages.append(np.mean((y[test] >= lo) & (y[test] <= hi)))
    coverages = np.array(coverages)
    assert coverages.mean() >= 0.9 - 4 * coverages.std(ddof=1) / np.sqrt(coverages.size)
    assert coverages.mean() <= 0.9 + 1 / 401 + 4 * coverages.std(ddof=1) / np.sqrt(coverages.size)
