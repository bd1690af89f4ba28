"""The deterministic offset ``b(q)``: classical forecasters fitted in closed form to each
episode's past (``base_forecast``), the GP candidate (``gp``), season detection
(``seasonality``) and exponential smoothing (``smoothing``).
"""
