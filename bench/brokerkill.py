"""The broker killed under a write stream, as a user met it (issue 28): bulk async writes at a
steady rate into a keyword collection, kill -9 of RabbitMQ's process group while they go on, the
stream going on after the broker's return.

    python3 -m bench.brokerkill --rate 400 --before 20 --after 60

It reports, from the kill: when the broker accepted connections again, what readiness answered
meanwhile (it must never say 200 while the broker is gone or while indexing stands still with
writes queued), when the last write acknowledged before the stream stopped was indexed (the
collection's queue empty), and the check of every acknowledged write against the collection
(harness/verify.py). Printed as markdown, for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx

from bench.load.collection import BASE, BULK, fetch_all
from bench.load.workload import COLLECTION, collection_body
from harness import verify
from harness.stack import Stack

READY_EVERY_S = 0.5
STILL_S = 30.0  # indexing that has not moved this long with writes queued stands still


@dataclass
class Timeline:
    """What was seen, in seconds from the start of the stream."""

    ready: list[tuple[float, int]] = field(default_factory=list)  # readiness status
    queued: list[tuple[float, int]] = field(default_factory=list)  # the collection's queue
    writes: list[verify.Write] = field(default_factory=list)


async def stream(
    client: httpx.AsyncClient, rate: int, until: asyncio.Event, seen: Timeline
) -> None:
    """Bulks of BULK at `rate` documents a second, one at a time, until `until` is set."""
    start, sent = time.monotonic(), 0
    base = datetime(2026, 1, 1, tzinfo=UTC)
    while not until.is_set():
        docs = [
            {
                "id": f"d{(sent + i) % 20_000}",
                "timestamp": (base + timedelta(milliseconds=sent + i)).strftime(
                    "%Y-%m-%dT%H:%M:%S.%fZ"
                ),
                "name": f"v{sent + i}",
                "content": f"document {sent + i} of the stream, written while the broker dies",
            }
            for i in range(BULK)
        ]
        sent += BULK
        try:
            status = (
                await client.post(f"{BASE}/documents/bulk", json={"documents": docs})
            ).status_code
        except httpx.TransportError:
            status = 0
        seen.writes += [
            verify.Write("upsert", d["id"], d["timestamp"], d["name"], status) for d in docs
        ]
        await asyncio.sleep(max(0.0, start + sent / rate - time.monotonic()))


async def watch(
    client: httpx.AsyncClient, origin: float, until: asyncio.Event, seen: Timeline
) -> None:
    while not until.is_set():
        now = time.monotonic() - origin
        with contextlib.suppress(httpx.TransportError):
            seen.ready.append((now, (await client.get("/v1/health/ready")).status_code))
            queue = await client.get(f"{BASE}/queue/info")
            if queue.status_code == 200:
                seen.queued.append((now, int(queue.json()["total"])))
        await asyncio.sleep(READY_EVERY_S)


def standstills(seen: Timeline) -> list[tuple[float, float]]:
    """Stretches of STILL_S or more in which writes were queued and the queue shrank at no
    sample (with the stream on, a worker that indexes keeps taking some away)."""
    found: list[tuple[float, float]] = []
    since: float | None = None
    previous: int | None = None
    for at, total in seen.queued:
        if total == 0 or previous is None or total < previous:
            if since is not None and at - since >= STILL_S:
                found.append((since, at))
            since = at if total else None
        previous = total
    if since is not None and seen.queued and seen.queued[-1][0] - since >= STILL_S:
        found.append((since, seen.queued[-1][0]))
    return found


async def run(args: argparse.Namespace) -> str:
    env = dict(item.split("=", 1) for item in args.env)
    with Stack(env) as stack:
        async with httpx.AsyncClient(base_url=stack.base_url, timeout=30) as client:
            created = await client.post(
                f"/v1/collections/{COLLECTION}", json=collection_body("keyword")
            )
            created.raise_for_status()
            seen, stop, done = Timeline(), asyncio.Event(), asyncio.Event()
            origin = time.monotonic()
            tasks = [
                asyncio.create_task(stream(client, args.rate, stop, seen)),
                asyncio.create_task(watch(client, origin, done, seen)),
            ]
            await asyncio.sleep(args.before)
            killed = time.monotonic() - origin
            old = await asyncio.to_thread(stack.kill9, "rabbitmq")
            await asyncio.to_thread(stack.wait_restarted, "rabbitmq", old, 120)
            await asyncio.to_thread(stack.wait_for_port, stack.amqp_port, 120)
            back = time.monotonic() - origin
            await asyncio.sleep(args.after)
            stop.set()
            stopped = time.monotonic() - origin
            while not seen.queued or seen.queued[-1][1] > 0 or seen.queued[-1][0] < stopped:
                if time.monotonic() - origin - stopped > args.drain_limit:
                    break
                await asyncio.sleep(1.0)
            drained = time.monotonic() - origin
            done.set()
            await asyncio.gather(*tasks)
            actual = await fetch_all(client)
    verdict = verify.verify({}, "", seen.writes, actual)
    return report(args, seen, verdict, killed, back, stopped, drained)


def report(
    args: argparse.Namespace,
    seen: Timeline,
    verdict: verify.Verdict,
    killed: float,
    back: float,
    stopped: float,
    drained: float,
) -> str:
    gone = [s for t, s in seen.ready if killed <= t <= back]
    still = standstills(seen)
    ready_while_still = [
        s for t, s in seen.ready for a, b in still if a + STILL_S <= t <= b and s == 200
    ]
    first_down = next((t - killed for t, s in seen.ready if t >= killed and s != 200), None)
    statuses = _counts([s for _, s in seen.ready])
    lines = [
        f"- command: `{shlex.join(['python3', '-m', 'bench.brokerkill', *sys.argv[1:]])}`",
        f"- stream: {args.rate} documents/s in bulks of {BULK}, keyword collection; kill -9 of "
        f"RabbitMQ's process group {killed:.1f} s in",
        f"- broker accepting again {back - killed:.1f} s after the kill; readiness left 200 "
        f"{first_down:.1f} s after it"
        if first_down is not None
        else "- readiness never left 200",
        f"- readiness while the broker was gone: {_counts(gone)}; over the run: {statuses}",
        f"- indexing stood still (the queue shrank at no sample for {STILL_S:.0f} s or more): "
        f"{[(round(a, 1), round(b, 1)) for a, b in still] or 'never'}; readiness 200 meanwhile: "
        f"{len(ready_while_still)} times",
        f"- the stream stopped {stopped - back:.1f} s after the broker's return; every write it "
        f"had acknowledged was indexed {drained - back:.1f} s after the return",
        f"- nothing lost: {verdict.summary()}",
    ]
    return "\n".join(lines)


def _counts(statuses: list[int]) -> dict[int, int]:
    return {status: statuses.count(status) for status in sorted(set(statuses))}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python3 -m bench.brokerkill", description=__doc__)
    parser.add_argument("--rate", type=int, default=400, help="documents a second (400)")
    parser.add_argument("--before", type=float, default=20.0, help="seconds before the kill (20)")
    parser.add_argument("--after", type=float, default=60.0, help="seconds after the return (60)")
    parser.add_argument("--drain-limit", type=float, default=600.0, help="seconds (600)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the stack")
    print(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
