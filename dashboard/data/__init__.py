"""The user's data, under the services: where it comes from (``sources``: a bundled sample, the
file given at start, an upload, as bytes) and the user's series ids and clock every view shows
(``user_clock``: from the model's pseudo-series and hours back to the user's, and back).
"""
