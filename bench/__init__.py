"""Benchmark runners; `python -m bench.encoders` measures the encoders into docs/benchmarks.md."""
