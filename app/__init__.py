"""The api process: FastAPI on :8234. It validates and enqueues writes (`services/`), answers
searches itself through the search node `__main__.py` plugs in (`search/node.py`), sends admin
calls and other reads to the worker, and serves metrics (`metrics/`) and the dashboard; the HTTP
plumbing around its routes is in `http/`. Imports `core` and `search`, never `worker`."""
