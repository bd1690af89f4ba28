"""The process around the computation: intra-op threads and OpenMP's wait policy (``threads``),
the niceness of long jobs (``priority``). Imports nothing else of the library.
"""
