"""The Amgix One load study on Braid: pre-populate, sweep user counts, overload, check nothing lost.

    python3 -m bench.load keyword hybrid        # the whole study (about 2 hours on 2 cores)
    python3 -m bench.load keyword --users 8,16  # chosen levels instead of the search for the knee
    python3 -m bench.load --smoke               # a two-minute run of every step, to try it
    make load ARGS="keyword --smoke"            # the same, after installing what is missing

For each configuration it starts its own stack (harness/stack.py: the repo's
supervisord.conf on free ports in a temporary folder), creates the collection, bulk-loads it
(`POST …/documents/bulk`, 100 documents a request), then runs Locust
(bench/load/locustfile.py) as a separate process and drives it through Locust's web API: for
each user count ramp, settle, reset the statistics, measure for a fixed window. Levels grow by
1.5× until search p50 reaches 100 ms or the document queue grows; the last level under both
limits is the knee. Then 5× the knee's users for 10 minutes, back down to the knee, and time the
recovery. Last, it waits for the queue to drain and checks every document against the
acknowledged writes (harness/verify.py).

Results: a section under "Runs of bench/load" in docs/benchmarks.md, and CSV and PNG files in
docs/load/. Everything on one machine: the load generator's CPU is reported beside Braid's.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import tempfile
from pathlib import Path

from bench.common.report import Report
from bench.load import workload
from bench.load.plan import Plan
from bench.load.run import OUT_DIR, RUNS_HEADING, run_config


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python3 -m bench.load", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("configs", nargs="*", help="keyword, hybrid (default: both)")
    parser.add_argument("--users", help="comma-separated user counts (default: find the knee)")
    parser.add_argument("--documents", type=int, help="pre-populated documents (default 80000)")
    parser.add_argument("--prepopulate-minutes", type=float, help="cap on pre-population (30)")
    parser.add_argument("--window", type=float, help="measured seconds per level (60)")
    parser.add_argument("--settle", type=float, help="seconds between ramp and measuring (60)")
    parser.add_argument("--overload-minutes", type=float, help="at 5× the knee (10; 0: none)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the stack")
    parser.add_argument("--profile-seconds", type=float, help="py-spy at the knee (20; 0: none)")
    parser.add_argument("--locust-processes", type=int, help="Locust processes (1; more cores)")
    parser.add_argument("--smoke", action="store_true", help="a short run of every step")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    configs = args.configs or (["keyword"] if args.smoke else ["keyword", "hybrid"])
    if unknown := set(configs) - set(workload.CONFIGS):
        parser.error(f"unknown configuration {sorted(unknown)}; choose from keyword, hybrid")
    plan = Plan.smoke_test(configs) if args.smoke else Plan(configs=configs)
    if args.users:
        plan.users = [int(part) for part in args.users.split(",")]
    if args.documents is not None:
        plan.documents = args.documents
    if args.prepopulate_minutes is not None:
        plan.prepopulate_minutes = args.prepopulate_minutes
    if args.window is not None:
        plan.window_s = args.window
    if args.settle is not None:
        plan.settle_s = args.settle
    if args.overload_minutes is not None:
        plan.overload_s = args.overload_minutes * 60
    plan.env.update(dict(item.split("=", 1) for item in args.env))
    if args.profile_seconds is not None:
        plan.profile_s = args.profile_seconds
    if args.locust_processes is not None:
        plan.locust_processes = args.locust_processes
    plan.write = not args.no_write and not args.smoke
    sys.exit(asyncio.run(study(plan)))


async def study(plan: Plan) -> int:
    from bench.load import report as tables

    report = Report(
        title="load study (" + ", ".join(plan.configs) + ")",
        command=shlex.join(["python3", "-m", "bench.load", *sys.argv[1:]]),
        runs_heading=RUNS_HEADING,
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="braid-load-") as scratch:
        for config in plan.configs:
            results.append(await run_config(plan, config, Path(scratch)))
    failed = tables.write(report, plan, results, OUT_DIR if plan.write else None)
    print(report.markdown())
    if plan.write:
        report.append_to()
    return 1 if failed else 0


if __name__ == "__main__":
    main()
