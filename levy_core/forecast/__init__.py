"""The one way in from Python: [`LevyForecaster`][levy_core.forecast.forecaster.LevyForecaster] (fit,
predict, evaluate, backtest, save, load) and its typed results (``results``, ``windows``).
"""
