"""The embedded store: one qdrant-edge shard per collection in a folder one process owns
(`store.py`), its engine calls (`calls.py`), type conversions (`convert.py`), the folder's
layout and crash safety (`folder.py`), optimization in a child process (`optimize.py`), a
shard's gate (`gate.py`), and freed heap given back to the system after a swap (`heap.py`)."""
