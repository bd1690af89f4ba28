"""What the uncertainty costs at the model level, on the CPU or a CUDA device: one Lévy pass
(mean, σ̂, evidence and disagreement) against MC-Dropout with T passes of the softmax twin,
and against the twin's single deterministic pass (the mean alone).

The models are untrained (the cost does not depend on the weights) and the episodes
synthetic, shaped like the PhysioNet forecast task: ``--series`` series of ``--context``
observations over ``--channels`` channels, ``--queries`` queries each. Timing is interleaved
(each repetition runs every method once, the starting one rotating) and, on a device, taken
between two ``torch.cuda.synchronize()``.

MC-Dropout is timed two ways: as the library runs it (``SoftmaxTwin.mc_dropout``, T passes
one after another) and batched (the episodes repeated T times along the batch, one pass
with independent masks: the same draws' distribution, and what a GPU user would write,
since there a pass of a few thousand queries is bound by kernel launches, not arithmetic). ``benchmarks/uncertainty.py`` measures the same
ratio through the whole pipeline on fitted models (CPU).

A forecast panel past the learned spread's gate (``levy_core.calibration.learned_spread``)
sizes its band from the pass, the query's context, a GLM and 30 trees: the row "Lévy pass
and the learned band spread" times all of it (the pass, `query_context`, the columns, both
learners, on the CPU), the learned spread fitted here on the squared errors of random targets
at ``--fit-series`` synthetic series (its cost depends on the trees' number and shape, not their
values).

Usage::

    .venv/bin/python benchmarks/uncertainty_cost.py                 # CPU
    python benchmarks/uncertainty_cost.py --device cuda              # a GPU machine
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

import torch

from levy_core.calibration.learned_spread import LearnedSpread
from levy_core.calibration.query_scale import query_context
from levy_core.model.batch import Batch
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.model.softmax_twin import SoftmaxTwin
from levy_core.pipeline.modelfile import learned_pass_spread, pass_columns


def episodes(series: int, context: int, queries: int, channels: int, *, seed: int = 0,
             device: str = "cpu") -> Batch:
    """Random padded episodes: 48 h of observations, queries over the next 24 h (every
    tenth context slot padding, as ragged series leave it)."""
    g = torch.Generator().manual_seed(seed)
    ctx_time = torch.sort(torch.rand(series, context, generator=g) * 48, dim=1).values
    mask = torch.ones(series, context)
    mask[:, ::10] = 0.0
    batch = Batch(ctx_time, torch.randint(0, channels, (series, context), generator=g),
                  torch.rand(series, context, generator=g), mask,
                  48 + torch.rand(series, queries, generator=g) * 24,
                  torch.randint(0, channels, (series, queries), generator=g), torch.ones(series, queries))
    return Batch(*(x.to(device) if x is not None else None for x in batch))


def batched_mc_dropout(twin: SoftmaxTwin, batch: Batch, passes: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """MC-Dropout in one pass over the batch repeated ``passes`` times (each copy its own
    masks): mean and standard deviation over the copies, each (B, M)."""
    repeated = Batch(*(x.repeat(passes, *([1] * (x.dim() - 1))) if x is not None else None for x in batch))
    generator = torch.Generator(device=batch.ctx_value.device).manual_seed(seed)
    draws = twin(repeated, generator).mean.view(passes, *batch.qry_time.shape)
    return draws.mean(0), draws.std(0, correction=1)


FIT_QUERIES = 40  # queries per synthetic series the timed learned spread is fitted on


def context_of(batch: Batch) -> dict:
    """`query_context`'s summaries of a batch's queries (on the CPU)."""
    return query_context(*(t.cpu().numpy() for t in (batch.qry_time, batch.qry_channel, batch.qry_mask, batch.ctx_time,
                                                      batch.ctx_channel, batch.ctx_value, batch.ctx_mask)))


def synthetic_learned_spread(levy: LevyModel, series: int, context: int, queries: int, channels: int) -> LearnedSpread:
    """A learned spread fitted on the squared errors of uniform random targets at the queries of
    synthetic episodes (seed 1): the trees it keeps have the shipped shape and number."""
    batch = episodes(series, context, queries, channels, seed=1)
    with torch.no_grad():
        out = levy(batch)
    x = pass_columns(batch, out, context_of(batch))
    target = torch.rand(x.shape[0], generator=torch.Generator().manual_seed(2)).double().numpy()
    e2 = (target - out.mean.double().numpy().reshape(-1)) ** 2
    learned = LearnedSpread.fit(x, e2, channels)
    if learned is None:
        raise ValueError(f"{x.shape[0]} synthetic queries are below the learned spread's gate")
    return learned


def levy_band(levy: LevyModel, learned: LearnedSpread, batch: Batch) -> object:
    """One Lévy pass and the band's learned spread from it (the context and both learners)."""
    out = levy(batch)
    return out, learned_pass_spread(learned, batch, out, context_of(batch))


def timed(methods: dict[str, Callable[[], object]], reps: int, device: str) -> dict[str, list[float]]:
    def sync() -> None:
        if device != "cpu":
            torch.cuda.synchronize()

    names = list(methods)
    times: dict[str, list[float]] = {n: [] for n in names}
    with torch.no_grad():
        for _ in range(2):
            for n in names:
                methods[n]()
        for r in range(reps):
            for n in names[r % len(names):] + names[:r % len(names)]:
                sync()
                start = time.perf_counter()
                methods[n]()
                sync()
                times[n].append(time.perf_counter() - start)
    return times


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--series", type=int, default=64)
    parser.add_argument("--context", type=int, default=300)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--channels", type=int, default=36)
    parser.add_argument("--passes", type=int, default=20, help="MC-Dropout passes T")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--fit-series", type=int, default=512,
                        help="synthetic series (of 40 queries) the timed learned spread is fitted on")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.device != "cpu" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: no CUDA device is visible to torch {torch.__version__}")
    torch.manual_seed(0)
    cfg = ModelConfig(n_channels=args.channels)
    levy, twin = LevyModel(cfg).eval().to(args.device), SoftmaxTwin(cfg).eval().to(args.device)
    batch = episodes(args.series, args.context, args.queries, args.channels, device=args.device)
    where = torch.cuda.get_device_name(args.device) if args.device != "cpu" else f"CPU, {torch.get_num_threads()} threads"
    print(f"torch {torch.__version__} | {where} | {args.series} series x {args.queries} queries "
          f"({args.series * args.queries} queries), {args.context} observations each, {args.channels} channels")
    # fitted on episodes of FIT_QUERIES queries each, so that --fit-series of them pass the gate whatever --queries
    learned = synthetic_learned_spread(levy.cpu(), args.fit_series, args.context, FIT_QUERIES, args.channels)
    levy.to(args.device)
    times = timed({"levy": lambda: levy(batch), "levy_band": lambda: levy_band(levy, learned, batch),
                   "twin": lambda: twin(batch),
                   "mc": lambda: twin.mc_dropout(batch, args.passes),
                   "mc_batched": lambda: batched_mc_dropout(twin, batch, args.passes)}, args.reps, args.device)
    med = {n: statistics.median(t) for n, t in times.items()}
    paired = {(n, base): sorted(m / lv for m, lv in zip(times[n], times[base], strict=True))
              for base in ("levy", "levy_band") for n in ("mc", "mc_batched")}
    print("| method | median s | ÷ Lévy pass |")
    print("|---|---|---|")
    for name, label in (("levy", "Lévy: mean, σ̂, evidence, disagreement (one pass)"),
                        ("levy_band", f"Lévy pass and the learned band spread (context, GLM, {len(learned.trees.trees)} trees)"),
                        ("twin", "softmax twin: mean alone (one pass)"),
                        ("mc", f"MC-Dropout, T = {args.passes} passes in turn (the library's)"),
                        ("mc_batched", f"MC-Dropout, T = {args.passes} batched into one pass")):
        print(f"| {label} | {med[name]:.5f} | {med[name] / med['levy']:.2f} |")
    for base, base_label in (("levy", "Lévy"), ("levy_band", "Lévy and the learned band spread")):
        for name, label in (("mc", "in turn"), ("mc_batched", "batched")):
            r = paired[name, base]
            print(f"MC-Dropout ({label}) ÷ {base_label}, paired over {args.reps} repetitions: median "
                  f"{statistics.median(r):.1f}x (min {r[0]:.1f}x, max {r[-1]:.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
