"""Training: batched episodes over series, Adam, MSE on the closed-form mean, early stopping.

The Lévy model trains with exact gradients of its expectation (the mean is a deterministic
cosine-kernel attention); a β-NLL term (``training_loss``) uses ``σ̂`` with a learned global
scale (the rate offset is not identifiable from the mean loss: the scale absorbs it).
"""

from __future__ import annotations

import copy
import logging
import math
import numbers
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from levy_core.episodes.tasks import EpisodeBuilder
from levy_core.metrics.crps_scale import crps_scale
from levy_core.metrics.scoring_rules import crps_gaussian_per_point
from levy_core.model.batch import Batch, ModelOutput
from levy_core.model.encoder import channel_state
from levy_core.training.adam import Adam, CosineSchedule
from levy_core.training.reversion import ReversionFit

__all__ = ["CorrectionFit", "Progress", "TrainConfig", "TrainResult", "fit_correction_scale", "masked_mse", "training_loss", "predict_in_batches", "train_model"]

log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    """Optimisation settings."""

    epochs: int = 40  # upper bound on passes over the training series
    batch_size: int | None = None  # series per step; None: n_train // 8 clipped to [4, 32]
    lr: float = 3e-3  # Adam learning rate
    weight_decay: float = 1e-5  # Adam weight decay
    patience: int = 6  # early stopping: epochs (and ≥ 100 steps) without improvement of the early-stopping loss
    nll_weight: float = 0.5  # Lévy only: weight of the β-NLL term of c·σ̂ (trains the spread: prior variance, disagreement)
    nll_beta: float = 1.0  # β of the β-NLL, in [0, 1]: 1 pulls the mean by the error alone, 0 is the plain NLL (error / variance)
    channel_weighting: float = 0.5  # a query's loss weight ∝ (its channel's share of observations)^-this: 0 every query alike, 1 every channel alike
    max_seconds: float | None = None  # wall-clock budget per model (None: no limit)
    seed: int = 0  # seeds initialisation, shuffling and hold-outs
    ema_decay: float = 0.0  # > 0: validate and keep an exponential moving average of the weights (e.g. 0.995 per step)

    def __post_init__(self) -> None:
        """Refuse settings that would train nothing or fail later: ValueError naming the field."""
        _require_int("epochs", self.epochs, 1)
        if self.batch_size is not None:
            _require_int("batch_size", self.batch_size, 1, "or None (automatic)")
        _require_real("lr", self.lr, positive=True)
        _require_real("weight_decay", self.weight_decay)
        _require_int("patience", self.patience, 0)
        _require_real("nll_weight", self.nll_weight)
        _require_real("nll_beta", self.nll_beta)
        if self.nll_beta > 1:
            raise ValueError(f"TrainConfig.nll_beta must be a number in [0, 1], got {self.nll_beta!r}")
        _require_real("channel_weighting", self.channel_weighting)
        if self.max_seconds is not None:
            _require_real("max_seconds", self.max_seconds, positive=True, extra="or None (no limit)")
        _require_int("seed", self.seed, 0)
        _require_real("ema_decay", self.ema_decay)
        if self.ema_decay >= 1:
            raise ValueError(f"TrainConfig.ema_decay must be a number in [0, 1), got {self.ema_decay!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """The inverse of ``to_dict``; unknown keys and invalid values raise ValueError."""
        if not isinstance(data, Mapping):
            raise ValueError(f"train_config must be a mapping of settings, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise ValueError(f"unknown train_config keys {unknown}; known keys: {sorted(known)}")
        return cls(**data)


def _require_int(name: str, value: object, minimum: int, extra: str = "") -> None:
    """ValueError unless ``value`` is a whole number (not a bool) ≥ ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"TrainConfig.{name} must be a whole number ≥ {minimum}{' ' + extra if extra else ''}, "
                         f"got {value!r}")


def _require_real(name: str, value: object, *, positive: bool = False, extra: str = "") -> None:
    """ValueError unless ``value`` is a finite number (not a bool), > 0 if ``positive`` else ≥ 0."""
    ok = not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(value)
    if not ok or (value <= 0 if positive else value < 0):  # type: ignore[operator]
        bound = "> 0" if positive else "≥ 0"
        raise ValueError(f"TrainConfig.{name} must be a finite number {bound}{' ' + extra if extra else ''}, "
                         f"got {value!r}")


@dataclass
class Progress:
    """One training event, passed to the progress callback after every epoch."""

    model: str  # "levy" or "softmax"
    epoch: int  # 1-based
    epochs: int  # planned epochs
    train_loss: float
    val_loss: float
    best_val_loss: float
    seconds: float  # elapsed for this model
    eta_seconds: float  # estimate of the time left for this model
    best_epoch: int = 0  # the epoch whose weights are kept so far (0: the untrained model)
    # those weights (a copy made when they were best: never changed afterwards; read, don't write)
    best_state: dict[str, Tensor] | None = field(default=None, repr=False, compare=False)
    stopped_by: str = ""  # on the last epoch: "patience", "epochs" or "time" (the max_seconds cap); "" before

    @property
    def fraction(self) -> float:
        return min(1.0, self.epoch / max(1, self.epochs))


@dataclass
class CorrectionFit:
    """How much of the learned correction to keep, per channel (``fit_correction_scale``).

    Attributes
    ----------
    scale : ndarray, shape (C,)
        γ per channel in ``[MIN_CORRECTION_SCALE, 1]``.
    offset_mse : float
        MSE of the offset alone on the episodes it was fitted on (normalised units²).
    raw_mse : float
        MSE of the trained model (γ = 1) there.
    mse : float
        MSE with the fitted γ there.
    bound : ndarray, shape (C,)
        The largest kept correction ``|γ_c (ŷ − b)|`` seen there per channel (the largest
        over all channels where one had no queries); ``LevyModel.correction_bound``.
    held_back : bool
        The correction was measured but not applied: ``scale`` is the floor on every
        channel and ``mse`` its error; ``measured_scale`` and ``measured_mse`` are what the
        held-out fit would have kept.
    measured_scale : ndarray, shape (C,), optional
        With ``held_back``: the share the held-out fit chose.
    measured_mse : float, optional
        With ``held_back``: the MSE with that share.
    """

    scale: np.ndarray
    offset_mse: float
    raw_mse: float
    mse: float
    bound: np.ndarray | None = None
    held_back: bool = False
    measured_scale: np.ndarray | None = None
    measured_mse: float | None = None

    @property
    def improves(self) -> bool:
        """Training beat the offset alone by more than ``IMPROVEMENT_SHARE`` on the held-out episodes."""
        return self.mse < (1.0 - IMPROVEMENT_SHARE) * self.offset_mse

    def to_dict(self) -> dict:
        out = {"correction_scale": [round(float(g), 6) for g in self.scale], "offset_mse": self.offset_mse,
               "raw_mse": self.raw_mse, "mse": self.mse, "improves_on_offset": self.improves,
               "correction_bound": None if self.bound is None else [round(float(b), 6) for b in self.bound]}
        if self.held_back:
            out.update(correction_held_back=True, measured_mse=self.measured_mse,
                       measured_scale=[round(float(g), 6) for g in self.measured_scale])
        return out


@dataclass
class TrainResult:
    best_epoch: int
    best_val_loss: float
    epochs_run: int
    seconds: float
    history: list[dict] = field(default_factory=list)
    correction: CorrectionFit | None = None
    reversion: ReversionFit | None = None  # the offset's mean reversion (panels; None on rolling origins)
    stopped_by: str = ""  # "patience" (early stopping), "epochs" (all run) or "time" (the max_seconds cap)


MIN_CORRECTION_SCALE = 0.05  # γ never reaches 0: σ̂ would vanish with the correction
MIN_CHANNEL_QUERIES = 50  # fewer held-out queries of a channel: it takes the pooled γ
MIN_HALF_EPISODES = 2  # the cross-fitted check of γ needs this many held-out episodes a half


def _shares(sums: np.ndarray) -> np.ndarray:
    """γ per channel from ``sums`` (4, C) = (Σ r·m, Σ m², Σ r², count): the least-squares
    share clipped to ``[MIN_CORRECTION_SCALE, 1]``, the pooled one for a channel with fewer
    than ``MIN_CHANNEL_QUERIES`` queries."""
    rm, mm, _, n = sums
    pooled = float(np.clip(rm.sum() / mm.sum(), MIN_CORRECTION_SCALE, 1.0)) if mm.sum() > 0 else 1.0
    own = np.clip(np.divide(rm, mm, out=np.ones_like(rm), where=mm > 0), MIN_CORRECTION_SCALE, 1.0)
    return np.where(n >= MIN_CHANNEL_QUERIES, own, pooled)


def _gain(scale: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """Per channel, how much keeping ``scale`` (C,) of the correction lowers the squared
    error summed in ``sums`` (4, C): ``Σ r² − Σ (r − γ m)² = 2γ Σ rm − γ² Σ m²``; channels
    that take the pooled share are judged pooled."""
    rm, mm, _, n = sums
    own = 2 * scale * rm - scale**2 * mm
    return np.where(n >= MIN_CHANNEL_QUERIES, own, float(own.sum()))
IMPROVEMENT_SHARE = 0.01  # "training improved on the offset": at least this share of its MSE


@torch.no_grad()
def fit_correction_scale(model: nn.Module, builder: EpisodeBuilder, ids: list[str],
                         batch_size: int = 64, *, cross_fit: bool = False, hold_back: bool = False) -> CorrectionFit:
    """The share ``γ_c`` of the trained correction ``ŷ − b`` each channel keeps: the least
    squares fit of ``y − b`` on ``ŷ − b`` over the fixed episodes of ``ids`` (the
    early-stopping ones), clipped to ``[MIN_CORRECTION_SCALE, 1]`` (the pooled fit for a
    channel with fewer than ``MIN_CHANNEL_QUERIES`` queries there). Where training learned
    nothing that holds on held-out episodes, the forecast falls back towards the offset
    ``b(q)``; scaling the read-out keeps ``σ̂`` exact and the calibrated band's shape.
    With ``cross_fit`` (rolling origins, ``ids`` in time order) a share must also hold from
    one half of ``ids`` to the other. With ``hold_back`` every channel keeps the floor
    ``MIN_CORRECTION_SCALE`` (the offset is the forecast) and the share the fit would have
    chosen is only reported. Sets ``model.correction_scale`` to 1 first; the caller
    installs the result."""
    n_channels = model.correction_scale.numel()
    model.correction_scale.fill_(1.0)
    model.eval()
    # per episode and channel: Σ r·m, Σ m², Σ r², count (r = y − b, m = ŷ − b)
    sums = {sid: np.zeros((4, n_channels)) for sid in ids}
    peak = np.zeros(n_channels)  # the largest |ŷ − b| per channel
    for chunk in _batches(ids, batch_size, builder):
        batch, _ = builder.batch(chunk)
        if batch.target is None:
            raise ValueError("correction scale: episodes need targets")
        out = model(batch)
        offset = model.backbone.offset(batch, channel_state(batch, n_channels))
        mask = (batch.qry_mask > 0).numpy()
        residual = (batch.target - offset).numpy().astype(np.float64)
        correction = (out.mean - offset).numpy().astype(np.float64)
        channels = batch.qry_channel.numpy()
        for row, sid in enumerate(chunk):
            real = mask[row]
            r, m, ch = residual[row][real], correction[row][real], channels[row][real]
            for k, values in enumerate((r * m, m * m, r * r, np.ones_like(r))):
                np.add.at(sums[sid][k], ch, values)
            np.maximum.at(peak, ch, np.abs(m))
    total_sums = sum(sums.values(), np.zeros((4, n_channels)))
    scale = _shares(total_sums)
    # on rolling origins a share must hold from the earlier half of the held-out origins to the
    # later one and back: fitted on each half, it must lower the other half's error, else the
    # channel keeps the minimum (a correction learned from a few overlapping origins can fit
    # them all and fail on the next). A panel's held-out series are exchangeable: there the
    # halves only add noise, and a channel pushed to the floor shrinks σ̂ by 20× for a
    # calibration scale fitted on few of its queries (unseen stays: CRPS +17 %)
    half = len(ids) // 2
    if cross_fit and half >= MIN_HALF_EPISODES:
        first = sum((sums[sid] for sid in ids[:half]), np.zeros((4, n_channels)))
        second = total_sums - first
        held = _gain(_shares(first), second) + _gain(_shares(second), first)
        scale = np.where(held > 0, scale, MIN_CORRECTION_SCALE)
    rm, mm, rr, n = total_sums
    total = max(n.sum(), 1.0)

    def mse_at(share: np.ndarray) -> float:  # Σ (r − γ m)² = Σ r² − 2γ Σ rm + γ² Σ m², per channel
        return float((rr - 2 * share * rm + share**2 * mm).sum() / total)

    measured = scale
    if hold_back:
        scale = np.full_like(measured, MIN_CORRECTION_SCALE)
    raw = float((rr - 2 * rm + mm).sum() / total)
    # the correction a query may keep: no larger than any held out (beyond it, e.g. values
    # outside the training range, the network extrapolates unvalidated)
    bound = np.where(n > 0, scale * peak, float(np.max(scale * peak, initial=0.0)))
    return CorrectionFit(scale.astype(np.float32), float(rr.sum() / total), raw, mse_at(scale), bound.astype(np.float32),
                         held_back=hold_back, measured_scale=measured.astype(np.float32) if hold_back else None,
                         measured_mse=mse_at(measured) if hold_back else None)


# 100, not 200: over 96 single-series fits the kept epoch was the same in 86, CRPS unchanged
# (geometric mean 0.99-1.005 per set), and the longer wait had cost a third of the training time
# (benchmarks/results/patience_100_steps_2026-12-03.txt)
MIN_PATIENCE_STEPS = 100
MAX_SKIPPED_STEPS = 20


def auto_batch_size(n_train: int) -> int:
    """About eight optimiser steps per epoch on small data, 32 series per step on large."""
    return int(min(32, max(4, n_train // 8)))


def masked_mse(pred: Tensor, target: Tensor, mask: Tensor) -> Tensor:
    """Mean squared error over the real (mask 1) queries of a batch; ``mask`` may weight them."""
    return ((pred - target).pow(2) * mask).sum() / mask.sum().clamp_min(1.0)


def channel_weights(builder: EpisodeBuilder, ids: list[str], exponent: float) -> Tensor:
    """Per-channel loss weights ``(n_c / n̄)^-exponent`` from the observation counts of
    ``ids``, normalised to mean 1 over observations; shape (C,). Channels never observed get 1."""
    counts = np.zeros(len(builder.channel_index))
    for sid in ids:
        np.add.at(counts, builder.series[sid].channel, 1)
    weights = np.ones_like(counts)
    seen = counts > 0
    if exponent and seen.any():
        weights[seen] = (counts[seen] / counts[seen].mean()) ** -exponent
        weights[seen] /= (weights[seen] * counts[seen]).sum() / counts[seen].sum()
    return torch.tensor(weights, dtype=torch.float32)


def training_loss(out: ModelOutput, batch: Batch, nll_weight: float, log_c: Tensor | None,
                  weights: Tensor | None = None, nll_beta: float = 1.0) -> Tensor:
    """The weighted MSE of the mean plus, for a model with ``σ̂``, ``nll_weight`` × the
    β-NLL of ``N(mean, (c·σ̂)²)``: each query's Gaussian NLL weighted by its own variance
    to the power β, held constant (Seitzer et al., ICLR 2022). The plain NLL's (β = 0)
    gradient on the mean is the error over the variance, tens of times the MSE's where
    ``σ̂`` is small: it drives the mean away from the hard queries (PhysioNet protocol, 3 %
    worse: docs/benchmarks/physionet.md). With β = 1 it is the error itself, while the
    variance still learns where errors are; β between trades the mean for the ranking (the
    ablation on the same page)."""
    if batch.target is None:
        raise ValueError("training batches need targets")
    mask = batch.qry_mask if weights is None else batch.qry_mask * weights[batch.qry_channel]
    loss = masked_mse(out.mean, batch.target, mask)
    if nll_weight > 0 and out.sigma is not None and log_c is not None:
        var = (log_c.exp() * out.sigma).pow(2) + 1e-6
        nll = 0.5 * (torch.log(var) + (out.mean - batch.target).pow(2) / var) * var.detach().pow(nll_beta)
        loss = loss + nll_weight * (nll * mask).sum() / mask.sum().clamp_min(1.0)
    return loss


def _batches(ids: list[str], size: int, builder: EpisodeBuilder) -> list[list[str]]:
    """Length-bucketed batches (similar context sizes pad less), in a fixed order."""
    ordered = sorted(ids, key=lambda s: len(builder.series[s].time))
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]


@torch.no_grad()
def evaluate_loss(model: nn.Module, builder: EpisodeBuilder, ids: list[str], batch_size: int,
                  weights: Tensor | None = None) -> float:
    """MSE over the fixed episodes of ``ids``, each query weighted by ``weights[channel]``
    (default: all 1)."""
    return evaluate_scores(model, builder, ids, batch_size, weights)[0]


@torch.no_grad()
def evaluate_scores(model: nn.Module, builder: EpisodeBuilder, ids: list[str], batch_size: int,
                    weights: Tensor | None = None) -> tuple[float, float]:
    """(MSE, CRPS) over the fixed episodes of ``ids``, each query weighted by
    ``weights[channel]`` (default: all 1). The CRPS is that of ``N(ŷ, (c σ̂)²)`` with ``c``
    the scale of minimum CRPS on these very queries (as the calibration step fits it, so
    that an epoch is judged by the band it would give); NaN for a model without ``σ̂``."""
    model.eval()
    parts: list[tuple[Tensor, Tensor, Tensor]] = []  # (error, σ̂ or empty, weight) of the real queries
    for chunk in _batches(ids, batch_size, builder):
        batch, _ = builder.batch(chunk)
        out = model(batch)
        if batch.target is None:
            raise ValueError("evaluation batches need targets")
        mask = batch.qry_mask if weights is None else batch.qry_mask * weights[batch.qry_channel]
        real = batch.qry_mask > 0
        sigma = out.sigma[real].double() if out.sigma is not None else torch.empty(0, dtype=torch.float64)
        parts.append(((out.mean - batch.target)[real].double(), sigma, mask[real].double()))
    if not parts:
        return 0.0, math.nan
    err, sigma, w = (torch.cat(x) for x in zip(*parts, strict=True))
    total = float(w.sum())
    if total <= 0:
        return 0.0, math.nan
    mse = float((err.pow(2) * w).sum()) / total
    if sigma.numel() != err.numel():
        return mse, math.nan
    # σ̂ floored as the calibration floors it (relative to its median), so that 0/0 cannot occur
    positive = sigma[sigma > 0]
    floor = 1e-6 * float(positive.median()) if positive.numel() else 1e-12
    sigma = sigma.clamp_min(max(floor, 1e-12))
    e, sd, wt = err.numpy(), sigma.numpy(), w.numpy()
    c = crps_scale(np.abs(e) / sd, wt * sd)  # the calibration's own scale, its weights too
    crps = crps_gaussian_per_point(e, np.zeros_like(e), c * sd)
    return mse, float(np.dot(crps, wt)) / total


def _epoch_steps(model: nn.Module, builder: EpisodeBuilder, batches: list[list[str]], rng: np.random.Generator,
                 opt: Adam, params: list[nn.Parameter], cfg: TrainConfig, log_c: nn.Parameter | None,
                 weights: Tensor | None, ema: tuple[list[nn.Parameter], list[nn.Parameter]] | None, label: str,
                 skipped: int) -> tuple[list[float], int]:
    """One epoch's optimiser steps, over ``batches`` (episode ids) in a random order: the loss
    of each step taken, and how many steps in a row have now been skipped for a non-finite
    loss or gradient (``skipped``: before the epoch). ``ema``: the averaged and the raw
    parameters, the averaged ones moved towards the raw after each step."""
    model.train()
    losses = []
    for i in rng.permutation(len(batches)):
        batch, _ = builder.batch(batches[i], rng=rng)
        loss = training_loss(model(batch), batch, cfg.nll_weight, log_c, weights, cfg.nll_beta)
        opt.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(params, 1.0)
        if not (torch.isfinite(loss) and torch.isfinite(grad_norm)):
            # an overflowing batch (as mixed-precision scalers do): skip its step, and
            # give up with a clear message if that keeps happening
            skipped += 1
            if skipped > MAX_SKIPPED_STEPS:
                raise FloatingPointError(f"{label}: {skipped} optimiser steps in a row had a non-finite loss or "
                                         "gradient; lower the learning rate or check the data's range")
            continue
        skipped = 0
        opt.step()
        if ema is not None:
            with torch.no_grad():  # one call for every parameter (the same lerp_ on each)
                torch._foreach_lerp_(ema[0], ema[1], 1.0 - cfg.ema_decay)
        losses.append(loss.detach().item())
    return losses, skipped


def train_model(
    model: nn.Module,
    builder: EpisodeBuilder,
    train_ids: list[str],
    val_ids: list[str],
    cfg: TrainConfig,
    *,
    label: str = "levy",
    progress: Callable[[Progress], None] | None = None,
) -> TrainResult:
    """Fit ``model`` on the episodes of ``train_ids``; keep the weights of the best epoch on
    ``val_ids`` (the early-stopping series, held out of training and of calibration). Deterministic for a given ``cfg.seed``."""
    if not train_ids:
        raise ValueError("no training series with both context and queries: check the task "
                         "(cut-off/hold-out) against the data")
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    log_c = nn.Parameter(torch.zeros(())) if cfg.nll_weight > 0 else None
    params = list(model.parameters()) + ([log_c] if log_c is not None else [])
    opt = Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)  # torch.optim.Adam, without its compiler import
    schedule = CosineSchedule(lr=cfg.lr, eta_min=cfg.lr / 10, t_max=max(1, cfg.epochs))
    val_ids = val_ids or train_ids
    weights = channel_weights(builder, train_ids, cfg.channel_weighting) if cfg.channel_weighting else None
    batch_size = cfg.batch_size or auto_batch_size(len(train_ids))
    # Patience counted in epochs would mean a handful of optimiser steps on small data (where
    # the held-out loss is also noisiest): wait at least MIN_PATIENCE_STEPS steps (the loss often
    # plateaus early on).
    n_batches = math.ceil(len(train_ids) / batch_size)
    patience = max(cfg.patience, math.ceil(MIN_PATIENCE_STEPS / n_batches))
    # epoch 0 is a candidate too: an untrained model predicts its offset (the last value, or
    # the seasonal naive value) with corrections near 0, so no epoch is kept that forecasts the
    # early-stopping series worse than that simple forecaster (short histories overfit)
    # The criterion: the held-out CRPS of the band the epoch would give (its σ̂ at the scale
    # the calibration step fits), the score the forecasts are judged by; the MSE for a model
    # without σ̂ (the twin). On 300 stays whose channels' offsets start at their means, the
    # held-out MSE stayed flat for 23 epochs and epoch 0 — an untrained σ̂ — was kept
    # (unseen stays: CRPS +44 % over the last value).
    def criterion(scores: tuple[float, float]) -> float:
        return scores[1] if math.isfinite(scores[1]) else scores[0]

    first = evaluate_scores(model, builder, val_ids, 64, weights)
    best = (criterion(first), 0, copy.deepcopy(model.state_dict()), first[0])
    # the averaged weights are what is validated and kept (Polyak averaging); the raw ones train
    ema = copy.deepcopy(model) if cfg.ema_decay > 0 else None
    ema_params, model_params = (list(ema.parameters()), list(model.parameters())) if ema is not None else ([], [])
    history: list[dict] = []
    start = time.perf_counter()
    epoch = 0
    stopped_by = ""
    skipped = 0  # consecutive optimiser steps skipped for a non-finite loss or gradient
    for epoch in range(1, cfg.epochs + 1):
        losses, skipped = _epoch_steps(model, builder, _batches(train_ids, batch_size, builder), rng, opt, params,
                                       cfg, log_c, weights, (ema_params, model_params) if ema is not None else None,
                                       label, skipped)
        opt.lr = schedule.step()
        kept = model if ema is None else ema
        scores = evaluate_scores(kept, builder, val_ids, 64, weights)
        val = scores[0]
        if not math.isfinite(val):
            raise FloatingPointError(f"{label}: early-stopping loss became {val} at epoch {epoch}")
        if criterion(scores) < best[0]:
            best = (criterion(scores), epoch, copy.deepcopy(kept.state_dict()), val)
        elapsed = time.perf_counter() - start
        train_loss = float(np.mean(losses)) if losses else math.nan
        history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val, "val_crps": scores[1]})
        per_epoch = elapsed / epoch
        stop_patience = epoch - best[1] >= patience
        stop_budget = cfg.max_seconds is not None and elapsed + per_epoch > cfg.max_seconds
        eta = 0.0 if (stop_patience or stop_budget) else per_epoch * (cfg.epochs - epoch)
        stopped_by = ("patience" if stop_patience else "time" if stop_budget else
                      "epochs" if epoch == cfg.epochs else "")
        if progress is not None:
            progress(Progress(label, epoch, cfg.epochs, train_loss, val, best[3], elapsed, eta, best[1], best[2],
                              stopped_by))
        log.info("%s epoch %d train %.5f val %.5f", label, epoch, train_loss, val)
        if stop_patience or stop_budget:
            break
    model.load_state_dict(best[2])
    model.eval()
    return TrainResult(best[1], best[3], epoch, time.perf_counter() - start, history, stopped_by=stopped_by)


@torch.no_grad()
def predict_in_batches(model: nn.Module, batches: list[Batch]) -> list[ModelOutput]:
    """Eval-mode forward passes over prepared batches."""
    model.eval()
    return [model(b) for b in batches]
