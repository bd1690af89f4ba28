"""Lévy attention: single-pass predictive uncertainty for irregularly sampled time series."""

from levy_core.attention import LevyOutput, LevyPrior, TimeDecay, levy_attention
from levy_core.forecast import LevyForecaster
from levy_core.layers import LevyAttention
from levy_core.sampling import sample_levy_attention

__all__ = ["LevyAttention", "LevyForecaster", "LevyOutput", "LevyPrior", "TimeDecay", "levy_attention", "sample_levy_attention"]
__version__ = "0.2.0"
