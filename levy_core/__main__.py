"""``python -m levy_core`` = the ``levy`` command."""

import sys

from levy_core.cli import main

sys.exit(main())
