"""levy_core.model (levy_model, softmax_twin, encoder, cross_heads): output shapes, the linear read-out identity, padding and batch
independence, the softmax twin's MC-Dropout, and gradient flow."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from levy_core.model.batch import Batch
from levy_core.model.config import ModelConfig
from levy_core.model.dropout import encoder_layer
from levy_core.model.encoder import channel_state
from levy_core.model.levy_model import LevyModel, build_model
from levy_core.model.softmax_twin import SoftmaxTwin
from levy_core.operator.attention import log_phi

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


@pytest.fixture(scope="module", params=[0, 1], ids=["no-context-layer", "context-layer"])
def cfg(request: pytest.FixtureRequest) -> ModelConfig:
    """Both shipped depths: ``small`` has no self-attention over the observations, ``medium``
    and ``large`` one layer."""
    return ModelConfig(n_channels=N_CHANNELS, context_layers=request.param)


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
    # λ_i = w_i e^{κ(cos − 1)} decayed in time: n_eff = the data's Λ, at most the number of
    # real keys, and below the whole measure's (the prior adds its mass)
    n_keys = batch.ctx_mask.sum(1).view(B, 1, 1)
    assert (out.n_eff <= n_keys * (1 + 1e-5)).all() and (out.n_eff >= 0).all()
    assert (torch.log(out.n_eff) <= out.log_evidence + 1e-5).all()


def test_twin_output_shapes(twin: SoftmaxTwin) -> None:
    batch = make_batch([(4, 6), (9, 2)])
    with torch.no_grad():
        out = twin(batch)
    assert out.mean.shape == (2, 6)
    assert out.sigma is None and out.log_evidence is None and out.disagreement is None


def explicit_atoms(levy: LevyModel, batch: Batch, b: int, m_real: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ŷ and σ̂ of series ``b`` from the model's operator inputs in float64, one query at a
    time, over explicit atoms: data atoms with λ_i(q) and u_i(q) = a(q)·v_i, and the prior's
    two atoms — straight from the definitions (docs/levy-math.md)."""
    op = levy.operator(batch)
    n = int(batch.ctx_mask[b].sum())
    H = op.q.shape[1]
    y = op.offset[b, :m_real].double().clone()
    var = torch.zeros(m_real, dtype=torch.float64)
    for h in range(H):
        kappa = op.kappa[0, h, 0, 0].double()
        ell = op.decay.length_scale[0, h, 0, 0].double()
        for j in range(m_real):
            q = op.q[b, h, j].double()
            k = op.k[b, h, :n].double()
            cos = F.cosine_similarity(q.unsqueeze(0), k, dim=-1)
            dt = op.decay.query_time[b, 0, j].double() - op.decay.key_time[b, 0, :n].double()
            lam = torch.exp(kappa * (cos - 1) - dt**2 / (2 * ell**2))
            u = op.v[b, h, :n].double() @ op.readout[b, h, j, 0].double()
            pm = op.prior.mean[b, h, j, 0].double()
            ps = op.prior.variance[b, h, j].double().sqrt()
            lam0 = op.prior.log_mass[b, h, j].double().exp()
            lam = torch.cat([lam, (lam0 / 2).expand(2)])
            u = torch.cat([u, torch.stack([pm + ps, pm - ps])])
            total = lam.sum()
            p = lam / total
            mean_h = (p * u).sum()
            tr = (p * (u - mean_h) ** 2).sum()
            y[j] += mean_h
            var[j] += tr * torch.exp(log_phi(torch.log(total), levy.cfg.phi))
    return y, var.sqrt()


@pytest.mark.parametrize("external", [False, True])
@pytest.mark.parametrize("context_layers", [0, 1])
@pytest.mark.parametrize("phi", ["rate", "count"])
def test_prediction_and_sigma_from_explicit_atoms(phi: str, context_layers: int, external: bool) -> None:
    """ŷ = b(q) + Σ_h Σ_atoms p u and σ̂² = Σ_h tr Σ_h φ(Λ_h), atoms listed by hand (with an
    external offset and γ ≠ 1 too: the offset shifts ŷ, γ scales every atom's value)."""
    torch.manual_seed(3)
    levy = LevyModel(ModelConfig(n_channels=N_CHANNELS, phi=phi, context_layers=context_layers)).eval()
    batch = make_batch([(9, 4), (15, 6)], seed=3)
    if external:
        batch = with_external_offset_and_correction_scale(levy, batch, seed=10 + context_layers)
    with torch.no_grad():
        out = levy(batch)
        for b, m in enumerate((4, 6)):
            y, sigma = explicit_atoms(levy, batch, b, m)
            torch.testing.assert_close(out.mean[b, :m].double(), y, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(out.sigma[b, :m].double(), sigma, rtol=1e-3, atol=1e-6)


def test_the_correction_bound_scales_mean_correction_and_sigma_by_one_share() -> None:
    """A query whose correction exceeds its channel's bound keeps the share s = B/|m|:
    ŷ − b = ±B, σ̂ and the disagreement scale by s and s², the evidence does not move;
    queries within the bound are untouched; no bound (inf) is the plain model."""
    torch.manual_seed(6)
    levy = LevyModel(ModelConfig(n_channels=N_CHANNELS)).eval()
    batch = make_batch([(9, 4), (6, 4)], seed=2)
    with torch.no_grad():
        plain = levy(batch)
        offset = levy.operator(batch).offset
        correction = plain.mean - offset
        bound = float(correction.abs().median())
        levy.correction_bound.fill_(bound)
        capped = levy(batch)
    share = torch.clamp(bound / correction.abs(), max=1.0)
    assert (share < 1).any() and (share == 1).any()
    torch.testing.assert_close(capped.mean - offset, share * correction, rtol=1e-5, atol=1e-6)
    assert float((capped.mean - offset).abs().max()) <= bound + 1e-6  # float32 rounding of ŷ − b
    torch.testing.assert_close(capped.sigma, share * plain.sigma, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(capped.disagreement, plain.disagreement * share.unsqueeze(1) ** 2, rtol=1e-4,
                               atol=1e-6)  # float32: the share is rounded before it is squared
    torch.testing.assert_close(capped.log_evidence, plain.log_evidence)
    torch.testing.assert_close(capped.evidence_term, plain.evidence_term, rtol=1e-5, atol=1e-6)


def with_external_offset_and_correction_scale(levy: LevyModel, batch: Batch, seed: int) -> Batch:
    """A classical forecaster's offset on every other query (NaN: the model's own) and a
    correction share γ per channel in (0.05, 1]: what a fit on rolling origins runs."""
    g = torch.Generator().manual_seed(seed)
    offset = torch.rand(batch.qry_time.shape, generator=g) * 3 - 1
    offset[:, ::2] = float("nan")
    levy.correction_scale.copy_(0.05 + 0.95 * torch.rand(levy.correction_scale.shape, generator=g))
    return batch._replace(offset=offset)


def with_mean_reversion(levy: LevyModel, seed: int) -> None:
    """A reverting last value on every channel but the first (rates of 0.5-5 per time_scale,
    levels from the training mean to the series' own): what a panel fit installs."""
    g = torch.Generator().manual_seed(seed)
    levy.backbone.revert_rate.copy_(0.5 + 4.5 * torch.rand(N_CHANNELS, generator=g))
    levy.backbone.revert_rate[0] = 0.0
    levy.backbone.revert_to_series.copy_(torch.rand(N_CHANNELS, generator=g))


@pytest.mark.parametrize("offset", ["last", "reverting", "external"])
@pytest.mark.parametrize("context_layers", [0, 1])
@pytest.mark.parametrize("phi", ["rate", "count"])
def test_monte_carlo_identity_through_the_whole_model(phi: str, context_layers: int, offset: str) -> None:
    """Draws of the sampled operator through offset, query read-out and prior (the
    pipeline's sampler): their mean → ŷ and their RMS deviation → σ̂, within 4 s.e. —
    also with the last value's mean reversion (a panel's offset), and with an external
    offset b(q) (base_forecast) and a correction share γ ≠ 1."""
    from levy_core.operator.sampling import sample_levy_attention

    torch.manual_seed(4)
    levy = LevyModel(ModelConfig(n_channels=N_CHANNELS, phi=phi, context_layers=context_layers)).eval()
    batch = make_batch([(9, 4), (6, 4)], seed=8)
    external = offset == "external"
    if offset == "reverting":
        with_mean_reversion(levy, seed=context_layers)
    if external:
        batch = with_external_offset_and_correction_scale(levy, batch, seed=context_layers)
    n = 20_000
    with torch.no_grad():
        if external:  # and a correction bound that binds on some queries (the read-out's share s(q))
            levy.correction_bound.fill_(float((levy(batch).mean - levy.operator(batch).offset).abs().median()))
        out = levy(batch)
        op = levy.operator(batch)
        draws = sample_levy_attention(op.q, op.k, op.v, kappa=op.kappa, key_weight=op.key_weight, phi=phi,
                                      n_draws=n, generator=torch.Generator().manual_seed(0), decay=op.decay,
                                      readout=op.readout, prior=op.prior)  # (n, B, H, M, 1)
        share = levy.bound_factor(levy_attention_mean(levy, op), batch.qry_channel) if external else 1.0
        y = share * draws.sum(dim=2)[..., 0] + op.offset  # heads' measures are independent: draws add
    dev = (y - out.mean).double()
    se = dev.std(0) / math.sqrt(n)
    assert (dev.mean(0).abs() <= 4 * se + 1e-7).all()
    sq = dev.pow(2)
    rmsd = sq.mean(0).sqrt()
    se_rmsd = sq.std(0) / math.sqrt(n) / (2 * out.sigma.double())
    assert ((rmsd - out.sigma.double()).abs() <= 4 * se_rmsd + 1e-6).all()


def levy_attention_mean(levy: LevyModel, op) -> torch.Tensor:
    """The operator's expected correction Σ_h m_h (B, M), before any bound."""
    from levy_core.operator.attention import levy_attention

    out = levy_attention(op.q, op.k, op.v, kappa=op.kappa, key_weight=op.key_weight, phi=levy.cfg.phi,
                         decay=op.decay, readout=op.readout, prior=op.prior)
    return out.mean[..., 0].sum(dim=1)


def test_mean_reversion_decays_the_last_value_towards_its_level_and_rate_zero_is_the_last_value() -> None:
    """b(q) = m + (y_last − m)·exp(−r Δ), m = w·(series mean) + (1 − w)·(training mean), Δ the
    query's time since its channel's last value in time_scale units (a query before it keeps
    the last value); rate 0 gives the plain model's outputs bit for bit."""
    from levy_core.model.encoder import channel_state

    torch.manual_seed(0)
    levy = LevyModel(ModelConfig(n_channels=N_CHANNELS)).eval()
    batch = make_batch([(10, 6), (7, 5)], seed=3)
    with torch.no_grad():
        plain = levy(batch)
        levy.backbone.revert_rate.zero_()
        levy.backbone.revert_to_series.fill_(0.7)
        same = levy(batch)
        with_mean_reversion(levy, seed=1)
        reverting = levy.operator(batch).offset
    for name in ("mean", "sigma", "log_evidence", "disagreement"):
        assert torch.equal(getattr(plain, name), getattr(same, name)), name
    state = channel_state(batch, N_CHANNELS)
    bb = levy.backbone
    for b in range(2):
        for j in range(int(batch.qry_mask[b].sum())):
            c = int(batch.qry_channel[b, j])
            last, mean = float(state.last_value[b, c]), float(state.mean_value[b, c])
            if float(state.count[b, c]) == 0:
                expected = float(bb.default[c])
            else:
                since = max((float(batch.qry_time[b, j]) - float(state.last_time[b, c])) / levy.cfg.time_scale, 0.0)
                w, r = float(bb.revert_to_series[c]), float(bb.revert_rate[c])
                level = w * mean + (1 - w) * float(bb.default[c])
                expected = level + (last - level) * math.exp(-r * since)
            assert float(reverting[b, j]) == pytest.approx(expected, rel=1e-5, abs=1e-6)


def test_fused_and_reference_attention_agree(levy: LevyModel) -> None:
    batch = make_batch([(11, 4), (5, 4)], seed=5)
    with torch.no_grad():
        fused = levy(batch, impl="fused")
        ref = levy(batch, impl="reference")
    for name in ("mean", "sigma", "log_evidence", "disagreement", "n_eff"):
        torch.testing.assert_close(getattr(fused, name), getattr(ref, name), rtol=1e-4, atol=1e-6, msg=name)


def test_offset_is_the_last_value_of_the_queried_channel() -> None:
    """With every correction and prior mean at zero the model is "carry the last value
    forward" exactly (ties at the last time averaged; a never-seen channel gets its default)."""
    torch.manual_seed(0)
    levy = LevyModel(ModelConfig(n_channels=N_CHANNELS)).eval()
    with torch.no_grad():
        levy.heads.readout_proj.weight.zero_()
        levy.heads.readout_proj.bias.zero_()
        levy.heads.prior_mean.zero_()
        levy.backbone.default.fill_(0.25)
    batch = make_batch([(10, 5)], seed=11)
    batch.ctx_channel[0] = torch.tensor([0, 1, 0, 1, 0, 1, 0, 1, 0, 1])
    batch.ctx_time[0, -4:] = batch.ctx_time[0, -4]  # both channels end with two values at one time: a tie
    batch.qry_channel[0] = torch.tensor([0, 1, 2, 0, 1])
    with torch.no_grad():
        out = levy(batch)
    t, c, x = batch.ctx_time[0], batch.ctx_channel[0], batch.ctx_value[0]
    for j, ch in enumerate(batch.qry_channel[0].tolist()):
        if ch == 2:
            expected = torch.tensor(0.25)
        else:
            times = t[c == ch]
            expected = x[c == ch][times == times.max()].mean()
        torch.testing.assert_close(out.mean[0, j], expected)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("phi", ["rate", "count"])
def test_far_from_the_data_evidence_falls_and_sigma_grows(seed: int, phi: str) -> None:
    """Fresh, untrained models: queried ever further past the history, every head's n_eff
    falls monotonically and σ̂ never shrinks — evidence means evidence from the start."""
    torch.manual_seed(seed)
    levy = LevyModel(ModelConfig(n_channels=N_CHANNELS, phi=phi)).eval()
    batch = make_batch([(20, 1), (8, 1)], seed=seed)
    end = float(batch.ctx_time.max())
    far = end + torch.tensor([0.5, 1, 2, 5, 10, 24, 48, 100, 240, 1000, 2400])
    batch = batch._replace(qry_time=far.expand(2, -1).contiguous(), qry_channel=torch.zeros(2, 11, dtype=torch.int64),
                           qry_mask=torch.ones(2, 11), target=torch.zeros(2, 11))
    with torch.no_grad():
        out = levy(batch)
    assert (out.n_eff.diff(dim=-1) <= 1e-12).all()
    assert (out.n_eff[..., -1] < 1e-3 * out.n_eff[..., 0]).all()
    assert (out.sigma.diff(dim=-1) >= -1e-6 * out.sigma[..., :-1]).all()
    assert (out.sigma[:, -1] > 1.5 * out.sigma[:, 0]).all() and torch.isfinite(out.sigma).all()


@pytest.mark.parametrize("kind", ["levy", "softmax"])
def test_a_series_with_no_observation_gets_the_prior_not_nan(kind: str, levy: LevyModel, twin: SoftmaxTwin) -> None:
    """Every key of one series masked (a new series, or one thinned to nothing): a finite
    prediction from the prior (σ̂ finite, no evidence), and the other series' unchanged —
    also through the self-attention over the observations, whose rows would be NaN."""
    model = levy if kind == "levy" else twin
    batch = make_batch([(6, 3), (4, 3)], seed=12)
    empty = batch._replace(ctx_mask=batch.ctx_mask * torch.tensor([[1.0], [0.0]]))
    with torch.no_grad():
        out, alone = model(empty), model(select(batch, 0, 6, 3))
    assert torch.isfinite(out.mean).all()
    torch.testing.assert_close(out.mean[:1], alone.mean, rtol=1e-5, atol=1e-6)
    if kind == "levy":
        assert torch.isfinite(out.sigma).all() and (out.sigma[1] > 0).all()
        assert (out.n_eff[1] == 0).all()


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


def test_a_binding_correction_bound_scales_mc_dropout_and_keeps_its_spread() -> None:
    """The twin's bound share comes from its deterministic correction and scales every
    dropout pass alike: MC-Dropout's spread shrinks by that share, it does not collapse (a
    per-pass clip would make every pass ±B)."""
    torch.manual_seed(7)
    twin = SoftmaxTwin(ModelConfig(n_channels=N_CHANNELS, dropout=0.3)).eval()
    batch = make_batch([(10, 5), (7, 5)], seed=4)
    mask = batch.qry_mask > 0
    with torch.no_grad():
        offset = twin.backbone.offset(batch, channel_state(batch, N_CHANNELS))
        correction = twin(batch).mean - offset
        _, std = twin.mc_dropout(batch, passes=16, generator_seed=1)
        twin.correction_bound.fill_(float(correction[mask].abs().min()) / 2)  # binds everywhere
        capped = twin(batch).mean - offset
        _, std_capped = twin.mc_dropout(batch, passes=16, generator_seed=1)
    share = capped[mask] / correction[mask]
    assert (share > 0).all() and (share < 1).all()
    torch.testing.assert_close(std_capped[mask], share * std[mask], rtol=1e-4, atol=1e-7)


def test_mc_dropout_layer_copy_is_the_layer_without_dropout(twin: SoftmaxTwin) -> None:
    """MC-Dropout runs the channel layers through ``encoder_layer`` (masks from its own
    generator): with no mask it is the layer itself."""
    layer = twin.backbone.channel_mix[0]
    x = torch.randn(3, 5, twin.cfg.d_model, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(encoder_layer(layer, x, lambda t: t), layer(x), rtol=1e-5, atol=1e-5)


def test_levy_prediction_refuses_non_finite_activations_training_lets_them_through(cfg: ModelConfig) -> None:
    torch.manual_seed(2)
    model = LevyModel(cfg)
    batch = make_batch([(6, 3), (4, 3)], seed=3)
    batch.ctx_value[0, 1] = math.inf  # reaches the operator's values
    with torch.no_grad(), pytest.raises(ValueError, match="non-finite"):
        model.eval()(batch)
    out = model.train()(batch)  # the training loop skips a non-finite loss's step
    assert not torch.isfinite(out.mean[0]).any() and torch.isfinite(out.mean[1]).all()


def test_gradients_reach_every_levy_parameter(cfg: ModelConfig) -> None:
    torch.manual_seed(1)
    model = LevyModel(cfg).train()
    batch = make_batch([(12, 6), (8, 6)], seed=6)
    # every channel appears among keys and queries so every embedding row is used
    batch.ctx_channel[:, :N_CHANNELS] = torch.arange(N_CHANNELS)
    batch.qry_channel[:, :N_CHANNELS] = torch.arange(N_CHANNELS)
    # ... and the second series never observed the last channel: its default offset is used
    batch.ctx_channel[1] = batch.ctx_channel[1] % (N_CHANNELS - 1)
    out = model(batch)
    loss = ((out.mean - batch.target) ** 2 * batch.qry_mask).sum() + (
        out.sigma * batch.qry_mask
    ).sum()
    loss.backward()
    for name, param in model.named_parameters():
        assert param.grad is not None, f"no gradient for {name}"
        assert torch.isfinite(param.grad).all(), name
        assert param.grad.abs().sum() > 0, f"zero gradient for {name}"
    assert model.log_kappa.grad.abs().min() > 0, "every head's κ must learn"


def test_build_model_and_config_round_trip(cfg: ModelConfig) -> None:
    assert isinstance(build_model("levy", cfg), LevyModel)
    assert isinstance(build_model("softmax", cfg), SoftmaxTwin)
    with pytest.raises(ValueError):
        build_model("gru", cfg)  # type: ignore[arg-type]
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError):
        ModelConfig.from_dict({**cfg.to_dict(), "bogus": 1})
    assert math.isclose(LevyModel(cfg).kappa.mean().item(), cfg.kappa_init, rel_tol=1e-6)


def test_external_offset_replaces_the_last_value_where_finite_and_gamma_scales_the_correction() -> None:
    torch.manual_seed(5)
    levy = LevyModel(ModelConfig(n_channels=N_CHANNELS)).eval()
    batch = make_batch([(9, 4), (6, 4)], seed=2)
    with torch.no_grad():
        plain = levy(batch)
        own_offset = levy.operator(batch).offset
        shifted = levy(batch._replace(offset=own_offset + 2.0))
        torch.testing.assert_close(shifted.mean, plain.mean + 2.0)  # the offset only shifts ŷ
        torch.testing.assert_close(shifted.sigma, plain.sigma)
        nan = levy(batch._replace(offset=torch.full_like(own_offset, float("nan"))))
        torch.testing.assert_close(nan.mean, plain.mean)  # NaN: the model's own offset
        levy.correction_scale.fill_(0.25)
        quarter = levy(batch)
    torch.testing.assert_close(quarter.mean - own_offset, 0.25 * (plain.mean - own_offset), rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(quarter.sigma, 0.25 * plain.sigma, rtol=1e-4, atol=1e-7)
    torch.testing.assert_close(quarter.evidence_term, plain.evidence_term)  # evidence does not move
