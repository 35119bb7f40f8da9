"""The load study's scale table in one run: knee RPS of the keyword mix by number of api
processes (each with its search node and its own replica of the store).

    python3 -m bench.load.scale --processes 8,4,2,1 --users-per-process 4,10,24

One stack starts with the most api processes and is pre-populated once (the load study's keyword
collection, 80,000 documents). Locust (bench/load/locustfile.py) runs the seed mix at each level: a
count's levels are the user counts per process times the count. Then api processes are stopped
down to the next count while the load runs (`supervisorctl stop`: a graceful stop; the kernel's
SO_REUSEPORT spreads new connections over the ones left) and the levels run again. Last, the queue
drains and every document is checked against the acknowledged writes (harness/verify.py).

Pre-populating once is what makes a table of four counts fit in minutes: a fresh 80,000-document
collection per count costs more than all the levels. A count's knee is its last level with search
p50 under 100 ms, stable queues and no errors, as in bench/load. Results: a section under "Runs of
bench/load" in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import tempfile
from pathlib import Path

from bench.common.report import Report
from bench.load.collection import Gauges, LoadCollection
from bench.load.driver import LocustProcess
from bench.load.plan import Level, Plan
from bench.load.run import RUNS_HEADING, Run
from core.bus import Bus
from harness import verify
from harness.stack import Stack


async def scale(
    counts: list[int], per_process: list[int], plan: Plan, locust_processes: int
) -> tuple[dict[int, list[Level]], verify.Verdict]:
    """Levels by api process count, and the verdict of the check against the acknowledged writes."""
    env = {**plan.env, "BRAID_API_PROCESSES": str(max(counts))}  # over the Stack's defaults
    found: dict[int, list[Level]] = {}
    with tempfile.TemporaryDirectory(prefix="braid-scale-") as folder, Stack(env) as stack:
        scratch = Path(folder)
        run = Run(plan, "keyword", stack, scratch)
        bus = await Bus.connect(stack.amqp_url, retry_for_s=30)
        try:
            gauges = Gauges(run.client, bus)
            collection = LoadCollection(run.client, gauges, run.say)
            await collection.create("keyword")
            await collection.prepopulate(plan.documents, plan.prepopulate_minutes)
            oplog = scratch / "oplog.txt"
            locust = LocustProcess(
                stack.base_url, oplog, scratch / "locust.log", seed=1, processes=locust_processes
            )
            try:
                await locust.ready()
                running = max(counts)
                for count in sorted(counts, reverse=True):
                    while running > count:
                        stack.ctl("stop", f"api:api-{running}")
                        running -= 1
                    run.say(f"{count} api processes")
                    found[count] = [
                        await run.measure(locust, gauges, users * count) for users in per_process
                    ]
            finally:
                await locust.stop()
            await collection.drain()
            verdict = await collection.check(oplog)
        finally:
            await bus.close()
            await run.client.aclose()
    return found, verdict


def knee(levels: list[Level]) -> Level | None:
    under = [level for level in levels if level.under_limits]
    return under[-1] if under else None


def report(out: Report, found: dict[int, list[Level]], verdict: str, plan: Plan) -> None:
    out.lines[:0] = [
        f"- {plan.documents:,} documents pre-populated once; levels: {plan.window_s:.0f} s "
        f"measured after {plan.settle_s:.0f} s of settling; api processes stopped between "
        "counts, from the most down",
        "",
    ]
    rows = []
    for count in sorted(found):
        for level in found[count]:
            mark = " (knee)" if level is knee(found[count]) else ""
            rows.append([
                str(count), f"{level.users}{mark}", f"{level.rps:.1f}", f"{level.search_p50:.0f}",
                f"{level.search_p95:.0f}", f"{level.braid_cpu:.0f}", f"{level.locust_cpu:.0f}",
                f"{level.doc_queue_start} → {level.doc_queue_end} "
                f"({level.doc_queue_growth_per_s:+.1f}/s)",
                f"{level.errors} / {level.overloaded}", level.hottest,
            ])  # fmt: skip
    out.table(
        [
            "api processes", "users", "RPS (all)", "search p50 ms", "p95", "Braid CPU %",
            "load gen. CPU %", "document queue", "errors / 503s", "hottest processes",
        ],
        rows,
    )  # fmt: skip
    summary = []  # "8: 1068.8 RPS at 75 users"
    for count in sorted(found):
        best = knee(found[count])
        said = f"{best.rps:.1f} RPS at {best.users} users" if best else "—"
        summary.append(f"{count}: {said}")
    out.text("**Knee by api processes:** " + "; ".join(summary))
    out.text(f"- nothing lost: {verdict}")
    out.text("")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python3 -m bench.load.scale", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--processes", default="2,1", help="api process counts (2,1)")
    parser.add_argument("--users-per-process", default="4,10,24", help="levels (4,10,24)")
    parser.add_argument("--documents", type=int, default=80_000, help="pre-populated (80000)")
    parser.add_argument("--window", type=float, default=30.0, help="measured seconds (30)")
    parser.add_argument("--settle", type=float, default=10.0, help="settling seconds (10)")
    parser.add_argument("--locust-processes", type=int, default=1, help="Locust processes (1)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the stack")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    plan = Plan(configs=["keyword"], documents=args.documents, prepopulate_minutes=10.0)
    plan.window_s, plan.settle_s = args.window, args.settle
    plan.env.update(dict(item.split("=", 1) for item in args.env))
    counts = [int(part) for part in args.processes.split(",")]
    per_process = [int(part) for part in args.users_per_process.split(",")]
    out = Report(
        title="scale table (keyword, api processes)",
        command=shlex.join(["python3", "-m", "bench.load.scale", *sys.argv[1:]]),
        runs_heading=RUNS_HEADING,
    )
    found, verdict = asyncio.run(scale(counts, per_process, plan, args.locust_processes))
    report(out, found, verdict.summary(), plan)
    print(out.markdown())
    if not args.no_write:
        out.append_to()
    sys.exit(0 if verdict.ok else 1)  # a lost write fails the run, as in bench/load


if __name__ == "__main__":
    main()
