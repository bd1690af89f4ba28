"""dashboard/server/precompile.py: `make install` imports what the dashboard and a fit run, once."""

from __future__ import annotations

import pkgutil
import sys

import levy_dashboard
from levy_dashboard.server.precompile import MODULES, SKIPPED, precompile

from levy_core.pipeline.preload import FIT_MODULES


def test_every_dashboard_module_and_what_a_fit_runs_is_imported() -> None:
    loaded = precompile()
    dashboard = [m.name for m in pkgutil.walk_packages(levy_dashboard.__path__, "levy_dashboard.")
                 if m.name not in SKIPPED]
    assert len(dashboard) > 30 and all(name in sys.modules for name in dashboard)
    assert all(name in sys.modules for name in (*MODULES, *FIT_MODULES))
    assert loaded == len(sys.modules)
    # importing the Streamlit script would run the whole app outside a server, at install time
    assert "levy_dashboard.app" not in sys.modules
