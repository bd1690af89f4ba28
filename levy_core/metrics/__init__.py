"""Metrics for point predictions with a Gaussian (mean, sigma) predictive.

One metric family per module, full names, and one argument order everywhere
(uncertainty-toolbox convention)::

    metric(y_true, mean, sigma, *, options)

All per-point inputs are 1-D array-likes of equal length ``n`` (anything
``np.asarray`` accepts: lists, numpy arrays, CPU torch tensors). They are
converted to ``float64``. Scalars come back as Python ``float``, curves as
``numpy`` arrays.

Input rules (each violation raises ``ValueError`` naming the argument):

- ``y_true``, ``mean``, ``sigma``, ``draws`` must be finite (no NaN, no inf);
- ``lower`` and ``upper`` may be ``-inf``/``+inf`` (e.g. an infinite conformal
  band) but not NaN, and ``lower <= upper`` pointwise;
- ``sigma >= 0``;
- every level lies in the open interval ``(0, 1)``;
- arrays are non-empty, 1-D, and of equal length.

``sigma = 0`` never produces NaN. The convention is the limit of the Gaussian
predictive as ``sigma -> 0``, i.e. a point mass at ``mean``:

- CRPS becomes the absolute error ``|y - mean|``;
- the central interval is the single point ``[mean, mean]`` (it covers ``y``
  only when ``y == mean`` exactly);
- the PIT is ``0`` below the mean, ``1`` above it and ``0.5`` at it;
- the Gaussian NLL, whose limit is infinite, floors ``sigma`` at
  `NLL_SIGMA_FLOOR` (documented on [`gaussian_nll`][levy_core.metrics.gaussian_nll]).

Layout (one module per metric family; every public name is re-exported here, so
``from levy_core import metrics; metrics.crps_gaussian(...)`` and
``from levy_core.metrics import crps_gaussian`` both work):

- `levy_core.metrics.accuracy` -- [`mean_squared_error`][levy_core.metrics.mean_squared_error], [`mean_absolute_error`][levy_core.metrics.mean_absolute_error];
- `levy_core.metrics.scoring_rules` -- Gaussian and ensemble CRPS, [`gaussian_nll`][levy_core.metrics.gaussian_nll],
  [`interval_score`][levy_core.metrics.interval_score];
- `levy_core.metrics.coverage` -- [`central_interval`][levy_core.metrics.central_interval], [`covered`][levy_core.metrics.covered] (the one coverage rule),
  interval coverage, its standard error and mean width, reliability curves, [`pit_values`][levy_core.metrics.pit_values], [`sharpness`][levy_core.metrics.sharpness];
- `levy_core.metrics.selective` -- [`spearman_sigma_abs_error`][levy_core.metrics.spearman_sigma_abs_error] and the
  risk-coverage curve and area;
- `levy_core.metrics.crps_scale` -- `crps_scale`, the Gaussian spread's scale of
  minimum CRPS (the calibration's and early stopping's).

The input checks live in `levy_core.metrics.checks`.
"""

from levy_core.metrics.accuracy import mean_absolute_error, mean_squared_error
from levy_core.metrics.checks import FloatArray as FloatArray
from levy_core.metrics.coverage import (
    DEFAULT_LEVELS,
    calibration_curve,
    central_interval,
    coverage_standard_error,
    covered,
    interval_coverage,
    interval_mean_width,
    miscalibration_area,
    pit_values,
    sharpness,
)
from levy_core.metrics.crps_scale import crps_scale
from levy_core.metrics.scoring_rules import (
    NLL_SIGMA_FLOOR,
    crps_ensemble,
    crps_ensemble_per_point,
    crps_gaussian,
    crps_gaussian_per_point,
    crps_lognormal_per_point,
    gaussian_nll,
    interval_score,
)
from levy_core.metrics.selective import (
    risk_coverage_area,
    risk_coverage_curve,
    spearman_sigma_abs_error,
)

__all__ = [
    "DEFAULT_LEVELS",
    "NLL_SIGMA_FLOOR",
    "calibration_curve",
    "central_interval",
    "coverage_standard_error",
    "covered",
    "crps_ensemble",
    "crps_ensemble_per_point",
    "crps_gaussian",
    "crps_gaussian_per_point",
    "crps_lognormal_per_point",
    "crps_scale",
    "gaussian_nll",
    "interval_coverage",
    "interval_mean_width",
    "interval_score",
    "mean_absolute_error",
    "mean_squared_error",
    "miscalibration_area",
    "pit_values",
    "risk_coverage_area",
    "risk_coverage_curve",
    "sharpness",
    "spearman_sigma_abs_error",
]
