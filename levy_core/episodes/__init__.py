"""From observations to training examples: forecast origins (``origins``), per-channel scaling
(``scaling``), episode building (``tasks``) and the trivial predictors scored beside the
model (``baselines``).
"""
