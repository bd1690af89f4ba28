"""Issue 52, saving: a saved model is all old or all new, never written through a link, and a
failed or killed write leaves nothing behind.

Two models, OLD (the shared tiny model, with its twin) and NEW (other weights, another
MC-pass count, no twin), are told apart by everything they hold: weights, ``model.json`` and
predictions. Every save below is interrupted at each of its steps (an injected ENOSPC, or the
writing process killed there) or at a seeded sweep of instants; what loads is OLD or NEW,
bit-identical, never a mix.
"""

from __future__ import annotations

import copy
import dataclasses
import errno
import os
import random
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_helpers import assert_clean_error, run
from safetensors import SafetensorError

from levy_core import LevyForecaster
from levy_core.pipeline import modelfile, predict, prepared, recipe
from levy_core.runtime import atomic
from levy_core.serving.table_writer import TableWriter, atomic_output


@pytest.fixture(scope="module")
def new_model(fitted):
    """Another model: scaled weights, 7 MC passes, no twin."""
    levy = copy.deepcopy(fitted.levy)
    with torch.no_grad():
        levy.backbone.channel.weight.mul_(1.5)
    return dataclasses.replace(fitted, levy=levy, twin=None, mc_passes=7)


def _predict(model, obs) -> np.ndarray:
    pred = predict.predict_future(model, prepared.prepare(model, obs), 6.0, n_points=3)
    return pred[["mean", "sigma"]].to_numpy()


@pytest.fixture(scope="module")
def expected(fitted, new_model, new_obs) -> dict[str, np.ndarray]:
    return {"old": _predict(fitted, new_obs), "new": _predict(new_model, new_obs)}


def which(directory: Path, fitted, new_model, new_obs, expected) -> str:
    """'old' or 'new' when ``directory`` holds that model whole (weights, twin, model.json and
    predictions bit-identical); fails the test on a mix."""
    loaded = modelfile.load_model(directory)
    matches = []
    for name, model in (("old", fitted), ("new", new_model)):
        same_weights = all(torch.equal(a, b) for a, b in zip(loaded.levy.state_dict().values(),
                                                             model.levy.state_dict().values(), strict=True))
        same_twin = (loaded.twin is None) == (model.twin is None)
        if same_weights and same_twin and loaded.mc_passes == model.mc_passes:
            matches.append(name)
    assert len(matches) == 1, f"{directory}: a mix of the old and the new model ({sorted(os.listdir(directory))})"
    assert np.array_equal(_predict(loaded, new_obs), expected[matches[0]])
    return matches[0]


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


# ----------------------------------------------------------------------------- step by step

class Injected:
    """Counts every write step of a save (a weights file, ``os.write``, ``fsync``, a rename,
    the exchange) and fails the ``n``-th with ``make()``."""

    def __init__(self, n: int, make: Callable[[], BaseException]) -> None:
        self.n, self.make, self.calls = n, make, 0

    def wrap(self, fn: Callable) -> Callable:
        def step(*args, **kwargs):
            self.calls += 1
            if self.calls == self.n:
                raise self.make()
            return fn(*args, **kwargs)
        return step

    @classmethod
    def patch(cls, monkeypatch: pytest.MonkeyPatch, n: int, make: Callable[[], BaseException],
              exchange: bool = True) -> Injected:
        inj = cls(n, make)
        monkeypatch.setattr(modelfile, "save_weights", inj.wrap(modelfile.save_weights))
        for name in ("write", "fsync", "rename", "replace"):
            monkeypatch.setattr(os, name, inj.wrap(getattr(os, name)))
        monkeypatch.setattr(atomic, "exchange", inj.wrap(atomic.exchange if exchange else lambda a, b: False))
        return inj


def _enospc() -> OSError:
    return OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2-exchange", "two-renames"])
def test_a_save_failing_at_each_step_leaves_the_old_model_whole(tmp_path, monkeypatch, fitted, new_model, new_obs,
                                                                 expected, exchange):
    """Every step of the save fails in turn (until the save runs past the last one): the
    failure is raised and the old model is whole, or (an fsync of a folder the file system
    refuses, ignored) the new model is whole."""
    target = fitted.save(tmp_path / "m")
    n, outcomes = 0, []
    while True:
        n += 1
        with monkeypatch.context() as m:
            inj = Injected.patch(m, n, _enospc, exchange)
            try:
                new_model.save(target)
                failed = False
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                failed = True
        got = which(target, fitted, new_model, new_obs, expected)
        outcomes.append(got)
        assert got == ("old" if failed else "new"), (n, got)
        assert leftovers(tmp_path) == [], n
        if not failed:
            assert not (target / "softmax.safetensors").exists(), "the old twin went with the old model"
            if inj.calls < n:  # past the last step
                break
            fitted.save(target)
    assert n > 8, "every step was tried"
    assert outcomes.count("old") >= n - 3


def _killed_child(body: Callable[[], None]) -> None:
    """Run ``body`` in a forked child that never returns into pytest; wait for it."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            body()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


@pytest.mark.integration
@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2-exchange", "two-renames"])
def test_a_save_killed_at_each_step_leaves_one_whole_model(tmp_path, monkeypatch, fitted, new_model, new_obs,
                                                           expected, exchange):
    """The writer killed (os._exit: no cleanup, no finally) at its n-th step: the target loads
    as OLD or NEW; the next save cleans up what the dead writer left and succeeds."""
    seen = set()
    for n in range(1, 40):
        target = fitted.save(tmp_path / f"m{n}")

        def body(n: int = n, target: Path = target) -> None:
            Injected.patch(monkeypatch, n, lambda: os._exit(9), exchange)
            new_model.save(target)

        _killed_child(body)
        seen.add(which(target, fitted, new_model, new_obs, expected))
        if leftovers(tmp_path):  # only a kill leaves a temporary: the next save removes it
            new_model.save(target)
            assert which(target, fitted, new_model, new_obs, expected) == "new"
            assert leftovers(tmp_path) == []
    assert seen == {"old", "new"}


@pytest.mark.integration
def test_a_save_killed_at_a_seeded_sweep_of_instants(tmp_path, fitted, new_model, new_obs, expected):
    """A child saving OLD and NEW in turn over one directory, SIGKILLed after a seeded delay."""
    target = fitted.save(tmp_path / "m")
    rng, seen = random.Random(52), []
    for _ in range(12):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                while True:
                    new_model.save(target)
                    fitted.save(target)
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.02, 0.3))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        seen.append(which(target, fitted, new_model, new_obs, expected))
    assert set(seen) <= {"old", "new"} and len(seen) == 12


def test_the_new_model_replaces_the_old_twin(tmp_path, fitted, new_model):
    target = fitted.save(tmp_path / "m")
    assert (target / "softmax.safetensors").is_file()
    new_model.save(target)
    assert sorted(os.listdir(target)) == ["levy.safetensors", "model.json"]
    assert modelfile.load_model(target).twin is None


# ----------------------------------------------------------------------------- refused targets

def _link_to_victim(d: Path) -> None:
    d.mkdir()
    (d / "model.json").symlink_to("../victim.txt")


def _other_file(d: Path) -> None:
    d.mkdir()
    (d / "notes.txt").write_text("mine")


def _foreign_json(d: Path) -> None:
    d.mkdir()
    (d / "model.json").write_text('{"name": "someone else\'s model"}')


def _sub_folder(d: Path) -> None:
    (d / "data").mkdir(parents=True)


def _dir_link(d: Path) -> None:
    (d.parent / "real").mkdir()
    d.symlink_to("real")


def _a_file(d: Path) -> None:
    d.write_text("a file")


def _weights_only(d: Path) -> None:
    d.mkdir()
    (d / "levy.safetensors").write_bytes(b"not ours")


TARGETS = {  # a target that is not a model: (how it is made, what the message must say)
    "model.json a link outside": (_link_to_victim, r"model\.json, a symbolic link"),
    "another file": (_other_file, r"notes\.txt, which is not part of a saved model"),
    "a model.json not ours": (_foreign_json, r"not a saved model"),
    "a sub-folder": (_sub_folder, r"data, which is not part of a saved model"),
    "the target a link": (_dir_link, r"is a symbolic link"),
    "the target a file": (_a_file, r"is a file, not a model directory"),
    "weights without model.json": (_weights_only, r"not a saved model"),
}


def _snapshot(root: Path) -> dict[str, bytes | str]:
    return {str(p.relative_to(root)): (os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else "dir")
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("case", TARGETS)
@pytest.mark.parametrize("how", ["FittedModel.save", "LevyForecaster.save", "levy fit --out"])
def test_a_target_that_is_not_a_model_is_refused_by_name(tmp_path, monkeypatch, capsys, fitted, fit_csv, case, how):
    make, message = TARGETS[case]
    (tmp_path / "victim.txt").write_text("precious")
    target = tmp_path / "target"
    make(target)
    before = _snapshot(tmp_path)
    if how == "levy fit --out":  # refused before the fit starts
        monkeypatch.setattr(recipe, "fit", lambda *a, **k: pytest.fail("fitted before the target was checked"))
        code, out, err = run(capsys, "fit", fit_csv, "--out", target, "--epochs", "1")
        assert_clean_error(code, out, err)
        assert re.search(message, err), err
    else:
        saver = fitted if how == "FittedModel.save" else LevyForecaster.load(fitted.save(tmp_path / "src"))
        with pytest.raises(ValueError, match=message):
            saver.save(target)
        shutil.rmtree(tmp_path / "src", ignore_errors=True)
    assert _snapshot(tmp_path) == before
    assert (tmp_path / "victim.txt").read_text() == "precious"


def test_an_empty_folder_or_an_old_model_is_replaced(tmp_path, fitted, new_model):
    (tmp_path / "empty").mkdir()
    assert modelfile.load_model(fitted.save(tmp_path / "empty")).twin is not None
    assert modelfile.load_model(new_model.save(tmp_path / "empty")).mc_passes == 7


def test_a_zip_over_a_link_replaces_the_link_not_the_file_it_points_to(tmp_path, fitted):
    (tmp_path / "victim.txt").write_text("precious")
    (tmp_path / "model.zip").symlink_to("victim.txt")
    forecaster = LevyForecaster.load(fitted.save(tmp_path / "src"))
    forecaster.save(tmp_path / "model.zip")
    assert (tmp_path / "victim.txt").read_text() == "precious"
    assert not (tmp_path / "model.zip").is_symlink()
    assert LevyForecaster.load(tmp_path / "model.zip").fitted.mc_passes == fitted.mc_passes


# ----------------------------------------------------------------------------- a full disk in the CLI

WRITE_ERRORS = {
    "ENOSPC in the weights": lambda: OSError(errno.ENOSPC, "No space left on device"),
    "safetensors' own error (0 bytes free)": lambda: SafetensorError("Error while serializing: IoError(No space "
                                                                     "left on device (os error 28))"),
    "EIO": lambda: OSError(errno.EIO, "Input/output error"),
}


# safetensors' error comes from its own writer: the first step (the weights) only
FULL_DISK = [(case, step) for case in WRITE_ERRORS for step in ([1] if "safetensors" in case else [1, 2, 3, 5])]


@pytest.mark.parametrize(("case", "step"), FULL_DISK)
def test_levy_fit_on_a_full_disk_keeps_the_old_model(tmp_path, monkeypatch, capsys, fitted, new_model, new_obs,
                                                    expected, fit_csv, case, step):
    target = fitted.save(tmp_path / "m")
    monkeypatch.setattr(recipe, "fit", lambda *a, **k: copy.copy(new_model))
    Injected.patch(monkeypatch, step, WRITE_ERRORS[case])
    code, out, err = run(capsys, "fit", fit_csv, "--out", target, "--epochs", "1", "--quiet")
    monkeypatch.undo()
    assert_clean_error(code, out, err)
    assert which(target, fitted, new_model, new_obs, expected) == "old"
    assert leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- output files

@pytest.fixture
def sigterm_raises() -> Iterator[None]:
    with atomic.terminate_as_exit():
        yield


@pytest.mark.parametrize("writer", ["atomic_output", "TableWriter"])
def test_sigterm_while_an_output_is_written_removes_its_temporary(tmp_path, sigterm_raises, writer):
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    with pytest.raises(SystemExit) as exc:
        if writer == "atomic_output":
            with atomic_output(out) as tmp:
                tmp.write_text("half")
                os.kill(os.getpid(), signal.SIGTERM)
        else:
            import pandas as pd
            with TableWriter(out) as w:
                w.write(pd.DataFrame({"a": [1, 2]}))
                os.kill(os.getpid(), signal.SIGTERM)
    assert exc.value.code == 143
    assert sorted(os.listdir(tmp_path)) == ["out.csv"] and out.read_text() == "old\n"


def test_levy_predict_terminated_leaves_no_temporary(tmp_path, monkeypatch, capsys, fitted_dir, fit_csv):
    """SIGTERM in the middle of ``levy predict``: exit 143, the output's temporary removed."""
    def write_then_term(self, frame):
        TableWriter_write(self, frame)
        os.kill(os.getpid(), signal.SIGTERM)

    TableWriter_write = TableWriter.write
    monkeypatch.setattr(TableWriter, "write", write_then_term)
    out = tmp_path / "pred.csv"
    with pytest.raises(SystemExit) as exc:
        from levy_core.cli.main import main
        main(["predict", str(fitted_dir), str(fit_csv), "--out", str(out), "--quiet", "--chunk-series", "4"])
    assert exc.value.code == 143
    assert os.listdir(tmp_path) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))


@pytest.mark.integration
def test_a_temporary_a_killed_writer_left_is_removed_by_the_next_write(tmp_path):
    pid = os.fork()
    if pid == 0:  # pragma: no cover - a process that is gone at once
        os._exit(0)
    os.waitpid(pid, 0)
    dead = tmp_path / f".out.csv.tmp-{pid}-0badc0de"
    alive = tmp_path / f".out.csv.tmp-{os.getpid()}-00c0ffee"
    dead.write_text("half of a killed write")
    alive.write_text("a write under way")
    with atomic_output(tmp_path / "out.csv") as tmp:
        tmp.write_text("new")
    assert sorted(os.listdir(tmp_path)) == [alive.name, "out.csv"]
