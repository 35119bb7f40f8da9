"""The Amgix One load study's user, for Locust (FastHttpUser): loops with no wait over
80 % search (a Faker sentence(5), top 10, every default), 19 % async upsert of a random id of
100,000 (new or existing), 1 % async delete of a random id.

    locust -f bench/load/locustfile.py --host http://127.0.0.1:8234      # collection "load"

Two variables change the mix's writes (bench/soak sets them): BRAID_LOAD_ID_SPACE, the ids the
writes draw from (100,000; the soak gives the pre-populated count, so the collection keeps its
size), and BRAID_LOAD_LENGTHS, the documents' lengths (`seed`, or `varied`: 3 to 300 words).

bench/load drives it (run.py through driver.py, over Locust's web API) and reads two things this
file adds:
- BRAID_LOAD_OPLOG: a file where every write is logged when it starts ("B seq op id timestamp
  name") and when its answer comes ("E seq status"), so the runner can check the collection against
  what the acknowledged writes imply;
- GET /braid/totals on Locust's web port: answers by request kind and HTTP status since the start
  (Locust's own statistics are reset for every measured window; these never are). Under
  `--processes N` each worker sends its totals with its stats report (every few seconds) and the
  master answers their sum.

A 503 is what Braid answers when it is overloaded: the user waits its Retry-After, as a client
should, and Locust counts it as a failure named "HTTP 503".
"""

from __future__ import annotations

import itertools
import os
import random
import threading
import time
from collections import Counter
from typing import IO, Any

from locust import FastHttpUser, events, task

from bench.load.workload import (
    DELETE_WEIGHT,
    ID_SPACE,
    MAKERS,
    SEARCH_WEIGHT,
    UPSERT_WEIGHT,
    Lengths,
    now_iso,
    query,
    seeded,
)

COLLECTION = os.environ.get("BRAID_LOAD_COLLECTION", "load")
BASE = f"/v1/collections/{COLLECTION}"
WRITE_IDS = int(os.environ.get("BRAID_LOAD_ID_SPACE", ID_SPACE))
document = MAKERS[Lengths(os.environ.get("BRAID_LOAD_LENGTHS", Lengths.SEED))]
MAX_RETRY_AFTER_S = 30.0

totals: Counter[str] = Counter()  # "search 200", "upsert 503", "delete 0" (no answer) ...
worker_totals: dict[str, dict[str, int]] = {}  # on a master: each worker's last report
_sequence = itertools.count(1)
_users = itertools.count(1)
# Locust's --processes forks workers from one import: the pid keeps write sequence numbers and
# users' random streams apart between them.
_process = os.getpid()


class OpLog:
    """Appends write records to BRAID_LOAD_OPLOG (no-op when unset): space-separated fields,
    the name (which has spaces) last."""

    def __init__(self, path: str | None) -> None:
        self._file: IO[str] | None = open(path, "a", buffering=1) if path else None  # noqa: SIM115
        self._lock = threading.Lock()

    def begin(self, op: str, doc: str, timestamp: str, name: str = "") -> str:
        seq = f"{os.getpid()}.{next(_sequence)}"
        self._write(f"B {seq} {op} {doc} {timestamp} {name}")
        return seq

    def end(self, seq: str, status: int) -> None:
        self._write(f"E {seq} {status}")

    def _write(self, line: str) -> None:
        if self._file is not None:
            with self._lock:
                self._file.write(line + "\n")


oplog = OpLog(os.environ.get("BRAID_LOAD_OPLOG"))


@events.init.add_listener
def _routes(environment: Any, **_: Any) -> None:
    if environment.web_ui is not None:

        @environment.web_ui.app.route("/braid/totals")
        def braid_totals() -> dict[str, int]:
            summed = Counter(totals)
            for reported in worker_totals.values():
                summed.update(reported)
            return dict(summed)


@events.report_to_master.add_listener
def _send_totals(client_id: str, data: dict[str, Any], **_: Any) -> None:
    data["braid_totals"] = dict(totals)


@events.worker_report.add_listener
def _receive_totals(client_id: str, data: dict[str, Any], **_: Any) -> None:
    worker_totals[client_id] = data.get("braid_totals", {})


class SeedUser(FastHttpUser):
    """One simulated user of the seed workload."""

    def on_start(self) -> None:
        seed = int(os.environ.get("BRAID_LOAD_SEED", "0"))
        number = next(_users) + (os.getpid() - _process) * 1_000
        self.fake = seeded(seed * 1_000_003 + number)
        self.random = random.Random(seed * 1_000_003 + number)

    def _answer(self, kind: str, response: Any) -> int:
        status = int(response.status_code or 0)
        totals[f"{kind} {status}"] += 1
        if status == 200:
            response.success()
        elif status == 503:
            response.failure("HTTP 503")
            retry_after = response.headers.get("Retry-After") if response.headers else None
            time.sleep(min(MAX_RETRY_AFTER_S, float(retry_after or 1)))
        else:
            body = (response.text or "")[:200] if status else str(response.error)[:200]
            response.failure(f"HTTP {status}: {body}")
        return status

    @task(SEARCH_WEIGHT)
    def search(self) -> None:
        body = {"query": query(self.fake), "limit": 10}
        with self.client.post(
            f"{BASE}/search", json=body, name="search", catch_response=True
        ) as response:
            self._answer("search", response)

    @task(UPSERT_WEIGHT)
    def upsert(self) -> None:
        doc = document(self.fake, self.random.randrange(WRITE_IDS), now_iso())
        seq = oplog.begin("upsert", doc["id"], doc["timestamp"], doc["name"])
        status = 0
        try:
            with self.client.post(
                f"{BASE}/documents", json=doc, name="upsert", catch_response=True
            ) as response:
                status = self._answer("upsert", response)
        finally:
            oplog.end(seq, status)

    @task(DELETE_WEIGHT)
    def delete(self) -> None:
        doc = str(self.random.randrange(WRITE_IDS))
        timestamp = now_iso()
        seq = oplog.begin("delete", doc, timestamp)
        status = 0
        try:
            with self.client.delete(
                f"{BASE}/documents/{doc}?request_timestamp={timestamp}",
                name="delete",
                catch_response=True,
            ) as response:
                status = self._answer("delete", response)
        finally:
            oplog.end(seq, status)
