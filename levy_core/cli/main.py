"""``levy``: fit, predict, evaluate, rank and the dashboard from the command line.

Each subcommand lives in its own module (`levy_core.cli.fit`, ``predict``, ``evaluate``,
``rank``, ``advise``, ``watch``, ``server``); their shared options in
`levy_core.cli.arguments` and how they read their inputs in `levy_core.cli.inputs`.
Every parser is built with ``allow_abbrev=False``: an option is read only when written in full
(``--time`` is never taken for ``--time-unit``).

Bad input never produces a traceback: the message goes to stderr as ``error: …`` and the
exit code is 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from levy_core.cli.advise import add_advise_command
from levy_core.cli.arguments import add_chunks, add_model_and_data, bounded_int, host
from levy_core.cli.evaluate import add_evaluate_command
from levy_core.cli.fit import add_fit_command
from levy_core.cli.predict import add_predict_command
from levy_core.cli.rank import add_rank_command
from levy_core.cli.server import LOCAL_HOSTS, cmd_dashboard, streamlit_command
from levy_core.cli.watch import add_watch_command
from levy_core.data import DataError
from levy_core.runtime.atomic import terminate_as_exit
from levy_core.runtime.threads import command_threads, using_threads

# What loads PyTorch (the model, the episodes, training, the chunked scoring, the band levels)
# is imported in the command that needs it: `levy --help`, a mistyped option and `levy dashboard`
# (which hands over to Streamlit's own process) do not wait 2-3 s for it.

__all__ = ["LOCAL_HOSTS", "main", "streamlit_command"]


def build_parser() -> argparse.ArgumentParser:
    """The ``levy`` command line's parser: every subcommand and option (the documentation
    site's CLI reference is generated from it). No parser reads an abbreviated option."""
    p = argparse.ArgumentParser(prog="levy", description="Lévy attention: predictions with single-pass "
                                "uncertainty for irregularly sampled time series.", allow_abbrev=False)
    sub = p.add_subparsers(dest="command", required=True)
    add_fit_command(sub)
    add_predict_command(sub)
    add_evaluate_command(sub)
    add_rank_command(sub)
    add_advise_command(sub, add_model_and_data)
    add_watch_command(sub, add_model_and_data, add_chunks)

    d = sub.add_parser("dashboard", help="start the dashboard (on DATA or a bundled sample)", allow_abbrev=False)
    d.add_argument("data", nargs="?", default=None)
    d.add_argument("--port", type=bounded_int(1, 65535, grouped=False), default=8501, help="port to listen on, 1 to 65535")
    d.add_argument("--host", type=host, default="localhost",
                   help="address to listen on (default localhost: this machine only); 0.0.0.0 lets anyone who "
                   "can reach the port upload data and start fits, with no authentication")
    d.add_argument("--headless", type=lambda s: s.lower() in ("1", "true", "yes"), default=True)
    d.add_argument("--fit-workers", type=bounded_int(1, cores := os.cpu_count() or 1), metavar="N", help="fits run "
                   f"at once, a thread each, 1 to {cores}; more wait in a queue (default: {max(1, cores // 2)})")
    d.set_defaults(func=cmd_dashboard)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``levy`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:  # a fixed thread count per command, never read from the load (levy_core.runtime.threads);
        # none for `levy dashboard`, which hands over to Streamlit's own process (and so never loads torch here);
        # SIGTERM raises SystemExit(143): temporaries are removed on `kill` as on Ctrl-C
        with (using_threads(command_threads(args.threads)) if hasattr(args, "threads") else contextlib.nullcontext()), \
                terminate_as_exit():
            return int(args.func(args) or 0)
    except (DataError, ValueError) as exc:  # ValueError: bad option values, and a ModelLoadError is one
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        # a calibration step used before the one it needs; its module is loaded if it was raised
        from levy_core.calibration.scores import NotFittedError

        if not isinstance(exc, NotFittedError):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
