"""Each method's calibration fitted on the observed queries of some held-out series."""

from __future__ import annotations

import pandas as pd

from levy_core.calibration.calibrate import Calibrator
from levy_core.episodes.tasks import EpisodeBuilder
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import observed_queries

__all__ = ["fit_calibrators"]


def fit_calibrators(fitted: FittedModel, builder: EpisodeBuilder, ids: list[str], *,
                    mc_passes: int = 20) -> tuple[pd.DataFrame, dict[str, Calibrator]]:
    """Each method's `Calibrator` (keys "levy", and "mc" and "last_value" where the model has
    them) fitted on the observed queries of the episodes ``ids``, with those queries'
    predictions (normalised units)."""
    cal = observed_queries(fitted, builder, ids, mc_passes=mc_passes if fitted.twin is not None else 0)
    # conformal per channel: each channel's band holds its level, not only the mix of channels
    groups = cal["channel"].to_numpy()
    out = {"levy": Calibrator().fit(cal["y_norm"], cal["mean_norm"], cal["spread_norm"], groups=groups)}
    if fitted.twin is not None:
        out["mc"] = Calibrator().fit(cal["y_norm"], cal["mc_mean_norm"], cal["mc_std_norm"], groups=groups)
    if fitted.last_value is not None:  # the baseline, calibrated exactly like the models
        cal["lv_mean_norm"], cal["lv_std_norm"] = fitted.last_value.predict(builder, ids)
        out["last_value"] = Calibrator().fit(cal["y_norm"], cal["lv_mean_norm"], cal["lv_std_norm"], groups=groups)
    return cal, out
