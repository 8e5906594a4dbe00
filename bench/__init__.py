"""Benchmarks for issue 8: the harness costs almost nothing beside the model and the tests.

Each module measures one ratio in one run and returns a plain dict of figures; `run.py` runs
them all, prints a table and writes `bench/results/latest.json`. See docs/benchmarks.md.
"""
