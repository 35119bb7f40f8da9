"""Dependencies that go away and come back: readiness tells the truth, clients get 503 with
Retry-After, everything recovers by itself; stops are clean; requests are bounded."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import httpx
import redis

from harness.stack import Stack, StackFactory
from tests.integration.helpers import (
    create,
    doc,
    doc_count,
    hybrid_collection,
    keyword_collection,
    metric_total,
    search_ids,
    search_nodes,
    wait_until,
)

SERVING = (
    "worker",
    "encoder:encoder-1",
    "encoder:encoder-2",
    "api:api-1",
    "api:api-2",
)


def _ready(client: httpx.Client) -> int:
    return client.get("/v1/health/ready").status_code


def test_after_a_broker_kill_every_consumer_comes_back_by_itself(make_stack: StackFactory) -> None:
    stack = make_stack()
    client = httpx.Client(base_url=stack.base_url, timeout=60)
    create(client, "broker", hybrid_collection())
    pids = {program: stack.pid(program) for program in SERVING}
    old = stack.kill9("rabbitmq")
    # Consumers are gone with the broker: readiness must not claim otherwise.
    assert _ready(client) != 200
    stack.wait_restarted("rabbitmq", old)
    wait_until(lambda: _ready(client) == 200, timeout=90, interval=0.5)
    accepted = client.post("/v1/collections/broker/documents", json=doc("a", "pepper harbor"))
    assert accepted.status_code == 200, accepted.text
    wait_until(lambda: doc_count(client, "broker") == 1, timeout=90)
    for vector in ("kw", "dense"):
        options = {"vector_options": [{"vector_name": vector}]}
        assert search_ids(client, "broker", "pepper harbor", **options) == ["a"]
    # Nothing was restarted by hand, and supervisord had no reason to restart anything either.
    assert {program: stack.pid(program) for program in SERVING} == pids
    client.close()


def test_a_stopped_worker_makes_readiness_503_until_it_is_back(
    stack: Stack, client: httpx.Client
) -> None:
    stack.ctl("stop", "worker")
    try:
        answer = client.get("/v1/health/ready")
        assert answer.status_code == 503
        assert answer.json()["index"] is False and answer.json()["query"] is False
    finally:
        stack.ctl("start", "worker")
    wait_until(lambda: _ready(client) == 200, timeout=90, interval=0.5)


def test_redis_down_answers_503_with_retry_after_then_recovers(
    stack: Stack, client: httpx.Client
) -> None:
    name = f"redis{uuid.uuid4().hex[:6]}"
    create(client, name, keyword_collection())
    stack.ctl("stop", "redis")
    try:
        answers = [
            client.post(f"/v1/collections/{name}/documents", json=doc("r", "lantern")),
            client.post(f"/v1/collections/{name}/search", json={"query": "lantern"}),
            client.get(f"/v1/collections/{name}/stats"),
        ]
        for answer in answers:
            assert answer.status_code == 503, answer.text
            assert int(answer.headers["Retry-After"]) >= 1
        assert _ready(client) == 503
    finally:
        stack.ctl("start", "redis")
    wait_until(lambda: _ready(client) == 200, timeout=90, interval=0.5)
    accepted = client.post(f"/v1/collections/{name}/documents", json=doc("r", "lantern"))
    assert accepted.status_code == 200, accepted.text
    wait_until(lambda: doc_count(client, name) == 1, timeout=90)


def test_no_live_model_holder_answers_503_at_once_and_keyword_search_goes_on(
    stack: Stack, client: httpx.Client
) -> None:
    name = f"enc{uuid.uuid4().hex[:6]}"
    create(client, name, hybrid_collection())
    synced = client.post(f"/v1/collections/{name}/documents/sync", json=doc("p", "pepper harbor"))
    assert synced.status_code == 200, synced.text
    dense = {"query": "pepper", "vector_options": [{"vector_name": "dense"}]}
    keyword = {"query": "pepper", "vector_options": [{"vector_name": "kw"}]}
    stack.ctl("stop", "encoder:*")
    try:
        wait_until(lambda: _ready(client) == 503, timeout=60, interval=0.5)
        # Once the holders' heartbeats have expired, a model call fails at once: 503, not 504
        # after the whole RPC timeout (polled: the worker's view of the registry may lag).
        answer = wait_until(
            lambda: _answer_with(client, f"/v1/collections/{name}/search", dense, 503),
            timeout=150,
        )
        assert int(answer.headers["Retry-After"]) >= 1
        found = client.post(f"/v1/collections/{name}/search", json=keyword)
        assert found.status_code == 200 and [h["id"] for h in found.json()["results"]] == ["p"]
    finally:
        stack.ctl("start", "encoder:*")
    wait_until(lambda: _ready(client) == 200, timeout=90, interval=0.5)
    assert search_ids(client, name, "pepper", vector_options=dense["vector_options"]) == ["p"]


def _answer_with(
    client: httpx.Client, path: str, body: dict[str, object], status: int
) -> httpx.Response | None:
    answer = client.post(path, json=body)
    return answer if answer.status_code == status else None


def test_a_worker_stop_is_clean_and_the_next_start_needs_no_recovery(
    stack: Stack, client: httpx.Client
) -> None:
    stack.ctl("stop", "worker")
    stack.ctl("start", "worker")
    wait_until(lambda: _ready(client) == 200, timeout=90, interval=0.5)
    # It exited by itself after closing the store, not by supervisord's SIGKILL.
    assert "stopped: worker (exit status 0)" in stack.logs("supervisord")
    log = stack.logs("worker")
    assert "store closed cleanly" in log
    assert log.rsplit("store opened", 1)[1].split("\n", 1)[0].endswith("last time: True)")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def _replicas_loaded(stack: Stack) -> bool:
    """Whether every api process's search node holds its replica (a copy of the store)."""
    with redis.Redis.from_url(stack.redis_url) as board:
        nodes = search_nodes(board)
    return len(nodes) >= 2 and all(node.position for node in nodes.values())


def test_a_100_mb_body_is_refused_unread_and_never_echoed(make_stack: StackFactory) -> None:
    # A stack of its own, its replicas loaded: a replica taking a copy of a store that earlier
    # tests filled (after a worker restart, say) grows an api process by ~90 MB meanwhile.
    stack = make_stack()
    wait_until(lambda: _replicas_loaded(stack), timeout=90, interval=0.5)
    apis = [stack.pid("api:api-1"), stack.pid("api:api-2")]
    before = sum(_rss_kib(pid) for pid in apis)
    port = int(stack.env["BRAID_PORT"])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        head = (
            "POST /v1/collections/any/documents/bulk HTTP/1.1\r\nHost: x\r\n"
            "Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"documents": [' + b" " * 65536)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"32 MiB" in answer and len(answer) < 2000
    assert sum(_rss_kib(pid) for pid in apis) - before < 50 * 1024


def test_a_connection_that_never_finishes_its_headers_is_closed(stack: Stack) -> None:
    port = int(stack.env["BRAID_PORT"])
    socks = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(20)]
    try:
        for sock in socks:
            sock.sendall(b"GET /v1/version HTTP/1.1\r\nHost: x\r\n")  # and nothing more
        for sock in socks:
            answer = b""
            while chunk := sock.recv(4096):  # returns b"" once the server closes
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 408")
    finally:
        for sock in socks:
            sock.close()


def test_a_full_queue_answers_503_saying_why_in_body_log_and_metric(
    make_stack: StackFactory,
) -> None:
    stack = make_stack({"BRAID_DOCUMENT_QUEUE_MAX": "1"})
    client = httpx.Client(base_url=stack.base_url, timeout=60)  # one connection: one api
    create(client, "full", keyword_collection())
    stack.ctl("stop", "worker")  # nothing drains the documents queue
    first = client.post("/v1/collections/full/documents", json=doc("a", "pepper"))
    assert first.status_code == 200, first.text
    refused = [
        client.post("/v1/collections/full/documents", json=doc(f"r{i}", "pepper")) for i in range(6)
    ]
    for answer in refused:
        assert answer.status_code == 503, answer.text
        assert answer.json() == {"detail": "queue 'braid.documents' is full; retry later"}
        assert answer.headers["X-Braid-Reason"] == "queue_full"
        assert int(answer.headers["Retry-After"]) >= 1

    def counted() -> str | None:
        # An api publishes its counters about once a second: a scrape between two publishes
        # sees part of the six, so wait for all of them rather than for the first.
        text = client.get("/v1/metrics/prometheus").text
        full = metric_total(text, "braid_unavailable_total", reason="queue_full")
        return text if full == 6 else None

    text = wait_until(counted, timeout=30)
    assert metric_total(text, "braid_unavailable_total") == 6  # no other reason
    # One line for the six: the rest were held back (one line per reason per 10 s).
    logs = "\n".join(stack.logs(f"api-{index}") for index in range(1, 9))
    lines = [line for line in logs.splitlines() if "503 queue_full" in line]
    assert len(lines) == 1, lines
    assert "POST /v1/collections/full/documents: queue 'braid.documents' is full" in lines[0]
    client.close()
