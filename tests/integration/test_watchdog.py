"""Readiness by progress: a process whose consumer has messages waiting and takes none is seen as
stalled (readiness, metric), then stops itself and supervisord starts it again, with no hand.

The stall is a real one: an api's replica that sleeps an hour before applying each replicated
write (BRAID_REPLICA_APPLY_DELAY_MS, the fault-injection knob), so its stream's queue fills past
what it holds while the process itself stays up, connected and counted by the broker."""

from __future__ import annotations

import uuid

import httpx

from harness.stack import StackFactory
from tests.integration.helpers import (
    create,
    doc,
    keyword_collection,
    metric_total,
    search_ids,
    wait_until,
)

STALL_S = 4
GRACE_S = 6
# More replicated writes than a replica holds unapplied (store/replication/replica.py
# IN_FLIGHT): the rest wait in its queue, which is what the watchdog looks at.
WRITES = 300


def _status(http: httpx.Client, path: str) -> httpx.Response | None:
    try:
        return http.get(path)
    except httpx.TransportError:  # the api restarting
        return None


def test_a_stalled_consumer_fails_readiness_then_its_process_restarts(
    make_stack: StackFactory,
) -> None:
    stack = make_stack(
        {
            "BRAID_API_PROCESSES": "1",
            "BRAID_REPLICA_APPLY_DELAY_MS": "3600000",
            "BRAID_STALL_S": str(STALL_S),
            "BRAID_STALL_GRACE_S": str(GRACE_S),
        }
    )
    name = f"stall{uuid.uuid4().hex[:6]}"
    with httpx.Client(base_url=stack.base_url, timeout=30) as http:
        create(http, name, keyword_collection())
        stuck_pid = stack.pid("api:api-1")
        # Searched, the replica applies the stream (one no search has used since its start
        # drops it), and so stalls on the first write.
        assert search_ids(http, name, "text") == []
        for i in range(WRITES):
            answer = http.post(
                f"/v1/collections/{name}/documents/sync", json=doc(f"d{i}", f"text {i}")
            )
            assert answer.status_code == 200, answer.text
        seen: dict[str, object] = {}

        def stalled_everywhere() -> bool:
            ready = _status(http, "/v1/health/ready")
            if ready is not None and ready.status_code == 218:
                seen["ready"] = ready.json()
            metrics = _status(http, "/v1/metrics/prometheus")
            if metrics is not None and metrics.status_code == 200:
                flag = metric_total(
                    metrics.text, "braid_consumer_stalled", source="braid.replication"
                )
                seen["metric"] = max(float(str(seen.get("metric", 0.0))), flag)
            return "ready" in seen and seen.get("metric") == 1.0

        wait_until(stalled_everywhere, timeout=60, interval=0.5)
        # Searching stalled, indexing not: 218, as API.md defines it.
        assert seen["ready"] == {
            "database": True,
            "rabbitmq": True,
            "index": True,
            "query": False,
            "ready": False,
        }
        stack.wait_restarted("api:api-1", stuck_pid, timeout=120)
        log = stack.logs("api-1")
        assert "api-1 is stalled: braid.replication" in log
        assert "exiting so that it is started again" in log
        # The new process copies the store afresh: nothing waits for it, so it is ready again.
        wait_until(
            lambda: (r := _status(http, "/v1/health/ready")) is not None and r.status_code == 200,
            timeout=120,
            interval=0.5,
        )
        assert http.get(f"/v1/collections/{name}/documents/d{WRITES - 1}").status_code == 200
