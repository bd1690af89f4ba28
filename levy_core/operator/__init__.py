"""The Lévy attention operator: its types (``types``), the exact pass (``attention``) with its
fused inputs and argument checks, ``φ`` (``phi``), the Monte-Carlo sampler that checks the
identity (``sampling``) and the ``nn.Module`` layer (``layers``). Depends on PyTorch only.
"""
