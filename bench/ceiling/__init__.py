"""The engine's ceiling: what a keyword search costs through Braid, next to what the same search
costs the embedded engine (qdrant-edge) alone, measured in one run on the same collection.

    python3 -m bench.ceiling                                   # 80,000 documents, 30 s windows
    python3 -m bench.ceiling --documents 3000 --seconds 10 --no-write   # a short try, printed

A search costs Braid several CPU-milliseconds across api, worker, broker and Redis while the
engine answers in well under one; this puts both in one table (searches/s, latency, CPU-ms per
search by process) so a change to the search path can be judged against the floor it cannot go
under. traffic.py drives Braid end to end over HTTP, engine.py runs the worker's exact requests
against the shard directly (1 thread, then one per core), bench/common/cpu.py reads CPU per
supervisord program, results.py does the arithmetic and the table; __main__.py ties them together.
"""
