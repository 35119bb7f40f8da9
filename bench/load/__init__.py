"""The Amgix One load study on Braid (docs/benchmarks.md, "Load study (issue 5)"): the seed
workload through Locust against a stack of its own, user counts swept to the knee, 5× the knee,
the recovery, and a check that no acknowledged write was lost.

    python3 -m bench.load keyword hybrid            # the study; --help for the options
    make load ARGS="keyword --smoke"                # the same after `make install`
    python3 -m bench.load.scale --processes 8,4,2,1 # the keyword knee by api processes

__main__.py reads the command line and records the report; run.py runs one configuration;
plan.py is what a study is asked and what it finds (levels, the overload, the verdict);
report.py renders the tables, CSV files and plots; scale.py is the scale table, a runner of its
own on the same pieces. driver.py runs Locust as a process and reads its numbers, locustfile.py
is Locust's user, workload.py the seed workload (documents, queries, collections, mix), and
collection.py the collection a run creates, pre-populates, watches and checks.

Other studies borrow the seed workload's pieces: workload.py (bench/soak, bench/ceiling,
bench/brokerkill, bench/writecost), collection.py (bench/soak, bench/ceiling, bench/brokerkill,
bench/relevance) and driver.py (bench/soak).
"""
