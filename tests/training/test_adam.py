"""levy_core.training.adam against its reference, torch.optim, side by side: the same floats."""

from __future__ import annotations

import math

import pytest
import torch

from levy_core.training.adam import Adam, CosineSchedule


def _params(seed: int) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    shapes = [(), (3,), (4, 5), (2, 3, 2)]
    return [torch.nn.Parameter(torch.randn(s, generator=g, dtype=torch.float32)) for s in shapes]


@pytest.mark.parametrize("weight_decay", [0.0, 1e-4])
@pytest.mark.parametrize("betas", [(0.9, 0.999), (0.5, 0.9)])
def test_adam_makes_torch_optims_cpu_updates_bit_for_bit(weight_decay: float, betas: tuple[float, float]) -> None:
    ours, theirs = _params(0), _params(0)
    opt = Adam(ours, lr=3e-3, betas=betas, weight_decay=weight_decay)
    ref = torch.optim.Adam(theirs, lr=3e-3, betas=betas, weight_decay=weight_decay)
    sched = CosineSchedule(lr=3e-3, eta_min=3e-4, t_max=7)
    ref_sched = torch.optim.lr_scheduler.CosineAnnealingLR(ref, T_max=7, eta_min=3e-4)
    g = torch.Generator().manual_seed(1)
    for epoch in range(12):
        for step in range(5):
            grads = [torch.randn(p.shape, generator=g) * 10 ** (epoch % 3 - 1) for p in ours]
            skip = (epoch * 5 + step) % 7 == 3  # a parameter without a gradient keeps its moments
            for i, (a, b, gr) in enumerate(zip(ours, theirs, grads, strict=True)):
                a.grad = None if skip and i == 2 else gr.clone()
                b.grad = None if skip and i == 2 else gr.clone()
            opt.step()
            ref.step()
            for a, b in zip(ours, theirs, strict=True):
                assert torch.equal(a, b)
        ref_sched.step()
        opt.lr = sched.step()
        assert opt.lr == ref.param_groups[0]["lr"]
    for i, p in enumerate(theirs):
        state = ref.state[p]
        assert torch.equal(opt.exp_avg[i], state["exp_avg"]) and torch.equal(opt.exp_avg_sq[i], state["exp_avg_sq"])
        assert opt.steps[i].item() == state["step"].item()


@pytest.mark.parametrize("t_max", [1, 2, 3, 10, 40, 200])
def test_cosine_schedule_is_torchs_recursive_one_past_its_half_period(t_max: int) -> None:
    p = torch.nn.Parameter(torch.zeros(1))
    ref = torch.optim.SGD([p], lr=0.01)
    ref_sched = torch.optim.lr_scheduler.CosineAnnealingLR(ref, T_max=t_max, eta_min=0.001)
    ours = CosineSchedule(lr=0.01, eta_min=0.001, t_max=t_max)
    for _ in range(3 * t_max + 2):
        ref.step()
        ref_sched.step()
        assert ours.step() == ref.param_groups[0]["lr"]


def test_zero_grad_sets_none_and_a_step_without_gradients_changes_nothing() -> None:
    params = _params(2)
    before = [p.detach().clone() for p in params]
    opt = Adam(params, lr=0.1)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.zero_grad()
    assert all(p.grad is None for p in params)
    opt.step()
    assert all(torch.equal(a, b) for a, b in zip(params, before, strict=True))
    assert all(s.item() == 0 for s in opt.steps)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"lr": -1.0}, "learning rate"),
    ({"lr": math.nan}, "learning rate"),
    ({"lr": 0.1, "betas": (0.9, 1.0)}, "betas"),
    ({"lr": 0.1, "eps": -1.0}, "eps"),
    ({"lr": 0.1, "weight_decay": math.inf}, "weight_decay"),
])
def test_bad_settings_are_refused_by_name(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Adam(_params(0), **kwargs)


def test_no_parameters_or_a_non_leaf_is_refused() -> None:
    with pytest.raises(ValueError, match="no parameters"):
        Adam([], lr=0.1)
    leaf = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(ValueError, match="leaf"):
        Adam([leaf * 2], lr=0.1)
    with pytest.raises(ValueError, match="t_max"):
        CosineSchedule(lr=0.1, eta_min=0.0, t_max=0)


_FIT_IN_A_FRESH_PROCESS = """
import sys
from levy_core.data.synthetic import CHANNELS, make_synthetic
from levy_core.episodes.scaling import ChannelScaler
from levy_core.episodes.tasks import EpisodeBuilder, TaskConfig
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.training.train import TrainConfig, train_model

frame = make_synthetic(n_series=6, seed=1).observations.iloc[::3].reset_index(drop=True)
ids = sorted(frame["series_id"].unique())
builder = EpisodeBuilder(ChannelScaler.fit(frame, ids).transform(frame), sorted(CHANNELS),
                         TaskConfig("forecast", cutoff=24.0, horizon=12.0), seed=0)
model = LevyModel(ModelConfig(n_channels=len(CHANNELS), d_model=8, d_time=8, d_channel=4, num_heads=2, head_dim=4))
result = train_model(model, builder, builder.usable(ids[:4]), builder.usable(ids[4:]), TrainConfig(epochs=2, batch_size=2))
print(len(result.history), "torch._dynamo" in sys.modules)
"""


@pytest.mark.integration
def test_a_fit_never_imports_the_compiler() -> None:
    """The reason the module exists: a whole training run in a fresh process leaves
    ``torch._dynamo`` unimported (torch.optim imports it, 1.6-2.7 s, at its first use)."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _FIT_IN_A_FRESH_PROCESS], capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["2", "False"]
