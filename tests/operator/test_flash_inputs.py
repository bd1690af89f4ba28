"""The fused pass's inputs (``levy_core.operator.flash_inputs``): the written-in-place construction
gives exactly the general one's numbers, and the memory-order norm is ``F.normalize``'s."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from levy_core.operator.attention import TimeDecay
from levy_core.operator.flash_inputs import (
    augment,
    decay_terms,
    flash_inputs,
    second_moment_columns,
    unit_rows,
)

B, H, Q, K, E, D = 3, 4, 5, 7, 16, 4


def heads(rows: int, width: int, seed: int) -> torch.Tensor:
    """(B, H, rows, width) as a model makes them: a view of one (B, rows, H·width) projection."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, rows, H * width, generator=g).view(B, rows, H, width).transpose(1, 2)


@pytest.mark.parametrize("make", [lambda: heads(K, E, 0), lambda: heads(K, E, 1).contiguous(),
                                  lambda: torch.randn(K, E), lambda: heads(K, E, 2).transpose(0, 1)],
                         ids=["strided heads", "contiguous", "2-d", "permuted"])
def test_unit_rows_is_f_normalize(make) -> None:
    x = make()
    torch.testing.assert_close(unit_rows(x), F.normalize(x, dim=-1), rtol=0, atol=1e-7)


def test_unit_rows_keeps_a_zero_row_zero() -> None:
    x = heads(K, E, 3).clone()
    x[1, 2, 3] = 0.0
    out = unit_rows(x)
    assert torch.isfinite(out).all() and (out[1, 2, 3] == 0).all()


@pytest.mark.parametrize("full", [False, True], ids=["mean path", "read-out path"])
@pytest.mark.parametrize("with_weights", [False, True], ids=["unweighted", "key weights"])
@pytest.mark.parametrize("with_decay", [False, True], ids=["no decay", "decay"])
def test_flash_inputs_equal_the_general_construction(full: bool, with_weights: bool, with_decay: bool) -> None:
    q, k, v = heads(Q, E, 4), heads(K, E, 5), heads(K, D, 6)
    kappa = torch.tensor([1.0, 2.0, 3.0, 4.0]).view(1, H, 1, 1)
    key_weight = torch.rand(B, H, K, generator=torch.Generator().manual_seed(7)) if with_weights else None
    if with_weights:
        key_weight[0, 1, :3] = 0.0  # masked keys
    terms = None
    if with_decay:
        decay = TimeDecay(torch.rand(B, H, Q) * 48, torch.rand(B, H, K) * 48, torch.full((1, H, 1, 1), 6.0))
        terms = decay_terms(decay, key_weight, q)
    v_bar = v.mean(-2, keepdim=True)
    v_c = v - v_bar
    batch = torch.Size([B, H])
    general = augment(q, k, v_c, second_moment_columns(v_c, full), kappa, key_weight, terms, batch, None)
    fast = flash_inputs(q, k, v, v_bar, kappa, key_weight, terms, batch, full)
    for a, b in zip(general, fast, strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(b, a, rtol=0, atol=0)


def test_flash_inputs_refuse_values_whose_moments_overflow() -> None:
    q, k, v = heads(Q, E, 8), heads(K, E, 9), heads(K, D, 10) * 1e19
    v_bar = v.mean(-2, keepdim=True)
    with pytest.raises(ValueError, match="overflow"):
        flash_inputs(q, k, v, v_bar, torch.tensor(2.0), None, None, torch.Size([B, H]), True)


def test_flash_inputs_broadcast_keys_over_the_batch_as_augment_does() -> None:
    q, v = heads(Q, E, 11), heads(K, D, 12)
    k = heads(K, E, 13)[:1]  # one set of keys for every batch row
    v_bar = v.mean(-2, keepdim=True)
    v_c = v - v_bar
    batch, kappa = torch.Size([B, H]), torch.tensor(2.0)
    general = augment(q, k, v_c, second_moment_columns(v_c, True), kappa, None, None, batch, None)
    fast = flash_inputs(q, k, v, v_bar, kappa, None, None, batch, True)
    for a, b in zip(general, fast, strict=True):
        torch.testing.assert_close(b, a, rtol=0, atol=0)
