"""Start the dashboard's Streamlit server with the library imported and the threads set.

``python -m levy_dashboard.server.serve run dashboard/app.py [Streamlit options]`` is ``python -m
streamlit run …`` (what ``levy dashboard`` and ``make dashboard`` start) with, before the
server listens:

* torch and ``levy_core`` imported, so the first page opened does not wait for them (2–4 s
  of the first band on 2 cores), and the default sample's shipped model loaded before the
  server listens (``levy_dashboard.fitting.shipped.warm_up``: about 1 s);
* the server's own intra-op threads (the views' passes) set to the cores the fit workers
  leave: ``max(1, cores − workers)``, the workers running one thread each
  (``dashboard/fitting/fit_pool.py``), so fits and passes together never oversubscribe the cores;
* the fit workers started (``FitPool.start_workers``, at their low priority): each imports
  torch and what a fit needs while the first page is read, so the first fit a user asks
  for does not wait for that (the sensor sample's first fit, submit to done: 18.5–18.9 s
  with the workers started at the submit, 10.8–11.0 s started ahead; 2026-12-03).

On the way out (SIGTERM, Ctrl-C: Streamlit stops its server and returns), the fit pool is shut
down: every fit cancelled and the workers ended, the whole process tree gone within a few
seconds (``tests/dashboard/test_fit_shutdown.py``).

Nothing else of the dashboard is imported here: its caches belong to the Streamlit runtime.
"""

from __future__ import annotations

import sys


def main() -> None:
    from levy_dashboard.fitting.fit_pool import FIT_THREADS, fit_niceness, workers

    from levy_core.runtime.threads import available_cores, prefer_passive_wait

    try:
        n = workers()
        fit_niceness()
    except ValueError as exc:  # a bad LEVY_DASHBOARD_FIT_WORKERS or _FIT_NICE: said before anything loads
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    prefer_passive_wait()  # before torch loads its OpenMP runtime
    import torch

    import levy_core.forecast.forecaster  # noqa: F401  (imported now, not on the first page)

    torch.set_num_threads(max(1, available_cores() - n * FIT_THREADS))
    from levy_dashboard.fitting.shipped import warm_up

    warm_up()  # the default sample's shipped model, before the server listens
    from levy_dashboard.fitting.fit_pool import pool

    pool().start_workers()  # returns at once: the workers start beside the server
    import plotly.graph_objects  # noqa: F401  (the charts' library, imported now too)
    from streamlit.web.cli import main as streamlit_main

    sys.argv = ["streamlit", *sys.argv[1:]]
    try:
        streamlit_main(prog_name="streamlit")  # returns (SystemExit) once SIGTERM or Ctrl-C stopped the server
    finally:
        # every fit cancelled, the workers terminated: without this the interpreter's exit waits
        # for the running fit to end (65 s and more) and the workers outlive the server
        pool().shutdown()


if __name__ == "__main__":
    main()
