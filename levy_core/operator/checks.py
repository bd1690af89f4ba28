"""Argument checks of the Lévy operator, shared by ``levy_attention`` and the sampler.

Every check raises ``ValueError`` naming the argument, its shape and what it must be.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:  # annotations only
    from levy_core.operator.types import LevyOutput, LevyPrior, TimeDecay

__all__ = ["as_kappa", "broadcast_shapes", "check_inputs", "check_options", "check_value_range", "nonfinite_queries",
           "poison"]


def check_inputs(q: Tensor, k: Tensor, v: Tensor, key_weight: Tensor | None, phi: str) -> None:
    """Shape and option checks shared by ``levy_attention`` and the sampler (``ValueError``)."""
    if phi not in ("rate", "count"):
        raise ValueError(f"phi must be 'rate' or 'count', got {phi!r}")
    if q.dim() < 2 or k.dim() < 2 or v.dim() < 2:
        raise ValueError(
            f"q, k, v need at least 2 dims (..., L, features); got {tuple(q.shape)}, "
            f"{tuple(k.shape)}, {tuple(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k feature sizes differ: {q.shape[-1]} vs {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v key counts differ: {k.shape[-2]} vs {v.shape[-2]}")
    if k.shape[-2] == 0:
        raise ValueError("at least one key is needed")
    if key_weight is not None and key_weight.shape[-1] != k.shape[-2]:
        raise ValueError(
            f"key_weight must have shape (..., K) with K={k.shape[-2]}, got {tuple(key_weight.shape)}"
        )
    if key_weight is not None and torch.any(key_weight < 0):  # NaN: nonfinite_queries
        raise ValueError("key_weight must be non-negative (0 masks a key)")


def check_options(q: Tensor, k: Tensor, v: Tensor, decay: TimeDecay | None, readout: Tensor | None,
                  prior: LevyPrior | None) -> None:
    """Shapes of the options: decay times (Q and K), read-out (..., Q, P, D), prior (Q)."""
    if decay is not None:
        if decay.query_time.shape[-1] != q.shape[-2] or decay.key_time.shape[-1] != k.shape[-2]:
            raise ValueError(
                f"decay times must have shapes (..., Q={q.shape[-2]}) and (..., K={k.shape[-2]}), got "
                f"{tuple(decay.query_time.shape)} and {tuple(decay.key_time.shape)}"
            )
        ell = torch.as_tensor(decay.length_scale)
        if not torch.all(ell > 0) or not torch.all(torch.isfinite(ell)):
            raise ValueError("length_scale must be finite and > 0")
    if readout is not None and (readout.dim() < 3 or readout.shape[-1] != v.shape[-1]
                                or readout.shape[-3] != q.shape[-2]):
        raise ValueError(f"readout must have shape (..., Q={q.shape[-2]}, P, D={v.shape[-1]}), "
                         f"got {tuple(readout.shape)}")
    if prior is not None:
        out_dim = readout.shape[-2] if readout is not None else v.shape[-1]
        if prior.mean.shape[-1] != out_dim or prior.log_mass.shape[-1] != q.shape[-2]:
            raise ValueError(f"prior needs log_mass (..., Q={q.shape[-2]}), mean (..., Q, {out_dim}) and "
                             f"variance (..., Q); got {tuple(prior.log_mass.shape)}, {tuple(prior.mean.shape)}")


def broadcast_shapes(*shapes: tuple[int, ...] | torch.Size) -> torch.Size:
    """The shape ``shapes`` broadcast to, as `torch.broadcast_shapes` gives it for
    concrete shapes (``RuntimeError`` if they do not broadcast).

    The passes call this for every batch; ``torch.broadcast_shapes`` imports PyTorch's
    symbolic-shape machinery and SymPy on its first call (0.6 s of CPU, more on a busy
    machine, in every command's first pass), for shapes that are plain integers here.

    Parameters
    ----------
    *shapes : tuple of int
        Each a tensor's shape (or part of one), any lengths.

    Returns
    -------
    torch.Size
        Length the longest of ``shapes``; each dim the one size, other than 1, of that dim
        among them (1 if all are 1).
    """
    out = [1] * max((len(shape) for shape in shapes), default=0)
    for shape in shapes:
        for i, size in enumerate(shape, start=len(out) - len(shape)):
            if size < 0:
                raise RuntimeError(f"broadcast_shapes: a negative size {size} in {tuple(shape)}")
            if out[i] == 1:
                out[i] = int(size)
            elif size not in (1, out[i]):
                raise RuntimeError(f"broadcast_shapes: shapes {[tuple(s) for s in shapes]} do not broadcast "
                                   f"(dim {i - len(out)}: {out[i]} against {size})")
    return torch.Size(out)


def as_kappa(kappa: float | Tensor, ref: Tensor, *others: Tensor) -> Tensor:
    """``κ`` as a tensor broadcastable to (..., 1, 1); ``ValueError`` unless finite and > 0
    and, for a tensor, of shape (..., 1, 1) broadcastable to the batch shape of ``ref`` and
    ``others`` (q, k, v: their shapes without the last two dims)."""
    kappa_t = torch.as_tensor(kappa, dtype=ref.dtype, device=ref.device)
    if not torch.all(kappa_t > 0) or not torch.all(torch.isfinite(kappa_t)):
        raise ValueError("kappa must be finite and > 0")
    if kappa_t.dim() < 2 and kappa_t.numel() == 1:
        return kappa_t.reshape(1, 1)  # broadcastable to (..., 1, 1)
    batch = broadcast_shapes(*(t.shape[:-2] for t in (ref, *others)))
    try:
        if kappa_t.dim() < 2 or kappa_t.shape[-2:] != (1, 1):
            raise RuntimeError("not (..., 1, 1)")
        broadcast_shapes(kappa_t.shape[:-2], batch)
    except RuntimeError:
        example = (1,) * max(0, len(batch) - 1) + tuple(batch[-1:]) + (1, 1)
        raise ValueError(
            f"kappa must be a number or a tensor of shape (..., 1, 1) whose leading dims broadcast "
            f"against the batch shape {tuple(batch)} of q, k and v (per head e.g. {example}); "
            f"got shape {tuple(kappa_t.shape)}") from None
    return kappa_t


def _inputs(q: Tensor, k: Tensor, v: Tensor, key_weight: Tensor | None, decay: TimeDecay | None,
            readout: Tensor | None, prior: LevyPrior | None) -> list[tuple[str, Tensor, int, bool]]:
    """(name, tensor, trailing dims to reduce, per query?) of every tensor input."""
    named = [("q", q, 1, True), ("k", k, 2, False), ("v", v, 2, False)]
    if key_weight is not None:
        named.append(("key_weight", key_weight, 1, False))
    if decay is not None:
        named += [("decay.query_time", decay.query_time, 0, True), ("decay.key_time", decay.key_time, 1, False)]
    if readout is not None:
        named.append(("readout", readout, 2, True))
    if prior is not None:
        # log_mass = -inf is a prior of no mass; NaN and +inf are not
        named += [("prior.log_mass", torch.where(torch.isneginf(prior.log_mass), 0.0, prior.log_mass), 0, True),
                  ("prior.mean", prior.mean, 1, True), ("prior.variance", prior.variance, 0, True)]
    return named


def nonfinite_queries(q: Tensor, k: Tensor, v: Tensor, key_weight: Tensor | None, decay: TimeDecay | None,
                      readout: Tensor | None, prior: LevyPrior | None,
                      raise_error: bool) -> Tensor | None:
    """The queries (..., Q) that a NaN or ±inf input reaches (a query's own row: ``q``, its
    decay time, read-out and prior; a whole batch row: ``k``, ``v``, ``key_weight``, key
    times), or ``None`` when every input is finite (one device sync on that common path).

    ``raise_error``: a ``ValueError`` naming the first non-finite argument instead."""
    named = _inputs(q, k, v, key_weight, decay, readout, prior)
    # common path: one pass and one device sync — a NaN or ±inf anywhere makes its tensor's
    # sum non-finite (a finite sum proves every entry finite); a sum that overflows from
    # large finite values only sends us to the exact check below
    sums = torch.stack([t.sum().to(torch.float64) for _, t, _, _ in named])
    if bool(torch.isfinite(sums).all()):
        return None
    bad = torch.zeros(q.shape[:-1], dtype=torch.bool, device=q.device)
    for name, t, reduce, per_query in named:
        finite = torch.isfinite(t)
        if bool(finite.all()):
            continue
        if raise_error:
            raise ValueError(
                f"{name} has {int((~finite).sum())} non-finite value(s) (NaN or ±inf) of {finite.numel()}; "
                "pass finite inputs, or check_finite=False to let them propagate (every output they "
                "reach is NaN)")
        row_bad = ~finite.flatten(-reduce).all(-1) if reduce else ~finite
        bad = bad | (row_bad if per_query else row_bad.unsqueeze(-1))
    return bad


def check_value_range(v_c: Tensor, moments: Tensor | None = None) -> None:
    """``ValueError`` when values whose deviations from their key mean are finite have
    second moments the dtype cannot hold (``|v − v̄|`` beyond about ``sqrt(max / K)``, 1.8e19
    / sqrt(K) in float32): ``disagreement`` (value units²) would be inf and σ̂ NaN beside a
    finite mean. The operator is equivariant (mean and σ̂ scale with v), so rescaling v,
    or float64, is exact. ``moments``: the columns ``‖v‖²`` to check; without them, the
    products ``v_i v_j``, whose largest magnitude is the largest ``v_i²``."""
    limit = torch.finfo(v_c.dtype).max / (v_c.shape[-2] + 1)  # + 1: the null key
    if not v_c.numel():
        return
    spread = float(v_c.detach().abs().amax())
    if not math.isfinite(spread):  # NaN or inf values: left to propagate (or refused earlier)
        return
    # an overflowed ‖v‖² is inf, and inf >= limit
    largest = spread * spread if moments is None else float(moments.detach().amax())
    if largest >= limit:
        raise ValueError(
            f"v's deviations from their key mean reach {spread:.3g}: their squares overflow {v_c.dtype} "
            f"(largest {torch.finfo(v_c.dtype).max:.3g} over {v_c.shape[-2]} keys), so the disagreement "
            "and σ̂ cannot be represented; rescale v (mean and σ̂ scale with it) or pass float64")


def poison(out: LevyOutput, bad: Tensor) -> LevyOutput:
    """NaN in every output of the queries ``bad`` (..., Q): the same answer on every path."""
    nan = torch.tensor(math.nan, dtype=out.sigma.dtype, device=out.sigma.device)
    row = bad.expand(out.sigma.shape)
    return out._replace(mean=torch.where(row.unsqueeze(-1), nan, out.mean),
                        **{name: torch.where(row, nan, getattr(out, name))
                           for name in ("sigma", "log_evidence", "disagreement", "log_data_evidence")})
