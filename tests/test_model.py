"""levy_core.model: output shapes, the linear read-out identity, padding and batch
independence, the softmax twin's MC-Dropout, and gradient flow."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from levy_core.model import Batch, LevyModel, ModelConfig, SoftmaxTwin, build_model

N_CHANNELS = 3


def make_batch(lengths: list[tuple[int, int]], *, seed: int = 0, span: float = 48.0) -> Batch:
    """Padded random episodes: ``lengths`` = (context, queries) per series; padding
    entries get mask 0 (and zeros elsewhere, like ``EpisodeBuilder``)."""
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    N = max(n for n, _ in lengths)
    M = max(m for _, m in lengths)
    ctx_time, ctx_channel = torch.zeros(B, N), torch.zeros(B, N, dtype=torch.int64)
    ctx_value, ctx_mask = torch.zeros(B, N), torch.zeros(B, N)
    qry_time, qry_channel = torch.zeros(B, M), torch.zeros(B, M, dtype=torch.int64)
    qry_mask, target = torch.zeros(B, M), torch.zeros(B, M)
    for b, (n, m) in enumerate(lengths):
        ctx_time[b, :n] = torch.sort(torch.rand(n, generator=g) * span / 2).values
        ctx_channel[b, :n] = torch.randint(0, N_CHANNELS, (n,), generator=g)
        ctx_value[b, :n] = torch.rand(n, generator=g)
        ctx_mask[b, :n] = 1.0
        qry_time[b, :m] = span / 2 + torch.rand(m, generator=g) * span / 2
        qry_channel[b, :m] = torch.randint(0, N_CHANNELS, (m,), generator=g)
        qry_mask[b, :m] = 1.0
        target[b, :m] = torch.rand(m, generator=g)
    return Batch(
        ctx_time, ctx_channel, ctx_value, ctx_mask, qry_time, qry_channel, qry_mask, target
    )


def select(batch: Batch, b: int, n: int, m: int) -> Batch:
    """Series ``b`` alone, trimmed to its real ``n`` context and ``m`` queries."""
    ctx = [x[b : b + 1, :n] for x in batch[:4]]
    qry = [x[b : b + 1, :m] for x in batch[4:7]]
    return Batch(*ctx, *qry, batch.target[b : b + 1, :m] if batch.target is not None else None)


@pytest.fixture(scope="module")
def cfg() -> ModelConfig:
    return ModelConfig(n_channels=N_CHANNELS)


@pytest.fixture(scope="module")
def levy(cfg: ModelConfig) -> LevyModel:
    torch.manual_seed(0)
    return LevyModel(cfg).eval()


@pytest.fixture(scope="module")
def twin(cfg: ModelConfig) -> SoftmaxTwin:
    torch.manual_seed(0)
    return SoftmaxTwin(cfg).eval()


def test_levy_output_shapes(levy: LevyModel, cfg: ModelConfig) -> None:
    lengths = [(7, 3), (12, 5), (2, 1)]
    batch = make_batch(lengths)
    B, M, H = len(lengths), 5, cfg.num_heads
    with torch.no_grad():
        out = levy(batch)
    assert out.mean.shape == (B, M) and out.sigma.shape == (B, M)
    for per_head in (out.log_evidence, out.disagreement, out.n_eff):
        assert per_head.shape == (B, H, M)
    mask = batch.qry_mask > 0
    assert torch.isfinite(out.mean[mask]).all() and torch.isfinite(out.sigma[mask]).all()
    assert (out.sigma[mask] >= 0).all() and (out.disagreement >= 0).all()
    # n_eff = Λ e^{-κ}, between 0 and the number of real keys (levy-math.md)
    kappa = levy.attention.kappa.view(1, H, 1)
    torch.testing.assert_close(out.n_eff, torch.exp(out.log_evidence - kappa))
    n_keys = batch.ctx_mask.sum(1).view(B, 1, 1)
    assert (out.n_eff <= n_keys * (1 + 1e-5)).all()


def test_twin_output_shapes(twin: SoftmaxTwin) -> None:
    batch = make_batch([(4, 6), (9, 2)])
    with torch.no_grad():
        out = twin(batch)
    assert out.mean.shape == (2, 6)
    assert out.sigma is None and out.log_evidence is None and out.disagreement is None


def test_linear_readout_identity(levy: LevyModel) -> None:
    """ŷ = Σ_h Σ_i p_hi u_hi + b and σ̂² = Σ_h trΣ_U,h / Λ_h (phi="rate"), against an
    independent float64 computation from the model's own parameters."""
    batch = make_batch([(9, 4), (15, 6)], seed=3)
    att = levy.attention
    with torch.no_grad():
        queries, keys, values = levy.backbone.encode(batch)
        heads = att(queries, keys, values, key_weight=batch.ctx_mask)
        out = levy(batch)
        # the model's output is the heads' aggregate
        torch.testing.assert_close(out.mean, heads.mean[..., 0])
        torch.testing.assert_close(out.sigma, heads.sigma)
        torch.testing.assert_close(
            heads.sigma.pow(2), heads.head_sigma.pow(2).sum(1), rtol=1e-5, atol=1e-7
        )
        torch.testing.assert_close(
            heads.mean, heads.head_mean.sum(1) + att.bias, rtol=1e-5, atol=1e-6
        )

        # float64 reference, per head, straight from levy-math.md
        H, hd = att.num_heads, att.head_dim
        Wq, bq = att.q_proj.weight.double(), att.q_proj.bias.double()
        Wk, bk = att.k_proj.weight.double(), att.k_proj.bias.double()
        Wv, bv = att.v_proj.weight.double(), att.v_proj.bias.double()
        readout = att.readout.double()  # (H, hd, 1)
        kappa = att.kappa.double()
        for b in range(2):
            n = int(batch.ctx_mask[b].sum())
            m = int(batch.qry_mask[b].sum())
            q = (queries[b, :m].double() @ Wq.T + bq).view(m, H, hd)
            k = (keys[b, :n].double() @ Wk.T + bk).view(n, H, hd)
            v = (values[b, :n].double() @ Wv.T + bv).view(n, H, hd)
            y_hat = att.bias.double().expand(m).clone()
            var = torch.zeros(m, dtype=torch.float64)
            for h in range(H):
                u = v[:, h] @ readout[h, :, 0]  # (n,) read-out before aggregation
                cos = F.normalize(q[:, h], dim=-1) @ F.normalize(k[:, h], dim=-1).T  # (m, n)
                s = kappa[h] * cos
                log_lam = torch.logsumexp(s, dim=-1)
                p = torch.softmax(s, dim=-1)
                mean_h = p @ u
                tr = (p * (u[None, :] - mean_h[:, None]) ** 2).sum(-1)
                y_hat += mean_h
                var += tr * torch.exp(-log_lam)  # phi = "rate": φ(Λ) = 1/Λ
                torch.testing.assert_close(
                    heads.log_evidence[b, h, :m].double(), log_lam, rtol=1e-5, atol=1e-4
                )
                torch.testing.assert_close(
                    heads.disagreement[b, h, :m].double(), tr, rtol=1e-3, atol=1e-7
                )
            torch.testing.assert_close(out.mean[b, :m].double(), y_hat, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(out.sigma[b, :m].double(), var.sqrt(), rtol=1e-3, atol=1e-7)


def test_fused_and_reference_attention_agree(levy: LevyModel) -> None:
    batch = make_batch([(11, 4), (5, 4)], seed=5)
    with torch.no_grad():
        queries, keys, values = levy.backbone.encode(batch)
        fused = levy.attention(queries, keys, values, key_weight=batch.ctx_mask, impl="fused")
        ref = levy.attention(queries, keys, values, key_weight=batch.ctx_mask, impl="reference")
    for name in ("mean", "sigma", "log_evidence", "disagreement"):
        torch.testing.assert_close(
            getattr(fused, name), getattr(ref, name), rtol=1e-4, atol=1e-6, msg=name
        )


@pytest.mark.parametrize("kind", ["levy", "softmax"])
def test_padding_keys_do_not_change_predictions(
    kind: str, levy: LevyModel, twin: SoftmaxTwin
) -> None:
    model = levy if kind == "levy" else twin
    batch = make_batch([(6, 3), (20, 3)], seed=1)
    pad = batch.ctx_mask == 0
    assert pad.any()
    g = torch.Generator().manual_seed(9)
    noisy = batch._replace(
        ctx_time=torch.where(pad, torch.rand(pad.shape, generator=g) * 1e3 - 500, batch.ctx_time),
        ctx_value=torch.where(pad, torch.randn(pad.shape, generator=g) * 1e3, batch.ctx_value),
        ctx_channel=torch.where(
            pad, torch.randint(0, N_CHANNELS, pad.shape, generator=g), batch.ctx_channel
        ),
    )
    with torch.no_grad():
        a, b = model(batch), model(noisy)
    torch.testing.assert_close(a.mean, b.mean, rtol=1e-5, atol=1e-6)
    if kind == "levy":
        torch.testing.assert_close(a.sigma, b.sigma, rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(a.log_evidence, b.log_evidence, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["levy", "softmax"])
def test_prediction_does_not_depend_on_other_series(
    kind: str, levy: LevyModel, twin: SoftmaxTwin
) -> None:
    model = levy if kind == "levy" else twin
    lengths = [(5, 2), (30, 8), (12, 4)]
    batch = make_batch(lengths, seed=2)
    with torch.no_grad():
        together = model(batch)
        for b, (n, m) in enumerate(lengths):
            alone = model(select(batch, b, n, m))
            torch.testing.assert_close(together.mean[b, :m], alone.mean[0], rtol=1e-5, atol=1e-6)
            if kind == "levy":
                torch.testing.assert_close(
                    together.sigma[b, :m], alone.sigma[0], rtol=1e-5, atol=1e-7
                )
        # swapping the other series for different ones changes nothing either
        other = make_batch([lengths[0], (40, 9)], seed=77)
        mixed = _stack(select(batch, 0, *lengths[0]), select(other, 1, 40, 9))
        torch.testing.assert_close(
            model(mixed).mean[0, :2], together.mean[0, :2], rtol=1e-5, atol=1e-6
        )


def _stack(first: Batch, second: Batch) -> Batch:
    """Two single-series batches padded into one."""
    fields = []
    for x, y in zip(first, second, strict=True):
        if x is None:
            fields.append(None)
            continue
        width = max(x.shape[1], y.shape[1])
        fields.append(
            torch.cat([F.pad(x, (0, width - x.shape[1])), F.pad(y, (0, width - y.shape[1]))])
        )
    return Batch(*fields)


def test_twin_eval_is_deterministic_and_mc_dropout_is_seeded(twin: SoftmaxTwin) -> None:
    batch = make_batch([(10, 5), (7, 5)], seed=4)
    mask = batch.qry_mask > 0
    with torch.no_grad():
        first, second = twin(batch).mean, twin(batch).mean
    assert torch.equal(first, second)
    rng_before = torch.random.get_rng_state()
    mean_a, std_a = twin.mc_dropout(batch, passes=8, generator_seed=3)
    assert torch.equal(torch.random.get_rng_state(), rng_before), (
        "global RNG state must be restored"
    )
    assert not twin.training, "eval mode must be restored"
    mean_b, std_b = twin.mc_dropout(batch, passes=8, generator_seed=3)
    assert torch.equal(mean_a, mean_b) and torch.equal(std_a, std_b)
    assert mean_a.shape == std_a.shape == batch.qry_mask.shape
    assert (std_a[mask] > 0).all()
    _, std_c = twin.mc_dropout(batch, passes=8, generator_seed=4)
    assert not torch.equal(std_a, std_c)
    # the MC mean is an average of stochastic passes around the deterministic prediction
    assert (mean_a[mask] - first[mask]).abs().max() < 10 * std_a[mask].max()
    with pytest.raises(ValueError):
        twin.mc_dropout(batch, passes=1)


def test_gradients_reach_every_levy_parameter(cfg: ModelConfig) -> None:
    torch.manual_seed(1)
    model = LevyModel(cfg).train()
    batch = make_batch([(12, 6), (8, 6)], seed=6)
    # every channel appears among keys and queries so every embedding row is used
    batch.ctx_channel[:, :N_CHANNELS] = torch.arange(N_CHANNELS)
    batch.qry_channel[:, :N_CHANNELS] = torch.arange(N_CHANNELS)
    out = model(batch)
    loss = ((out.mean - batch.target) ** 2 * batch.qry_mask).sum() + (
        out.sigma * batch.qry_mask
    ).sum()
    loss.backward()
    for name, param in model.named_parameters():
        assert param.grad is not None, f"no gradient for {name}"
        assert torch.isfinite(param.grad).all(), name
        assert param.grad.abs().sum() > 0, f"zero gradient for {name}"
    assert model.attention.log_kappa.grad.abs().min() > 0, "every head's κ must learn"


def test_build_model_and_config_round_trip(cfg: ModelConfig) -> None:
    assert isinstance(build_model("levy", cfg), LevyModel)
    assert isinstance(build_model("softmax", cfg), SoftmaxTwin)
    with pytest.raises(ValueError):
        build_model("gru", cfg)  # type: ignore[arg-type]
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError):
        ModelConfig.from_dict({**cfg.to_dict(), "bogus": 1})
    assert math.isclose(LevyModel(cfg).attention.kappa.mean().item(), cfg.kappa_init, rel_tol=1e-6)
