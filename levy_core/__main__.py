"""``python -m levy_core`` = the ``levy`` command (also its console script's entry point)."""

import sys

from levy_core.runtime.threads import prefer_passive_wait


def main() -> int:
    """Run the ``levy`` command: OpenMP's waiting threads set to sleep before torch loads
    (`levy_core.runtime.threads.prefer_passive_wait`), then `levy_core.cli.main.main`."""
    prefer_passive_wait()
    from levy_core.cli.main import main as levy

    return levy()


if __name__ == "__main__":
    sys.exit(main())
