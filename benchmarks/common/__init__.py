"""Code the benchmarks share (the stay bootstrap, the signal tables, the validity checks): no
command of its own."""
