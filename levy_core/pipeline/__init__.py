"""The library's internal steps behind [`LevyForecaster`][levy_core.forecast.forecaster.LevyForecaster]:
fit → predict → evaluate → rank, one module per step. Not public: the CLI, the dashboard, the
benchmarks and the docs reach them through ``levy_core.forecast`` (``docs/reference/index.md``
lists the public API; ``tests/project/test_public_api.py`` keeps the front ends to it). Callers
inside the library import the module that defines a name:

* ``recipe`` — the fit in steps (prepare → train → calibrate), ``add_twin``;
* ``modelfile`` — ``FittedModel``, its save and ``load_model`` (``model_loading``: each read checked);
* ``prepared`` — the data in the model's series space, prepared once (``prepare``);
* ``predict`` — at a split's observed queries, on a grid, at given queries, past each series' end;
* ``predictive`` — one method's predictive as an object (std, original units) and its ``Band`` (every level's bounds, derived once);
* ``evaluation`` — every method scored the same way, the coverage guarantee;
* ``ranking`` and ``diagnostics`` — trust ranking, attention weights, operator draws;
* ``user_frames``, ``user_units``, ``bands`` — results in the user's ids, clock and band columns.

Units: the models work on per-channel min-max normalised values (recorded from the training
series). Everything returned to a user (``predict_grid``, ``predict_queries``, the PRED.csv
of ``evaluate``) is in the data's original units; the metrics of ``evaluate`` are on the
normalised scale (as t-PatchGNN reports) and coverage is scale-free.
"""
