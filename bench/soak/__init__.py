"""The soak benchmark: an hour of the seed workload at half the keyword (or hybrid) knee, with the
memory of every process of the stack (RSS and anonymous, the model-holding encoders included) and
the latency recorded each minute; anonymous memory should stay flat, no request should fail (503s
aside) and no acknowledged write should be lost.

    python3 -m bench.soak                     # ~70 min: 100,000 documents, 4 users, 60 minutes
    python3 -m bench.soak --hybrid            # ~70 min: 10,000 documents of 3-300 words, 2 users
    python3 -m bench.soak --smoke             # ~4 min: 500 documents, 2 minutes, nothing recorded
    python3 -m bench.soak --hybrid --smoke    # the same, hybrid

run.py runs it (the load study's workload and Locust driver, bench/load), bench/common/memory.py
reads RSS and anonymous memory per supervisord program, findings.py computes and judges,
report.py renders; __main__.py ties them together and exits 1 when the verdict fails.
"""
