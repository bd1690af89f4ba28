"""levy_core.training.train: the fit loop on a tiny problem — learning, determinism, progress events,
early stopping on the calibration split, batch sizing."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from levy_core.data.synthetic import CHANNELS, make_synthetic
from levy_core.episodes.scaling import ChannelScaler
from levy_core.episodes.tasks import EpisodeBuilder, TaskConfig
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.model.softmax_twin import SoftmaxTwin
from levy_core.training import train
from levy_core.training.adam import Adam
from levy_core.training.train import (
    Progress,
    TrainConfig,
    auto_batch_size,
    evaluate_loss,
    masked_mse,
    train_model,
)

TINY = dict(d_model=8, d_time=8, d_channel=4, num_heads=2, head_dim=4)


@pytest.fixture(scope="module")
def problem() -> tuple[EpisodeBuilder, list[str], list[str]]:
    """10 synthetic series (every 3rd observation: small and fast), min-max normalised,
    forecast 12 h after 24 h: 7 train, 3 validation."""
    frame = make_synthetic(n_series=10, seed=1).observations.iloc[::3].reset_index(drop=True)
    ids = sorted(frame["series_id"].unique())
    train_ids, val_ids = ids[:7], ids[7:]
    scaled = ChannelScaler.fit(frame, train_ids).transform(frame)
    builder = EpisodeBuilder(
        scaled, sorted(CHANNELS), TaskConfig("forecast", cutoff=24.0, horizon=12.0), seed=0
    )
    return builder, builder.usable(train_ids), builder.usable(val_ids)


def new_model(seed: int = 0, kind: str = "levy"):
    torch.manual_seed(seed)
    cfg = ModelConfig(n_channels=len(CHANNELS), **TINY)
    return LevyModel(cfg) if kind == "levy" else SoftmaxTwin(cfg)


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("kind", ["levy", "softmax"])
def test_loss_decreases_on_a_tiny_problem(problem, kind: str) -> None:
    builder, train_ids, val_ids = problem
    model = new_model(kind=kind)
    before_train = evaluate_loss(model, builder, train_ids, 64)
    before_val = evaluate_loss(model, builder, val_ids, 64)
    result = train_model(
        model,
        builder,
        train_ids,
        val_ids,
        TrainConfig(epochs=4, lr=1e-2, batch_size=3, patience=10),
        label=kind,
    )
    assert evaluate_loss(model, builder, train_ids, 64) < before_train
    assert result.best_val_loss < before_val
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]
    assert not model.training, "the returned model is in eval mode"


def test_training_is_deterministic_for_a_seed(problem) -> None:
    builder, train_ids, val_ids = problem
    cfg = TrainConfig(epochs=2, batch_size=4, seed=5)
    runs = []
    for _ in range(2):
        model = new_model(seed=5)
        result = train_model(model, builder, train_ids, val_ids, cfg)
        runs.append(
            (
                weights(model),
                [h["val_loss"] for h in result.history],
                [h["train_loss"] for h in result.history],
            )
        )
    (w1, val1, tr1), (w2, val2, tr2) = runs
    assert val1 == val2 and tr1 == tr2
    assert w1.keys() == w2.keys()
    for k in w1:
        assert torch.equal(w1[k], w2[k]), k
    # and the seed matters: another seed (same initial weights) trains differently
    model = new_model(seed=5)
    train_model(model, builder, train_ids, val_ids, TrainConfig(epochs=2, batch_size=4, seed=6))
    assert any(not torch.equal(w1[k], v) for k, v in weights(model).items())


def test_progress_is_called_once_per_epoch_with_sane_fields(problem) -> None:
    builder, train_ids, val_ids = problem
    events: list[Progress] = []
    cfg = TrainConfig(epochs=3, batch_size=4, patience=10)
    result = train_model(
        new_model(), builder, train_ids, val_ids, cfg, label="levy", progress=events.append
    )
    assert len(events) == result.epochs_run == 3
    assert [e.epoch for e in events] == [1, 2, 3]
    best_so_far = math.inf
    for i, e in enumerate(events):
        assert e.model == "levy" and e.epochs == 3
        assert e.eta_seconds >= 0 and 0 < e.fraction <= 1
        assert math.isfinite(e.train_loss) and math.isfinite(e.val_loss)
        best_so_far = min(best_so_far, e.val_loss)
        assert e.best_val_loss == best_so_far
        assert e.val_loss == result.history[i]["val_loss"]
        assert i == 0 or e.seconds >= events[i - 1].seconds
    assert events[-1].fraction == 1.0 and events[-1].eta_seconds == 0.0
    assert events[-1].seconds <= result.seconds


def test_early_stopping_keeps_the_best_epoch(problem, monkeypatch) -> None:
    builder, train_ids, val_ids = problem
    torch.manual_seed(123)
    monkeypatch.setattr(train, "MIN_PATIENCE_STEPS", 0)  # patience in epochs only, for this test

    def sabotage(p: Progress) -> None:
        # after the first epoch, scramble the weights: later epochs cannot beat epoch 1
        if p.epoch >= 1:
            with torch.no_grad():
                for param in model.parameters():
                    param.add_(torch.randn_like(param) * 0.5).clamp_(-3.0, 3.0)  # scrambled, not overflowing

    model = new_model()
    result = train_model(
        model,
        builder,
        train_ids,
        val_ids,
        TrainConfig(epochs=6, batch_size=4, patience=2, lr=1e-3),
        progress=sabotage,
    )
    vals = [h["val_loss"] for h in result.history]
    assert result.best_val_loss == min(vals)
    assert result.best_epoch == vals.index(min(vals)) + 1
    assert result.best_epoch < result.epochs_run, "the sabotage should make a later epoch worse"
    assert result.epochs_run == result.best_epoch + 2 < 6, "patience 2 stops early"
    # the returned model carries the best epoch's weights, not the last epoch's (the
    # early-stopping loss weights channels as the training loss does)
    final = evaluate_loss(model, builder, val_ids, 64,
                          train.channel_weights(builder, train_ids, TrainConfig().channel_weighting))
    assert final == pytest.approx(result.best_val_loss, rel=1e-6)
    assert final != pytest.approx(vals[-1], rel=1e-3)


@pytest.mark.slow  # trains until early stopping
def test_patience_waits_a_minimum_number_of_steps_on_small_data(problem) -> None:
    """With few batches per epoch, 2 epochs of patience would be a handful of steps."""
    builder, train_ids, val_ids = problem
    torch.manual_seed(123)

    def sabotage(p: Progress) -> None:
        with torch.no_grad():
            for param in model.parameters():
                param.add_(torch.randn_like(param) * 0.5).clamp_(-3.0, 3.0)  # scrambled, not overflowing

    model = new_model()
    n_batches = -(-len(train_ids) // 4)
    needed = max(2, -(-train.MIN_PATIENCE_STEPS // n_batches))
    result = train_model(model, builder, train_ids, val_ids,
                         TrainConfig(epochs=needed + 5, batch_size=4, patience=2, lr=1e-3),
                         progress=sabotage)
    assert result.epochs_run == min(needed + 5, result.best_epoch + needed)


def test_time_budget_stops_with_zero_eta(problem) -> None:
    builder, train_ids, val_ids = problem
    events: list[Progress] = []
    result = train_model(
        new_model(),
        builder,
        train_ids,
        val_ids,
        TrainConfig(epochs=50, batch_size=4, max_seconds=1e-6),
        progress=events.append,
    )
    assert result.epochs_run == 1 and len(events) == 1
    assert events[0].eta_seconds == 0.0


def test_nll_term_trains_finite(problem) -> None:
    builder, train_ids, val_ids = problem
    result = train_model(
        new_model(),
        builder,
        train_ids,
        val_ids,
        TrainConfig(epochs=1, batch_size=4, nll_weight=0.5),
    )
    assert all(math.isfinite(h["train_loss"]) for h in result.history)


@pytest.mark.parametrize("beta", [1.0, 0.5, 0.0])
def test_the_nll_term_pulls_the_mean_by_the_error_over_the_variance_to_one_minus_beta(problem, beta: float) -> None:
    """β-NLL: the NLL's gradient on each query's mean is ``nll_weight`` × its error ×
    var^(β−1) — the error alone at β = 1, the plain NLL's error over the variance at β = 0 —,
    while ``c`` gets one too."""
    builder, train_ids, _ = problem
    model = new_model().train()
    batch, _ = builder.batch(train_ids)
    out = model(batch)
    mean = out.mean.detach().requires_grad_(True)
    log_c = torch.tensor(0.3, requires_grad=True)
    w = 0.5
    with_nll = train.training_loss(out._replace(mean=mean), batch, w, log_c, nll_beta=beta)
    (g_mean, g_c) = torch.autograd.grad(with_nll, (mean, log_c))
    mask = batch.qry_mask
    err = mean - batch.target
    var = (log_c.exp() * out.sigma).pow(2) + 1e-6
    expected = 2 * err * mask / mask.sum() + w * err * var.pow(beta - 1) * mask / mask.sum()
    torch.testing.assert_close(g_mean, expected.detach(), rtol=1e-5, atol=1e-9)
    assert g_c.abs() > 0


def test_prior_spread_never_changes_the_mean(problem) -> None:
    """The prior's variance (what the NLL shapes besides the values' spread) enters σ̂ alone."""
    builder, train_ids, _ = problem
    model = new_model().eval()
    batch, _ = builder.batch(train_ids)
    before = model(batch)
    heads = model.heads
    with torch.no_grad():
        for p in (heads.prior_spread, heads.prior_growth, *heads.prior_spread_proj.parameters()):
            p.add_(torch.randn_like(p))
    after = model(batch)
    torch.testing.assert_close(after.mean, before.mean, rtol=0, atol=0)
    assert not torch.allclose(after.sigma, before.sigma)


def test_ema_keeps_the_average_of_the_trained_weights(problem) -> None:
    """With ``ema_decay`` the kept weights are the moving average, not the last step's: one
    epoch without early stopping's epoch 0 winning, checked against the average by hand."""
    builder, train_ids, val_ids = problem
    decay = 0.5
    raw, averaged = new_model(), new_model()
    start = weights(averaged)
    steps: list[dict[str, torch.Tensor]] = []  # the raw weights after every optimiser step
    step = Adam.step

    def recorded(opt: Adam) -> None:
        step(opt)
        steps.append({n: p.detach().clone() for n, p in averaged.named_parameters()})

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Adam, "step", recorded)
        result = train_model(averaged, builder, train_ids, val_ids,
                             TrainConfig(epochs=1, batch_size=4, ema_decay=decay))
    train_model(raw, builder, train_ids, val_ids, TrainConfig(epochs=1, batch_size=4))
    if result.best_epoch == 0:
        pytest.skip("epoch 0 kept: the untrained weights won early stopping")
    expected = {n: start[n].clone() for n in steps[0]}
    for s in steps:
        for n in expected:
            expected[n] = decay * expected[n] + (1 - decay) * s[n]
    got = dict(averaged.named_parameters())
    for n, value in expected.items():
        torch.testing.assert_close(got[n].detach(), value)
    assert any(not torch.equal(got[n].detach(), p.detach()) for n, p in raw.named_parameters())


def test_training_without_series_is_refused(problem) -> None:
    builder, _, val_ids = problem
    with pytest.raises(ValueError, match="no training series"):
        train_model(new_model(), builder, [], val_ids, TrainConfig(epochs=1))


def test_auto_batch_size_bounds() -> None:
    sizes = [auto_batch_size(n) for n in range(0, 2000, 7)]
    assert all(4 <= s <= 32 for s in sizes)
    assert sizes == sorted(sizes), "more series never means smaller batches"
    assert auto_batch_size(0) == 4 and auto_batch_size(10**6) == 32
    for n in (40, 100, 255):  # inside the clip range: about eight steps per epoch
        assert auto_batch_size(n) == n // 8


def test_masked_mse_ignores_padding() -> None:
    pred = torch.tensor([[1.0, 2.0, 99.0], [0.0, 0.0, 0.0]])
    target = torch.tensor([[0.0, 2.0, 0.0], [1.0, -7.0, 5.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    # real errors: 1, 0, 1 → mean 2/3; the padded 99 and -7, 5 must not count
    expected = ((pred - target) ** 2)[mask > 0].mean()
    torch.testing.assert_close(masked_mse(pred, target, mask), expected)
    assert masked_mse(pred, target, torch.zeros_like(mask)) == 0


def test_the_untrained_model_is_kept_when_no_epoch_beats_it(problem, monkeypatch) -> None:
    """Epoch 0 (the offset forecaster: corrections near 0) is a candidate: when every epoch
    forecasts the early-stopping series worse (here a learning rate that wrecks the weights),
    the initial weights come back, not the least bad epoch."""
    builder, train_ids, val_ids = problem
    monkeypatch.setattr(train, "MIN_PATIENCE_STEPS", 0)
    model = new_model()
    before = weights(model)
    weighting = train.channel_weights(builder, train_ids, TrainConfig().channel_weighting)
    initial = evaluate_loss(model, builder, val_ids, 64, weighting)
    result = train_model(model, builder, train_ids, val_ids, TrainConfig(epochs=3, batch_size=4, patience=1, lr=5.0))
    assert min(h["val_loss"] for h in result.history) > initial, "the wrecking learning rate should lose"
    assert result.best_epoch == 0 and result.best_val_loss == pytest.approx(initial, rel=1e-12)
    after = weights(model)
    assert all(torch.equal(before[k], after[k]) for k in before), "the initial weights are restored"


class ModelTargets:
    """The builder's episodes with targets made from ``model``'s own correction: the offset
    plus ``share(ids)`` (B, 1) times ``ŷ − b`` (the correction as trained, γ = 1)."""

    def __init__(self, builder, model, share) -> None:
        self.series, self.builder, self.model, self.share = builder.series, builder, model, share

    def batch(self, ids, rng=None):
        from levy_core.model.encoder import channel_state
        b, rows = self.builder.batch(ids)
        with torch.no_grad():
            offset = self.model.backbone.offset(b, channel_state(b, self.model.correction_scale.numel()))
            target = offset + self.share(ids) * (self.model(b).mean - offset)
        return b._replace(target=target), rows


def test_correction_scale_is_the_least_squares_share_of_the_correction(problem) -> None:
    """γ = Σ r m / Σ m² (r = y − b, m = ŷ − b) clipped to [MIN_CORRECTION_SCALE, 1]: targets
    made of the offset plus half the model's own correction give γ = 0.5 and an MSE of 0;
    targets that are the offset alone give the floor, and the fit says training did not help."""
    from levy_core.training.train import MIN_CORRECTION_SCALE, fit_correction_scale

    builder, _, val_ids = problem
    model = new_model(seed=3).eval()

    def Targets(share: float) -> ModelTargets:
        return ModelTargets(builder, model, lambda ids: share)

    fit = fit_correction_scale(model, Targets(0.5), val_ids)
    batch, _ = builder.batch(val_ids)
    seen = torch.unique(batch.qry_channel[batch.qry_mask > 0]).numpy()
    assert fit.scale[seen] == pytest.approx(0.5, abs=1e-4)
    assert fit.mse == pytest.approx(0.0, abs=1e-8) and fit.improves
    fit = fit_correction_scale(model, Targets(0.0), val_ids)
    assert fit.scale.min() == pytest.approx(MIN_CORRECTION_SCALE) and fit.offset_mse == 0.0 and not fit.improves
    assert float(model.correction_scale.min()) == 1.0  # the caller installs the result


def test_a_held_back_correction_keeps_the_floor_and_reports_the_share_it_measured(problem) -> None:
    """``hold_back``: every channel keeps the floor whatever the held-out episodes say, and the
    share and MSE the fit would have kept are reported beside it (targets with half the
    correction: measured γ = 0.5 and MSE 0; kept γ = the floor, MSE that of the offset plus
    5 % of the correction, (0.5 − 0.05)² of the correction's mean square)."""
    from levy_core.model.encoder import channel_state
    from levy_core.training.train import MIN_CORRECTION_SCALE, fit_correction_scale

    builder, _, val_ids = problem
    model = new_model(seed=3).eval()
    n_channels = model.correction_scale.numel()
    half = ModelTargets(builder, model, lambda ids: 0.5)
    applied = fit_correction_scale(model, half, val_ids)
    held = fit_correction_scale(model, half, val_ids, hold_back=True)
    assert not applied.held_back and applied.measured_scale is None and "correction_held_back" not in applied.to_dict()
    assert held.held_back and np.all(held.scale == pytest.approx(MIN_CORRECTION_SCALE))
    np.testing.assert_array_equal(held.measured_scale, applied.scale)
    assert held.measured_mse == pytest.approx(applied.mse, abs=1e-12) and held.raw_mse == applied.raw_mse
    with torch.no_grad():
        batch, _ = builder.batch(val_ids)
        offset = model.backbone.offset(batch, channel_state(batch, n_channels))
        m = (model(batch).mean - offset)[batch.qry_mask > 0].double()
    assert held.mse == pytest.approx(float(((0.5 - MIN_CORRECTION_SCALE) * m).pow(2).mean()), rel=1e-4)
    assert held.mse < held.offset_mse  # the floor's 5 % has the right sign here
    report = held.to_dict()
    assert report["correction_held_back"] is True and report["measured_scale"] == pytest.approx(applied.scale.tolist())
    assert float(model.correction_scale.min()) == 1.0  # the caller installs the result


def test_a_correction_share_that_does_not_hold_from_one_half_to_the_other_is_dropped(problem) -> None:
    """Targets that take the whole correction on the first half of the held-out episodes and
    its opposite on the second: the pooled least-squares share is 0 either way, but a share
    fitted on either half raises the other half's error, so every channel keeps the floor.
    The bound is the largest kept correction seen."""
    from levy_core.model.encoder import channel_state
    from levy_core.training.train import MIN_CORRECTION_SCALE, fit_correction_scale

    builder, _, val_ids = problem
    model = new_model(seed=3).eval()
    n_channels = model.correction_scale.numel()
    first = set(val_ids[: len(val_ids) // 2])

    def Targets() -> ModelTargets:  # the whole correction on the first half, −0.8 of it on the second
        return ModelTargets(builder, model,
                            lambda ids: torch.tensor([1.0 if sid in first else -0.8 for sid in ids]).unsqueeze(1))

    fit = fit_correction_scale(model, Targets(), val_ids, cross_fit=True)
    assert np.all(fit.scale == pytest.approx(MIN_CORRECTION_SCALE))
    # a panel's held-out series are exchangeable: no cross-fit, so the episodes' order does
    # not matter (it does with one: the halves are the earlier and the later origins)
    plain = fit_correction_scale(model, Targets(), val_ids)
    np.testing.assert_array_equal(plain.scale, fit_correction_scale(model, Targets(), val_ids[::-1]).scale)
    assert np.all(plain.scale >= fit.scale)
    with torch.no_grad():
        batch, _ = builder.batch(val_ids)
        offset = model.backbone.offset(batch, channel_state(batch, n_channels))
        peak = float((model(batch).mean - offset)[batch.qry_mask > 0].abs().max())
    assert float(fit.bound.max()) == pytest.approx(MIN_CORRECTION_SCALE * peak, rel=1e-4)
