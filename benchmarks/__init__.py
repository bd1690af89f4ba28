"""The benchmarks whose figures the docs quote: each ``benchmarks/NAME.py`` is one command, with
its page under ``docs/benchmarks/`` and its log under ``benchmarks/results/``.

Run one from the repository root, as ``python benchmarks/NAME.py`` or ``python -m benchmarks.NAME``;
tests import them as a package (``from benchmarks import anchors``). ``benchmarks/common/`` holds
code several benchmarks share; ``benchmarks/studies/`` the one-off studies that decided something
(their conclusions: ``benchmarks/results/NOTES.md``).
"""
