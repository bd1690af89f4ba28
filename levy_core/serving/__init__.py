"""Scoring and shipping a fitted model at scale: files in chunks (``chunked``), Ray
(``ray_engine``), the safe model archive (``modelzip``), output tables (``table_writer``,
``csv_safety``) and coverage monitoring (``monitoring``).
"""
