"""The encoder benchmark: the model called directly vs Braid's encoder pool, query latency idle
and under a bulk flood, direct vs routed, K=1 vs K=2 (docs/benchmarks.md, "Runs of
bench/encoders").

    python3 -m bench.encoders            # appends to docs/benchmarks.md
    python3 -m bench.encoders --quick    # fewer texts and rounds, to try it

__main__.py runs it; pool.py embeds through RabbitMQ and the pool (throughput, latency, a flood
process). The model called directly is bench/common/raw.py, the sentence-transformers baseline
bench/ingest/baseline.py.
"""
