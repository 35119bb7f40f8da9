"""The load collection of one benchmark run: created with the seed workload's vectors, bulk
pre-populated, its queues watched, drained at the end, read back and checked against the writes
the load generator saw acknowledged (harness/verify.py)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.load import workload
from bench.load.workload import COLLECTION
from core.bus import Bus
from core.names import DOCUMENTS_QUEUE, SEARCH_QUEUE
from harness import verify
from loader.progress import Progress

BULK = 100  # documents per bulk request (the API's limit)
BULK_IN_FLIGHT = 4
# Pre-population stops sending while this many writes wait in the collection's queue, so the
# deadline (hybrid) measures documents indexed, not documents queued.
BULK_BACKLOG = 5_000
BASE = f"/v1/collections/{COLLECTION}"


async def post_until_taken(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> httpx.Response:
    """POST, waiting each 503's Retry-After and sending again; any other error raises."""
    while True:
        response = await client.post(path, json=body)
        if response.status_code != 503:
            response.raise_for_status()
            return response
        await asyncio.sleep(float(response.headers.get("Retry-After", "1")))


async def fetch_all(client: httpx.AsyncClient) -> dict[str, str]:
    """id -> name of every document the load collection holds."""
    found: dict[str, str] = {}
    after = None
    while True:
        response = await client.post(
            f"{BASE}/documents/fetch", json={"page_size": 1000, "after": after}
        )
        response.raise_for_status()
        page = response.json()
        for doc in page["documents"]:
            found[doc["id"]] = doc["name"]
        after = page.get("after")
        if not after or not page["documents"]:
            return found


@dataclass
class Bulk:
    documents: int
    seconds: float
    sent_seconds: float  # until the last bulk request was acknowledged
    # What a user could run instead on the same documents, in the same run: docs/s by name
    # (run.py's `peer_rates`); none in a smoke run.
    peers: dict[str, float] = field(default_factory=dict)

    @property
    def docs_s(self) -> float:
        return self.documents / self.seconds


class Gauges:
    """Queue depths: the collection's document queue (what `…/queue/info` shows a user) and the
    search RPC queue (RabbitMQ, messages waiting for the worker)."""

    def __init__(self, client: httpx.AsyncClient, bus: Bus) -> None:
        self.client = client
        self.bus = bus

    async def doc_queue(self) -> int:
        response = await self.client.get(f"{BASE}/queue/info")
        response.raise_for_status()
        return int(response.json()["total"])

    async def search_queue(self) -> int:
        return await self.bus.queue_depth(SEARCH_QUEUE)

    async def broker_documents(self) -> int:
        return await self.bus.queue_depth(DOCUMENTS_QUEUE)

    async def doc_count(self) -> int:
        response = await self.client.get(f"{BASE}/stats")
        response.raise_for_status()
        return int(response.json()["doc_count"])


class LoadCollection:
    """Keeps the name of every pre-populated document, for the check at the end."""

    def __init__(
        self, client: httpx.AsyncClient, gauges: Gauges, say: Callable[[str], None]
    ) -> None:
        self.client = client
        self.gauges = gauges
        self.say = say
        self.names: dict[str, str] = {}

    async def create(self, config: str) -> None:
        response = await self.client.post(BASE, json=workload.collection_body(config))
        response.raise_for_status()

    async def _post_bulk(self, documents: list[dict[str, Any]], progress: Progress) -> None:
        await post_until_taken(self.client, f"{BASE}/documents/bulk", {"documents": documents})
        progress.sent += len(documents)

    async def _stats(self) -> dict[str, Any]:
        response = await self.client.get(f"{BASE}/stats")
        response.raise_for_status()
        found: dict[str, Any] = response.json()
        return found

    async def _watch(self, progress: Progress) -> None:
        """The progress bar (loader/progress.py), from the collection's stats every second."""
        while True:
            with contextlib.suppress(httpx.HTTPError):
                progress.sample(await self._stats())
            await asyncio.sleep(1.0)

    async def prepopulate(
        self, documents: int, minutes: float, lengths: workload.Lengths = workload.Lengths.SEED
    ) -> Bulk:
        """Bulk-load documents 0, 1, 2 … until `documents` or `minutes`, then wait until all
        are indexed. The documents/s is sent-and-indexed: first request to empty queue."""
        fake = workload.seeded(documents)
        make = workload.MAKERS[lengths]
        deadline = time.monotonic() + minutes * 60
        gate = asyncio.Semaphore(BULK_IN_FLIGHT)
        pending: set[asyncio.Task[None]] = set()
        started = time.monotonic()
        sent = 0
        progress = Progress(documents)
        progress.begin(await self._stats())
        watcher = asyncio.create_task(self._watch(progress))
        while sent < documents and time.monotonic() < deadline:
            if sent % (BULK * 20) == 0:
                while await self.gauges.doc_queue() > BULK_BACKLOG and time.monotonic() < deadline:
                    await asyncio.sleep(1.0)
                if time.monotonic() >= deadline:
                    break
            count = min(BULK, documents - sent)
            batch = [
                make(fake, number, workload.PREPOPULATED_AT) for number in range(sent, sent + count)
            ]
            await gate.acquire()
            task = asyncio.create_task(self._post_bulk(batch, progress))
            task.add_done_callback(lambda _: gate.release())
            pending.add(task)
            task.add_done_callback(pending.discard)
            for doc in batch:
                self.names[doc["id"]] = doc["name"]
            sent += count
        await asyncio.gather(*pending)
        sent_s = time.monotonic() - started
        self.say(f"pre-population: {sent:,} acknowledged in {sent_s:.0f} s; waiting for the index")
        while await self.gauges.doc_queue() > 0 or await self.gauges.doc_count() < sent:
            await asyncio.sleep(1.0)
        seconds = time.monotonic() - started
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        progress.finish()
        rate = sent / seconds
        self.say(f"pre-population: {sent:,} indexed in {seconds:.0f} s ({rate:.1f} docs/s)")
        return Bulk(documents=sent, seconds=seconds, sent_seconds=sent_s)

    async def drain(self) -> float:
        """Seconds until the collection's queue and the broker's document queue are empty."""
        started = time.monotonic()
        while await self.gauges.doc_queue() > 0 or await self.gauges.broker_documents() > 0:
            await asyncio.sleep(1.0)
        return time.monotonic() - started

    async def fetch_all(self) -> dict[str, str]:
        return await fetch_all(self.client)

    async def check(self, oplog: Path) -> verify.Verdict:
        """The collection against the pre-population and the writes logged in `oplog`."""
        actual = await self.fetch_all()
        return verify.verify(self.names, workload.PREPOPULATED_AT, verify.read_oplog(oplog), actual)
