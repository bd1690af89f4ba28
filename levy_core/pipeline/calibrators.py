"""Each method's calibration fitted on the observed queries of held-out series: on the
calibration split (`fit_calibrators`), and for a panel's new series on the calibration and test
splits together (`new_series_calibrators`)."""

from __future__ import annotations

import pandas as pd

from levy_core.calibration.calibrate import Calibrator
from levy_core.calibration.scaled_gaussian import ScaledGaussian
from levy_core.episodes.tasks import EpisodeBuilder
from levy_core.pipeline.modelfile import CALIBRATION_ATTRIBUTES, FittedModel
from levy_core.pipeline.predict import observed_queries

__all__ = ["fit_calibrators", "new_series_calibrators"]

# each method's mean and spread columns in a prediction frame
_COLUMNS = {"levy": ("mean_norm", "spread_norm"), "mc": ("mc_mean_norm", "mc_std_norm"),
            "last_value": ("lv_mean_norm", "lv_std_norm")}


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


def new_series_calibrators(fitted: FittedModel, builder: EpisodeBuilder, cal: pd.DataFrame, test_ids: list[str], *,
                           mc_passes: int = 20, keys: tuple[str, ...] = ("levy", "mc", "last_value")
                           ) -> dict[str, Calibrator]:
    """Each method's calibrator for a panel's new series: the scale fitted on the calibration
    queries ``cal`` (as `fit_calibrators` returns them, with the methods' columns) and the
    test series' together, and the calibration split's conformal scores extended by the test
    series' (`SplitConformal.extended`, its floor), for the methods in ``keys`` that ``fitted``
    has calibrated on the calibration split."""
    test = observed_queries(fitted, builder, test_ids, mc_passes=mc_passes if fitted.twin is not None else 0)
    if fitted.last_value is not None:
        test["lv_mean_norm"], test["lv_std_norm"] = fitted.last_value.predict(builder, test_ids)
    out = {}
    for key, (mean, spread) in _COLUMNS.items():
        own = getattr(fitted, CALIBRATION_ATTRIBUTES[key])
        if key not in keys or own is None or mean not in test or mean not in cal:
            continue
        both = pd.concat([cal[["y_norm", mean, spread, "channel"]], test[["y_norm", mean, spread, "channel"]]])
        calibrator = Calibrator()
        calibrator.scaled_gaussian = ScaledGaussian().fit(both["y_norm"], both[mean], both[spread],
                                                          groups=both["channel"].to_numpy())
        calibrator.conformal = own.conformal.extended(test["y_norm"], test[mean], test[spread],
                                                      groups=test["channel"].to_numpy() if own.conformal.is_grouped else None)
        out[key] = calibrator
    return out
