"""The network around the operator: its hyper-parameters (``config``), what goes in and out
(``batch``), the encoder both models share (``encoder``), the cross-attention's per-head
projections (``cross_heads``), the Lévy model (``levy_model``) and its softmax twin
(``softmax_twin``), the MC-Dropout twin's layer (``dropout``) and the bounds a saved model's
numbers must keep (``limits``).
"""
