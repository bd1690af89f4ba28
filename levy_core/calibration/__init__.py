"""Calibration of the band: the Gaussian scale and split conformal (``calibrate``, ``state``),
the adaptive walk over origins (``adaptive``, ``over_time``), per-lead scales
(``horizon_scale``) and coverage (``coverage``).
"""
