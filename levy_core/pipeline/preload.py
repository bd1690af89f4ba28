"""What a fit imports on first use, imported ahead of it.

The library imports its heavy dependencies where they are used (``import levy_core`` stays
light, ``levy --help`` answers in under a second). A process that exists to fit — a
dashboard fit worker — would then pay them inside its first job: about 2.7 s on 2 cores for
SciPy's signal and statistics, scikit-learn's Gaussian process and the fit's own modules,
added to the first fit a user waits for. `preload_fit` imports them when that process
starts instead. ``tests/pipeline/test_preload.py`` fits after it in a fresh process and
requires that no module is imported during the fit, so this list cannot go stale unnoticed.
"""

from __future__ import annotations

import importlib

__all__ = ["FIT_MODULES", "preload_fit"]

# the modules a fit (either task, with its twin) imports on first use
FIT_MODULES = (
    "torch",
    "levy_core.pipeline.recipe",
    "levy_core.pipeline.modelfile",
    "levy_core.offsets.base_forecast",
    "levy_core.serving.modelzip",
    "scipy.signal",  # the seasonality periodogram (levy_core.offsets.seasonality)
    "scipy.stats",
    "sklearn.gaussian_process",  # the Gaussian-process offset (levy_core.offsets.gp)
    "sklearn.exceptions",
    "pyarrow.pandas_compat",
    "torch.utils._device",
)


def preload_fit() -> None:
    """Import every module of `FIT_MODULES` (idempotent; a few seconds the first time)."""
    for name in FIT_MODULES:
        importlib.import_module(name)
