"""What no other tool says: which measurement would narrow the band most (``advise``) and which
new observation is a surprise (``watch``, ``watch_calibration``).
"""
