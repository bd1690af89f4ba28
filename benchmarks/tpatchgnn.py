"""t-PatchGNN's own code on the PhysioNet protocol's exact split, scaler and queries.

The accuracy table compares the Lévy model with t-PatchGNN's set-A figure, but that figure
came from someone else's run, on a split drawn from another file order. This script trains
t-PatchGNN with the authors' code and settings (``scripts/run_all.sh``: patches of 8 h,
stride 8 h, one transformer layer, hidden size 64, Adam 1e-3, batch 32, early stopping on
the validation MSE with patience 10) on the records ``benchmarks/physionet.py`` builds:
the same 2,397 / 800 / 800 stays, the same min-max values, the same queries (every
observation at or after 24 h). It then writes each test query's prediction beside the
benchmark's, so that the two can be compared *paired*, on the same resampled stays.

The code is not ours and is not vendored: clone it and point ``--tpatchgnn-dir`` at it::

    git clone https://github.com/usail-hkust/t-PatchGNN   # measured at commit 00c94e7
    python benchmarks/physionet.py --data-dir PATH --save-predictions levy.parquet
    python benchmarks/tpatchgnn.py --data-dir PATH --tpatchgnn-dir t-PatchGNN --pair-with levy.parquet

Its modules import ``torchvision`` (to download files) and ``reformer_pytorch`` (an
attention t-PatchGNN does not use); where they are not installed, those two names are
replaced by stubs that refuse to run, as is ``einops`` (used only by attention variants
that t-PatchGNN does not use).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import sys
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd
import torch

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common.intervals import print_table, stay_bootstrap  # noqa: E402
from benchmarks.physionet import (  # noqa: E402
    HISTORY_HOURS,
    last_value_frame,
    load_protocol_frame,
    per_variable_scores,
    prepare_protocol,
    training_means,
)


def import_tpatchgnn(repo: Path) -> types.SimpleNamespace:
    """The authors' modules (data collation, model, evaluation) from a clone at ``repo``."""
    if not (repo / "tPatchGNN" / "model" / "tPatchGNN.py").is_file():
        raise SystemExit(f"{repo} is not a clone of usail-hkust/t-PatchGNN (no tPatchGNN/model/tPatchGNN.py)")
    # imported by their modules but not on the path we run: torchvision's download helper
    # (we never download), reformer's LSH attention and einops (used by attention variants
    # in SelfAttention_Family.py that tPatchGNN does not use)
    stub_missing("torchvision.datasets.utils", "download_url")
    stub_missing("reformer_pytorch", "LSHSelfAttention")
    stub_missing("einops", "rearrange", "repeat")
    sys.path[:0] = [str(repo), str(repo / "tPatchGNN")]
    import lib.evaluation as evaluation
    import lib.physionet as physionet
    import lib.utils as utils
    from model.tPatchGNN import tPatchGNN
    return types.SimpleNamespace(evaluation=evaluation, physionet=physionet, utils=utils, model=tPatchGNN)


def stub_missing(module: str, *names: str) -> None:
    """Make ``from module import name`` work when ``module`` is not installed: each name
    becomes a function that refuses to run."""
    try:
        __import__(module)
        return
    except ImportError:
        pass

    def refuse(*_args, **_kwargs):
        raise RuntimeError(f"{module} is not installed and is not needed by this benchmark")
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    for name in names:
        setattr(sys.modules[module], name, refuse)


def records(builder, ids: list[str], n_channels: int) -> list[tuple]:
    """t-PatchGNN's record tuples ``(id, tt (T,), vals (T, D), mask (T, D))`` from the
    benchmark's already-normalised series (at most one value per time and variable)."""
    out = []
    for sid in ids:
        s = builder.series[sid]
        tt, row = np.unique(s.time, return_inverse=True)
        vals = np.zeros((len(tt), n_channels), np.float32)
        mask = np.zeros_like(vals)
        vals[row, s.channel] = s.value
        mask[row, s.channel] = 1.0
        out.append((sid, torch.tensor(tt, dtype=torch.float32), torch.from_numpy(vals), torch.from_numpy(mask)))
    return out


def settings(n_channels: int, seed: int, patience: int, epochs: int) -> argparse.Namespace:
    """The authors' PhysioNet settings (``scripts/run_all.sh``)."""
    args = argparse.Namespace(dataset="physionet", history=24, patience=patience, batch_size=32, lr=1e-3,
                              patch_size=8.0, stride=8.0, nhead=1, tf_layer=1, nlayer=1, te_dim=10, node_dim=10,
                              hid_dim=64, outlayer="Linear", seed=seed, hop=1, epoch=epochs, ndim=n_channels,
                              device=torch.device("cpu"), quantization=0.0, n=int(1e8))
    args.npatch = int(np.ceil((args.history - args.patch_size) / args.stride)) + 1
    return args


def loaders(tp, args, train, val, test):
    """Their collate over each split, min/max from train + validation as their code does
    (≈ 0 and 1 here: the records are normalised with the same statistics already)."""
    data_min, data_max, time_max = quiet(tp.physionet.get_data_min_max, train + val, args.device)
    def collate(batch):
        return tp.physionet.patch_variable_time_collate_fn(batch, args, args.device, data_min=data_min,
                                                           data_max=data_max, time_max=time_max)
    make = torch.utils.data.DataLoader
    return (make(train, batch_size=args.batch_size, shuffle=True, collate_fn=collate),
            make(val, batch_size=args.batch_size, shuffle=False, collate_fn=collate),
            make(test, batch_size=args.batch_size, shuffle=False, collate_fn=collate))


def quiet(fn, *a):
    """Call the authors' helper without its prints on our output."""
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a)


def train(tp, args, train_loader, val_loader, max_seconds: float | None) -> tuple[torch.nn.Module, dict]:
    """``run_models.py``'s loop: an epoch of Adam steps, the validation MSE (their per-variable
    average), the best epoch's weights kept, stop after ``patience`` epochs without a better one."""
    tp.utils.setup_seed(args.seed)
    cuda = torch.Tensor.cuda
    torch.Tensor.cuda = lambda self, *_a, **_k: self  # their __init__ puts node vectors on the GPU by name
    try:
        model = tp.model(args).to(args.device)
    finally:
        torch.Tensor.cuda = cuda
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    best, best_state, best_epoch, t0 = np.inf, None, -1, time.perf_counter()
    for epoch in range(args.epoch):
        model.train()
        for batch in train_loader:
            opt.zero_grad()
            tp.evaluation.compute_all_losses(model, batch)["loss"].backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            val = tp.evaluation.evaluation(model, iter(val_loader), len(val_loader))["mse"]
        if val < best:
            best, best_state, best_epoch = val, copy.deepcopy(model.state_dict()), epoch
        seconds = time.perf_counter() - t0
        print(f"    t-PatchGNN seed {args.seed} epoch {epoch + 1}: val MSE {val:.5g} (best {best:.5g} at "
              f"{best_epoch + 1}; {seconds:.0f} s)", flush=True)
        if epoch - best_epoch >= args.patience or (max_seconds is not None and seconds > max_seconds):
            break
    model.load_state_dict(best_state)
    return model, {"best_epoch": best_epoch + 1, "epochs": epoch + 1, "seconds": time.perf_counter() - t0,
                   "val_mse": best}


@torch.no_grad()
def test_predictions(model, test_loader, test_records: list[tuple], builder, ids: list[str]) -> np.ndarray:
    """One prediction per benchmark test query, in the benchmark's order (test stays in
    order, each stay's queries in its split order)."""
    model.eval()
    lookup = {}
    offset = 0
    for batch in test_loader:
        pred = model.forecasting(batch["tp_to_predict"], batch["observed_data"], batch["observed_tp"],
                                 batch["observed_mask"])[0].numpy()  # (B, Lp, D)
        for b in range(pred.shape[0]):
            sid, tt, _, mask = test_records[offset + b]
            future = tt.numpy() >= HISTORY_HOURS
            for j, t in enumerate(tt.numpy()[future]):
                for c in np.flatnonzero(mask.numpy()[future][j]):
                    lookup[(sid, float(t), int(c))] = float(pred[b, j, c])
        offset += pred.shape[0]
    out = []
    for sid in ids:
        s = builder.series[sid]
        q = builder.split_indices(sid)[1]
        t32 = s.time[q].astype(np.float32)  # the records hold float32 times
        out.extend(lookup[(sid, float(t), int(c))] for t, c in zip(t32, s.channel[q], strict=True))
    return np.asarray(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--tpatchgnn-dir", type=Path, required=True, help="a clone of usail-hkust/t-PatchGNN")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="run_all.sh uses 1..5")
    parser.add_argument("--patience", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=1000, help="upper bound (the authors' default)")
    parser.add_argument("--max-seconds", type=float, default=None, help="per-model wall-clock budget")
    parser.add_argument("--patients", type=int, default=None, help="use only the first N patients (smoke runs)")
    parser.add_argument("--out", type=Path, default=None, help="write the per-query predictions (Parquet)")
    parser.add_argument("--load", type=Path, default=None,
                        help="skip training: read the predictions an earlier run wrote with --out")
    parser.add_argument("--pair-with", type=Path, default=None,
                        help="physionet.py --save-predictions output: paired comparison on the same test queries")
    args = parser.parse_args()

    tp = import_tpatchgnn(args.tpatchgnn_dir.resolve())
    t0 = time.perf_counter()
    frame = load_protocol_frame(args.data_dir)
    data = prepare_protocol(frame, args.patients)
    builder, channels = data.builder, data.channels
    test_ids = data.test_ids
    train_rec, val_rec = records(builder, data.train_ids, len(channels)), records(builder, data.calibration_ids,
                                                                                      len(channels))
    test_rec = records(builder, test_ids, len(channels))
    print(f"t-PatchGNN on the protocol: {len(train_rec)}/{len(val_rec)}/{len(test_rec)} stays, {len(channels)} "
          f"variables; prepared in {time.perf_counter() - t0:.1f} s; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads", flush=True)
    queries = last_value_frame(builder, training_means(builder, data.train_ids), test_ids)  # physionet.py's order
    stay, chan, target = (queries[c].to_numpy() for c in ("series_id", "channel", "y_norm"))
    if args.load is not None:
        saved = pd.read_parquet(args.load)
        if not (np.array_equal(saved["series_id"].to_numpy(), stay) and np.array_equal(saved["channel"], chan)):
            raise SystemExit(f"{args.load} holds other test queries (another split or --patients)")
        predictions = {c: saved[c].to_numpy() for c in saved.columns if c.startswith("t-PatchGNN seed")}
    else:
        predictions = train_seeds(tp, args, builder, channels, (train_rec, val_rec, test_rec), test_ids,
                                  target, chan, stay)
    if args.pair_with is not None:
        print_paired(pd.read_parquet(args.pair_with), predictions, stay, chan, target)
    print(f"total {time.perf_counter() - t0:.0f} s")


def train_seeds(tp, args, builder, channels, splits, test_ids, target, chan, stay) -> dict[str, np.ndarray]:
    """One t-PatchGNN per seed; its test predictions by name (written to ``--out`` after each
    seed, so a long run keeps what it finished), and a table line of the scores."""
    train_rec, val_rec, test_rec = splits
    predictions, rows = {}, []
    for seed in args.seeds:
        cfg = settings(len(channels), seed, args.patience, args.epochs)
        train_loader, val_loader, test_loader = loaders(tp, cfg, train_rec, val_rec, test_rec)
        model, info = train(tp, cfg, train_loader, val_loader, args.max_seconds)
        pred = test_predictions(model, test_loader, test_rec, builder, test_ids)
        mse, mae = per_variable_scores(pred, target, chan)
        predictions[f"t-PatchGNN seed {seed}"] = pred
        if args.out is not None:
            pd.DataFrame({"series_id": stay, "channel": chan, "y_norm": target, **predictions}).to_parquet(args.out)
        rows.append({"seed": seed, "mse": mse, "mae": mae, **info})
        print(f"  t-PatchGNN seed {seed}: test MSE {mse:.4e} MAE {mae:.4e} (best epoch {info['best_epoch']}/"
              f"{info['epochs']}, {info['seconds']:.0f} s)", flush=True)
    df = pd.DataFrame(rows)
    sd = df["mse"].std(ddof=1) if len(df) > 1 else 0.0
    print(f"\n| t-PatchGNN (authors' code, this split) | {df['mse'].mean():.3e} ± {sd:.1e} | "
          f"{df['mae'].mean():.3e} | {df['seconds'].mean():.0f} s ({df['epochs'].mean():.0f} epochs) |")
    return predictions


def print_paired(theirs: pd.DataFrame, ours: dict[str, np.ndarray], stay, chan, target) -> None:
    """Every forecaster against t-PatchGNN's seed mean, on the same resamples of the test stays."""
    if not (np.array_equal(theirs["series_id"].to_numpy(), stay) and np.array_equal(theirs["channel"], chan)
            and np.allclose(theirs["y_norm"], target)):
        raise SystemExit("--pair-with holds other test queries (another split, scaler or --patients)")
    predictions = {c: theirs[c].to_numpy() for c in theirs.columns if c not in ("series_id", "channel", "y_norm")}
    predictions.update(ours)
    averages = {f"{label} (mean over seeds)": [c for c in predictions if c.startswith(f"{label} seed")]
                for label in ("Lévy", "softmax twin", "t-PatchGNN")}
    averages = {k: v for k, v in averages.items() if v}
    table = stay_bootstrap(predictions, target, chan, stay, reference="t-PatchGNN (mean over seeds)",
                           averages=averages)
    print("\nPaired with t-PatchGNN (its mean over seeds), 2,000 resamples of the test stays, 95 % intervals")
    print_table(table, "t-PatchGNN")


if __name__ == "__main__":
    main()
