"""One-off studies that decided something: each one's conclusion is one line of
``benchmarks/results/NOTES.md``. Kept to be re-run (``python benchmarks/studies/NAME.py``), not
quoted as current figures; the figures the docs quote come from the benchmarks one folder up."""
