"""Wire schemas of the v1 API (API.md), shared by the api (validation) and the worker (meaning)."""
