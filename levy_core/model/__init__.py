"""The network around the operator: encoders, heads and read-out (``levy_model``:
`LevyModel`, `Batch`), the MC-Dropout twin's layer (``dropout``) and the
bounds a saved model's numbers must keep (``limits``).
"""
