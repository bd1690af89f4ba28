"""levy_core.operator.layers.LevyAttention: ``project`` shapes, ``weights`` (a distribution over the
keys, exact zeros on masked keys, equal to the operator's own log-intensity softmax and to a
hand-written cosine softmax), and the forward mean as ``Σ_h Σ_i p_{h,i} u_{h,i} + bias``.

Everything in float64 so that the tolerances can be a few float64 roundings.
"""

from __future__ import annotations

import pytest
import torch

from levy_core.operator.attention import log_intensity
from levy_core.operator.layers import LevyAttention, LevyHeadsOutput

B, Q, K = 2, 5, 7
QUERY_DIM, KEY_DIM, VALUE_DIM = 3, 4, 6
H, HD, OUT = 3, 4, 2
EPS = torch.finfo(torch.float64).eps


@pytest.fixture
def layer() -> LevyAttention:
    torch.manual_seed(0)
    layer = LevyAttention(QUERY_DIM, KEY_DIM, VALUE_DIM, num_heads=H, head_dim=HD, out_dim=OUT,
                          kappa_init=6.0).double()
    with torch.no_grad():  # distinct κ per head and a non-zero bias, so both are really tested
        layer.log_kappa.copy_(torch.log(torch.tensor([0.5, 3.0, 20.0], dtype=torch.float64)))
        layer.bias.copy_(torch.tensor([0.7, -1.3], dtype=torch.float64))
    return layer


@pytest.fixture
def inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    query = torch.randn(B, Q, QUERY_DIM, generator=g, dtype=torch.float64)
    key = torch.randn(B, K, KEY_DIM, generator=g, dtype=torch.float64)
    value = torch.randn(B, K, VALUE_DIM, generator=g, dtype=torch.float64)
    # masked keys (0), ordinary ones (1) and weighted ones
    key_weight = torch.tensor([[1, 0, 1, 2.5, 1, 0, 0.25],
                               [0, 1, 1, 1, 0.5, 1, 1]], dtype=torch.float64)
    return query, key, value, key_weight


def test_project_shapes(layer, inputs) -> None:
    query, key, value, _ = inputs
    q, k, u = layer.project(query, key, value)
    assert q.shape == (B, H, Q, HD)
    assert k.shape == (B, H, K, HD)
    assert u.shape == (B, H, K, OUT)
    # u is the per-head read-out of the projected values: u_h = (W_v v)_h W_{o,h}
    v = layer.v_proj(value).view(B, K, H, HD).transpose(1, 2)
    torch.testing.assert_close(u, torch.einsum("bhkd,hdo->bhko", v, layer.readout), rtol=0, atol=16 * HD * EPS)


def test_project_with_tied_query_key_uses_one_projection() -> None:
    torch.manual_seed(0)
    tied = LevyAttention(4, 4, 2, num_heads=2, head_dim=3, tie_query_key=True).double()
    x = torch.randn(1, 5, 4, dtype=torch.float64)
    q, k, _ = tied.project(x, x, torch.randn(1, 5, 2, dtype=torch.float64))
    assert torch.equal(q, k)
    with pytest.raises(ValueError, match="tie_query_key needs query_dim == key_dim"):
        LevyAttention(4, 5, 2, tie_query_key=True)


def test_weights_are_a_distribution_over_keys_with_exact_zeros_on_masked_keys(layer, inputs) -> None:
    query, key, _, key_weight = inputs
    p = layer.weights(query, key, key_weight=key_weight)
    assert p.shape == (B, H, Q, K) and p.dtype == torch.float64
    assert (p >= 0).all()
    # K terms ≤ 1 summed, each partial sum rounded (≤ ½ eps relative), after a division per
    # term (≤ ½ eps): K eps bounds it
    torch.testing.assert_close(p.sum(-1), torch.ones(B, H, Q, dtype=torch.float64), rtol=0, atol=K * EPS)
    masked = (key_weight == 0).view(B, 1, 1, K).expand_as(p)
    assert torch.equal(p[masked], torch.zeros_like(p[masked])), "exactly 0, not merely tiny"
    assert (p[~masked] > 0).all()


def test_weights_equal_the_operators_log_intensity_softmax(layer, inputs) -> None:
    query, key, value, key_weight = inputs
    q, k, _ = layer.project(query, key, value)
    kappa = layer.kappa.view(1, -1, 1, 1)
    with torch.no_grad():
        reference = torch.softmax(log_intensity(q, k, kappa, key_weight.unsqueeze(1), None), -1)
    p = layer.weights(query, key, key_weight=key_weight)
    torch.testing.assert_close(p, reference, rtol=0, atol=4 * EPS)  # same formula: a few ulps of ≤ 1


def test_weights_by_hand_are_w_exp_kappa_cos_normalised(layer, inputs) -> None:
    query, key, value, key_weight = inputs
    with torch.no_grad():
        q, k, _ = layer.project(query, key, value)
        cos = torch.einsum("bhqd,bhkd->bhqk", q / q.norm(dim=-1, keepdim=True), k / k.norm(dim=-1, keepdim=True))
        lam = key_weight.view(B, 1, 1, K) * torch.exp(layer.kappa.view(1, H, 1, 1) * cos)
        by_hand = lam / lam.sum(-1, keepdim=True)
    p = layer.weights(query, key, key_weight=key_weight)
    # exp of scores up to κ_max = 20 (relative error ≤ 20·2 eps from the score's rounding),
    # then a normalisation over K keys: 64 eps relative is ample and still ~1e-14
    torch.testing.assert_close(p, by_hand, rtol=64 * EPS, atol=64 * EPS)
    # the heads' κ matter: the sharpest head puts more weight on its top key
    top = p.amax(-1).mean((0, 2))
    assert top[2] > top[1] > top[0]


def test_weights_without_key_weight_are_unmasked(layer, inputs) -> None:
    query, key, _, _ = inputs
    p = layer.weights(query, key)
    ones = layer.weights(query, key, key_weight=torch.ones(B, K, dtype=torch.float64))
    torch.testing.assert_close(p, ones, rtol=0, atol=4 * EPS)
    assert (p > 0).all()


def test_weights_of_a_query_whose_keys_are_all_masked_are_zero(layer, inputs) -> None:
    query, key, _, _ = inputs
    key_weight = torch.ones(B, K, dtype=torch.float64)
    key_weight[1] = 0.0
    p = layer.weights(query, key, key_weight=key_weight)
    assert not p.isnan().any()
    assert torch.equal(p[1], torch.zeros_like(p[1]))


@pytest.mark.parametrize("impl", ["fused", "reference"])
def test_forward_mean_is_the_weighted_sum_of_read_out_values_plus_bias(impl, layer, inputs) -> None:
    query, key, value, key_weight = inputs
    out = layer(query, key, value, key_weight=key_weight, impl=impl)
    assert isinstance(out, LevyHeadsOutput)
    assert out.mean.shape == (B, Q, OUT) and out.sigma.shape == (B, Q)
    assert out.head_mean.shape == (B, H, Q, OUT) and out.log_evidence.shape == (B, H, Q)
    with torch.no_grad():
        p = layer.weights(query, key, key_weight=key_weight)
        _, _, u = layer.project(query, key, value)
        head = torch.einsum("bhqk,bhko->bhqo", p, u)
        expected = head.sum(1) + layer.bias
    # Σ_i p_i u_i over K keys: ≤ K·eps·max|u| (each p carries a few ulps, each partial sum
    # one rounding); the fused path centres u first and adds the centre back (one more such
    # sum); then H heads and the bias are added: 4·(K + H)·eps·max|u| + eps·|bias| bounds it
    scale = float(u.abs().max())
    atol = 4 * (K + H) * EPS * scale + EPS * float(layer.bias.detach().abs().max())
    torch.testing.assert_close(out.head_mean.detach(), head, rtol=0, atol=4 * K * EPS * scale)
    torch.testing.assert_close(out.mean.detach(), expected, rtol=0, atol=atol)
    # heads are independent measures: variances add
    torch.testing.assert_close(out.sigma, out.head_sigma.pow(2).sum(1).sqrt(), rtol=4 * H * EPS, atol=0)


def test_forward_mean_moves_with_the_values_and_ignores_masked_keys(layer, inputs) -> None:
    query, key, value, key_weight = inputs
    base = layer(query, key, value, key_weight=key_weight).mean.detach()
    changed = value.clone()
    changed[0, 1] += 100.0  # a masked key of series 0
    torch.testing.assert_close(layer(query, key, changed, key_weight=key_weight).mean.detach(), base,
                               rtol=0, atol=1e-12)
    changed[0, 0] += 1.0  # an unmasked one
    assert not torch.allclose(layer(query, key, changed, key_weight=key_weight).mean.detach()[0], base[0])
