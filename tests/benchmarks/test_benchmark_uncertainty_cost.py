"""benchmarks/uncertainty_cost.py: its batched MC-Dropout draws what the library's passes in
turn draw (the GPU comparison in docs/benchmarks/uncertainty.md rests on it), and the script
runs and refuses a device it cannot see."""

from __future__ import annotations

import math

import pytest
import torch

from benchmarks import uncertainty_cost as cost
from levy_core.model.config import ModelConfig
from levy_core.model.softmax_twin import SoftmaxTwin


def test_batched_mc_dropout_matches_the_passes_in_turn_in_distribution() -> None:
    """Mean and spread over T passes, batched or in turn, agree within their Monte-Carlo
    error: each query's spread estimate has relative s.e. ≈ 1/√(2(T−1)), so two independent
    ones differ by ≈ 1/√T of it; 5 s.e. for the mean, 5 for the spread."""
    torch.manual_seed(0)
    twin = SoftmaxTwin(ModelConfig(n_channels=4)).eval()
    batch = cost.episodes(6, 30, 8, 4)
    passes = 600
    with torch.no_grad():
        mean_turn, sd_turn = twin.mc_dropout(batch, passes, generator_seed=1)
        mean_batch, sd_batch = cost.batched_mc_dropout(twin, batch, passes, seed=2)
    assert mean_batch.shape == mean_turn.shape == batch.qry_time.shape
    se_mean = torch.sqrt((sd_turn**2 + sd_batch**2) / passes)
    assert ((mean_batch - mean_turn).abs() <= 5 * se_mean + 1e-7).all()
    rel = (sd_batch / sd_turn - 1).abs()
    assert (rel <= 5 / math.sqrt(passes)).all(), float(rel.max())
    with torch.no_grad():  # and it is random: another seed, other draws
        other, _ = cost.batched_mc_dropout(twin, batch, passes, seed=3)
    assert not torch.equal(other, mean_batch)


def test_the_script_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cost.main(["--series", "3", "--context", "20", "--queries", "5", "--channels", "3",
                      "--passes", "4", "--reps", "2"]) == 0
    out = capsys.readouterr().out
    assert "3 series x 5 queries (15 queries)" in out
    for label in ("one pass", "MC-Dropout, T = 4 passes in turn", "MC-Dropout, T = 4 batched",
                  "Lévy pass and the learned band spread (context, GLM, 30 trees)"):
        assert label in out
    assert "MC-Dropout (batched) ÷ Lévy, paired over 2 repetitions" in out
    assert "MC-Dropout (in turn) ÷ Lévy and the learned band spread, paired over 2 repetitions" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_a_device_torch_cannot_see_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cost.main(["--device", "cuda"])
    assert exit_info.value.code == 2
    assert "--device cuda: no CUDA device is visible" in capsys.readouterr().err
