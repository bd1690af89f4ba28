"""Speed and peak memory of the Lévy attention operator on CPU (or a CUDA device), against plain SDPA.

Methods, all under ``torch.no_grad()``, float32, random normal inputs, ``kappa = 5``:

* ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention(q, k, v)`` (the mean only).
* ``levy fused``: ``levy_attention(..., impl="fused")`` (mean, σ̂, log Λ, tr Σ; one SDPA call).
* ``levy reference``: ``levy_attention(..., impl="reference")`` (explicit (Q, K) weights).
* ``materialised``: the summary's "Code Sketch" without its ``nn.Linear`` projections: it builds
  ``diff = v - mean`` as a ``[B, H, Q, K, D]`` tensor to get ``Sigma_tr`` and uses the rate
  ``φ = 1/Λ``. The sketch's ``V.unsqueeze(-2) - mean_out.unsqueeze(-1)`` does not broadcast to
  the ``[B, H, Q_len, K_len, dim]`` its comment promises, so the function builds that shape
  explicitly; its scores are ``κ·cos(q, k)`` (the sketch's comment: "exp(cosine(q,k))") so
  that it computes the same σ̂ as the operator (checked at start-up). It is skipped where the
  ``diff`` tensor alone would exceed ~3 GB.

Timing: for each shape every method is warmed up, then the repetitions are interleaved in one
process: each repetition runs every method once (round-robin, the starting method rotating),
so slow drifts and other load on the machine hit all methods alike. The table gives the median
wall time, the ratio of that median to SDPA's median on the same shape, and for the headline
shape the fused/SDPA ratio of each paired repetition (median, min, max).

Peak extra memory: CPU tensors come from the C allocator (large blocks are ``mmap``-ed and
returned to the OS on free), and oneDNN/MKL/OpenMP allocate scratch space outside torch's
allocator, so neither ``tracemalloc`` (Python objects only) nor ``torch.profiler``'s memory
events (only what goes through c10's allocator) see the whole cost. What the process actually
needs is its resident set, so each (shape, method) is measured in a fresh subprocess that
re-invokes this script: it allocates the inputs, runs the method once on a tiny input (to fault
in kernel code pages and start the thread pools), then resets the kernel's high-water mark
(``echo 5 > /proc/self/clear_refs``), reads the current ``VmRSS`` as the baseline, runs the
method once on the full inputs and reads ``VmHWM``; the difference is the peak RSS increase,
outputs included. ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is not used: it cannot be
reset (so any earlier, larger peak hides the call's) and after ``fork``+``exec`` Linux seeds it
with the parent's high-water mark, so a child spawned by a large parent would report the
parent's memory. Where ``clear_refs`` cannot be written the script falls back to ``VmHWM``
without a reset and marks the number with ``*`` (an upper bound on the true increase only if
the call set a new peak). Numbers are in MiB.

On a CUDA device (``--device cuda``) the inputs live on the device, each call is timed between
two ``torch.cuda.synchronize()``, and the peak extra memory is the caching allocator's
``max_memory_allocated`` after a reset minus what was allocated before the call (in-process:
the device's memory is the allocator's, unlike the CPU's). The check compares the device's
float32 results with the CPU reference in float64. TF32 stays as PyTorch's defaults leave it
(printed in the header).

Usage::

    .venv/bin/python benchmarks/operator.py            # all shapes (15 reps, 5 for the long one)
    .venv/bin/python benchmarks/operator.py --quick    # headline shape only, 7 reps
    .venv/bin/python benchmarks/operator.py --reps 9   # N reps for every shape
    python benchmarks/operator.py --device cuda          # on a GPU machine
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from levy_core.operator.attention import levy_attention

KAPPA = 5.0
# (B, H, Q, K, D); the first is the headline shape, the last the long one.
SHAPES: list[tuple[int, int, int, int, int]] = [
    (4, 4, 1024, 2048, 32),
    (1, 4, 256, 512, 32),
    (8, 4, 512, 512, 64),
    (1, 4, 8192, 8192, 64),
]
HEADLINE, LONG = SHAPES[0], SHAPES[-1]
DEFAULT_REPS, LONG_REPS, QUICK_REPS = 15, 5, 7
DIFF_LIMIT_BYTES = 3.0e9  # skip the materialised form when its diff tensor exceeds this
DEVICE_DIFF_LIMIT_BYTES = 30.0e9  # on a CUDA device (the H200 this was run on holds 139 GiB)
METHODS = ("sdpa", "fused", "reference", "materialised")
LABELS = {
    "sdpa": "plain SDPA (mean only)",
    "fused": "Lévy fused",
    "reference": "Lévy reference",
    "materialised": "sketch, materialised diff",
}


def materialised(q: Tensor, k: Tensor, v: Tensor, kappa: float) -> tuple[Tensor, Tensor]:
    """The summary's Code Sketch without projections: mean and σ̂ via a [B,H,Q,K,D] diff."""
    sim = kappa * (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1))  # [B,H,Q,K]
    lam = sim.exp().sum(dim=-1, keepdim=True)  # evidence Λ, [B,H,Q,1]
    attn = sim.softmax(dim=-1)
    mean_out = attn @ v  # [B,H,Q,D]
    diff = v.unsqueeze(-3) - mean_out.unsqueeze(-2)  # [B,H,Q,K,D]
    sigma_tr = (attn * diff.pow(2).sum(-1)).sum(-1, keepdim=True)  # [B,H,Q,1]
    sigma_hat = torch.sqrt(sigma_tr / lam)  # φ(Λ) = 1/Λ
    return mean_out, sigma_hat


def method_fn(name: str) -> Callable[[Tensor, Tensor, Tensor], object]:
    if name == "sdpa":
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v)
    if name in ("fused", "reference"):
        return lambda q, k, v: levy_attention(q, k, v, kappa=KAPPA, impl=name)
    if name == "materialised":
        return lambda q, k, v: materialised(q, k, v, KAPPA)
    raise ValueError(name)


def make_inputs(shape: tuple[int, ...], seed: int = 0, device: str = "cpu") -> tuple[Tensor, Tensor, Tensor]:
    """The same numbers on every device: drawn on the CPU, then moved."""
    b, h, nq, nk, d = shape
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, nq, d, generator=gen)
    k = torch.randn(b, h, nk, d, generator=gen)
    v = torch.randn(b, h, nk, d, generator=gen)
    return q.to(device), k.to(device), v.to(device)


def diff_bytes(shape: tuple[int, ...]) -> int:
    b, h, nq, nk, d = shape
    return b * h * nq * nk * d * 4


def skipped(name: str, shape: tuple[int, ...], device: str = "cpu") -> bool:
    limit = DIFF_LIMIT_BYTES if device == "cpu" else DEVICE_DIFF_LIMIT_BYTES
    return name == "materialised" and diff_bytes(shape) > limit


def sync(device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize()


def measure_device_memory(shape: tuple[int, ...], name: str, device: str) -> str:
    """Peak extra device memory of one call, MiB (the caching allocator's high-water mark)."""
    fn = method_fn(name)
    with torch.no_grad():
        q, k, v = make_inputs(shape, device=device)
        fn(*make_inputs((1, 1, 8, 16, shape[-1]), seed=1, device=device))  # load kernels
        sync(device)
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        out = fn(q, k, v)
        sync(device)
        peak = torch.cuda.max_memory_allocated()
        del out
    return f"{(peak - base) / 2**20:.0f}"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def measure_memory_child(shape_idx: int, name: str) -> None:
    """Runs in a fresh subprocess: print {"extra_mib": ..., "reset": ...} as JSON."""
    shape = SHAPES[shape_idx]
    fn = method_fn(name)
    with torch.no_grad():
        q, k, v = make_inputs(shape)
        tiny = make_inputs((1, 1, 8, 16, shape[-1]), seed=1)
        fn(*tiny)  # page in kernel code, start thread pools; negligible heap
        del tiny
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")  # reset VmHWM to the current VmRSS
            reset = True
        except OSError:
            reset = False
        base = _status_kib("VmRSS")
        out = fn(q, k, v)
        peak = _status_kib("VmHWM")
        del out
    print(json.dumps({"extra_mib": (peak - base) / 1024.0, "reset": reset}))


def measure_memory(shape_idx: int, name: str, threads: int) -> str:
    cmd = [sys.executable, os.path.abspath(__file__), "--_mem", str(shape_idx), name,
           "--threads", str(threads)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        return f"error (rc {res.returncode})"
    data = json.loads(res.stdout.strip().splitlines()[-1])
    return f"{data['extra_mib']:.0f}" + ("" if data["reset"] else "*")


def time_shape(shape: tuple[int, ...], names: list[str], reps: int,
               warmup: int, device: str = "cpu") -> dict[str, list[float]]:
    """Interleaved timing: each repetition runs every method once, rotating the start."""
    q, k, v = make_inputs(shape, device=device)
    fns = {n: method_fn(n) for n in names}
    times: dict[str, list[float]] = {n: [] for n in names}
    with torch.no_grad():
        for _ in range(warmup):
            for n in names:
                out = fns[n](q, k, v)
                del out
        for r in range(reps):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                sync(device)
                t0 = time.perf_counter()
                out = fns[n](q, k, v)
                sync(device)
                t1 = time.perf_counter()
                del out
                times[n].append(t1 - t0)
    return times


def sanity_check(device: str = "cpu") -> str:
    """The three Lévy implementations agree on a small input (on a device: with the CPU
    reference in float64)."""
    q, k, v = make_inputs((2, 2, 16, 40, 8), seed=2)
    with torch.no_grad():
        ref = levy_attention(q.double(), k.double(), v.double(), kappa=KAPPA, impl="reference")
        q, k, v = q.to(device), k.to(device), v.to(device)
        fused = levy_attention(q, k, v, kappa=KAPPA, impl="fused")
        other = levy_attention(q, k, v, kappa=KAPPA, impl="reference")
        mean_m, sigma_m = materialised(q, k, v, KAPPA)
    def gap(a: Tensor, b: Tensor) -> float:
        return (a.double().cpu() - b).abs().max().item()
    d_fused, d_ref = gap(fused.sigma, ref.sigma), gap(other.sigma, ref.sigma)
    d_mat = gap(sigma_m.squeeze(-1), ref.sigma)
    d_mean = max(gap(fused.mean, ref.mean), gap(other.mean, ref.mean), gap(mean_m, ref.mean))
    ok = max(d_fused, d_ref, d_mat, d_mean) < 1e-4
    return (f"check (small input, {device} against the float64 reference): max|Δσ̂| fused {d_fused:.1e}, "
            f"reference {d_ref:.1e}, materialised {d_mat:.1e}; max|Δmean| {d_mean:.1e} -> "
            f"{'OK' if ok else 'MISMATCH'}")


def fmt_shape(shape: tuple[int, ...]) -> str:
    return "B={},H={},Q={},K={},D={}".format(*shape)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="headline shape only, fewer reps")
    parser.add_argument("--reps", type=int, default=None,
                        help=f"repetitions for every shape (default {DEFAULT_REPS}, "
                             f"{LONG_REPS} for the long shape, {QUICK_REPS} with --quick)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    parser.add_argument("--device", default="cpu", help="cpu (default) or a CUDA device such as cuda")
    parser.add_argument("--_mem", nargs=2, metavar=("SHAPE_IDX", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args._mem is not None:
        measure_memory_child(int(args._mem[0]), args._mem[1])
        return

    device = args.device
    if device != "cpu" and not torch.cuda.is_available():
        parser.error(f"--device {device}: no CUDA device is visible to torch {torch.__version__}")
    threads = torch.get_num_threads()
    started = time.perf_counter()
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    print(f"torch {torch.__version__} | threads {threads} | CPU: {cpu_model()} "
          f"({os.cpu_count()} logical) | {now} | python {platform.python_version()} | "
          f"load avg {os.getloadavg()[0]:.2f}")
    if device != "cpu":
        print(f"device {device}: {torch.cuda.get_device_name(device)} | CUDA {torch.version.cuda} | "
              f"TF32 matmul {torch.backends.cuda.matmul.allow_tf32}, cuDNN {torch.backends.cudnn.allow_tf32}")
    print(sanity_check(device))
    print()

    shapes = [HEADLINE] if args.quick else SHAPES
    rows = []
    headline_pairs: list[float] = []
    for shape in shapes:
        idx = SHAPES.index(shape)
        if args.reps is not None:
            reps = args.reps
        elif args.quick:
            reps = QUICK_REPS
        else:
            reps = LONG_REPS if shape == LONG else DEFAULT_REPS
        names = [n for n in METHODS if not skipped(n, shape, device)]
        mem = {}
        if not args.no_memory:
            mem = {n: measure_memory(idx, n, threads) if device == "cpu" else measure_device_memory(shape, n, device)
                   for n in names}
        times = time_shape(shape, names, reps, warmup=1 if shape == LONG else 2, device=device)
        base = statistics.median(times["sdpa"])
        for n in METHODS:
            if n not in names:
                gb = diff_bytes(shape) / 1e9
                rows.append((fmt_shape(shape), LABELS[n], f"skipped (would need {gb:.1f} GB)",
                             "-", "-", "-"))
                continue
            med = statistics.median(times[n])
            rows.append((fmt_shape(shape), LABELS[n], f"{med:.4f}", f"{med / base:.2f}x",
                         mem.get(n, "-"), str(reps)))
        if shape == HEADLINE:
            headline_pairs = [f / s for f, s in zip(times["fused"], times["sdpa"], strict=True)]

    header = ("shape (B,H,Q,K,D)", "method", "median s", "vs SDPA", "peak extra MiB", "reps")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    if headline_pairs:
        print(f"Headline {fmt_shape(HEADLINE)}: Lévy fused / SDPA, paired per repetition: "
              f"median {statistics.median(headline_pairs):.2f}x, "
              f"min {min(headline_pairs):.2f}x, max {max(headline_pairs):.2f}x "
              f"({len(headline_pairs)} pairs)")
    print(f"total {time.perf_counter() - started:.0f} s | load avg at end "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
