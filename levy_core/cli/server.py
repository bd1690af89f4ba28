"""``levy dashboard``: the Streamlit server of the dashboard, started from the command line
(the address it listens on checked first, the app found without importing Streamlit)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import sys
from pathlib import Path

from levy_core.data import DataError

__all__ = ["DASHBOARD_SETTINGS", "LOCAL_HOSTS", "check_listen_host", "cmd_dashboard", "dashboard_app",
           "streamlit_command", "url_host"]

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""Addresses that serve the dashboard to this machine only."""

DASHBOARD_SETTINGS: dict[str, str] = {
    # Streamlit's own cap on an upload, in MB (the browser counts 10^6 bytes a MB): above the
    # 50 MiB (52.4 MB) the dashboard reads (levy_dashboard.data.sources.MAX_UPLOAD_BYTES), so that
    # a larger file reaches the app and gets its message, not only the uploader's red icon
    "server.maxUploadSize": "100",
    "server.runOnSave": "false",
    "server.fileWatcherType": "none",
    "browser.gatherUsageStats": "false",
    "client.toolbarMode": "viewer",
    # an unexpected error shows its type only: a traceback would show a stranger the server's
    # paths and code (every expected problem is an st.error with a message of its own)
    "client.showErrorDetails": "type",
    "theme.base": "light",
    "theme.primaryColor": "#0072B2",
}
"""Streamlit settings that ``levy dashboard`` passes as command-line flags, so that they hold
wherever it runs (an installed wheel, any working directory): a flag outranks every
``config.toml`` and ``STREAMLIT_*`` variable. The repository's ``.streamlit/config.toml`` holds
the same values for a bare ``streamlit run dashboard/app.py`` (a test keeps them equal)."""


def cmd_dashboard(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    if args.data:
        data = Path(args.data)
        if not data.exists():
            raise DataError(f"{data}: no such file; give a CSV of observations or no argument for the sample")
        env["LEVY_DASHBOARD_DATA"] = str(data.resolve())
    env.update({"LEVY_DASHBOARD_FIT_WORKERS": str(args.fit_workers)} if args.fit_workers else {})  # dashboard/fitting/fit_pool.py
    dashboard_app()  # installed, or a message that says how to install it
    check_listen_host(args.host, args.port)
    cmd = streamlit_command(args.port, headless=args.headless, host=args.host)
    print(f"starting the dashboard on http://{url_host(args.host)}:{args.port}", file=sys.stderr)
    if args.host not in LOCAL_HOSTS:
        print(f"warning: --host {args.host} serves the dashboard beyond this machine: anyone who can reach "
              f"port {args.port} can upload data and start fits, with no authentication", file=sys.stderr)
    # replace this process: Ctrl-C and kill reach Streamlit itself, nothing is left behind
    os.execvpe(cmd[0], cmd, env)
    return 0  # pragma: no cover - execvpe does not return


def check_listen_host(host: str, port: int) -> None:
    """ValueError unless ``host`` resolves to an address of this machine that a server can
    listen on (an unknown name or another machine's address would fail inside Streamlit)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise ValueError(f"--host {host!r} is not a known host name or address ({exc}); give localhost, an "
                         "address of this machine, or 0.0.0.0 for every interface") from None
    for family, kind, proto, _, address in infos:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.bind((address[0], 0, *address[2:]))  # any free port: only the address is checked
            return
        except OSError:
            continue
    raise ValueError(f"--host {host!r} is not an address of this machine, so nothing can listen on it; give "
                     "localhost, an address of this machine, or 0.0.0.0 for every interface")


def url_host(host: str) -> str:
    """``host`` as it goes in a URL: IPv6 addresses in brackets, every interface as localhost."""
    if host in ("0.0.0.0", "::", ""):
        return "localhost"
    return f"[{host}]" if ":" in host else host


def dashboard_app() -> Path:
    """The dashboard's Streamlit script (``app.py`` of the ``levy_dashboard`` package, the
    repository's ``dashboard/`` folder): found without importing it, so ``levy`` never loads
    Streamlit before it serves.

    Raises
    ------
    DataError
        When the dashboard or Streamlit is not installed, saying what to install.
    """
    spec = importlib.util.find_spec("levy_dashboard")
    if spec is None or spec.origin is None or importlib.util.find_spec("streamlit") is None:
        raise DataError("the dashboard is not installed: pip install 'levy-core[dashboard]' "
                        "(Streamlit and plotly; from a clone: pip install -e '.[dashboard]', or make install)")
    app = Path(spec.origin).parent / "app.py"
    if not app.exists():
        raise DataError(f"the dashboard's app.py is missing ({app}): reinstall levy-core[dashboard]")
    return app


def streamlit_command(port: int, *, headless: bool = True, host: str = "localhost") -> list[str]:
    """The command that serves the dashboard (also used by its browser test and benchmark).

    ``host`` is the address Streamlit listens on (``--server.address``): ``localhost`` by
    default, so only this machine can reach the app; ``0.0.0.0`` opens it to every network
    interface, that is to anyone who can reach the port, with no authentication. The
    `DASHBOARD_SETTINGS` follow as flags (the upload cap, errors shown by type only,
    the theme): the command needs no particular working directory."""
    settings = [part for name, value in DASHBOARD_SETTINGS.items() for part in (f"--{name}", value)]
    return [sys.executable, "-m", "levy_dashboard.server.serve", "run", str(dashboard_app()),
            "--server.headless", str(headless).lower(), "--server.port", str(port),
            "--server.address", host, *settings]
