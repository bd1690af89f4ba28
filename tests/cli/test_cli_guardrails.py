"""``levy fit`` refuses training options that would train nothing or never stop, before any
data is read or any model trained (issue 12): exit 2 and a message naming the option."""

from __future__ import annotations

from pathlib import Path

import pytest

from levy_core import pipeline
from levy_core.cli.main import main


class Stop(Exception):
    """Raised by the stand-in for ``pipeline.fit``: the options got through."""


@pytest.fixture
def fits(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Every call the CLI makes to ``pipeline.fit``, which trains nothing here."""
    calls: list[dict] = []

    def fake_fit(obs, **kwargs):
        calls.append(kwargs)
        raise Stop

    monkeypatch.setattr(pipeline, "fit", fake_fit)
    return calls


def refused(capsys, argv: list[str]) -> str:
    """Run ``levy ARGV``, expect argparse's exit 2, return stderr."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("epochs", ["0", "-1", "-40"])
def test_fit_refuses_no_epochs(capsys, fits, fit_csv: Path, tmp_path: Path, epochs: str) -> None:
    out = tmp_path / "model"
    err = refused(capsys, ["fit", str(fit_csv), "--out", str(out), "--epochs", epochs, "--quiet"])
    assert f"argument --epochs: must be at least 1, got {int(epochs)}" in err
    assert not fits and not out.exists(), "nothing trained, nothing saved"


@pytest.mark.parametrize("epochs", ["1.5", "ten", ""])
def test_fit_refuses_epochs_that_are_not_whole_numbers(capsys, fits, fit_csv: Path, epochs: str) -> None:
    err = refused(capsys, ["fit", str(fit_csv), "--out", "m", "--epochs", epochs])
    assert "argument --epochs: expected a whole number of at least 1" in err and not fits


@pytest.mark.parametrize("seconds", ["0", "-1", "-0.5", "nan", "inf", "-inf", "1e999", "soon"])
def test_fit_refuses_a_budget_that_is_not_finite_and_positive(capsys, fits, fit_csv: Path, tmp_path: Path,
                                                              seconds: str) -> None:
    out = tmp_path / "model"
    err = refused(capsys, ["fit", str(fit_csv), "--out", str(out), f"--max-seconds={seconds}"])
    assert "argument --max-seconds:" in err and repr(seconds) in err
    assert not fits and not out.exists()


def test_the_options_are_refused_before_the_data_is_read(capsys, fits, tmp_path: Path) -> None:
    err = refused(capsys, ["fit", str(tmp_path / "missing.csv"), "--out", "m", "--epochs", "0"])
    assert "--epochs" in err and "no such file" not in err


def test_valid_options_reach_training(capsys, fits, fit_csv: Path, tmp_path: Path) -> None:
    with pytest.raises(Stop):
        main(["fit", str(fit_csv), "--out", str(tmp_path / "m"), "--epochs", "3", "--max-seconds", "0.5",
              "--quiet"])
    (kwargs,) = fits
    assert kwargs["train"].epochs == 3 and kwargs["train"].max_seconds == 0.5
    with pytest.raises(Stop):
        main(["fit", str(fit_csv), "--out", str(tmp_path / "m"), "--quiet"])
    assert fits[1]["train"].epochs == 40 and fits[1]["train"].max_seconds is None  # the defaults
