"""The api's metrics: its own recorder and publishing loop (`sampler.py`), every node's counters
and the trend snapshots in Redis (`store.py`), their shaping into the /v1/metrics answers
(`views.py`, `models.py`, `definitions.py`), and the Prometheus exposition (`prometheus.py`)."""
