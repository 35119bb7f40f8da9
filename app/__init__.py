"""The api process: FastAPI on :8234; validates, enqueues writes, forwards reads to the worker."""
