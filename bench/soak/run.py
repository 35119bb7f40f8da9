"""The soak's run: a stack of its own, the load collection (keyword, or hybrid: keyword and the
model's dense vector) pre-populated, Locust at a fixed user count for the planned minutes with a row
every minute, then drain and check nothing was lost."""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.common import memory, procs
from bench.load import workload
from bench.load.collection import Gauges, LoadCollection
from bench.load.driver import LocustProcess, number
from bench.soak.findings import (
    WARMUP_MINUTES,
    Answers,
    Minute,
    SoakResult,
    count_answers,
    restarts,
)
from core.bus import Bus
from harness.stack import Stack

SAMPLE_S = 5.0  # document queue samples within a minute
MINUTE_S = 60.0
STACK_ENV = {"BRAID_ENCODERS": "2", "BRAID_ENCODER_MODELS": "1"}  # as bench/load runs it


# Hybrid: every document goes through the model, ~160 tokens each on average (twice the seed
# documents'): 32/s with the machine shared, so 10,000 keep pre-population within about 5 minutes
# (under 2 on a quiet one). The writes draw their ids from those pre-populated, so the collection
# keeps that size. 2 users of the hybrid mix answered 62 RPS in a 3-minute try (3: 96.2), half
# the hybrid knee of 96-126 RPS at 3-9 users (docs/benchmarks.md).
HYBRID_DOCUMENTS = 10_000
HYBRID_USERS = 2


@dataclass
class Plan:
    hybrid: bool = False  # the hybrid collection and varied document lengths
    # The writes draw random ids from the pre-populated ones: starting full keeps the collection at
    # its steady size, so memory that grows points at a leak, not at more data.
    documents: int = 100_000
    users: int = 4  # half the keyword knee (8 users) in docs/benchmarks.md
    minutes: int = 60
    warmup: int = WARMUP_MINUTES
    prepopulate_minutes: float = 30.0
    env: dict[str, str] = field(default_factory=dict)  # over STACK_ENV
    write: bool = True

    @classmethod
    def defaults(cls, hybrid: bool = False, smoke: bool = False) -> Plan:
        plan = cls(hybrid=hybrid)
        if hybrid:
            plan.documents, plan.users = HYBRID_DOCUMENTS, HYBRID_USERS
        if smoke:
            plan.documents, plan.minutes, plan.write = 500, 2, False
        return plan

    @property
    def config(self) -> str:
        """The load study's collection configuration (bench/load/workload.py's CONFIGS)."""
        return "hybrid" if self.hybrid else "keyword"

    @property
    def lengths(self) -> workload.Lengths:
        """Varied lengths in hybrid, to take the model holder through every token shape."""
        return workload.Lengths.VARIED if self.hybrid else workload.Lengths.SEED

    @property
    def stack_env(self) -> dict[str, str]:
        return {**STACK_ENV, **self.env}


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] soak: {message}", flush=True)


def describe(row: Minute) -> str:
    rss = ", ".join(
        f"{name} {mib:.0f}/{row.anon_mib.get(name, math.nan):.0f}"
        for name, mib in row.rss_mib.items()
    )
    line = (
        f"minute {row.minute}: {row.users} users, {row.rps:.1f} rps, search p50/p95/p99 "
        f"{row.search_p50:.0f}/{row.search_p95:.0f}/{row.search_p99:.0f} ms, errors "
        f"{row.answers.errors}, 503s {row.answers.overloaded}, doc queue {row.doc_queue} (max "
        f"{row.doc_queue_max}), stack CPU {row.braid_cpu:.0f} %; RSS/anon MiB: {rss}"
    )
    if row.restarted:
        line += "; RESTARTED: " + ", ".join(row.restarted)
    return line


class Soak:
    def __init__(self, plan: Plan, stack: Stack, scratch: Path) -> None:
        self.plan = plan
        self.stack = stack
        self.scratch = scratch
        self.client = httpx.AsyncClient(base_url=stack.base_url, timeout=120.0)
        self.braid = procs.TreeMeter(lambda: procs.session_tree(stack.supervisord_pid))
        self.stopping = asyncio.Event()
        self.pids: dict[str, int] = {}

    def interrupt(self) -> None:
        """The first Ctrl-C ends the soak early (then drain, check, report); the second stops."""
        say("interrupted: finishing the current minute early, then drain, check and report")
        self.stopping.set()
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), max(0.0, seconds))

    async def minute(
        self, locust: LocustProcess, gauges: Gauges, at: int, ends: float, totals: Mapping[str, int]
    ) -> tuple[Minute, dict[str, int]]:
        """Samples the queue until `ends` (or an interrupt), then reads the minute's numbers and
        resets Locust's statistics for the next one. Returns the row and the totals read."""
        started = time.monotonic()
        queue_max = 0
        while True:
            depth = await gauges.doc_queue()
            queue_max = max(queue_max, depth)
            left = ends - time.monotonic()
            if left <= 0 or self.stopping.is_set():
                break
            await self._pause(min(SAMPLE_S, left))
        stats = await locust.stats()
        failures = await locust.failures()
        await locust.reset()
        now_totals = await locust.totals()
        seconds = time.monotonic() - started
        pids = await asyncio.to_thread(memory.program_pids, self.stack, self.pids)
        mem = memory.sample(pids)
        restarted, self.pids = restarts(self.pids, pids), pids
        search = stats.get("search", {})
        row = Minute(
            minute=at,
            seconds=seconds,
            users=await locust.users(),
            answers=count_answers(totals, now_totals, failures),
            search_p50=number(search.get("50%")),
            search_p95=number(search.get("95%")),
            search_p99=number(search.get("99%")),
            doc_queue=depth,
            doc_queue_max=queue_max,
            documents=await gauges.doc_count(),
            braid_cpu=self.braid.usage().cpu_percent,
            rss_mib=mem.rss_mib,
            anon_mib=mem.anon_mib,
            restarted=restarted,
        )
        return row, now_totals

    async def soak(self, locust: LocustProcess, gauges: Gauges) -> tuple[list[Minute], Answers]:
        await locust.ramp(self.plan.users)
        say(f"{self.plan.users} users running; a row every minute for {self.plan.minutes} min")
        self.pids = await asyncio.to_thread(memory.program_pids, self.stack, {})
        await locust.reset()
        first = totals = await locust.totals()
        self.braid.usage()
        started = time.monotonic()
        rows: list[Minute] = []
        for at in range(1, self.plan.minutes + 1):
            row, totals = await self.minute(locust, gauges, at, started + at * MINUTE_S, totals)
            rows.append(row)
            say(describe(row))
            if self.stopping.is_set():
                break
        return rows, count_answers(first, totals)

    async def run(self) -> SoakResult:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self.interrupt)
        bus = await Bus.connect(self.stack.amqp_url, retry_for_s=30)
        gauges = Gauges(self.client, bus)
        collection = LoadCollection(self.client, gauges, say)
        try:
            await collection.create(self.plan.config)
            bulk = await collection.prepopulate(
                self.plan.documents, self.plan.prepopulate_minutes, self.plan.lengths
            )
            oplog = self.scratch / "oplog.txt"
            ids = bulk.documents or workload.ID_SPACE
            locust = LocustProcess(
                self.stack.base_url,
                oplog,
                self.scratch / "locust.log",
                seed=1,
                id_space=ids,
                lengths=self.plan.lengths,
            )
            try:
                await locust.ready()
                rows, answers = await self.soak(locust, gauges)
            finally:
                await locust.stop()
            result = SoakResult(
                config=self.plan.config,
                lengths=self.plan.lengths,
                id_space=ids,
                users=self.plan.users,
                minutes_planned=self.plan.minutes,
                warmup_wanted=self.plan.warmup,
                bulk=bulk,
                minutes=rows,
                answers=answers,
                stopped_early=len(rows) < self.plan.minutes,
                stack_env=", ".join(f"{k}={v}" for k, v in self.plan.stack_env.items()),
            )
            say("waiting for the document queue to drain")
            result.drain_s = await collection.drain()
            result.check = await collection.check(oplog)
            say(f"check: {result.check.summary()}")
            return result
        finally:
            with contextlib.suppress(ValueError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            await bus.close()
            await self.client.aclose()


async def run(plan: Plan, scratch: Path) -> SoakResult:
    with Stack(plan.stack_env) as stack:
        say(f"stack up at {stack.base_url} (data in {stack.data_dir})")
        return await Soak(plan, stack, scratch).run()
