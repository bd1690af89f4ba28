"""The operator against its contract (levy-math.md, "What must be tested")."""

from __future__ import annotations

import math

import mpmath
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from levy_core import LevyAttention, levy_attention
from levy_core.operator import attention
from levy_core.operator.attention import KAPPA_MAX, log_phi

IMPLS = ["fused", "reference"]
PHIS = ["rate", "count"]


@pytest.fixture(autouse=True, params=["lse-kernel", "null-key"])
def fused_variant(request, monkeypatch):
    """Every test runs on both fused variants: the CPU kernel's own log-sum-exp (inference)
    and the public null-key construction (autograd, other devices)."""
    if request.param == "null-key":
        monkeypatch.setattr(attention, "_FLASH_CPU_WITH_LSE", None)
    return request.param


def brute_force(q, k, v, kappa, key_weight=None, phi="rate"):
    """float64, materialised (Q, K, D) reference straight from the definitions."""
    q, k, v = q.double(), k.double(), v.double()
    cos = torch.nn.functional.cosine_similarity(q.unsqueeze(-2), k.unsqueeze(-3), dim=-1)  # (..., Q, K)
    lam = torch.exp(torch.as_tensor(kappa, dtype=torch.float64) * cos)
    if key_weight is not None:
        lam = lam * key_weight.double().unsqueeze(-2)
    total = lam.sum(-1)  # Λ
    p = lam / total.unsqueeze(-1)
    mean = (p.unsqueeze(-1) * v.unsqueeze(-3)).sum(-2)  # (..., Q, D)
    diff = v.unsqueeze(-3) - mean.unsqueeze(-2)  # (..., Q, K, D)
    tr = (p * diff.pow(2).sum(-1)).sum(-1)
    if phi == "rate":
        phi_val = 1.0 / total
    else:
        phi_val = total.clone().apply_(phi_count_mpmath)
    return mean, torch.sqrt(tr * phi_val), torch.log(total), tr


def log_phi_count_mpmath(log_lam: float) -> float:
    """log E[1/N | N ≥ 1] = log((Ei(Λ) − γ − ln Λ) / (e^Λ − 1)) to ~40 significant digits."""
    # Ei(Λ) − γ − ln Λ ≈ Λ cancels to Λ's magnitude: carry that many extra digits.
    with mpmath.workdps(40 + max(0, int(-log_lam / math.log(10)))):
        x = mpmath.exp(mpmath.mpf(log_lam))
        return float(mpmath.log((mpmath.ei(x) - mpmath.euler - mpmath.log(x)) / mpmath.expm1(x)))


def phi_count_mpmath(lam: float) -> float:
    return math.exp(log_phi_count_mpmath(math.log(lam)))


def random_inputs(seed, batch=(2, 3), n_q=6, n_k=9, e=5, d=4, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, n_q, e, generator=g, dtype=dtype)
    k = torch.randn(*batch, n_k, e, generator=g, dtype=dtype)
    v = torch.randn(*batch, n_k, d, generator=g, dtype=dtype) * 3 + 1
    w = torch.rand(*batch, n_k, generator=g, dtype=dtype) + 0.1
    return q, k, v, w


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("phi", PHIS)
@pytest.mark.parametrize("seed", range(5))
def test_matches_float64_brute_force(impl, phi, seed):
    q, k, v, w = random_inputs(seed)
    kappa = 0.5 + 10 * torch.rand((), generator=torch.Generator().manual_seed(100 + seed)).item()
    for key_weight in (None, w):
        out = levy_attention(q, k, v, kappa=kappa, key_weight=key_weight, phi=phi, impl=impl)
        mean, sigma, log_ev, tr = brute_force(q, k, v, kappa, key_weight, phi)
        torch.testing.assert_close(out.mean.double(), mean, rtol=1e-4, atol=1e-4 * mean.abs().max().item())
        torch.testing.assert_close(out.sigma.double(), sigma, rtol=1e-4, atol=0)
        torch.testing.assert_close(out.log_evidence.double(), log_ev, rtol=0, atol=1e-4)
        torch.testing.assert_close(out.disagreement.double(), tr, rtol=1e-4, atol=0)


def test_fused_and_reference_agree_in_float64():
    q, k, v, w = random_inputs(7, dtype=torch.float64)
    a = levy_attention(q, k, v, kappa=4.0, key_weight=w, impl="fused")
    b = levy_attention(q, k, v, kappa=4.0, key_weight=w, impl="reference")
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-12)


def test_per_head_kappa_tensor_broadcasts():
    q, k, v, _ = random_inputs(3)
    kappa = torch.tensor([1.0, 5.0, 20.0]).view(1, 3, 1, 1)
    out = levy_attention(q, k, v, kappa=kappa)
    for h in range(3):
        ref = levy_attention(q[:, h], k[:, h], v[:, h], kappa=float(kappa[0, h]))
        torch.testing.assert_close(out.mean[:, h], ref.mean)
        torch.testing.assert_close(out.sigma[:, h], ref.sigma)


@settings(max_examples=25, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    n_q=st.integers(1, 7),
    n_k=st.integers(1, 7),
    e=st.integers(1, 6),
    d=st.integers(1, 5),
    broadcast_q=st.booleans(),
    impl=st.sampled_from(IMPLS),
)
def test_shapes_and_broadcasting(batch, n_q, n_k, e, d, broadcast_q, impl):
    q_batch = [1] * len(batch) if broadcast_q else batch
    q = torch.randn(*q_batch, n_q, e)
    k = torch.randn(*batch, n_k, e)
    v = torch.randn(*batch, n_k, d)
    out = levy_attention(q, k, v, kappa=2.0, impl=impl)
    assert out.mean.shape == (*batch, n_q, d)
    for field in (out.sigma, out.log_evidence, out.disagreement):
        assert field.shape == (*batch, n_q)
    assert torch.isfinite(out.sigma).all() and (out.sigma >= 0).all()
    ref = levy_attention(q.expand(*batch, n_q, e), k, v, kappa=2.0, impl="reference")
    torch.testing.assert_close(out.mean, ref.mean, rtol=1e-4, atol=1e-5)


def test_gradcheck_mean_path_float64():
    g = torch.Generator().manual_seed(11)
    q = torch.randn(2, 3, 4, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(2, 5, 4, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, 5, 3, dtype=torch.float64, generator=g, requires_grad=True)
    kappa = torch.tensor(2.5, dtype=torch.float64, requires_grad=True)
    for impl in IMPLS:
        def f(q, k, v, kappa, impl=impl):
            out = levy_attention(q, k, v, kappa=kappa, impl=impl)
            return out.mean, out.sigma, out.log_evidence

        assert torch.autograd.gradcheck(f, (q, k, v, kappa))


# ---------------------------------------------------------------- extremes


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("phi", PHIS)
def test_kappa_at_clamp_is_exact_and_finite(impl, phi):
    q, k, v, _ = random_inputs(21, dtype=torch.float32)
    out = levy_attention(q, k, v, kappa=KAPPA_MAX, phi=phi, impl=impl)
    mean, sigma, log_ev, _ = brute_force(q, k, v, KAPPA_MAX, phi=phi)
    assert torch.isfinite(out.mean).all() and torch.isfinite(out.sigma).all()
    torch.testing.assert_close(out.log_evidence.double(), log_ev, rtol=0, atol=1e-4)
    torch.testing.assert_close(out.sigma.double(), sigma, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("impl", IMPLS)
def test_one_key(impl):
    q, k, v, _ = random_inputs(2, n_k=1)
    out = levy_attention(q, k, v, kappa=3.0, impl=impl)
    torch.testing.assert_close(out.mean, v.expand_as(out.mean))
    assert (out.disagreement.abs() < 1e-5).all() and (out.sigma >= 0).all()


@pytest.mark.parametrize("impl", IMPLS)
def test_all_keys_masked_but_one(impl):
    q, k, v, _ = random_inputs(4, n_k=6)
    w = torch.zeros(2, 3, 6)
    w[..., 2] = 1.0
    out = levy_attention(q, k, v, kappa=3.0, key_weight=w, impl=impl)
    torch.testing.assert_close(out.mean, v[..., 2:3, :].expand_as(out.mean), rtol=1e-5, atol=1e-5)
    # exactly 0, not merely small: a masked key's weight exp(-1e4) is 0 in every dtype, and
    # the values are centred on their weighted key mean, which is v_2 itself (weights 0 and
    # 1), so the one key left has first and second moments of exactly 0
    assert (out.disagreement == 0).all() and (out.sigma == 0).all()
    cos = torch.nn.functional.cosine_similarity(q, k[..., 2:3, :], dim=-1)
    torch.testing.assert_close(out.log_evidence, 3.0 * cos, rtol=0, atol=1e-4)


@pytest.mark.parametrize("impl", IMPLS)
def test_all_keys_masked_is_documented_not_nan(impl):
    q, k, v, _ = random_inputs(4, n_k=6)
    out = levy_attention(q, k, v, kappa=3.0, key_weight=torch.zeros(2, 3, 6), impl=impl)
    assert torch.isneginf(out.log_evidence).all() and torch.isposinf(out.sigma).all()
    assert (out.mean == 0).all() and not torch.isnan(out.mean).any()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("phi", PHIS)
def test_huge_values_tiny_spread(impl, phi):
    q, k, _, _ = random_inputs(5)
    g = torch.Generator().manual_seed(5)
    v64 = 1e6 + 1e-3 * torch.randn(2, 3, 9, 4, dtype=torch.float64, generator=g)
    out = levy_attention(q.double(), k.double(), v64, kappa=4.0, phi=phi, impl=impl)
    mean, sigma, _, _ = brute_force(q, k, v64, 4.0, phi=phi)
    torch.testing.assert_close(out.sigma, sigma, rtol=1e-6, atol=0)
    out32 = levy_attention(q, k, v64.float(), kappa=4.0, phi=phi, impl=impl)
    assert torch.isfinite(out32.sigma).all() and (out32.sigma >= 0).all()
    # float32 stores 1e6 to ±0.06: the centred path keeps σ̂ at the stored values' spread
    stored = brute_force(q, k, v64.float().double(), 4.0, phi=phi)[1]
    torch.testing.assert_close(out32.sigma.double(), stored, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("phi", PHIS)
@pytest.mark.parametrize("log10_lambda", [-30, -10, -1, 0, 1, 2, 5, 10, 30])
def test_evidence_from_1e_minus30_to_1e30(impl, phi, log10_lambda):
    q, k, v, _ = random_inputs(8, n_k=5)
    # scale the base measure so that Λ hits the target order of magnitude
    base = levy_attention(q, k, v, kappa=2.0, impl="reference").log_evidence.mean()
    w = torch.full((2, 3, 5), math.exp(log10_lambda * math.log(10) - base.item()))
    out = levy_attention(q, k, v, kappa=2.0, key_weight=w, phi=phi, impl=impl)
    assert torch.isfinite(out.mean).all() and torch.isfinite(out.sigma).all()
    assert torch.isfinite(out.log_evidence).all() and (out.sigma >= 0).all()
    _, sigma, log_ev, _ = brute_force(q, k, v, 2.0, key_weight=w.double(), phi=phi)
    torch.testing.assert_close(out.log_evidence.double(), log_ev, rtol=0, atol=1e-4)
    torch.testing.assert_close(out.sigma.double(), sigma, rtol=1e-4, atol=0)


def test_log_phi_count_stable_across_range():
    log_lam = torch.linspace(math.log(1e-300), math.log(1e300), 4001, dtype=torch.float64)
    out = log_phi(log_lam, "count")
    assert torch.isfinite(out).all()
    assert (out <= 1e-12).all()  # φ ≤ 1
    # Jensen: E[1/N | N ≥ 1] ≥ 1 / E[N | N ≥ 1] = (1 − e^{−Λ}) / Λ
    lam64 = log_lam.exp()
    assert (out >= torch.log(-torch.expm1(-lam64)) - log_lam - 1e-12).all()
    # against 40-digit arithmetic over the whole range (every 20th point)
    ref = torch.tensor([log_phi_count_mpmath(x) for x in log_lam[::20].tolist()],
                       dtype=torch.float64)
    torch.testing.assert_close(out[::20], ref, rtol=0, atol=1e-11)
    # limits: φ → 1 as Λ → 0 and φ·Λ → 1 as Λ → ∞
    assert abs(out[0].item()) < 1e-12
    assert abs(out[-1].item() + log_lam[-1].item()) < 1e-12
    assert torch.isfinite(log_phi(torch.tensor([-math.inf, math.inf]), "count")).sum() == 1


# ---------------------------------------------------------------- invariances


@pytest.mark.parametrize("impl", IMPLS)
def test_permuting_keys_changes_nothing(impl):
    q, k, v, w = random_inputs(9)
    perm = torch.randperm(9, generator=torch.Generator().manual_seed(1))
    a = levy_attention(q, k, v, kappa=3.0, key_weight=w, impl=impl)
    b = levy_attention(q, k[..., perm, :], v[..., perm, :], kappa=3.0, key_weight=w[..., perm], impl=impl)
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("impl", IMPLS)
def test_duplicating_keys_doubles_evidence(impl):
    q, k, v, _ = random_inputs(10)
    a = levy_attention(q, k, v, kappa=3.0, impl=impl)
    b = levy_attention(q, torch.cat([k, k], -2), torch.cat([v, v], -2), kappa=3.0, impl=impl)
    torch.testing.assert_close(b.log_evidence, a.log_evidence + math.log(2), rtol=0, atol=1e-5)
    torch.testing.assert_close(b.mean, a.mean, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(b.disagreement, a.disagreement, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(b.sigma, a.sigma / math.sqrt(2), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("phi", PHIS)
def test_constant_shift_of_values(impl, phi):
    q, k, v, _ = random_inputs(12)
    a = levy_attention(q, k, v, kappa=3.0, phi=phi, impl=impl)
    b = levy_attention(q, k, v + 7.5, kappa=3.0, phi=phi, impl=impl)
    torch.testing.assert_close(b.mean, a.mean + 7.5, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(b.sigma, a.sigma, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- errors, module


def test_bad_inputs_raise_value_error():
    q, k, v, w = random_inputs(0)
    with pytest.raises(ValueError, match="phi"):
        levy_attention(q, k, v, kappa=1.0, phi="softmax")
    with pytest.raises(ValueError, match="kappa"):
        levy_attention(q, k, v, kappa=0.0)
    with pytest.raises(ValueError, match="non-negative"):
        levy_attention(q, k, v, kappa=1.0, key_weight=-w)
    with pytest.raises(ValueError, match="feature sizes"):
        levy_attention(q[..., :2], k, v, kappa=1.0)
    with pytest.raises(ValueError, match="key counts"):
        levy_attention(q, k, v[..., :3, :], kappa=1.0)


def test_to_normal_and_n_eff():
    q, k, v, _ = random_inputs(1, d=1)
    out = levy_attention(q, k, v, kappa=3.0)
    normal = out.to_normal(scale=2.0)
    torch.testing.assert_close(normal.stddev, 2 * out.sigma)
    # n_eff = Σ w exp(κ(cos − 1)) ∈ (0, K]
    n_eff = out.n_eff(3.0)
    assert (n_eff > 0).all() and (n_eff <= 9 + 1e-4).all()
    with pytest.raises(ValueError, match="D=1"):
        levy_attention(*random_inputs(1, d=2)[:3], kappa=1.0).to_normal()


def test_module_linear_readout_identity():
    """ŷ and σ̂ of the module equal the per-head operator on read-out values, summed."""
    torch.manual_seed(0)
    layer = LevyAttention(6, 5, 4, num_heads=3, head_dim=8, out_dim=2).double()
    xq, xk, xv = torch.randn(2, 7, 6).double(), torch.randn(2, 9, 5).double(), torch.randn(2, 9, 4).double()
    mask = torch.ones(2, 9, dtype=torch.float64)
    mask[1, 4:] = 0
    out = layer(xq, xk, xv, key_weight=mask)
    ref = layer(xq, xk, xv, key_weight=mask, impl="reference")
    torch.testing.assert_close(out.mean, ref.mean)
    torch.testing.assert_close(out.sigma, ref.sigma)
    assert out.mean.shape == (2, 7, 2) and out.sigma.shape == (2, 7)
    assert out.head_sigma.shape == out.log_evidence.shape == out.n_eff.shape == (2, 3, 7)
    # masked keys cannot move the second series' output
    xk2, xv2 = xk.clone(), xv.clone()
    xk2[1, 4:] += 5
    xv2[1, 4:] -= 3
    out2 = layer(xq, xk2, xv2, key_weight=mask)
    torch.testing.assert_close(out2.mean[1], out.mean[1])
    torch.testing.assert_close(out.sigma.pow(2), out.head_sigma.pow(2).sum(1))
    torch.testing.assert_close(out.mean, out.head_mean.sum(1) + layer.bias)
    assert (layer.kappa <= KAPPA_MAX).all()


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here: the input-device check ran on CPU only"))]


@pytest.mark.parametrize("device", DEVICES)
def test_module_runs_on_input_device_and_backprops(device):
    layer = LevyAttention(4, 4, 4, num_heads=2, head_dim=4).to(device)
    x = torch.randn(3, 5, 4, device=device, requires_grad=True)
    out = layer(x, x, x)
    (out.mean.sum() + out.sigma.sum()).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in layer.parameters())
    assert all(t.device == x.device for t in out)
    assert x.grad is not None and x.grad.device == x.device
    assert all(p.grad.device == x.device for p in layer.parameters())
