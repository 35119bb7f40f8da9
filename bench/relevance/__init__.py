"""Relevance on a BEIR set through the public API, next to a BM25 reference in the same run:
`python3 -m bench.relevance` (docs/relevance.md). __main__.py runs it and appends the tables;
beir.py reads the set, computes nDCG@10 and recall@100 and makes the typo'd queries,
reference.py is the BM25 reference (bm25s), codes.py the catalogue of part codes and the forms a
user asks them by, service.py is Braid through its API (bench/ingest reads SciFact with beir.py
too).
"""
