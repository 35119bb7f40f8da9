"""Replication of the worker's embedded store to the search node of every api process: the
worker's side (`replicator.py`: every write broadcast after it is applied, and copies of the
shards on request), the search node's side (`replica.py`), the stream's messages as bytes
(`wire.py`), and the marks file both read (`marks.py`)."""
