"""Traffic with volume for the fault suite: besides `Traffic`'s single async writes and searches,
bulk async writes that keep a backlog of documents queued (more than the worker holds: prefetch
and what it keeps for the reaper), sync writes each checked by the very next search
(read-your-writes), and a readiness probe, every outcome kept by phase."""

from __future__ import annotations

import bisect
import itertools
import random
import threading
import time
from collections import Counter

import httpx

from core.messages import WRITES_PER_MESSAGE
from core.settings import Settings
from harness.verify import Write
from tests.integration.traffic import (
    CONNECTION_DROPPED,
    WORDS,
    Outcomes,
    Traffic,
    seq_of,
    stamp,
)
from worker.consumer import held_prune_at, prefetch_for

# Queued when a fault hits: more messages than the worker's prefetch and what it holds for the
# reaper, even were every message full (a bulk's messages carry up to WRITES_PER_MESSAGE).
WORKER_BATCH: int = Settings.model_fields["worker_batch_size"].default
BACKLOG = (prefetch_for(WORKER_BATCH) + held_prune_at(WORKER_BATCH) + 25) * WRITES_PER_MESSAGE
BULK_SIZE = 100
THROTTLED_SIZE = 5
BULK_IDS = 3_000
SYNC_SEARCH_S = 60.0  # a sync write's search is retried (503s) this long before it counts


class VolumeTraffic(Traffic):
    """`Traffic` plus bulk writes holding the queue between `backlog` and twice that, sync writes
    with a search after each, and readiness polled twice a second."""

    def __init__(self, base_url: str, collection: str, backlog: int) -> None:
        super().__init__(base_url, collection)
        self._backlog = backlog
        self.sync_outcomes = Outcomes()
        self.bulk_outcomes = Outcomes()
        self.health: dict[str, Counter[int]] = {}
        self.queued = 0  # the collection's queue, as the bulk writer last read it
        self.stale_reads: list[str] = []  # sync writes a 200 search did not show
        self._marks: list[tuple[int, str]] = [(0, self.phase)]  # (first seq, phase)

    def enter(self, phase: str) -> None:
        """Label what follows `phase`; a write belongs to the phase its sequence number began in."""
        self._marks.append((next(self._seq), phase))
        self.phase = phase

    def phase_of(self, write: Write) -> str:
        return self._marks[
            bisect.bisect_right(self._marks, (seq_of(write.timestamp), "\uffff")) - 1
        ][1]

    def start(self) -> VolumeTraffic:
        super().start()
        for target in (self._bulk_loop, self._sync_loop, self._health_loop):
            thread = threading.Thread(target=target, daemon=True)
            self._threads.append(thread)
            thread.start()
        return self

    def _bulk_loop(self) -> None:
        """Bulks of BULK_SIZE while fewer than twice `backlog` are queued; past that, a bulk of
        a few a second, so that bulk writes go on being tried while the backlog drains."""
        rng = random.Random(11)
        with httpx.Client(base_url=self._base_url, timeout=60) as http:
            while not self._stop.is_set():
                size = BULK_SIZE
                if self._queue_total(http) >= 2 * self._backlog:
                    size = THROTTLED_SIZE
                    time.sleep(1.0)
                batch = [self._document(rng, f"bulk{rng.randrange(BULK_IDS)}") for _ in range(size)]
                phase = self.phase
                status = self._post(
                    http, f"/v1/collections/{self._collection}/documents/bulk", {"documents": batch}
                )
                for body in batch:
                    self.writes.append(
                        Write(
                            "upsert",
                            str(body["id"]),
                            str(body["timestamp"]),
                            str(body["name"]),
                            status,
                        )
                    )
                self.bulk_outcomes.add(self.charged(phase, status), status)
                if status != 200:
                    time.sleep(0.2)

    def _sync_loop(self) -> None:
        """A sync write, then searches for its own word until one answers: it must be found."""
        rng = random.Random(13)
        with httpx.Client(base_url=self._base_url, timeout=90) as http:
            for n in itertools.count():
                if self._stop.is_set():
                    return
                body = self._document(rng, f"sync{n}")
                token = f"synctoken{n}x"
                body["content"] = f"{body['content']} {token}"
                phase = self.phase
                status = self._post(
                    http, f"/v1/collections/{self._collection}/documents/sync", body
                )
                self.writes.append(
                    Write(
                        "upsert", str(body["id"]), str(body["timestamp"]), str(body["name"]), status
                    )
                )
                self.sync_outcomes.add(self.charged(phase, status), status)
                if status == 200:
                    self._check_visible(http, str(body["id"]), token)
                else:
                    time.sleep(0.2)

    def _check_visible(self, http: httpx.Client, doc_id: str, token: str) -> None:
        query = {"query": token, "vector_options": [{"vector_name": "kw"}], "limit": 5}
        deadline = time.monotonic() + SYNC_SEARCH_S
        while time.monotonic() < deadline and not self._stop.is_set():
            try:
                answer = http.post(f"/v1/collections/{self._collection}/search", json=query)
            except httpx.TransportError:
                continue
            if answer.status_code == 200:
                if doc_id not in [hit["id"] for hit in answer.json()["results"]]:
                    self.stale_reads.append(doc_id)
                return
            time.sleep(0.2)

    def _health_loop(self) -> None:
        with httpx.Client(base_url=self._base_url, timeout=10) as http:
            while not self._stop.is_set():
                phase = self.phase
                try:
                    status = http.get("/v1/health/ready").status_code
                except httpx.TransportError:
                    status = CONNECTION_DROPPED
                self.health.setdefault(phase, Counter())[status] += 1
                time.sleep(0.5)

    def _document(self, rng: random.Random, doc_id: str) -> dict[str, object]:
        seq = next(self._seq)
        return {
            "id": doc_id,
            "timestamp": stamp(seq),
            "name": f"{doc_id} v{seq}",
            "content": " ".join(rng.choices(WORDS, k=30)),
        }

    def _queue_total(self, http: httpx.Client) -> int:
        try:
            answer = http.get(f"/v1/collections/{self._collection}/queue/info")
        except httpx.TransportError:
            return self.queued
        if answer.status_code == 200:
            self.queued = int(answer.json()["total"])
        return self.queued
