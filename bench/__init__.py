"""Benchmarks, run by hand (``python -m bench.<name>`` from the repository's root); each says what it measures."""
