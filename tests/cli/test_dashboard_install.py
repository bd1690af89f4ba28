"""``levy dashboard`` from wherever it is installed (issue 25): its Streamlit settings travel as
command-line flags (no working directory, no ``.streamlit/config.toml`` needed, none can
loosen them), and without the ``dashboard`` extra it says what to install while ``levy``
and every other command run with neither Streamlit nor plotly importable."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from levy_core.cli.main import main
from levy_core.cli.server import DASHBOARD_SETTINGS, dashboard_app, streamlit_command
from levy_core.data import DataError

ROOT = Path(__file__).resolve().parents[2]
INSTALL_HINT = "pip install 'levy-core[dashboard]'"

# `import streamlit` / `import plotly` raise ImportError in the child, as if not installed
BLOCKED = "import sys\nfor name in ('streamlit', 'plotly'):\n    sys.modules[name] = None\n"


def flags(cmd: list[str]) -> dict[str, str]:
    """The ``--section.option value`` pairs after the script, each given once."""
    pairs = cmd[cmd.index("run") + 2:]
    names = pairs[::2]
    assert all(n.startswith("--") for n in names) and len(names) == len(set(names)) == len(pairs[1::2]), cmd
    return {n[2:]: v for n, v in zip(names, pairs[1::2], strict=True)}


def toml_text(value: str) -> str:
    """A flag's value as Streamlit's ``config show`` writes it (numbers and booleans bare)."""
    return value if value.isdigit() or value in ("true", "false") else json.dumps(value)


def test_the_command_carries_every_setting() -> None:
    given = flags(streamlit_command(8123))
    assert {k: given[k] for k in DASHBOARD_SETTINGS} == DASHBOARD_SETTINGS
    assert given["client.showErrorDetails"] == "type"  # a stranger never sees a traceback
    assert given["browser.gatherUsageStats"] == "false" and given["server.runOnSave"] == "false"
    assert int(given["server.maxUploadSize"]) * 10**6 > 50 * 2**20  # above the 50 MiB the app reads


def test_the_repository_config_says_the_same() -> None:
    """``.streamlit/config.toml`` (a bare ``streamlit run`` in the checkout) holds the same
    values; only the file watcher is left on there, for whoever edits the app."""
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    flat = {f"{section}.{key}": str(value).lower() if isinstance(value, bool) else str(value)
            for section, options in config.items() for key, value in options.items()}
    assert flat == {k: v for k, v in DASHBOARD_SETTINGS.items() if k != "server.fileWatcherType"}


@pytest.mark.integration
def test_the_flags_win_over_any_config_file_and_environment(tmp_path: Path) -> None:
    """From a directory whose ``.streamlit/config.toml`` (and the environment) ask for the
    opposite, Streamlit still takes every setting from the command's flags."""
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "config.toml").write_text(
        '[server]\nmaxUploadSize = 1\nrunOnSave = true\n[browser]\ngatherUsageStats = true\n'
        '[client]\nshowErrorDetails = "full"\ntoolbarMode = "developer"\n'
        '[theme]\nbase = "dark"\nprimaryColor = "#ff0000"\n', encoding="utf-8")
    env = {**os.environ, "HOME": str(tmp_path), "STREAMLIT_CLIENT_SHOW_ERROR_DETAILS": "full",
           "STREAMLIT_SERVER_MAX_UPLOAD_SIZE": "1"}
    cmd = streamlit_command(8123)
    settings = cmd[cmd.index("run") + 2:]
    out = subprocess.run([sys.executable, "-m", "streamlit", "config", "show", *settings], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True, timeout=120).stdout
    shown, section = {}, ""
    for line in out.splitlines():
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif line and not line.startswith("#") and " = " in line:
            key, value = line.split(" = ", 1)
            shown[f"{section}.{key}"] = value
    assert {k: shown[k] for k in DASHBOARD_SETTINGS} == {k: toml_text(v) for k, v in DASHBOARD_SETTINGS.items()}


def test_levy_dashboard_leaves_the_working_directory_alone(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    calls = []
    monkeypatch.setattr(os, "execvpe", lambda file, args, env: calls.append(args))
    monkeypatch.chdir(tmp_path)
    assert main(["dashboard", "--port", "8778"]) == 0
    assert Path.cwd() == tmp_path and len(calls) == 1
    assert Path(calls[0][4]).is_absolute() and flags(calls[0]).keys() >= DASHBOARD_SETTINGS.keys()


@pytest.mark.parametrize("missing", ["streamlit", "levy_dashboard"])
def test_levy_dashboard_without_the_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch, capsys,
                                                               missing: str) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == missing else find_spec(name, *a))
    calls = []
    monkeypatch.setattr(os, "execvpe", lambda *args: calls.append(args))
    with pytest.raises(DataError, match=r"pip install 'levy-core\[dashboard\]'"):
        dashboard_app()
    assert main(["dashboard"]) == 2 and not calls
    err = capsys.readouterr().err
    assert err.startswith("error: the dashboard is not installed") and INSTALL_HINT in err and "Traceback" not in err


def run_blocked(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCKED + code], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.integration
def test_levy_runs_without_streamlit_and_plotly(tmp_path: Path) -> None:
    """With neither importable, ``levy --help`` and every subcommand's help work, and
    ``levy dashboard`` ends in the install hint (exit 2), not an ImportError."""
    code = ("from levy_core.cli.main import build_parser, main\n"
            "commands = build_parser()._subparsers._group_actions[0].choices\n"
            "for argv in [['--help'], *[[c, '--help'] for c in commands]]:\n"
            "    try:\n"
            "        main(argv)\n"
            "    except SystemExit as exc:\n"
            "        assert exc.code == 0, argv\n"
            "print('commands', sorted(commands))\n"
            "print('dashboard', main(['dashboard']))\n")
    proc = run_blocked(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "'dashboard'" in proc.stdout and "'fit'" in proc.stdout and "dashboard 2" in proc.stdout
    assert INSTALL_HINT in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_every_other_command_works_without_streamlit_and_plotly(tmp_path: Path, fit_csv: Path) -> None:
    """fit, predict, evaluate, rank, advise and watch, for real (a one-epoch model), in a
    process where ``import streamlit`` and ``import plotly`` fail."""
    data = str(fit_csv)
    runs = [["fit", data, "--out", "m", "--epochs", "1", "--size", "small", "--quiet"],
            ["predict", "m", data, "--out", "p.csv", "--points", "5", "--quiet"],
            ["evaluate", "m", data, "--json", "e.json", "--mc-passes", "2"],
            ["rank", "m", data, "--out", "r.csv", "--quiet"],
            ["advise", "m", data, "--out", "a.csv", "--series", "s00", "--draws", "8", "--points", "5"],
            ["watch", "m", data, "--out", "w.csv"]]
    code = (f"from levy_core.cli.main import main\nfor argv in {runs!r}:\n"
            "    print('@@', argv[0], main(argv), flush=True)\n"
            "print('@@ loaded', sorted(m for m, v in sys.modules.items() if v is not None "
            "and m.split('.')[0] in ('streamlit', 'plotly')))\n")
    proc = run_blocked(code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = [line[3:] for line in proc.stdout.splitlines() if line.startswith("@@ ")]  # the commands print too
    assert said == [*(f"{argv[0]} 0" for argv in runs), "loaded []"], proc.stderr[-3000:]
