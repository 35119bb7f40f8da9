"""What several benchmarks share: measure.py (percentiles, medians, slopes), procs.py (CPU and
memory of a process tree from /proc), memory.py and cpu.py (memory and CPU per supervisord
program of the stack), pyspy.py (py-spy stacks as self and inclusive time), scrape.py (Braid's
Prometheus exposition: histogram quantiles, promtool's verdict), texts.py (deterministic
pseudo-English), raw.py (the model called directly, as a holder loads it) and report.py (a run's
markdown section appended to docs/benchmarks.md, and CSV). Nothing here runs on its own.
"""
