"""The api process: FastAPI on :8234; validates, enqueues writes, answers searches itself (the
search node app/__main__.py plugs in), and sends admin calls and other reads to the worker."""
