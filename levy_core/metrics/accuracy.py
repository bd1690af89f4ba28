"""Accuracy of the point prediction: errors of ``mean`` alone, ``sigma`` unused.

``metric(y_true, mean)``; inputs as in [`levy_core.metrics`][levy_core.metrics].
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from levy_core.metrics.checks import check_point_predictions

__all__ = ["mean_absolute_error", "mean_squared_error"]


def mean_squared_error(y_true: ArrayLike, mean: ArrayLike) -> float:
    """Mean squared error ``mean((y - mean)^2)``.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        Observed targets.
    mean : array-like, shape (n,)
        Point predictions.

    Returns
    -------
    float
    """
    y, mu = check_point_predictions(y_true, mean)
    return float(np.mean((y - mu) ** 2))


def mean_absolute_error(y_true: ArrayLike, mean: ArrayLike) -> float:
    """Mean absolute error ``mean(|y - mean|)``.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        Observed targets.
    mean : array-like, shape (n,)
        Point predictions.

    Returns
    -------
    float
    """
    y, mu = check_point_predictions(y_true, mean)
    return float(np.mean(np.abs(y - mu)))
