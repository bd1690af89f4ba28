"""benchmarks/tpatchgnn.py: the adapter that runs t-PatchGNN's own code on the protocol's
records (tested without the authors' clone: what we wrote is the record building, the
mapping of their outputs back to our query order, the stubs and the pairing checks)."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
import torch

from levy_core.episodes.tasks import EpisodeBuilder, TaskConfig


@pytest.fixture(scope="module")
def adapter():
    from benchmarks import tpatchgnn
    return tpatchgnn


def small_builder() -> EpisodeBuilder:
    """Three stays, three variables, a history before 24 h and queries after it; two
    variables share some times (one row of their records holds both)."""
    rows = []
    rng = np.random.default_rng(0)
    for sid, times in (("a", [0.0, 3.5, 10.0, 25.0, 30.0]), ("b", [1.0, 24.0, 40.0]), ("c", [2.0, 5.0, 26.5, 47.0])):
        for t in times:
            for ch in ("HR", "Temp", "pH")[: 1 + int(t) % 3]:
                rows.append({"series_id": sid, "channel": ch, "time": t, "value": float(rng.random())})
    frame = pd.DataFrame(rows)
    return EpisodeBuilder(frame, ["HR", "Temp", "pH"], TaskConfig("forecast", cutoff=24.0 - 1e-6))


def test_records_hold_every_observation_once(adapter) -> None:
    builder = small_builder()
    recs = adapter.records(builder, ["a", "b", "c"], 3)
    for (sid, tt, vals, mask) in recs:
        s = builder.series[sid]
        assert torch.equal(tt, torch.tensor(np.unique(s.time), dtype=torch.float32))
        assert int(mask.sum()) == len(s.time)
        for t, c, v in zip(s.time, s.channel, s.value, strict=True):
            row = int(np.flatnonzero(tt.numpy() == np.float32(t))[0])
            assert mask[row, c] == 1 and vals[row, c] == pytest.approx(v, rel=1e-6)
        assert float(vals[mask == 0].abs().sum()) == 0.0


class _EchoModel:
    """Stands in for tPatchGNN: predicts 1000·(stay's row in the loader) + 10·(future row) + variable,
    so the test can tell which output landed on which query."""

    def eval(self):
        return self

    def forecasting(self, tp_to_predict, observed_data, observed_tp, observed_mask):
        B, L = tp_to_predict.shape
        D = observed_data.shape[-1]
        base = self.offset + torch.arange(B).view(B, 1, 1) * 1000.0
        out = base + 10.0 * torch.arange(L).view(1, L, 1) + torch.arange(D).view(1, 1, D)
        self.offset += B * 1000.0
        return out.unsqueeze(0).float()


def test_predictions_come_back_in_the_benchmarks_query_order(adapter) -> None:
    builder = small_builder()
    ids = ["c", "a", "b"]  # the order of the test split, not sorted
    recs = adapter.records(builder, ids, 3)

    def batches(size: int = 2):  # what their collate hands the model, per batch of records
        for i in range(0, len(recs), size):
            chunk = recs[i:i + size]
            future = [tt[tt >= 24.0] for _, tt, _, _ in chunk]
            L = max(len(f) for f in future)
            yield {"tp_to_predict": torch.zeros(len(chunk), L), "observed_data": torch.zeros(len(chunk), 3, 1, 3),
                   "observed_tp": None, "observed_mask": None}

    model = _EchoModel()
    model.offset = 0.0
    pred = adapter.test_predictions(model, list(batches()), recs, builder, ids)
    expected = []
    for k, sid in enumerate(ids):
        s = builder.series[sid]
        q = builder.split_indices(sid)[1]
        future_times = np.unique(s.time[s.time >= 24.0])
        for t, c in zip(s.time[q], s.channel[q], strict=True):
            expected.append(1000.0 * k + 10.0 * int(np.flatnonzero(future_times == t)[0]) + c)
    assert len(pred) == sum(len(builder.split_indices(s)[1]) for s in ids)
    np.testing.assert_array_equal(pred, expected)


def test_missing_modules_become_stubs_that_refuse(adapter) -> None:
    name = "levy_test_not_installed.sub"
    try:
        adapter.stub_missing(name, "f", "g")
        from levy_test_not_installed.sub import f, g
        with pytest.raises(RuntimeError, match="not installed"):
            f()
        with pytest.raises(RuntimeError, match="not installed"):
            g(1, x=2)
        adapter.stub_missing("numpy", "definitely_not_a_numpy_name")  # installed: left alone
        assert not hasattr(np, "definitely_not_a_numpy_name")
    finally:
        for mod in ("levy_test_not_installed.sub", "levy_test_not_installed"):
            sys.modules.pop(mod, None)


def test_a_directory_that_is_not_the_clone_is_refused(adapter, tmp_path) -> None:
    with pytest.raises(SystemExit, match="not a clone"):
        adapter.import_tpatchgnn(tmp_path)


def test_pairing_refuses_other_queries(adapter, capsys) -> None:
    rng = np.random.default_rng(0)
    stay = np.repeat(np.array(["s1", "s2", "s3", "s4"]), 5)
    chan = rng.integers(0, 3, len(stay))
    target = rng.random(len(stay))
    ours = {"t-PatchGNN seed 1": target + 0.1}
    saved = pd.DataFrame({"series_id": stay, "channel": chan, "y_norm": target, "Lévy seed 0": target + 0.05})
    adapter.print_paired(saved, ours, stay, chan, target)
    out = capsys.readouterr().out
    lévy_row = next(line for line in out.splitlines() if line.startswith("| Lévy (mean over seeds) |"))
    assert "| -75.0 % |" in lévy_row  # half the error on every query: a quarter of the MSE, on every resample
    shifted = saved.assign(channel=np.roll(chan, 1))
    with pytest.raises(SystemExit, match="other test queries"):
        adapter.print_paired(shifted, ours, stay, chan, target)
