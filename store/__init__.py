"""The store layer, opened by the worker (to write) and by every api process (to search): the
`Store` protocol (`protocol.py`) split into reads and writes, its two backends (the embedded
Qdrant engine in `edge/`, a Qdrant server in `server.py`, chosen by `backends.py`), the
replication of the embedded store to the api processes (`replication/`), and how a document
becomes store points (`slots.py`, `payload.py`, `vectorizer.py`). Imports `core` only."""
