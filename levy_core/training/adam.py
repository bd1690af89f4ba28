"""Adam with a cosine learning-rate schedule, the update ``torch.optim.Adam`` makes on the CPU.

Why not ``torch.optim``: its ``Optimizer.__init__`` and every ``step`` import ``torch._dynamo``
(the compiler), 1.9–2.7 s on this project's 2-core machine, paid by the first fit of every
process — a tenth of ``levy fit`` on one series, and the dashboard's first fit in each of its
worker processes. Nothing here compiles, so the update is written out: the elementwise
operations of the single-tensor path ``torch.optim.Adam`` takes for CPU tensors (L2 weight
decay added to the gradient, no AMSGrad), each applied to every parameter in one
``torch._foreach_*`` call, and the recursive form of
``torch.optim.lr_scheduler.CosineAnnealingLR``; on the CPU both bit for bit
(``tests/training/test_adam.py`` runs them side by side). On a GPU the foreach kernels are
fused, and their rounding may differ from the single-tensor path's in the last bits.

    opt = Adam(params, lr=1e-3, weight_decay=1e-5)
    schedule = CosineSchedule(lr=1e-3, eta_min=1e-4, t_max=epochs)
    for epoch in range(1, epochs + 1):
        for batch in batches:
            opt.zero_grad(); loss.backward(); opt.step()
        opt.lr = schedule.step()
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import Tensor

__all__ = ["Adam", "CosineSchedule"]


class Adam:
    """Adam (Kingma & Ba) over ``params``, the update of ``torch.optim.Adam(params, lr,
    betas, eps, weight_decay)`` with its defaults (``amsgrad=False``, ``maximize=False``).

    Parameters
    ----------
    params : iterable of Tensor
        The leaf tensors to update (each any shape, real floating point); a parameter whose
        ``.grad`` is ``None`` at a step is left alone, and its moments do not advance.
    lr : float
        The step size; set ``.lr`` between steps to schedule it.
    betas : (float, float)
        Decay rates of the first and second moment estimates, each in [0, 1).
    eps : float
        Added to the square root of the second moment, ≥ 0.
    weight_decay : float
        L2 penalty added to the gradient (not decoupled, as ``torch.optim.Adam``), ≥ 0.
    """

    def __init__(self, params: Iterable[Tensor], *, lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("Adam: no parameters to optimise")
        if any(not (p.is_leaf and p.is_floating_point() and not p.is_complex()) for p in self.params):
            raise ValueError("Adam: every parameter must be a real floating-point leaf tensor")
        if not (math.isfinite(lr) and lr >= 0):
            raise ValueError(f"Adam: the learning rate must be finite and >= 0, got {lr}")
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"Adam: betas must be two numbers in [0, 1), got {betas}")
        if not (math.isfinite(eps) and eps >= 0) or not (math.isfinite(weight_decay) and weight_decay >= 0):
            raise ValueError(f"Adam: eps and weight_decay must be finite and >= 0, got {eps} and {weight_decay}")
        self.lr = float(lr)
        self.beta1, self.beta2 = float(betas[0]), float(betas[1])
        self.eps = float(eps)
        self.weight_decay = float(weight_decay)
        # per parameter: the step count as torch keeps it (a float32 scalar), and the two moments
        self.steps = [torch.zeros((), dtype=torch.float32) for _ in self.params]
        self._counts = [0] * len(self.params)  # the same counts as Python ints (no .item() per step)
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]

    def zero_grad(self) -> None:
        """Drop every parameter's gradient (``set_to_none=True``)."""
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient.

        The same elementwise operations as the per-parameter loop of ``torch.optim.Adam``'s
        single-tensor path, in the same order, each applied to all parameters in one
        ``torch._foreach_*`` call: a fit on one series makes hundreds of steps of a small
        model, where ~10 operator calls per parameter and step were a tenth of the fit."""
        live = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not live:
            return
        params = [self.params[i] for i in live]
        grads = [p.grad for p in params]
        if any(g.is_sparse for g in grads):
            raise ValueError("Adam: sparse gradients are not supported")
        for i in live:
            self._counts[i] += 1
        torch._foreach_add_([self.steps[i] for i in live], 1)
        if self.weight_decay != 0:
            grads = torch._foreach_add(grads, params, alpha=self.weight_decay)
        exp_avg, exp_avg_sq = [self.exp_avg[i] for i in live], [self.exp_avg_sq[i] for i in live]
        torch._foreach_lerp_(exp_avg, grads, 1 - self.beta1)
        torch._foreach_mul_(exp_avg_sq, self.beta2)
        torch._foreach_addcmul_(exp_avg_sq, grads, grads, value=1 - self.beta2)
        # bias corrections from each parameter's own step count (Python floats, as torch's .item())
        steps = [float(self._counts[i]) for i in live]
        step_sizes = [-(self.lr / (1 - self.beta1 ** s)) for s in steps]
        root_corrections = [(1 - self.beta2 ** s) ** 0.5 for s in steps]
        denom = torch._foreach_sqrt(exp_avg_sq)
        torch._foreach_div_(denom, root_corrections)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(params, exp_avg, denom, step_sizes)


class CosineSchedule:
    """The learning rates of ``torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=t_max,
    eta_min=eta_min)`` for an optimiser started at ``lr``, in its recursive (chainable) form,
    so the same floats: ``step()`` returns the rate for the next epoch, as the scheduler's
    ``step()`` sets it.

    Parameters
    ----------
    lr : float
        The rate at epoch 0 (the scheduler's ``base_lr``).
    eta_min : float
        The rate at epoch ``t_max``.
    t_max : int
        Half a cosine period, in epochs (≥ 1); past it the rate rises again, as torch's does.
    """

    def __init__(self, *, lr: float, eta_min: float, t_max: int) -> None:
        if t_max < 1:
            raise ValueError(f"cosine schedule: t_max must be >= 1, got {t_max}")
        self.base_lr, self.eta_min, self.t_max = float(lr), float(eta_min), int(t_max)
        self.epoch = 0
        self.lr = self.base_lr

    def step(self) -> float:
        """Advance one epoch; return the new rate."""
        self.epoch += 1
        e, t, eta_min = self.epoch, self.t_max, self.eta_min
        if (e - 1 - t) % (2 * t) == 0:
            self.lr = self.lr + (self.base_lr - eta_min) * (1 - math.cos(math.pi / t)) / 2
        else:
            self.lr = ((1 + math.cos(math.pi * e / t)) / (1 + math.cos(math.pi * (e - 1) / t))
                       * (self.lr - eta_min) + eta_min)
        return self.lr
