"""The operator and the model on a CUDA device: the same numbers as on the CPU, and the
Monte-Carlo identity drawn on the device.

On CUDA the fused pass takes the public SDPA path with a null key (the CPU flash kernel
that returns its log-sum-exp is CPU-only), and SDPA picks its own kernels there, so the
CPU suite says nothing about it. Skipped where no CUDA device is present (CI); run on a
GPU machine with ``pytest tests/operator/test_cuda.py``.
"""

from __future__ import annotations

import math

import pytest
import torch

from levy_core.model.batch import Batch
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.model.softmax_twin import SoftmaxTwin
from levy_core.operator.attention import LevyPrior, TimeDecay, levy_attention
from levy_core.operator.sampling import sample_levy_attention

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CUDA = "cuda"
# float32 on the device against float64 on the CPU: the pass sums K terms whose weights are
# e^{κ cos} with κ ≤ 6, so a few hundred float32 roundings of order 1
RTOL, ATOL = 2e-4, 2e-5


@pytest.fixture(autouse=True)
def exact_float32():
    """TF32 would round the matrix products to 10 bits (a backend choice, not the operator's)."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def inputs(seed: int, *, B=2, H=3, Q=7, K=50, E=8, D=3, P=2) -> dict:
    """Masked keys, a time decay, a query read-out and a prior (float64, CPU)."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    w = (torch.rand(B, 1, K, generator=g, dtype=torch.float64) > 0.2).double()
    w[..., 0] = 1.0
    decay = TimeDecay(torch.rand(B, 1, Q, generator=g, dtype=torch.float64) * 16 - 3,
                      torch.rand(B, 1, K, generator=g, dtype=torch.float64) * 10,
                      0.5 + torch.rand(1, H, 1, 1, generator=g, dtype=torch.float64) * 3)
    prior = LevyPrior(r(B, H, Q) - 1, r(B, H, Q, P), torch.rand(B, H, Q, generator=g, dtype=torch.float64) * 2)
    return dict(q=r(B, H, Q, E), k=r(B, H, K, E), v=r(B, H, K, D) * 2 + 1, key_weight=w, decay=decay,
                readout=r(B, H, Q, P, D), prior=prior,
                kappa=1 + 5 * torch.rand(1, H, 1, 1, generator=g, dtype=torch.float64))


def to(x, device: str, dtype: torch.dtype = torch.float32):
    """Tensors (and the NamedTuples holding them) moved; integer tensors keep their type."""
    if isinstance(x, torch.Tensor):
        return x.to(device, dtype) if x.is_floating_point() else x.to(device)
    if isinstance(x, tuple):
        return type(x)(*(to(v, device, dtype) for v in x))
    return x


@pytest.mark.parametrize("phi", ["rate", "count"])
@pytest.mark.parametrize("impl", ["fused", "reference"])
def test_the_device_pass_matches_the_cpu_reference_in_float64(impl: str, phi: str) -> None:
    x = inputs(0)
    ref = levy_attention(**x, phi=phi, impl="reference")
    with torch.no_grad():
        out = levy_attention(**{n: to(v, CUDA) for n, v in x.items()}, phi=phi, impl=impl)
    for name in ("mean", "sigma", "log_evidence", "disagreement", "log_data_evidence"):
        got, want = getattr(out, name), getattr(ref, name)
        assert got.device.type == CUDA
        torch.testing.assert_close(got.double().cpu(), want, rtol=RTOL, atol=ATOL, msg=name)


def test_gradients_on_the_device_match_the_cpu() -> None:
    """Training runs the fused pass under autograd (the null key placed at log Λ)."""
    x = inputs(1)
    grads = {}
    for device, dtype in (("cpu", torch.float64), (CUDA, torch.float32)):
        leaves = {n: to(x[n], device, dtype).detach().clone().requires_grad_() for n in ("q", "k", "v")}
        rest = {n: to(v, device, dtype) for n, v in x.items() if n not in leaves}
        out = levy_attention(**leaves, **rest, impl="fused")
        (out.mean.sum() + out.sigma.sum() + out.log_evidence.sum()).backward()
        grads[device] = {n: t.grad.double().cpu() for n, t in leaves.items()}
    for name in ("q", "k", "v"):
        torch.testing.assert_close(grads[CUDA][name], grads["cpu"][name], rtol=1e-3, atol=1e-4, msg=name)


def model_batch(seed: int) -> Batch:
    g = torch.Generator().manual_seed(seed)
    B, N, M, C = 3, 40, 12, 3
    ctx_time = torch.sort(torch.rand(B, N, generator=g) * 24, dim=1).values
    ctx_mask = (torch.rand(B, N, generator=g) > 0.1).float()
    return Batch(ctx_time, torch.randint(0, C, (B, N), generator=g), torch.rand(B, N, generator=g), ctx_mask,
                 24 + torch.rand(B, M, generator=g) * 24, torch.randint(0, C, (B, M), generator=g),
                 torch.ones(B, M), None, torch.where(torch.rand(B, M, generator=g) > 0.5,
                                                     torch.rand(B, M, generator=g), torch.nan))


@pytest.mark.parametrize("context_layers", [0, 1])
def test_the_whole_model_on_the_device_matches_the_cpu(context_layers: int) -> None:
    """Backbone, offsets (the last value, an external b(q) where finite), read-out, prior."""
    torch.manual_seed(0)
    model = LevyModel(ModelConfig(n_channels=3, context_layers=context_layers)).eval()
    batch = model_batch(2)
    with torch.no_grad():
        cpu = model(batch)
        dev = model.to(CUDA)(to(batch, CUDA))
    for name in ("mean", "sigma", "log_evidence", "disagreement", "n_eff"):
        torch.testing.assert_close(getattr(dev, name).cpu(), getattr(cpu, name), rtol=RTOL, atol=ATOL, msg=name)


def test_the_softmax_twin_and_its_mc_dropout_run_on_the_device() -> None:
    """The baseline the dashboard compares with: its deterministic pass matches the CPU's,
    and MC-Dropout draws its masks on the device (seeded: the same seed, the same masks; the
    spread agrees to float32 rounding, since CUDA's reductions need not sum in one order)."""
    torch.manual_seed(0)
    twin = SoftmaxTwin(ModelConfig(n_channels=3)).eval()
    batch = model_batch(4)
    with torch.no_grad():
        cpu = twin(batch).mean
        twin = twin.to(CUDA)
        on_device = to(batch, CUDA)
        torch.testing.assert_close(twin(on_device).mean.cpu(), cpu, rtol=RTOL, atol=ATOL)
        mean, sd = twin.mc_dropout(on_device, passes=20, generator_seed=3)
        again = twin.mc_dropout(on_device, passes=20, generator_seed=3)
    assert mean.device.type == CUDA and torch.isfinite(sd).all() and (sd > 0).any()
    torch.testing.assert_close(again[1], sd, rtol=1e-5, atol=1e-7)
    other, _ = twin.mc_dropout(on_device, passes=20, generator_seed=4)
    assert (other - mean).abs().max() > 1e-4  # another seed, other masks


@pytest.mark.parametrize("phi", ["rate", "count"])
def test_monte_carlo_identity_drawn_on_the_device(phi: str) -> None:
    """Draws of the sampled operator on the device (its own generator): their mean is the
    pass's mean and their RMS deviation its σ̂, within 4 standard errors."""
    x = {n: to(v, CUDA) for n, v in inputs(3, Q=5, K=30).items()}
    n = 40_000
    with torch.no_grad():
        out = levy_attention(**x, phi=phi)
        draws = sample_levy_attention(**x, phi=phi, n_draws=n,
                                      generator=torch.Generator(device=CUDA).manual_seed(0))  # (n, B, H, Q, P)
    dev = (draws - out.mean).double()
    se = dev.std(0) / math.sqrt(n)
    assert (dev.mean(0).abs() <= 4 * se + 1e-6).all()
    sq = dev.pow(2).sum(-1)
    rmsd = sq.mean(0).sqrt()
    se_rmsd = sq.std(0) / math.sqrt(n) / (2 * out.sigma.double())
    assert ((rmsd - out.sigma.double()).abs() <= 4 * se_rmsd + 1e-5).all()
