"""Benchmarks: each study is one package or one module, run with `python3 -m`, and most append
what they found to docs/benchmarks.md (relevance to docs/relevance.md). Each starts its own stack
(harness/stack.py: free ports, a temporary data folder) unless it says otherwise.

Studies (`--help` on each for its options):

    load/        python3 -m bench.load        the Amgix One load study: user sweep to the knee,
                                              overload, recovery, nothing lost (make load ARGS=…
                                              installs what is missing first)
                 python3 -m bench.load.scale  the keyword knee by number of api processes
    encoders/    python3 -m bench.encoders    the raw model vs the encoder pool
    soak/        python3 -m bench.soak        an hour at half the knee: memory and latency
    ceiling/     python3 -m bench.ceiling     CPU-ms per keyword search, Braid vs the bare engine
    ingest/      python3 -m bench.ingest      bulk ingest vs encode() and Milvus Lite
    relevance/   python3 -m bench.relevance   nDCG@10 and recall@100 on BEIR SciFact vs BM25
    brokerkill.py  python3 -m bench.brokerkill  kill -9 of RabbitMQ under a write stream
    container.py   python3 -m bench.container   the image: size, build, start, memory, stop
    writecost.py   python3 -m bench.writecost   CPU-ms per async upsert (prints only)
    resend.py      python3 -m bench.resend      payload-only re-sends into a running Braid

Shared by several studies: common/ (timing, /proc, CPU and memory per supervisord program,
py-spy, Prometheus scraping, pseudo-English texts, the model called directly, the report
appended to docs/benchmarks.md). The load study's seed workload, its collection and its Locust
driver (load/workload.py, load/collection.py, load/driver.py) are used by the studies that run
that workload too.
"""
