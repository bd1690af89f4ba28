"""``levy dashboard`` / ``make dashboard`` listen on localhost unless told otherwise (issue 12).
No server is started: the command is built and inspected, ``os.execvpe`` is replaced."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from levy_core.cli import main as cli
from levy_core.cli.main import LOCAL_HOSTS, main, streamlit_command

ROOT = Path(__file__).resolve().parents[2]


def option(cmd: list[str], name: str) -> str:
    """The value after ``name`` in ``cmd``, which must appear exactly once."""
    assert cmd.count(name) == 1, cmd
    return cmd[cmd.index(name) + 1]


def test_streamlit_command_listens_on_localhost_by_default() -> None:
    cmd = streamlit_command(8123)
    assert cmd[:4] == [sys.executable, "-m", "levy_dashboard.server.serve", "run"]
    assert Path(cmd[4]) == ROOT / "dashboard" / "app.py"
    assert option(cmd, "--server.address") == "localhost"
    assert option(cmd, "--server.port") == "8123"
    assert option(cmd, "--server.headless") == "true"
    assert option(cmd, "--browser.gatherUsageStats") == "false"


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1", "::1", "lab-server.local"])
def test_streamlit_command_passes_the_host(host: str) -> None:
    cmd = streamlit_command(8501, headless=False, host=host)
    assert option(cmd, "--server.address") == host
    assert option(cmd, "--server.headless") == "false"


class Exec:
    """Stands in for ``os.execvpe``: records the command instead of replacing the process."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], dict[str, str]]] = []

    def __call__(self, file: str, args: list[str], env: dict[str, str]) -> None:
        self.calls.append((file, list(args), dict(env)))


@pytest.fixture
def fake_exec(monkeypatch: pytest.MonkeyPatch) -> Exec:
    fake = Exec()
    monkeypatch.setattr(os, "execvpe", fake)
    monkeypatch.chdir(os.getcwd())  # restored afterwards, should anything change directory (`levy dashboard` does not)
    return fake


def test_levy_dashboard_binds_localhost_by_default(fake_exec: Exec, capsys) -> None:
    assert main(["dashboard", "--port", "8777"]) == 0
    (file, cmd, env), = fake_exec.calls
    assert file == cmd[0] == sys.executable
    assert option(cmd, "--server.address") == "localhost" and option(cmd, "--server.port") == "8777"
    assert "LEVY_DASHBOARD_DATA" not in env or env["LEVY_DASHBOARD_DATA"] == os.environ.get("LEVY_DASHBOARD_DATA")
    err = capsys.readouterr().err
    assert "http://localhost:8777" in err and "warning" not in err


def test_levy_dashboard_host_opens_it_with_a_warning(fake_exec: Exec, capsys, fit_csv: Path) -> None:
    assert main(["dashboard", str(fit_csv), "--host", "0.0.0.0"]) == 0
    (_, cmd, env), = fake_exec.calls
    assert option(cmd, "--server.address") == "0.0.0.0"
    assert env["LEVY_DASHBOARD_DATA"] == str(fit_csv.resolve())
    err = capsys.readouterr().err
    assert "warning: --host 0.0.0.0" in err and "no authentication" in err and "upload data" in err


@pytest.mark.parametrize("host", sorted(LOCAL_HOSTS))
def test_levy_dashboard_local_hosts_do_not_warn(fake_exec: Exec, capsys, host: str) -> None:
    assert main(["dashboard", "--host", host]) == 0
    assert option(fake_exec.calls[0][1], "--server.address") == host
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("host", ["", " ", "local host"])
def test_levy_dashboard_refuses_a_blank_host(fake_exec: Exec, capsys, host: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["dashboard", "--host", host])
    assert exc.value.code == 2 and not fake_exec.calls
    assert "--host" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(("extra", "host"), [([], "localhost"), (["HOST=0.0.0.0"], "0.0.0.0")])
def test_make_dashboard_passes_the_host(extra: list[str], host: str) -> None:
    """``make -n`` prints the recipe without running it (nothing is installed or started)."""
    env = {k: v for k, v in os.environ.items() if k != "HOST"}  # HOST ?= also reads the environment
    proc = subprocess.run(["make", "-n", "dashboard", "PORT=8600", *extra], cwd=ROOT, capture_output=True,
                          text=True, check=True, env=env)
    line = [x for x in proc.stdout.splitlines() if " dashboard " in f"{x} "][-1]
    assert line.split()[1:] == ["dashboard", "--port", "8600", "--host", host]
    assert line.split()[0].endswith("/levy")


def test_cli_module_reexports_only_public_names() -> None:
    assert set(cli.__all__) == {"LOCAL_HOSTS", "main", "streamlit_command"}


# --- issue 24: a bad port or host ends in `error: …` and exit 2, not a traceback ---

@pytest.mark.parametrize(("argv", "message"), [
    (["--port", "70000"], "--port: must be at most 65535 (the limit), got 70000"),
    (["--port", "-1"], "--port: must be at least 1, got -1 (a whole number from 1 to 65535)"),
    (["--port", "http"], "--port: expected a whole number of at least 1 and at most 65535, got 'http'"),
])
def test_levy_dashboard_refuses_a_port_out_of_range(fake_exec: Exec, capsys, argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["dashboard", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and not fake_exec.calls
    assert "error: argument " in err and message in err and "Traceback" not in err


@pytest.mark.parametrize(("host", "message"), [
    ("no-such-host.invalid", "is not a known host name or address"),
    ("203.0.113.7", "is not an address of this machine"),  # TEST-NET-3 (documentation): no machine has it
])
def test_levy_dashboard_refuses_an_unknown_host(fake_exec: Exec, capsys, host: str, message: str) -> None:
    assert main(["dashboard", "--host", host]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --host ") and message in err and "Traceback" not in err
    assert not fake_exec.calls


def test_levy_dashboard_at_the_port_bounds_starts(fake_exec: Exec, capsys) -> None:
    for port in ("1", "65535"):
        assert main(["dashboard", "--port", port]) == 0
    assert [option(cmd, "--server.port") for _, cmd, _ in fake_exec.calls] == ["1", "65535"]


_DASHBOARD_IN_A_FRESH_PROCESS = """
import os, sys
os.execvpe = lambda *args: print("exec", args[1][2])  # the hand-over to Streamlit, recorded instead
from levy_core.cli.main import main
print(main(["dashboard", "--port", "8599"]), "torch" in sys.modules, "scipy" in sys.modules)
"""


@pytest.mark.integration
def test_levy_dashboard_hands_over_without_loading_torch() -> None:
    """`make dashboard` runs `levy dashboard`, which only starts Streamlit's process: it loads
    neither PyTorch nor SciPy first (they cost it 2.5-3 s before the hand-over, measured)."""
    run = subprocess.run([sys.executable, "-c", _DASHBOARD_IN_A_FRESH_PROCESS], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["exec", "levy_dashboard.server.serve", "0", "False", "False"], run.stdout
