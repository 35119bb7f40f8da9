"""The fault suite, with volume: under a stream of bulk, single and sync async writes and
searches that keeps more documents queued than the worker holds (its prefetch, and the messages
it keeps for the reaper), each fault in turn: kill -9 of each process and of the worker's lexical
child, SIGSTOP of the broker and of Redis for FREEZE_S (a hang, not a crash), then a restart of
the whole stack. After each the stack recovers with no hand; at the end every acknowledged write
is there with its newest version, every sync write was seen by the next search, and the only
errors are 503s (with Retry-After) and the dropped connections of a killed api process.

It prints a line per fault (time to recover, writes acknowledged and lost, errors): run it with
`-s` to read them (docs/benchmarks.md, "Faults with volume")."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis

from core.names import RedisKeys
from harness.stack import Stack, StackFactory
from harness.verify import Verdict, Write, verify
from tests.integration.helpers import (
    all_documents,
    create,
    drained,
    hybrid_collection,
    wait_until,
)
from tests.integration.traffic import CONNECTION_DROPPED
from tests.integration.volume import BACKLOG, VolumeTraffic

FREEZE_S = 30.0
RECOVERY_S = 180  # generous for a loaded 2-core machine
STALL_S = 90  # a queue that has not shrunk for this long is stuck


@dataclass(frozen=True)
class Fault:
    phase: str
    program: str
    freeze_s: float = 0.0  # SIGSTOP this long; 0: kill -9
    drops_readiness: bool = False  # long enough that readiness must leave 200 meanwhile
    child: str = ""  # kill -9 the program's child that runs `python -m child`, not the program


FAULTS = (
    Fault("kill rabbitmq", "rabbitmq", drops_readiness=True),
    Fault("stop rabbitmq", "rabbitmq", FREEZE_S, drops_readiness=True),
    Fault("kill redis", "redis"),
    Fault("stop redis", "redis", FREEZE_S, drops_readiness=True),
    Fault("kill worker", "worker"),
    Fault("kill lexical child", "worker", child="worker.lexical"),
    Fault("kill model holder", "encoder:encoder-1"),
    Fault("kill router", "encoder:encoder-2"),
    Fault("kill api-1", "api:api-1"),
)
# What a phase may answer besides 200 and 503: the killed api's own connections drop, and a
# whole-stack restart drops every connection while it is down.
ALLOWED = {"kill api-1": {503, CONNECTION_DROPPED}, "restart": {503, CONNECTION_DROPPED}}


def _recovered(stack: Stack, traffic: VolumeTraffic, phase: str) -> None:
    """Ready again, and writes of every kind and searches succeed after the fault."""
    needed = {
        "async": (traffic.write_outcomes, 5),
        "bulk": (traffic.bulk_outcomes, 2),
        "sync": (traffic.sync_outcomes, 2),
        "search": (traffic.search_outcomes, 6),
    }

    def short() -> dict[str, dict[int, int]]:
        return {
            kind: dict(outcomes.counts(phase))
            for kind, (outcomes, least) in needed.items()
            if outcomes.successes_since(phase) < least
        }

    try:
        wait_until(lambda: not short(), timeout=RECOVERY_S, interval=0.5)
        with httpx.Client(base_url=stack.base_url, timeout=10) as http:
            wait_until(
                lambda: http.get("/v1/health/ready").status_code == 200,
                timeout=RECOVERY_S,
                interval=0.5,
            )
    except AssertionError as exc:
        raise AssertionError(
            f"{phase}: not recovered: {exc}; answers so far of what lags: {short()}; "
            f"readiness: {dict(traffic.health.get(phase, {}))}\n{stack.log_tails()}"
        ) from exc


def _inflict(stack: Stack, fault: Fault) -> None:
    if fault.freeze_s:
        with stack.frozen(fault.program):
            time.sleep(fault.freeze_s)  # the fault itself is a length of time
    elif fault.child:  # the worker starts another in its place with a later batch
        before = wait_until(lambda: stack.child_pids(fault.program, fault.child), RECOVERY_S)
        os.kill(min(before), signal.SIGKILL)
        wait_until(lambda: stack.child_pids(fault.program, fault.child) - before, RECOVERY_S)
    else:
        old = stack.kill9(fault.program)
        stack.wait_restarted(fault.program, old, timeout=RECOVERY_S)


def _lost_by_phase(verdict: Verdict, traffic: VolumeTraffic) -> Counter[str]:
    """Each id that does not match, charged to the phase of its newest acknowledged write."""
    bad = set(verdict.missing) | set(verdict.stale) | set(verdict.unexpected)
    newest: dict[str, Write] = {}
    for write in traffic.writes:
        if write.status == 200 and write.doc in bad:
            if write.doc not in newest or write.timestamp > newest[write.doc].timestamp:
                newest[write.doc] = write
    return Counter(traffic.phase_of(write) for write in newest.values())


@pytest.fixture
def faulty(make_stack: StackFactory) -> Stack:
    return make_stack()


def test_every_fault_under_volume_loses_nothing(faulty: Stack) -> None:
    name = f"faults{uuid.uuid4().hex[:6]}"
    client = httpx.Client(base_url=faulty.base_url, timeout=60)
    create(client, name, hybrid_collection())
    traffic = VolumeTraffic(faulty.base_url, name, BACKLOG).start()
    report: list[dict[str, Any]] = []
    try:
        wait_until(lambda: traffic.write_outcomes.successes_since("warmup") >= 20, timeout=120)
        for fault in (*FAULTS, Fault("restart", "")):
            wait_until(lambda: traffic.queued >= BACKLOG, timeout=RECOVERY_S, interval=0.5)
            backlog = traffic.queued
            traffic.enter(fault.phase)
            started = time.monotonic()
            if fault.program:
                _inflict(faulty, fault)
            else:
                faulty.restart()
            ended = time.monotonic()
            _recovered(faulty, traffic, fault.phase)
            report.append(
                {
                    "fault": fault.phase,
                    "backlog": backlog,
                    "fault_s": round(ended - started, 1),
                    "recovered_s": round(time.monotonic() - ended, 1),
                }
            )
            print(json.dumps(report[-1]), flush=True)
        traffic.enter("after")
        _recovered(faulty, traffic, "after")
    finally:
        traffic.stop()
    drain_started = time.monotonic()
    try:
        drained(client, name, STALL_S)
    except AssertionError as exc:  # say what is left, and what the processes said about it
        info = client.get(f"/v1/collections/{name}/queue/info").text
        left = redis.Redis.from_url(faulty.redis_url).hlen(RedisKeys.queue_items(name))
        raise AssertionError(f"{exc}\nqueue: {info}\nledger: {left}\n{faulty.log_tails()}") from exc
    drain_s = time.monotonic() - drain_started
    verdict = verify({}, "", traffic.writes, all_documents(client, name))
    lost = _lost_by_phase(verdict, traffic)
    outcomes = (traffic.write_outcomes, traffic.bulk_outcomes, traffic.sync_outcomes)
    for row in report:
        phase = row["fault"]
        row["acknowledged"] = sum(o.successes_since(phase) for o in outcomes)
        row["lost"] = lost[phase]
        row["errors"] = {
            str(status): n
            for o in (*outcomes, traffic.search_outcomes)
            for status, n in o.counts(phase).items()
            if status != 200
        }
        row["readiness"] = dict(traffic.health.get(phase, Counter()))
    print(json.dumps({"faults": report, "drain_s": round(drain_s, 1)}, indent=1))
    print(verdict.summary())
    assert verdict.ok, verdict.summary()
    assert verdict.acknowledged > 1000
    assert traffic.stale_reads == [], f"sync writes a search did not show: {traffic.stale_reads}"
    for outcome in (*outcomes, traffic.search_outcomes):
        assert outcome.unexpected(ALLOWED) == {}, report
    for fault in FAULTS:
        if fault.drops_readiness:  # never 200 while the broker or Redis was gone
            seen = traffic.health.get(fault.phase, Counter())
            assert set(seen) - {200}, (fault.phase, dict(seen))
    client.close()
