"""Calibration of the band: the normalised score and its floor (``scores``), the scaled
Gaussian (``scaled_gaussian``), split conformal (``split_conformal``), both fitted on one split
(``calibrate``) and their saved state (``saved_checks``); the adaptive walk over origins
(``adaptive``, ``over_time``) and recency-weighted conformal (``recency``); per-lead scales
(``horizon_scale``), per-query scales (``query_scale``) and coverage (``coverage``).
"""
