"""Search, run in every api process (its search node, `node.py`) and in the worker (the searches
of an api still loading its replica): one door (`searching.py`), then the query pipeline
(`querying.py`: planning, one batched store query, fusion, then grouping, facets and joins).
Imports `core` and `store`."""
