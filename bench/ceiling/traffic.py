"""Braid end to end: the load study's keyword collection created and bulk-loaded, then its seed
searches sent over HTTP at a fixed concurrency from this process, with the CPU each supervisord
program spent in the measured window.

Searches only (no writes), so the window measures what a search costs; an asyncio client (httpx)
instead of Locust, so the load generator is one process whose CPU is read beside the stack's.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.ceiling.results import Row
from bench.common import cpu
from bench.common.measure import percentile
from bench.common.memory import program_pids
from bench.load import workload
from bench.load.collection import Gauges, LoadCollection
from core.bus import Bus
from core.schemas.collection import CollectionConfig
from harness.stack import Stack
from store.edge.optimize import OPTIMIZING

CONFIG = "keyword"
BASE = f"/v1/collections/{workload.COLLECTION}"
WARMUP_S = 5.0
PREPOPULATE_MINUTES = 30.0  # bench/load's cap
SETTLE_LIMIT_S = 600.0
QUIET_CHECKS = 3  # one a second with no optimize under way
JSON = {"content-type": "application/json"}

Say = Callable[[str], None]


def bodies(count: int, seed: int) -> list[dict[str, Any]]:
    """The seed workload's search bodies, as bench/load/locustfile.py sends them."""
    fake = workload.seeded(seed)
    return [{"query": workload.query(fake), "limit": 10} for _ in range(count)]


async def prepare(stack: Stack, documents: int, say: Say) -> CollectionConfig:
    """Create and bulk-load the collection, wait for the index and any optimize; its config."""
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=120.0) as client:
        bus = await Bus.connect(stack.amqp_url, retry_for_s=30)
        try:
            collection = LoadCollection(client, Gauges(client, bus), say)
            await collection.create(CONFIG)
            await collection.prepopulate(documents, PREPOPULATE_MINUTES)
        finally:
            await bus.close()
        await settle(stack.data_dir / "store", say)
        response = await client.get(BASE)
        response.raise_for_status()
        return CollectionConfig.model_validate(response.json())


async def settle(store: Path, say: Say, collection: str = workload.COLLECTION) -> None:
    """Wait until the worker has no optimize under way (its child process would be counted in
    the worker's CPU): the optimized copy's folder is there exactly while one runs."""
    copy = store / f"{OPTIMIZING}{collection}"
    deadline = time.monotonic() + SETTLE_LIMIT_S
    quiet, told = 0, False
    while quiet < QUIET_CHECKS and time.monotonic() < deadline:
        running = copy.exists()
        quiet = 0 if running else quiet + 1
        if running and not told:
            say("waiting for the worker's optimize to finish")
            told = True
        await asyncio.sleep(1.0)


@dataclass
class Answer:
    finished: float  # time.monotonic()
    latency_s: float
    status: int  # 0: no answer


@dataclass
class Driver:
    """Users that loop over the bodies with no wait; keeps every answer's timing and, for each
    query, the ids of Braid's first answer (to compare with the engine's)."""

    client: httpx.AsyncClient
    encoded: list[bytes]
    answers: list[Answer] = field(default_factory=list)
    tops: dict[int, list[str]] = field(default_factory=dict)
    _next: itertools.count[int] = field(default_factory=itertools.count)

    async def user(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            index = next(self._next) % len(self.encoded)
            started = time.monotonic()
            try:
                response = await self.client.post(
                    f"{BASE}/search", content=self.encoded[index], headers=JSON
                )
                status = response.status_code
            except httpx.HTTPError:
                status = 0
            now = time.monotonic()
            self.answers.append(Answer(now, now - started, status))
            if status == 200 and index not in self.tops:
                self.tops[index] = [result["id"] for result in response.json()["results"]]


@dataclass
class EndToEnd:
    row: Row
    tops: dict[int, list[str]]
    restarted: list[str]


def window_row(
    name: str,
    answers: list[Answer],
    start: float,
    end: float,
    cpu_s: dict[str, float],
    generator_cpu_s: float,
) -> Row:
    """The row of the answers that finished inside [start, end)."""
    inside = [a for a in answers if start <= a.finished < end]
    ok = [a.latency_s * 1000 for a in inside if a.status == 200]
    return Row(
        name=name,
        searches=len(ok),
        seconds=end - start,
        cpu_s=cpu_s,
        p50_ms=percentile(ok, 50),
        p99_ms=percentile(ok, 99),
        generator_cpu_s=generator_cpu_s,
        errors=len(inside) - len(ok),
    )


async def end_to_end(
    stack: Stack, searches: list[dict[str, Any]], concurrency: int, seconds: float, say: Say
) -> EndToEnd:
    """`concurrency` users for a warm-up, then `seconds` measured: searches, latency, CPU."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=60.0, limits=limits) as client:
        driver = Driver(client, [json.dumps(body).encode() for body in searches])
        stop = asyncio.Event()
        users = [asyncio.create_task(driver.user(stop)) for _ in range(concurrency)]
        try:
            pids = await asyncio.to_thread(program_pids, stack, {})
            say(f"{concurrency} concurrent searches: warm-up {WARMUP_S:.0f} s")
            await asyncio.sleep(WARMUP_S)
            start, before, generator0 = time.monotonic(), cpu.read(pids), time.process_time()
            say(f"measuring {seconds:.0f} s")
            await asyncio.sleep(seconds)
            end, after, generator = time.monotonic(), cpu.read(pids), time.process_time()
        finally:
            stop.set()
            await asyncio.gather(*users)
        now = await asyncio.to_thread(program_pids, stack, pids)
    row = window_row(
        f"Braid end to end ({concurrency} concurrent)",
        driver.answers,
        start,
        end,
        cpu.by_group(cpu.spent(before, after)),
        generator - generator0,
    )
    return EndToEnd(row, driver.tops, cpu.restarted(pids, now))
