"""`levy rank`'s scoring with the operator of another revision beside this one, in one process.

Timings on this machine drift by 10–30 % from one minute to the next, so a change to the
operator is measured as a ratio: ``levy_core/operator/attention.py`` at ``--rev`` (read with ``git
show``, with that revision's ``flash_inputs.py``) is loaded as a second module, and the scoring of the same prepared stays
(``ranking.score_series``, after a warm-up) alternates between the two ``--reps`` times.
Both must give the same trust scores (to float rounding); the ratio of medians says how
much faster this revision is.

Usage::

    python benchmarks/studies/operator_ab.py --data-dir PATH/TO/physionet2012 --rev 45ecd7f [--model DIR] [--reps 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import levy_core.model.levy_model as model_module
from levy_core.data import read_csv
from levy_core.operator import attention
from levy_core.pipeline import ranking
from levy_core.pipeline.modelfile import load_model
from levy_core.pipeline.prepared import as_model_data

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.rank import model_on_the_sample, unseen_stays  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data" / "physionet2012_sample.csv.gz"


OPERATOR_FILES = ("flash_inputs", "attention")  # attention imports flash_inputs (where the revision has it)


def load_operator(rev: str, where: Path):
    """``levy_core/operator/attention.py`` at ``rev`` (with that revision's ``flash_inputs.py``, when it
    has one), imported as modules of their own; this revision's modules are left as they are."""
    loaded = {}
    for name in OPERATOR_FILES:
        shown = subprocess.run(["git", "show", f"{rev}:levy_core/{name}.py"], capture_output=True, text=True,
                               cwd=REPO)
        if shown.returncode != 0:
            if name == "attention":
                raise SystemExit(f"no levy_core/operator/attention.py at {rev}: {shown.stderr.strip()}")
            continue
        source = shown.stdout.replace("from levy_core.operator.flash_inputs import", "from flash_inputs_at_rev import")
        path = where / f"{name}_at_rev.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"{name}_at_rev", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"{name}_at_rev"] = module
        spec.loader.exec_module(module)
        loaded[name] = module
    return loaded["attention"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--rev", required=True, help="the git revision whose operator is the baseline")
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--stays", type=int, default=3383)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = load_operator(args.rev, Path(tmp))
        model = model_on_the_sample(args.model, Path(tmp))
        path = Path(tmp) / "stays.csv"
        unseen_stays(args.data_dir, args.stays).to_csv(path, index=False)
        fitted = load_model(model)
        data = as_model_data(fitted, read_csv(path))
    operators = {f"operator at {args.rev}": baseline.levy_attention, "this revision": attention.levy_attention}
    seconds: dict[str, list[float]] = {name: [] for name in operators}
    scores: dict[str, pd.DataFrame] = {}
    try:
        for _ in range(args.reps):
            for name, operator in operators.items():
                model_module.levy_attention = operator  # what LevyModel.forward calls
                ranking.warm_up(fitted)
                scores[name], elapsed = ranking.score_series(fitted, data)
                seconds[name].append(elapsed)
    finally:
        model_module.levy_attention = attention.levy_attention
    (old, new) = operators
    gap = float(np.max(np.abs(scores[old]["trust_score"] - scores[new]["trust_score"]) / scores[old]["trust_score"]))
    print(f"scoring {len(scores[new]):,} stays, {args.threads} thread(s), {args.reps} interleaved runs each")
    for name, values in seconds.items():
        print(f"  {name}: median {statistics.median(values):.3f} s (min {min(values):.3f})")
    print(f"  ratio of medians, this revision / {args.rev}: {statistics.median(seconds[new]) / statistics.median(seconds[old]):.3f}"
          f"; largest relative difference of a trust score: {gap:.1e}")
    if gap > 1e-4:
        raise SystemExit(f"the two operators disagree (largest relative difference {gap:.1e})")


if __name__ == "__main__":
    main()
