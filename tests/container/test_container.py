"""The image, run as the README says: healthy, the quickstart, an unprivileged user, every
program's lines in `docker logs`, a clean `docker stop` and a `docker start` that finds
everything, a `docker kill` mid-stream that loses nothing acknowledged, the encoder count from the
environment, and no network at all."""

from __future__ import annotations

import json
import time
import uuid

import httpx

from harness.verify import verify
from tests.container.conftest import BASE_URL, NAME, START_S, UID, Container, Readme, docker
from tests.integration.helpers import (
    MODEL,
    all_documents,
    create,
    drained,
    hybrid_collection,
    metric_total,
    published_after,
    wait_until,
)
from tests.integration.traffic import CONNECTION_DROPPED
from tests.integration.volume import BACKLOG, VolumeTraffic
from tests.readme import quickstart_script

RECIPES = {"carbonara", "pancakes", "gazpacho"}
# A line each of these programs writes once it is up, in its file and in `docker logs`.
STARTED = {
    "api-1": "Application startup complete",
    "encoder-1": "encoder 1 ready",
    "worker": "worker ready",
}
STALL_S = 120  # a queue that has not shrunk for this long, after a restart, is stuck


def _quickstart(box: Container) -> list[str]:
    """Run the README quickstart as written (it talks to localhost:8234): the create and the bulk
    write answer ok; the search's ids come back."""
    create, write, search = box.sh(quickstart_script(), timeout=180).splitlines()
    assert json.loads(create) == json.loads(write) == {"ok": True}, (create, write)
    return [hit["id"] for hit in json.loads(search)["results"]]


def _uids(box: Container) -> dict[str, int]:
    """Each process in the container (its command line) and the uid it runs as."""
    table = docker("top", "braid", "-o", "uid,pid,args").splitlines()[1:]
    return {f"{pid} {args}": int(uid) for uid, pid, args in (line.split(None, 2) for line in table)}


def _in_docker_logs(box: Container, starts: int) -> None:
    """Wait until `docker logs` shows the started line of each of STARTED's programs, one per
    start, prefixed by the program, as in the program's file."""
    missing: list[str] = []

    def shown() -> bool:
        logs = set(docker("logs", NAME).splitlines())
        missing.clear()
        for program, text in STARTED.items():
            log = (box.data / "logs" / f"{program}.log").read_text(errors="replace")
            lines = [f"{program:<10} | {line}" for line in log.splitlines() if text in line]
            missing.extend(line for line in lines if line not in logs)
            if len(lines) < starts:
                missing.append(f"{program}: {text!r} in its file {starts} times")
        return not missing

    try:
        wait_until(shown, timeout=60)
    except AssertionError:
        raise AssertionError(f"not in docker logs: {missing}\n{box.log_tails()}") from None


def test_run_as_written_then_stop_and_start(container: Container) -> None:
    # The host folder already holds a file of root's (an older image's, a restore): handed over.
    (container.data / "logs").mkdir(parents=True)
    (container.data / "logs" / "old.log").write_text("from before\n")
    container.sh(Readme.RUN)
    cold_s = container.wait_healthy()
    assert _quickstart(container)[0] == "gazpacho"
    # The processes run as braid, Docker's stdout pipe was root's: the lines get there anyway.
    _in_docker_logs(container, starts=1)
    # A start before the broker is up leaves nothing to warn about later, in whatever thread
    # (once a 500 on the quickstart's create), and a broadcast nobody hears is not an error.
    for log in sorted((container.data / "logs").glob("*.log")):
        text = log.read_text(errors="replace")
        assert "never awaited" not in text and "Unhandled message" not in text, (log, text)

    # Every process runs as the image's user, and everything in the volume is its own.
    uids = _uids(container)
    assert len(uids) >= 8 and set(uids.values()) == {UID}, uids
    foreign = [p for p in container.data.rglob("*") if p.lstat().st_uid != UID]
    assert foreign == [] and container.data.stat().st_uid == UID

    stopping = time.monotonic()
    container.sh(Readme.STOP, timeout=60)
    stop_s = time.monotonic() - stopping
    state = container.state()
    # Docker's 10 s grace ran out on nothing: a SIGKILL would have left 137.
    assert state["ExitCode"] == 0 and not state["OOMKilled"], state
    shutdown = container.supervisord_log().rsplit("received SIGTERM", 1)[1]
    assert "SIGKILL" not in shutdown, shutdown
    assert "stopped: worker" in shutdown and "stopped: rabbitmq" in shutdown, shutdown

    container.sh(Readme.START)
    warm_s = container.wait_healthy()
    _in_docker_logs(container, starts=2)
    with httpx.Client(base_url=BASE_URL, timeout=60) as client:
        assert set(all_documents(client, "recipes")) == RECIPES
        search = {"query": "chilled tomato soup", "limit": 2}
        answer = client.post("/v1/collections/recipes/search", json=search)
        assert answer.status_code == 200, answer.text
        assert answer.json()["results"][0]["id"] == "gazpacho"
    print(json.dumps({"cold_start_s": cold_s, "stop_s": stop_s, "start_s": warm_s}))


def test_kill_mid_write_stream_loses_nothing_acknowledged(container: Container) -> None:
    container.sh(Readme.RUN)
    container.wait_healthy()
    name = f"kill{uuid.uuid4().hex[:6]}"
    client = httpx.Client(base_url=BASE_URL, timeout=60)
    create(client, name, hybrid_collection())
    traffic = VolumeTraffic(BASE_URL, name, BACKLOG).start()
    try:
        # More queued than the worker holds (prefetch, and what it keeps for the reaper).
        wait_until(lambda: traffic.queued >= BACKLOG, timeout=START_S, interval=0.5)
        backlog = traffic.queued
        traffic.enter("kill")
        container.sh(Readme.KILL)
        assert container.state()["ExitCode"] == 137
        container.sh(Readme.START)
        container.wait_healthy()
        traffic.enter("after")
        wait_until(lambda: traffic.bulk_outcomes.successes_since("after") >= 2, timeout=START_S)
    finally:
        traffic.stop()
    drained(client, name, STALL_S)
    verdict = verify({}, "", traffic.writes, all_documents(client, name))
    client.close()
    print(json.dumps({"backlog_at_kill": backlog, "verdict": verdict.summary()}))
    assert verdict.ok, verdict.summary()
    assert verdict.acknowledged > BACKLOG
    # Only 503s, and the connections the kill cut: after it, and the one request each writer
    # had in flight when it hit (begun before, so counted there).
    allowed = {"warmup": {503, CONNECTION_DROPPED}, "kill": {503, CONNECTION_DROPPED}}
    for outcomes in (traffic.write_outcomes, traffic.bulk_outcomes, traffic.sync_outcomes):
        assert outcomes.unexpected(allowed) == {}
        assert outcomes.counts("warmup")[CONNECTION_DROPPED] <= 1
    assert traffic.stale_reads == []


ROUTED = "braid_embed_routed_duration_seconds"
EMBED_VIA_ROUTER = f"""
import asyncio, json
from core.bus import Bus
from core.enums import EmbedKind
from core.messages import EmbedReply, EmbedRequest
from core.names import encoder_queue

async def main():
    bus = await Bus.connect("amqp://guest:guest@127.0.0.1:5672/", retry_for_s=30)
    try:
        request = EmbedRequest(model={MODEL!r}, kind=EmbedKind.QUERY, texts=["hello world"])
        reply = await bus.call(encoder_queue(2), request, EmbedReply, timeout_s=120)
    finally:
        await bus.close()
    print(json.dumps({{"holder": reply.holder, "dims": len(reply.vectors[0])}}))

asyncio.run(main())
"""


def test_three_encoders_one_holding_the_model(container: Container) -> None:
    container.sh(Readme.RUN_ENCODERS)
    container.wait_healthy()
    with httpx.Client(base_url=BASE_URL, timeout=60) as client:

        def roles() -> dict[str, str]:
            nodes = client.get("/v1/metrics/current").json()["nodes"]
            return {n: node["role"] for n, node in nodes.items() if n.startswith("encoder-")}

        wait_until(lambda: len(roles()) == 3, timeout=START_S)
        assert sorted(roles().values()) == [
            "encoder:model_holder",
            "encoder:router",
            "encoder:router",
        ]
        router = next(n for n, role in roles().items() if role == "encoder:router")
        holder = next(n for n, role in roles().items() if role == "encoder:model_holder")
        assert router == "encoder-2" and holder == "encoder-1"
        before = metric_total(
            published_after(client, router, time.time()), f"{ROUTED}_count", node=router
        )
        # An embed sent to the router's own queue: it holds no model, so it forwards it.
        reply = container.python(EMBED_VIA_ROUTER)
        assert reply == {"holder": 1, "dims": 384}
        after = published_after(client, router, time.time())
        assert metric_total(after, f"{ROUTED}_count", node=router) == before + 1


OFFLINE_PROBE = """
import json, os, time, urllib.request

def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request("http://127.0.0.1:8234" + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.loads(answer.read())

config = {"vectors": [{"name": "dense", "type": "dense_model",
                       "model": "sentence-transformers/all-MiniLM-L6-v2",
                       "index_fields": ["content"]}]}
call("POST", "/v1/collections/offline", config)
for doc_id, content in (("soup", "A cold Spanish soup of blended tomatoes and cucumber."),
                        ("cake", "Flour, milk and eggs whisked into a batter.")):
    call("POST", "/v1/collections/offline/documents/sync",
         {"id": doc_id, "timestamp": "2026-01-01T00:00:00Z", "content": content})
hits = call("POST", "/v1/collections/offline/search", {"query": "chilled gazpacho", "limit": 2})
print(json.dumps({"interfaces": sorted(os.listdir("/sys/class/net")),
                  "ids": [hit["id"] for hit in hits["results"]]}))
"""


def test_offline_with_no_network_at_all(container: Container) -> None:
    container.sh(Readme.RUN_OFFLINE)
    container.wait_healthy()  # the health check runs inside: no port is published
    # A dense collection: the model loads and embeds with nothing to fetch it from.
    assert container.python(OFFLINE_PROBE) == {"interfaces": ["lo"], "ids": ["soup", "cake"]}
