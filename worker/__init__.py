"""The worker process: the index pipeline (`consumer.py` batches the document queue,
`indexing.py` applies each batch to the store), collection admin and sync writes by RPC
(`admin.py`, `browsing.py`), per-document locks and BM25 statistics in Redis (`locks.py`,
`lexstats.py`), the ledger's reaper (`reaper.py`), and its lifecycle (`service.py`). It owns the
store (`store/`) and runs searches through `search/` while an api process loads its replica."""
