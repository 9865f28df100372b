"""Benchmarks: side-by-side ratios measured in one run. `python -m bench all [--quick]`."""
