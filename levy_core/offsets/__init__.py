"""The deterministic offset ``b(q)``: a classical forecaster chosen per channel on rolling
origins and served per episode (``base_forecast``), the candidate forecasters (``candidates``;
the harmonic ones: ``harmonic``), the GP candidate (``gp``), autoregressions
(``autoregression``), season detection (``seasonality``), exponential smoothing
(``smoothing``), the choice's bootstrap (``bagging``) and what the model file records
(``spec``).
"""
