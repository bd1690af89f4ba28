"""Import once what the dashboard and a fit run, so that Python writes their bytecode now.

``make install`` runs pip with ``--no-compile``: compiling every installed module up front
(all of torch, Ray, SciPy, pip itself: 16,787 files) was 75 s of a 131 s install, most of it
for modules nothing here imports. What runs is compiled on first import instead, which the
first ``make dashboard`` would pay (healthy after 14.5 s instead of 5.0–7.4 s on later
starts, 2026-12-03). ``make install`` runs ``python -m levy_dashboard.server.precompile`` after pip:
one process imports the server, every module of the dashboard and everything a fit needs
(``FittedVerbs.preload``), about 14 s on a slow host, and every later process finds their bytecode.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil

# the Streamlit script itself: Streamlit compiles and runs its source on every run (no bytecode
# cache), and importing it here would run the whole app outside a server
SKIPPED = ("levy_dashboard.app", __name__)
# the server's start (dashboard/server/serve.py), the CLI, and the library's passes beyond the fit
# (the fitted-model verbs import the evaluation, the ranking and the diagnostics)
MODULES = ("levy_dashboard.server.serve", "levy_core.cli.main", "levy_core.forecast.forecaster",
           "levy_core.forecast.verbs", "streamlit.web.bootstrap", "streamlit.web.server", "plotly.graph_objects",
           "plotly.io")


def precompile() -> int:
    """Import :data:`MODULES`, what a fit needs and every ``levy_dashboard`` module but the
    app script; the number of modules loaded afterwards."""
    import sys

    from levy_core.forecast.verbs import FittedVerbs

    FittedVerbs.preload()
    for name in MODULES:
        importlib.import_module(name)
    import levy_dashboard

    logging.disable(logging.WARNING)  # the views are imported outside a Streamlit run: its notes are noise
    try:
        for module in pkgutil.walk_packages(levy_dashboard.__path__, "levy_dashboard."):
            if module.name not in SKIPPED:
                importlib.import_module(module.name)
    finally:
        logging.disable(logging.NOTSET)
    return len(sys.modules)


if __name__ == "__main__":
    precompile()
