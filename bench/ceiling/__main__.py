"""`python3 -m bench.ceiling`: one stack, Braid end to end, then the worker stopped and its shard
queried directly; prints the table and appends it to docs/benchmarks.md (unless --no-write)."""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from bench.ceiling import engine, traffic
from bench.ceiling.results import ENGINE, HEADING, Ceiling, Row, section
from bench.common.report import Report
from bench.load import workload
from harness.stack import Stack

STACK_ENV = {"BRAID_ENCODERS": "2", "BRAID_ENCODER_MODELS": "1"}  # bench/load's keyword config
SEED = 1
# The dead versions the worker lets a keyword shard hold before it optimizes it (20 % of its live
# points: store/edge/shard.py).
CHURN = 0.2


@dataclass
class Plan:
    documents: int = 80_000
    seconds: float = 30.0
    concurrency: int = 8
    queries: int = 2_000
    env: dict[str, str] = field(default_factory=dict)  # over STACK_ENV
    write: bool = True


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] ceiling: {message}", flush=True)


def parse(argv: list[str]) -> Plan:
    parser = argparse.ArgumentParser(
        prog="python3 -m bench.ceiling",
        description="CPU-ms per keyword search through Braid end to end, next to the embedded "
        "engine alone on the same shard (1 thread and one per core).",
    )
    parser.add_argument("--documents", type=int, help="bulk-loaded documents (80000)")
    parser.add_argument("--seconds", type=float, help="each measured window (30)")
    parser.add_argument("--concurrency", type=int, help="searches in flight end to end (8)")
    parser.add_argument("--queries", type=int, help="distinct query texts, cycled (2000)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the stack")
    parser.add_argument("--no-write", action="store_true", help="print instead of recording")
    args = parser.parse_args(argv)
    plan = Plan()
    for name in ("documents", "seconds", "concurrency", "queries"):
        if getattr(args, name) is not None:
            setattr(plan, name, getattr(args, name))
    if min(plan.documents, plan.seconds, plan.concurrency, plan.queries) <= 0:
        parser.error("--documents, --seconds, --concurrency and --queries must be positive")
    plan.env.update(dict(item.split("=", 1) for item in args.env))
    plan.write = not args.no_write
    return plan


def engine_rows(
    root: Path,
    searches: list[engine.Planned],
    wordy: list[engine.Planned],
    tops: dict[int, list[str]],
    seconds: float,
) -> tuple[list[Row], tuple[int, int]]:
    """The engine's rows (1 thread, then one per core: Braid's query, then with the payloads'
    retrieve; then the arms' batch and the query without its trigram terms (`wordy`) in 1 thread)
    and how many of Braid's answers its top matched."""
    with engine.open_shard(root, workload.COLLECTION) as (shard, schema):
        compiled = engine.compile_all(shard, schema, searches)
        words_only = engine.compile_all(shard, schema, wordy)
        same = sum(compiled[index].top_docs == ids for index, ids in tops.items())
        plans = [
            (threads, label, work)
            for threads in sorted({1, os.cpu_count() or 1})
            for label, work in (
                ("Braid's query", engine.summed_only),
                ("Braid's query + retrieve", engine.summed_and_retrieve),
            )
        ]
        plans.append((1, "the arms' batch (fused outside)", engine.batch_only))
        rows = []
        for threads, label, work in plans:
            name = f"engine, {threads} thread{'s' if threads > 1 else ''}, {label}"
            say(f"{name}: {seconds:.0f} s")
            timing = engine.timed(work(shard, compiled), len(compiled), threads, seconds)
            rows.append(Row(name, timing.searches, timing.seconds, {ENGINE: timing.cpu_s}))
        name = "engine, 1 thread, Braid's query without its trigram terms"
        say(f"{name}: {seconds:.0f} s")
        timing = engine.timed(engine.summed_only(shard, words_only), len(words_only), 1, seconds)
        rows.append(Row(name, timing.searches, timing.seconds, {ENGINE: timing.cpu_s}))
        written = engine.churned(shard, CHURN)
        name = f"engine, 1 thread, Braid's query after {written:,} overwrites"
        say(f"{name}: {seconds:.0f} s")
        timing = engine.timed(engine.summed_only(shard, compiled), len(compiled), 1, seconds)
        rows.append(Row(name, timing.searches, timing.seconds, {ENGINE: timing.cpu_s}))
        return rows, (same, len(tops))


def run(plan: Plan) -> Ceiling:
    bodies = traffic.bodies(plan.queries, SEED)
    with Stack({**STACK_ENV, **plan.env}) as stack:
        config = asyncio.run(traffic.prepare(stack, plan.documents, say))
        braid = asyncio.run(traffic.end_to_end(stack, bodies, plan.concurrency, plan.seconds, say))
        say("stopping the worker (it closes the store)")
        stopped = stack.ctl("stop", "worker")
        if "stopped" not in stopped:
            raise RuntimeError(f"supervisorctl stop worker: {stopped}")
        searches = [engine.plan(config, body) for body in bodies]
        wordy = [engine.plan(config, body, trigrams=False) for body in bodies]
        rows, agreement = engine_rows(
            stack.data_dir / "store", searches, wordy, braid.tops, plan.seconds
        )
    return Ceiling(
        documents=plan.documents,
        concurrency=plan.concurrency,
        seconds=plan.seconds,
        threads=os.cpu_count() or 1,
        queries=plan.queries,
        braid=braid.row,
        engine=rows,
        agreement=agreement,
        restarted=braid.restarted,
        engine_version=version("qdrant-edge-py"),
    )


def main() -> None:
    plan = parse(sys.argv[1:])
    report = Report(
        title=f"engine ceiling (keyword, {plan.documents:,} documents)",
        command=shlex.join(["python3", "-m", "bench.ceiling", *sys.argv[1:]]),
        runs_heading=HEADING,
    )
    section(report, run(plan))
    print(report.markdown())
    if plan.write:
        report.append_to()


if __name__ == "__main__":
    main()
