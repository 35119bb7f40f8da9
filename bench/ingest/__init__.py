"""Bulk ingest end to end (the loader, until indexed) against sentence-transformers' own
`encode()` on the same texts: `python3 -m bench.ingest`. __main__.py runs it; baseline.py is the
`encode()` baseline in a process of its own (bench/encoders uses it too).
"""
