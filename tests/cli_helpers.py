"""The ``levy`` command in-process, for the tests that call it (tests/cli, tests/project).

Imported as ``from cli_helpers import …`` (tests/ is on ``sys.path``: tests/conftest.py is there)."""

from __future__ import annotations

import pytest

from levy_core.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    """``levy ARGV`` in-process: (exit code, stdout, stderr). An exception escaping ``main``
    is what a user would see as a traceback: fail on it."""
    args = [str(a) for a in argv]
    try:
        code = main(args)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:  # noqa: BLE001 - any escape is a failure
        pytest.fail(
            f"`levy {' '.join(args)}` raised {type(exc).__name__}: {exc} (a traceback for the user)"
        )
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_clean_error(code: int, out: str, err: str) -> None:
    assert code == 2, (code, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: "), err
    assert len(lines[-1]) > len("error: ") + 10, "the message says what is wrong"
