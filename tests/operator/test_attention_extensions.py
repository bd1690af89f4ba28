"""Time decay, query-dependent read-out and prior measure: against a float64 brute force
over explicit atoms, and the Monte-Carlo identity through them (levy-math: "what the
identity does not forbid")."""

from __future__ import annotations

import math

import pytest
import torch

from levy_core.operator import attention
from levy_core.operator.attention import LevyPrior, TimeDecay, levy_attention, log_phi
from levy_core.operator.sampling import sample_levy_attention

IMPLS = ["fused", "reference"]
PHIS = ["rate", "count"]


@pytest.fixture(autouse=True, params=["lse-kernel", "null-key"])
def fused_variant(request, monkeypatch):
    if request.param == "null-key":
        monkeypatch.setattr(attention, "_FLASH_CPU_WITH_LSE", None)
    return request.param


def make(seed, *, H=3, B=2, Q=5, K=8, E=4, D=3, P=2, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    q, k, v = r(B, H, Q, E), r(B, H, K, E), r(B, H, K, D) * 2 + 1
    w = (torch.rand(B, 1, K, generator=g, dtype=dtype) > 0.2).to(dtype)
    w[..., 0] = 1.0
    tk = torch.rand(B, 1, K, generator=g, dtype=dtype) * 10
    tq = torch.rand(B, 1, Q, generator=g, dtype=dtype) * 16 - 3
    ell = (0.5 + torch.rand(1, H, 1, 1, generator=g, dtype=dtype) * 3)
    A = r(B, H, Q, P, D)
    prior = LevyPrior(r(B, H, Q) - 1, r(B, H, Q, P), torch.rand(B, H, Q, generator=g, dtype=dtype) * 2)
    kappa = (1 + 5 * torch.rand(1, H, 1, 1, generator=g, dtype=dtype))
    return q, k, v, w, TimeDecay(tq, tk, ell), A, prior, kappa


def brute(q, k, v, w, decay, A, prior, kappa, phi):
    """Explicit atoms in float64: λ_i(q), u_i(q) = A_q v_i, the prior's two atoms appended."""
    d = lambda x: x.double()  # noqa: E731
    cos = torch.nn.functional.cosine_similarity(d(q).unsqueeze(-2), d(k).unsqueeze(-3), dim=-1)
    log_lam = d(kappa) * cos + torch.log(d(w)).unsqueeze(-2)
    if decay is not None:
        diff = d(decay.query_time).unsqueeze(-1) - d(decay.key_time).unsqueeze(-2)
        log_lam = log_lam - diff.pow(2) / (2 * d(torch.as_tensor(decay.length_scale)).pow(2))
    u = torch.einsum("...qpd,...kd->...qkp", d(A), d(v)) if A is not None else d(v).unsqueeze(-3).expand(
        *log_lam.shape, v.shape[-1])
    log_data = torch.logsumexp(log_lam, -1)
    if prior is not None:
        lp, up = LevyPrior(*(d(x) for x in prior)).atoms()
        log_lam = torch.cat([log_lam, lp], -1)
        u = torch.cat([u, up], -2)
    log_total = torch.logsumexp(log_lam, -1)
    p = torch.exp(log_lam - log_total.unsqueeze(-1))
    mean = (p.unsqueeze(-1) * u).sum(-2)
    tr = (p * (u - mean.unsqueeze(-2)).pow(2).sum(-1)).sum(-1)
    sigma = torch.sqrt(tr * torch.exp(log_phi(log_total, phi)))
    return mean, sigma, log_total, tr, log_data


def brute_second_moment(q, k, v, w, decay, A, prior, kappa):
    """The largest second moment about the key mean the pass handles: max over atoms of
    ‖u_i(q) − ū(q)‖² with ū the read-out of the values' key mean, (…, Q)."""
    d = lambda x: x.double()  # noqa: E731
    vw = d(w).unsqueeze(-1)
    v_c = d(v) - (vw * d(v)).sum(-2, keepdim=True) / vw.sum(-2, keepdim=True)
    u = torch.einsum("...qpd,...kd->...qkp", d(A), v_c) if A is not None else v_c.unsqueeze(-3)
    out = u.pow(2).sum(-1).amax(-1)
    if prior is not None:
        out = torch.maximum(out, (d(prior.mean).pow(2).sum(-1) + d(prior.variance)))
    return out


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("phi", PHIS)
@pytest.mark.parametrize("parts", ["decay", "readout", "prior", "all"])
@pytest.mark.parametrize("seed", range(3))
def test_extensions_match_explicit_atoms(impl, phi, parts, seed):
    q, k, v, w, decay, A, prior, kappa = make(seed)
    use = dict(decay=decay if parts in ("decay", "all") else None,
               readout=A if parts in ("readout", "all") else None,
               prior=None)
    if parts in ("prior", "all"):
        P = A.shape[-2] if use["readout"] is not None else v.shape[-1]
        prior = LevyPrior(prior.log_mass, prior.mean[..., :1].expand(*prior.mean.shape[:-1], P).contiguous(),
                          prior.variance)
        use["prior"] = prior
    out = levy_attention(q, k, v, kappa=kappa, key_weight=w, phi=phi, impl=impl, **use)
    mean, sigma, log_total, tr, log_data = brute(q, k, v, w, use["decay"], use["readout"], use["prior"], kappa, phi)
    torch.testing.assert_close(out.mean.double(), mean, rtol=1e-4, atol=1e-4 * mean.abs().max().item())
    torch.testing.assert_close(out.log_evidence.double(), log_total, rtol=0, atol=2e-4)
    torch.testing.assert_close(out.log_data_evidence.double(), log_data, rtol=0, atol=2e-4)
    # float32 forms tr Σ as E‖u‖² − ‖m‖² (values centred on their key mean): its absolute
    # error is a few dozen ulps of E‖u − ū‖², which φ(Λ) then multiplies (large where Λ is small)
    u2 = brute_second_moment(q, k, v, w, use["decay"], use["readout"], use["prior"], kappa)
    tr_atol = 64 * torch.finfo(torch.float32).eps * u2.max().item()
    assert ((out.disagreement.double() - tr).abs() <= 2e-4 * tr + tr_atol).all()
    phi_val = torch.exp(log_phi(log_total, phi))
    assert ((out.sigma.double().pow(2) - sigma.pow(2)).abs() <= phi_val * (4e-4 * tr + tr_atol)).all()


@pytest.mark.parametrize("phi", PHIS)
def test_far_from_the_keys_evidence_falls_and_the_prior_takes_over(phi):
    """Queries ever further past the last key: data evidence falls monotonically (a Gaussian
    in the distance), the output tends to the prior's mean and σ̂² to var₀·φ(Λ₀) — finite."""
    q, k, v, w, decay, A, prior, kappa = make(4, Q=6)
    far = torch.tensor([11.0, 20, 50, 1e2, 1e3, 1e4]).expand(2, 1, 6)
    decay = TimeDecay(far, decay.key_time, decay.length_scale)
    out = levy_attention(q, k, v, kappa=kappa, key_weight=w, phi=phi, decay=decay, readout=A, prior=prior)
    assert (out.log_data_evidence.diff(dim=-1) < 0).all()
    assert torch.isfinite(out.sigma).all() and torch.isfinite(out.mean).all()
    limit = torch.sqrt(prior.variance * torch.exp(log_phi(prior.log_mass, phi)))
    torch.testing.assert_close(out.sigma[..., -1], limit[..., -1], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out.mean[..., -1, :], prior.mean[..., -1, :], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("impl", IMPLS)
def test_all_keys_masked_with_a_prior_is_the_prior(impl):
    q, k, v, w, decay, A, prior, kappa = make(5)
    out = levy_attention(q, k, v, kappa=kappa, key_weight=torch.zeros_like(w), decay=decay, readout=A,
                         prior=prior, impl=impl)
    torch.testing.assert_close(out.mean, prior.mean)
    torch.testing.assert_close(out.log_evidence, prior.log_mass)
    assert torch.isneginf(out.log_data_evidence).all()


def test_empty_queries_and_gradients_through_every_part():
    # two series, two heads, 3 queries, 5 keys (3 of them masked): every part, 284 inputs to
    # gradcheck (the default sizes, 696 inputs, took 3 s per variant for the same coverage)
    q, k, v, w, decay, A, prior, kappa = make(6, H=2, Q=3, K=5, dtype=torch.float64)
    assert (w == 0).any(), "masked keys are part of the check"
    empty = levy_attention(q[..., :0, :], k, v, kappa=kappa, key_weight=w)
    assert empty.mean.shape == (2, 2, 0, 3) and empty.sigma.shape == (2, 2, 0)
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v, A, prior.mean)]

    def f(q, k, v, A, pm):
        out = levy_attention(q, k, v, kappa=kappa, key_weight=w, decay=decay, readout=A,
                             prior=LevyPrior(prior.log_mass, pm, prior.variance))
        return out.mean, out.sigma

    assert torch.autograd.gradcheck(f, tuple(leaves))


@pytest.mark.parametrize("phi", PHIS)
def test_monte_carlo_identity_through_decay_readout_and_prior(phi):
    """The sampled operator over the same atoms: its mean → the closed-form mean, its RMS
    deviation → σ̂, within 4 Monte-Carlo standard errors."""
    q, k, v, w, decay, A, prior, kappa = make(7, B=1, H=2, Q=4, dtype=torch.float64)
    out = levy_attention(q, k, v, kappa=kappa, key_weight=w, phi=phi, decay=decay, readout=A, prior=prior)
    n = 40_000
    draws = sample_levy_attention(q, k, v, kappa=kappa, key_weight=w, phi=phi, decay=decay, readout=A,
                                  prior=prior, n_draws=n, generator=torch.Generator().manual_seed(1))
    dev = draws - out.mean  # (n, ..., Q, P)
    sq = dev.pow(2).sum(-1)  # (n, ..., Q)
    se_mean = dev.std(0) / math.sqrt(n)
    assert (dev.mean(0).abs() <= 4 * se_mean + 1e-9).all()
    rmsd = sq.mean(0).sqrt()
    se_ms = sq.std(0) / math.sqrt(n)  # s.e. of the mean square; delta method for its root
    assert ((rmsd - out.sigma).abs() <= 4 * se_ms / (2 * out.sigma) + 1e-9).all()
