"""Benchmarks for pyautodiff: problems x backends, run with ``python -m bench``.

Problems register themselves in ``bench.registry``; backends (the pure-Python
reference engine, micrograd, pyautodiff, ...) are loaded by ``bench.backends``
and skipped with a note when they do not import.
"""
