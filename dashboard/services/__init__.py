"""The dashboard's services: typed, cached wrappers around ``levy_core``, one module per
concept — the only place the views reach the library through.

* ``data``: where the data comes from (a sample, the file given at start, an upload),
  reading it once (``st.cache_resource`` by the file's SHA-256, the column mapping and the
  time unit), the Data panel's preview;
* ``fit``: the settings and their limits, the fit store and the server's pool of fit
  workers, shipped and saved models, the model download (``session/controller.py`` decides which
  model a session shows);
* ``band``: the series and channels offered, the dense grid of one series and channel
  (one model pass, cached) and its bands at a level and type;
* ``evidence``: held-out queries, what a query drew on and why its band is as wide as it
  is, the sampled operator's draws;
* ``origins``: rolling origins (few series): the forecast past the end, the backtest;
* ``evaluation``: both methods on the test split, calibration curves, the guarantee's
  checks, the trust ranking, the CSV downloads;
* ``monitoring``: the band's coverage on new data, drift;
* ``per_query``: the band per query: coverage by quintile of width, evidence and lead, and
  risk–coverage against the per-channel constant;
* ``report``: what the HTML report shows (``report.build_report`` draws it);
* ``advise``: measure next; ``watch``: the replay of new observations.

Every expensive result is cached (``st.cache_data`` / ``st.cache_resource``, process-wide:
shared by every session) by the data's key (``data.data_key``: the frame and the clock its
times are shown in) or the fit key and its own arguments; the fitted model is passed as an
unhashed ``_res`` argument, so the key must say exactly which model on which data it is. No
cached value holds anything of one session's (its file name, its fit time). No service builds a figure (``charts``
does, called by the views) or lays out a widget (the views do); tables are laid out by
``display.tables`` and mapped to the user's ids and clock by ``data.user_clock``.
"""

from __future__ import annotations

from levy_dashboard.services import (
    advise,
    band,
    data,
    evaluation,
    evidence,
    fit,
    monitoring,
    origins,
    per_query,
    report,
    watch,
)

__all__ = ["advise", "band", "data", "evaluation", "evidence", "fit", "monitoring", "origins", "per_query", "report", "watch"]
