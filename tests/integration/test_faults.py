"""The fault suite: kill -9 each process in turn, then restart the whole stack, under a stream of
acknowledged writes and searches. After each fault the queue drains and searches succeed with no
manual step; at the end every acknowledged write is there with its newest version; the only
errors are 503s (with Retry-After) and the dropped connections of a killed api process."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest
import redis

from core.names import RedisKeys
from harness.stack import Stack, StackFactory
from harness.verify import verify
from tests.integration.helpers import create, hybrid_collection, queue_total, wait_until
from tests.integration.traffic import CONNECTION_DROPPED, Traffic

# Every program that serves requests; each is killed with its whole process group.
KILLED = (
    "worker",
    "encoder:encoder-1",  # the model holder
    "encoder:encoder-2",  # the router
    "api:api-1",
    "redis",
    "rabbitmq",
)
RECOVERY_S = 120  # generous for a loaded 2-core machine; the target is 30 s
STALL_S = 60  # a queue that has not shrunk for this long is stuck
# What a phase may answer besides 200 and 503: the killed api's own connections drop.
# A whole-stack restart drops every connection while it is down.
ALLOWED = {"api:api-1": {503, CONNECTION_DROPPED}, "restart": {503, CONNECTION_DROPPED}}


def _all_documents(client: httpx.Client, name: str) -> dict[str, str]:
    found: dict[str, str] = {}
    after = None
    while True:
        body: dict[str, Any] = {"page_size": 1000, "after": after}
        page = client.post(f"/v1/collections/{name}/documents/fetch", json=body)
        assert page.status_code == 200, page.text
        found.update({d["id"]: d["name"] for d in page.json()["documents"]})
        after = page.json()["after"]
        if after is None:
            return found


def _drained(client: httpx.Client, name: str) -> None:
    """Wait for the collection's queue to empty while it keeps shrinking: the backlog the outages
    left takes as long as the encoders need to embed it, so only a queue that stops moving for
    STALL_S fails (a write that is stuck, or failed for good, never leaves it)."""
    lowest = queue_total(client, name)
    moved = time.monotonic()
    while lowest > 0:
        assert time.monotonic() - moved < STALL_S, f"the queue stayed at {lowest} for {STALL_S} s"
        time.sleep(0.5)
        total = queue_total(client, name)
        if total < lowest:
            lowest, moved = total, time.monotonic()


def _recovered(stack: Stack, traffic: Traffic, phase: str) -> None:
    """Ready again, and writes and searches of both kinds succeed after the fault."""
    wait_until(
        lambda: (
            traffic.write_outcomes.successes_since(phase) >= 5
            and traffic.search_outcomes.successes_since(phase) >= 6
        ),
        timeout=RECOVERY_S,
        interval=0.5,
    )
    with httpx.Client(base_url=stack.base_url, timeout=10) as http:
        wait_until(
            lambda: http.get("/v1/health/ready").status_code == 200,
            timeout=RECOVERY_S,
            interval=0.5,
        )


@pytest.fixture
def faulty(make_stack: StackFactory) -> Stack:
    return make_stack()


def test_every_process_killed_in_turn_loses_nothing(faulty: Stack) -> None:
    name = f"faults{uuid.uuid4().hex[:6]}"
    client = httpx.Client(base_url=faulty.base_url, timeout=60)
    create(client, name, hybrid_collection())
    traffic = Traffic(faulty.base_url, name).start()
    try:
        wait_until(lambda: traffic.write_outcomes.successes_since("warmup") >= 20, timeout=120)
        for program in KILLED:
            traffic.phase = program
            old = faulty.kill9(program)
            faulty.wait_restarted(program, old, timeout=RECOVERY_S)
            _recovered(faulty, traffic, program)
        traffic.phase = "restart"
        faulty.restart()
        _recovered(faulty, traffic, "restart")
        traffic.phase = "after"
        _recovered(faulty, traffic, "after")
    finally:
        traffic.stop()
    try:
        _drained(client, name)
    except AssertionError as exc:  # say what is left, and what the processes said about it
        info = client.get(f"/v1/collections/{name}/queue/info").text
        left = redis.Redis.from_url(faulty.redis_url).hgetall(RedisKeys.queue_items(name))
        raise AssertionError(f"{exc}\nqueue: {info}\nledger: {left}\n{faulty.log_tails()}") from exc
    verdict = verify({}, "", traffic.writes, _all_documents(client, name))
    assert verdict.ok, verdict.summary()
    assert verdict.acknowledged > 100
    assert traffic.write_outcomes.unexpected(ALLOWED) == {}
    assert traffic.search_outcomes.unexpected(ALLOWED) == {}
    client.close()
