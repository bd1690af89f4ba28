"""Training a [`LevyModel`][levy_core.model.levy_model.LevyModel] on episodes with early stopping
(``train``).
"""
