"""Where `levy rank`'s scoring time goes, stage by stage, on PhysioNet set-A stays it never saw.

``python benchmarks/rank.py`` times the command; this profiles its scoring
(``levy_core.pipeline.ranking.rank``: episodes, forward passes, the trust score) under cProfile and
attributes each second to one stage:

- **episodes**: the model's view of the data (``prepared.as_model_data``: scaling, the
  per-series arrays);
- **backbone**: the encoder before the Lévy layer (channel state, observation and channel
  tokens, the channel-mixing layer, query features);
- **projections**: queries, keys, values, read-out and the prior tables per head;
- **input checks**: every input of the operator checked finite and in range (issue 12);
- **flash kernel**: the one fused attention call (PyTorch's CPU flash kernel) that gives the
  mean, the second moment and the evidence together — the floor of a single-pass operator;
- **operator, the rest**: centring values, the augmented inputs, moments, ``tr Σ``, ``φ(Λ)``;
- **batching and the score**: padding episodes, the per-series means, the table.

The median of ``--reps`` plain runs (no profiler) is printed beside it: cProfile inflates the
Python-heavy stages, so the shares are the profile's and the total is the plain run's.

Usage::

    python benchmarks/rank_profile.py --data-dir PATH/TO/physionet2012 [--model DIR] [--threads 2]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import tempfile
from pathlib import Path

import torch

from levy_core.data import read_csv
from levy_core.forecast.forecaster import LevyForecaster

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.rank import model_on_the_sample, unseen_stays  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data" / "physionet2012_sample.csv.gz"
KERNEL = "_scaled_dot_product_flash_attention_for_cpu"


def stage_seconds(stats: pstats.Stats) -> dict[str, float]:
    """Seconds per stage from a profile of ``rank`` (see the module docstring)."""
    cumulative: dict[tuple[str, str], float] = {}
    own: dict[str, float] = {"checks": 0.0, "kernel": 0.0}
    for (file, _, name), (_, _, tottime, cumtime, callers) in stats.stats.items():  # type: ignore[attr-defined]
        cumulative[(Path(file).name, name)] = cumulative.get((Path(file).name, name), 0.0) + cumtime
        if Path(file).name == "operator_checks.py":  # a check entered from outside the module
            own["checks"] += sum(times[3] for caller, times in callers.items()
                                 if Path(caller[0]).name != "operator_checks.py")
        if KERNEL in name:
            own["kernel"] += tottime

    def cum(file: str, name: str) -> float:
        return cumulative.get((file, name), 0.0)

    total = cum("ranking.py", "rank")
    episodes = cum("prepared.py", "as_model_data")
    backbone = cum("model.py", "encode")
    projections = cum("model.py", "project") + cum("model.py", "prior_tables")
    operator = cum("attention.py", "levy_attention")
    forward = cum("model.py", "forward")
    warm = cum("ranking.py", "warm_up")
    return {
        "episodes": episodes,
        "backbone": backbone,
        "projections": projections,
        "input checks": own["checks"],
        "flash kernel": own["kernel"],
        "operator, the rest": operator - own["kernel"] - own["checks"],
        "batching and the score": total - warm - episodes - forward,
        "model, other (offset, heads summed)": forward - backbone - projections - operator,
        "total (profiled)": total - warm,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--stays", type=int, default=3383)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        model = model_on_the_sample(args.model, Path(tmp))
        path = Path(tmp) / "stays.csv"
        unseen_stays(args.data_dir, args.stays).to_csv(path, index=False)
        forecaster = LevyForecaster.open_model(model)
        obs = read_csv(path)
    plain = [forecaster.rank(obs)[1] for _ in range(args.reps)]
    profile = cProfile.Profile()
    profile.enable()
    ranked, _ = forecaster.rank(obs)
    profile.disable()
    stages = stage_seconds(pstats.Stats(profile))
    total = stages.pop("total (profiled)")
    cfg = forecaster.fitted.model_config
    print(f"levy rank scoring of {len(ranked):,} stays, {args.threads} thread(s): median of {args.reps} plain runs "
          f"{statistics.median(plain):.2f} s (min {min(plain):.2f}); model d_model {cfg.d_model}, "
          f"{cfg.num_heads} heads × head_dim {cfg.head_dim}, value rank {cfg.value_rank}, "
          f"{cfg.channel_layers} channel / {cfg.context_layers} context layers")
    print("\n| stage | seconds (profiled) | share |")
    print("|---|---|---|")
    for name, seconds in stages.items():
        print(f"| {name} | {seconds:.3f} | {100 * seconds / total:.0f} % |")
    print(f"| **total** | {total:.3f} | 100 % |")


if __name__ == "__main__":
    main()
