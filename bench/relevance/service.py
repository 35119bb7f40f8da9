"""Braid through its public API: the README's default collection (and a keyword-only pair for the
cost comparison) created, the corpus bulk-loaded, and the queries sent for each arm set, with the
CPU every supervisord program spent on each step."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from bench.ceiling.traffic import settle
from bench.common import cpu, procs
from bench.common.memory import program_pids
from bench.load.collection import post_until_taken
from bench.relevance.beir import Query, RelevanceSet
from harness.stack import Stack

BULK = 100
IN_FLIGHT = 4
TIMESTAMP = "2026-01-01T00:00:00Z"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"

# The README's collection: keyword on name and content, the dense model on content.
DEFAULT_VECTORS = [
    {"name": "keyword", "type": "keyword", "index_fields": ["name", "content"]},
    {"name": "dense", "type": "dense_model", "model": MODEL, "index_fields": ["content"]},
]
# Keyword only, with the defaults and with the lexical defaults before docs/relevance.md.
KEYWORD_VECTORS = [DEFAULT_VECTORS[0]]
BEFORE_VECTORS = [{**DEFAULT_VECTORS[0], "top_k": 128, "wmtr_word_ratio": 80}]

Say = Callable[[str], None]


@dataclass(frozen=True)
class Spent:
    """What one step cost the stack: wall seconds and CPU seconds summed over its programs."""

    seconds: float
    cpu_s: float


class Braid:
    def __init__(self, stack: Stack, client: httpx.AsyncClient, say: Say) -> None:
        self.stack = stack
        self.client = client
        self.say = say
        self._pids = program_pids(stack, {})

    async def _measured(self, step: Callable[[], Any]) -> tuple[Any, Spent]:
        before = cpu.program_cpu(procs.all_procs(), self._pids)
        started = time.monotonic()
        result = await step()
        seconds = time.monotonic() - started
        after = cpu.program_cpu(procs.all_procs(), self._pids)
        return result, Spent(seconds, sum(cpu.spent(before, after).values()))

    async def create(self, name: str, vectors: list[dict[str, Any]]) -> None:
        response = await self.client.post(f"/v1/collections/{name}", json={"vectors": vectors})
        response.raise_for_status()

    async def ingest(self, name: str, data: RelevanceSet) -> Spent:
        """Bulk-load the corpus (name = title, content = text) and wait until all are indexed."""
        documents = [{"id": r.id, "name": r.title, "content": r.text} for r in data.corpus]
        _, spent = await self._measured(lambda: self.load(name, documents))
        return spent

    async def load(self, name: str, documents: list[dict[str, Any]]) -> None:
        """Bulk-load documents (id, name, content) and wait until all are indexed."""
        gate = asyncio.Semaphore(IN_FLIGHT)
        documents = [{**document, "timestamp": TIMESTAMP} for document in documents]

        async def send(batch: list[dict[str, Any]]) -> None:
            async with gate:
                await post_until_taken(
                    self.client, f"/v1/collections/{name}/documents/bulk", {"documents": batch}
                )

        await asyncio.gather(
            *(send(documents[i : i + BULK]) for i in range(0, len(documents), BULK))
        )
        started, total = time.monotonic(), len(documents)
        while (count := await self._doc_count(name)) < total:
            rate = count / max(1e-9, time.monotonic() - started)
            self.say(
                f"{name}: {count:,}/{total:,} indexed ({rate:.0f}/s since the corpus was queued)"
            )
            await asyncio.sleep(5.0)

    async def settle(self, name: str, queries: list[Query]) -> None:
        """Before measured searches: the worker's optimize of the fresh collection done (its
        CPU would count as the searches'), and one unmeasured pass of the queries at limit 100,
        so each process has met the points they find (store/ids.py), as in a service that
        has run a while."""
        await settle(self.stack.data_dir / "store", self.say, name)
        await self.search_all(name, queries, {"exclude": ["content"]}, 100)

    async def _doc_count(self, name: str) -> int:
        response = await self.client.get(f"/v1/collections/{name}/stats")
        response.raise_for_status()
        return int(response.json()["doc_count"])

    async def search_all(
        self, name: str, queries: list[Query], options: Mapping[str, Any], limit: int
    ) -> tuple[dict[str, list[str]], Spent]:
        """Every query with the arm set's options; each query's ranked document ids."""
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def one(query: Query) -> tuple[str, list[str]]:
            async with gate:
                body = {"query": query.text, "limit": limit, **options}
                response = await post_until_taken(
                    self.client, f"/v1/collections/{name}/search", body
                )
                return query.id, [hit["id"] for hit in response.json()["results"]]

        async def every() -> dict[str, list[str]]:
            return dict(await asyncio.gather(*(one(q) for q in queries)))

        runs, spent = await self._measured(every)
        return runs, spent
