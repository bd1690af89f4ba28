"""levy_core.operator.attention.log_sigma_terms and the ``evidence_term`` / ``disagreement_term`` it
feeds (``LevyOutput`` properties, ``ModelOutput`` fields of the multi-head model):
``log σ̂ = ½ log φ(Λ) + ½ log tr Σ`` term by term, finite at exact zeros."""

from __future__ import annotations

import math

import pytest
import torch

from levy_core.model.batch import Batch
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.operator.attention import levy_attention, log_intensity, log_sigma_terms
from levy_core.operator.phi import log_phi

F64 = torch.finfo(torch.float64).eps
F32 = torch.finfo(torch.float32).eps


def operator_inputs(dtype: torch.dtype = torch.float64, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 3, 6, 4, generator=g, dtype=dtype)  # (B, H, Q, E)
    k = torch.randn(2, 3, 9, 4, generator=g, dtype=dtype)
    v = torch.randn(2, 3, 9, 2, generator=g, dtype=dtype)
    key_weight = torch.rand(2, 3, 9, generator=g, dtype=dtype) * 3
    key_weight[..., :2] = 0.0  # some masked keys
    kappa = torch.tensor([0.3, 2.0, 12.0], dtype=dtype).view(1, 3, 1, 1)
    return q, k, v, key_weight, kappa


@pytest.mark.parametrize("phi", ["rate", "count"])
@pytest.mark.parametrize("impl", ["fused", "reference"])
def test_terms_sum_to_log_sigma_and_split_it_as_documented(impl, phi) -> None:
    q, k, v, key_weight, kappa = operator_inputs()
    out = levy_attention(q, k, v, kappa=kappa, key_weight=key_weight, phi=phi, impl=impl)
    evidence, disagreement = out.evidence_term, out.disagreement_term
    assert evidence.shape == disagreement.shape == out.sigma.shape == (2, 3, 6)
    log_sigma = torch.log(out.sigma)
    # (log σ̂ − d) + d: two roundings, each ≤ ½ ulp of the largest magnitude involved → 4 eps of it
    size = torch.maximum(log_sigma.abs(), disagreement.abs())
    assert ((evidence + disagreement - log_sigma).abs() <= 4 * F64 * size).all()
    # disagreement term = ½ log tr Σ (one rounding of the log, one halving: exact) → 1 ulp
    half_log = 0.5 * torch.log(out.disagreement)
    assert ((disagreement - half_log).abs() <= F64 * half_log.abs()).all()
    # evidence term = ½ log φ(Λ): σ̂ = sqrt(tr Σ)·exp(½ log φ) carries ≤ 3 roundings (≤ 3 eps
    # relative, so ≤ 3 eps absolute in its log), plus the subtraction above: 8 eps·(1 + size)
    half_phi = 0.5 * log_phi(out.log_evidence, phi)
    assert ((evidence - half_phi).abs() <= 8 * F64 * (1 + size)).all()
    # the free functions agree with the properties
    e2, d2 = log_sigma_terms(out.sigma, out.disagreement)
    assert torch.equal(e2, evidence) and torch.equal(d2, disagreement)


def test_the_two_impls_give_the_same_terms() -> None:
    q, k, v, key_weight, kappa = operator_inputs(seed=3)
    a = levy_attention(q, k, v, kappa=kappa, key_weight=key_weight, impl="fused")
    b = levy_attention(q, k, v, kappa=kappa, key_weight=key_weight, impl="reference")
    K = k.shape[-2]
    # Both take tr Σ = E‖v_c‖² − ‖m_c‖² (values centred on their key mean): each sum over K
    # keys is good to ~K eps of E‖v_c‖², so tr Σ to 4 K eps · E‖v_c‖² absolute and its ½ log
    # to 2 K eps · cond with cond = E‖v_c‖² / tr Σ (large where one key dominates: a sharp head).
    # Two impls: twice that.
    p = torch.softmax(log_intensity(q, k, kappa, key_weight, None), -1)
    v_c = v - (key_weight.unsqueeze(-1) * v).sum(-2, keepdim=True) / key_weight.sum(-1)[..., None, None]
    cond = (p * v_c.pow(2).sum(-1).unsqueeze(-2)).sum(-1) / b.disagreement
    assert ((a.disagreement_term - b.disagreement_term).abs() <= 4 * K * F64 * cond).all()
    assert cond.max() > 1e3, "a badly conditioned query is included (the tolerance must scale with it)"
    # the evidence term hardly sees tr Σ (log σ̂ and ½ log tr Σ move together): a few eps
    size = 1 + b.evidence_term.abs()
    assert ((a.evidence_term - b.evidence_term).abs() <= 8 * K * F64 * size).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exact_zeros_give_finite_terms(dtype) -> None:
    tiny = torch.finfo(dtype).tiny
    zero = torch.zeros(4, dtype=dtype)
    evidence, disagreement = log_sigma_terms(zero, zero)
    assert torch.isfinite(evidence).all() and torch.isfinite(disagreement).all()
    assert (disagreement < 0).all(), "very negative: no spread at all"
    # and the sum is still log of σ̂ (floored at the same tiny): ½ log tiny + ½ log tiny
    torch.testing.assert_close(evidence + disagreement, torch.full_like(zero, math.log(tiny)),
                               rtol=4 * torch.finfo(dtype).eps, atol=0)
    # σ̂ > 0 with tr Σ = 0 (cannot come from the operator, but must not give NaN either)
    e, d = log_sigma_terms(torch.ones(4, dtype=dtype), zero)
    assert torch.isfinite(e).all() and torch.isfinite(d).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("impl", ["fused", "reference"])
def test_queries_whose_observations_all_agree_get_finite_terms(dtype, impl) -> None:
    q, k, _, key_weight, kappa = operator_inputs(dtype)
    # 0/1 key weights and one value everywhere: the weighted key mean is that value exactly,
    # so the centred values and tr Σ are exactly 0
    key_weight = (key_weight > 0).to(dtype)
    v = torch.full((*k.shape[:-1], 2), 2.5, dtype=dtype)
    v[0] = 0.0
    out = levy_attention(q, k, v, kappa=kappa, key_weight=key_weight, impl=impl)
    assert torch.equal(out.disagreement, torch.zeros_like(out.disagreement)), "tr Σ exactly 0 here"
    assert torch.equal(out.sigma, torch.zeros_like(out.sigma))
    assert torch.isfinite(out.evidence_term).all() and torch.isfinite(out.disagreement_term).all()


def test_a_query_without_evidence_gets_no_nan() -> None:
    q, k, v, key_weight, kappa = operator_inputs()
    key_weight = key_weight.clone()
    key_weight[1] = 0.0  # series 1: every key masked → σ̂ = inf, tr Σ = 0
    out = levy_attention(q, k, v, kappa=kappa, key_weight=key_weight)
    assert torch.isinf(out.sigma[1]).all()
    assert not out.evidence_term.isnan().any() and not out.disagreement_term.isnan().any()
    assert torch.isfinite(out.disagreement_term[1]).all()


# ----------------------------------------------------------------------------- the multi-head model


def model_batch(n_channels: int, seed: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    B, N, M = 3, 12, 5
    ctx_time = torch.sort(torch.rand(B, N, generator=g) * 24, dim=1).values
    ctx_mask = torch.ones(B, N)
    ctx_mask[2, 8:] = 0.0  # padding in one series
    return Batch(ctx_time, torch.randint(0, n_channels, (B, N), generator=g), torch.rand(B, N, generator=g),
                 ctx_mask, 24 + torch.rand(B, M, generator=g) * 12, torch.randint(0, n_channels, (B, M), generator=g),
                 torch.ones(B, M))


def test_model_terms_sum_to_log_of_the_combined_sigma() -> None:
    torch.manual_seed(0)
    cfg = ModelConfig(n_channels=3, time_scale=48.0, num_heads=4)
    model = LevyModel(cfg).eval()
    with torch.no_grad():
        out = model(model_batch(cfg.n_channels))
    H = cfg.num_heads
    assert out.evidence_term.shape == out.disagreement_term.shape == out.sigma.shape == (3, 5)
    assert out.disagreement.shape == (3, H, 5)
    log_sigma = torch.log(out.sigma.double())
    size = torch.maximum(log_sigma.abs(), out.disagreement_term.double().abs())
    # float32 throughout: (log σ̂ − d) + d is two float32 roundings of numbers ≤ size → 4 eps32
    total = out.evidence_term.double() + out.disagreement_term.double()
    assert ((total - log_sigma).abs() <= 4 * F32 * size).all()
    # the disagreement term is ½ log of the heads' summed tr Σ: a float32 sum of H terms
    # (≤ H eps32 relative → ≤ ½ H eps32 absolute after ½ log) plus the log's rounding
    summed = 0.5 * torch.log(out.disagreement.double().sum(1))
    assert ((out.disagreement_term.double() - summed).abs() <= (H + 2) * F32 * (1 + summed.abs())).all()
    # the evidence term is ½ log of the tr Σ-weighted mean of the heads' φ (σ̂² = Σ_h tr_h φ_h)
    tr = out.disagreement.double()
    phi = torch.exp(log_phi(out.log_evidence.double(), cfg.phi))
    weighted = 0.5 * torch.log((tr * phi).sum(1) / tr.sum(1))
    # σ̂_h = sqrt(tr_h)·exp(½ log φ_h), squared and summed over H heads in float32, then sqrt:
    # ≤ (H + 4) eps32 relative on σ̂; with the terms' own roundings, 2 (H + 4) eps32 (1 + size)
    assert ((out.evidence_term.double() - weighted).abs() <= 2 * (H + 4) * F32 * (1 + size)).all()
