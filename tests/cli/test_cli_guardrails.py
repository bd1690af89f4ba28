"""``levy fit`` refuses training options that would train nothing or never stop, before any
data is read or any model trained (issue 12): exit 2 and a message naming the option."""

from __future__ import annotations

from pathlib import Path

import pytest

from levy_core.cli.main import main
from levy_core.data.clock import DAYS_PER_YEAR
from levy_core.pipeline import recipe


class Stop(Exception):
    """Raised by the stand-in for ``recipe.fit``: the options got through."""


@pytest.fixture
def fits(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Every call the CLI makes to ``recipe.fit``, which trains nothing here."""
    calls: list[dict] = []

    def fake_fit(obs, **kwargs):
        calls.append(kwargs)
        raise Stop

    monkeypatch.setattr(recipe, "fit", fake_fit)
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


@pytest.mark.parametrize(("time_unit", "cutoff", "hours"), [
    ("hours", "24", 24.0), ("days", "730.5", 730.5 * 24), ("days", "2y", 2 * DAYS_PER_YEAR * 24), ("hours", "3d", 72.0),
    ("minutes", "90", 1.5), ("days", "-1", -24.0)])
def test_the_cutoff_is_read_in_the_data_unit(capsys, fits, fit_csv: Path, tmp_path: Path, time_unit: str,
                                              cutoff: str, hours: float) -> None:
    """A bare ``--cutoff`` is in the data's unit, as ``--horizon`` (with ``--time-unit days``
    a cut-off of 730.5 once meant 730.5 hours: the PBC panel was fitted on its first month
    and asked about two years, benchmarks/unseen.py); with a unit it is that long."""
    with pytest.raises(Stop):
        main(["fit", str(fit_csv), "--out", str(tmp_path / "m"), "--time-unit", time_unit, f"--cutoff={cutoff}",
              "--quiet"])
    (kwargs,) = fits
    assert kwargs["task"].cutoff == pytest.approx(hours, rel=1e-12)


@pytest.mark.parametrize("cutoff", ["nan", "inf", "soon", "3 parsecs"])
def test_a_cutoff_that_is_not_a_time_is_refused(capsys, fits, fit_csv: Path, tmp_path: Path, cutoff: str) -> None:
    code = main(["fit", str(fit_csv), "--out", str(tmp_path / "m"), f"--cutoff={cutoff}", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and not fits and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("error: ") and cutoff.split()[0] in err
