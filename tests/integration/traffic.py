"""A steady stream of acknowledged writes and searches against a stack, with every outcome kept.

The fault suite runs it while it kills processes: each write is recorded with its answer, so the
end state can be checked against what was acknowledged (harness.verify), and each error is
recorded with the phase it happened in, so a test can say which errors a phase may produce.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx

from harness.verify import Write

WORDS = (
    "river stone lamp quartz violet engine harbor maple cobalt lantern meadow orbit pepper "
    "signal timber velvet walnut zephyr canyon ember glacier"
).split()
BASE = datetime(2026, 6, 1, tzinfo=UTC)
CONNECTION_DROPPED = 0  # the status recorded when no answer came
STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"  # always with microseconds: harness.verify compares as text


def stamp(seq: int) -> str:
    """The timestamp of the write numbered `seq`: one millisecond after the one before."""
    return (BASE + timedelta(milliseconds=seq)).strftime(STAMP)


def seq_of(timestamp: str) -> int:
    """The number of the write that carries `timestamp` (stamp's inverse)."""
    sent = datetime.strptime(timestamp, STAMP).replace(tzinfo=UTC)
    return (sent - BASE) // timedelta(milliseconds=1)


@dataclass
class Outcomes:
    """Answers per phase, as {phase: Counter(status)}; 0 is a dropped connection."""

    by_phase: dict[str, Counter[int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, phase: str, status: int) -> None:
        with self.lock:
            self.by_phase.setdefault(phase, Counter())[status] += 1

    def counts(self, phase: str) -> Counter[int]:
        """A copy of the phase's answers by status."""
        with self.lock:
            return Counter(self.by_phase.get(phase, Counter()))

    def successes_since(self, phase: str) -> int:
        with self.lock:
            return self.by_phase.get(phase, Counter())[200]

    def unexpected(self, allowed: dict[str, set[int]]) -> dict[str, dict[int, int]]:
        """Statuses other than 200 and the phase's allowed ones (default: 503 only)."""
        with self.lock:
            return {
                phase: bad
                for phase, counts in self.by_phase.items()
                if (
                    bad := {
                        status: n
                        for status, n in counts.items()
                        if status != 200 and status not in allowed.get(phase, {503})
                    }
                )
            }


class Traffic:
    """Writer and searcher threads on one collection; `phase` labels what they see."""

    def __init__(self, base_url: str, collection: str, ids: int = 300, searchers: int = 2) -> None:
        self._base_url = base_url
        self._collection = collection
        self._ids = [f"doc{i}" for i in range(ids)]
        self._searchers = searchers
        self._seq = itertools.count(1)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.phase = "warmup"
        self.writes: list[Write] = []
        self.write_outcomes = Outcomes()
        self.search_outcomes = Outcomes()

    def charged(self, sent: str, status: int) -> str:
        """The phase an answer counts in: the one it was sent in, but a dropped connection in
        the one it dropped in (a bulk or sync write sent just before an api process is killed
        is in flight on it, and drops with it)."""
        return self.phase if status == CONNECTION_DROPPED else sent

    def start(self) -> Traffic:
        targets = [self._write_loop] + [self._search_loop] * self._searchers
        self._threads = [threading.Thread(target=t, daemon=True) for t in targets]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=120)

    def _write_loop(self) -> None:
        rng = random.Random(7)
        with httpx.Client(base_url=self._base_url, timeout=30) as http:
            while not self._stop.is_set():
                seq = next(self._seq)
                doc_id = rng.choice(self._ids)
                name = f"{doc_id} v{seq}"
                body = {
                    "id": doc_id,
                    "timestamp": stamp(seq),
                    "name": name,
                    "content": " ".join(rng.choices(WORDS, k=30)),
                }
                phase = self.phase
                status = self._post(http, f"/v1/collections/{self._collection}/documents", body)
                self.writes.append(Write("upsert", doc_id, stamp(seq), name, status))
                self.write_outcomes.add(self.charged(phase, status), status)
                if status != 200:
                    time.sleep(0.2)  # a client honouring Retry-After, briefly

    def _search_loop(self) -> None:
        rng = random.Random(threading.get_ident())
        with httpx.Client(base_url=self._base_url, timeout=90) as http:
            for turn in itertools.count():
                if self._stop.is_set():
                    return
                vector = "kw" if turn % 2 else "dense"
                body = {
                    "query": " ".join(rng.choices(WORDS, k=3)),
                    "vector_options": [{"vector_name": vector}],
                }
                phase = self.phase
                status = self._post(http, f"/v1/collections/{self._collection}/search", body)
                self.search_outcomes.add(self.charged(phase, status), status)
                if status != 200:
                    time.sleep(0.2)

    @staticmethod
    def _post(http: httpx.Client, path: str, body: dict[str, object]) -> int:
        try:
            return http.post(path, json=body).status_code
        except httpx.TransportError:
            return CONNECTION_DROPPED
