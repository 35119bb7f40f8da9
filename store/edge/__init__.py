"""The embedded store: one qdrant-edge shard per collection in a folder one process owns
(`store.py`), its engine calls (`calls.py`), type conversions (`convert.py`), the folder's
layout and crash safety (`folder.py`), background optimization (`optimize.py`), and the
shard's gate and the bounded heap of pending optimizations (`gate.py`, `heap.py`)."""
