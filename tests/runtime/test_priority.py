"""Fits behind interactive work (levy_core/runtime/priority.py): ``levy fit --nice``, every thread niced."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from levy_core.cli import fit as cli_fit
from levy_core.cli import main as cli
from levy_core.runtime import priority
from levy_core.runtime.priority import (
    FIT_NICE,
    MAX_NICE,
    lower_priority,
    parse_nice,
    thread_niceness,
)


@pytest.mark.integration
def test_every_thread_started_after_lowering_the_priority_inherits_it() -> None:
    code = (
        "import torch\n"
        "from levy_core.runtime.priority import lower_priority, thread_niceness\n"
        "before = max(thread_niceness().values())\n"
        "now = lower_priority(7)\n"
        "torch.set_num_threads(2)\n"
        "x = torch.rand(512, 512)\n"
        "for _ in range(3):\n"
        "    x = torch.tanh(x @ x) + x.sum(0)\n"  # an OpenMP team of 2: a thread started now
        "print(before, now, len(thread_niceness()), sorted(set(thread_niceness().values())))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    before, now, n, values = out.stdout.split(maxsplit=3)
    expected = max(7, int(before))
    assert int(now) == expected and values.strip() == f"[{expected}]", out.stdout
    assert int(n) >= 2, "the OpenMP team's thread is among them"


def test_lowering_to_zero_or_below_changes_nothing() -> None:
    mine = thread_niceness()
    assert lower_priority(0) == mine[threading.get_native_id()]
    assert lower_priority(-5) == mine[threading.get_native_id()]
    assert thread_niceness() == mine


def test_nice_values_are_0_to_19() -> None:
    assert [parse_nice(x) for x in ("0", 19, " 10 ")] == [0, 19, 10]
    for bad in ("-1", "20", "low", ""):
        with pytest.raises(ValueError, match="from 0"):
            parse_nice(bad)
    assert (FIT_NICE, MAX_NICE) == (10, 19)


def test_levy_fit_lowers_its_priority_before_it_reads_the_data(monkeypatch, tmp_path, capsys) -> None:
    seen = []
    monkeypatch.setattr(cli_fit, "lower_priority", seen.append)  # `levy fit` lives in cli.fit
    missing = str(tmp_path / "no.csv")
    assert cli.main(["fit", missing, "--out", str(tmp_path / "m")]) == 2
    assert cli.main(["fit", missing, "--out", str(tmp_path / "m"), "--nice", "0"]) == 2
    assert seen == [priority.FIT_NICE, 0]
    with pytest.raises(SystemExit) as stop:
        cli.main(["fit", missing, "--out", str(tmp_path / "m"), "--nice", "20"])
    assert stop.value.code == 2 and "--nice: give a whole number from 0" in capsys.readouterr().err
