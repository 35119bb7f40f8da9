"""Bulk ingest end to end (the loader, until indexed) against a peer on the same documents:
sentence-transformers' own `encode()` (dense) and Milvus Lite's BM25 collection (keyword),
`python3 -m bench.ingest`. __main__.py runs it; braid.py is Braid's side; baseline.py is the
`encode()` baseline in a process of its own (bench/encoders uses it too); milvus.py is Milvus Lite
in one; keyword.py makes the keyword corpus and row; precision.py says what precision ran.
"""
