"""`python3 -m bench.writecost`: the CPU an async upsert costs, summed over every process of the
stack and by process group, at the keyword load study's write rate, for each number of api
processes (`--api-processes`, one stack each, in one run): what each search node's replica adds
to every write.

Each stack (two encoders, one holding the model, `BRAID_API_PROCESSES` as asked, plus any `--env`)
pre-populates the load study's keyword collection (`--documents`, bench/ceiling/traffic.py) and
waits for the worker's optimize to finish. Then it searches, each search on a new connection (the
kernel spreads connections over the api processes), until every search node's heartbeat says its
replica is awake: with `BRAID_REPLICA_IDLE_S` at an hour they stay so, applying the stream as they
do while searches come, and nothing searches in the window. Then it sends async upserts of
load-study documents (`POST …/documents`, each with a new text, so each is indexed anew; the
collection has no model) from `--users` users, each pausing `--pause` s after an answer: ~85 a
second by default, the writes of the keyword knee. It measures `--seconds` from the end of the
first optimize the writes bring about (the worker optimizes a keyword shard when a fifth of it is
dead versions: with 20,000 documents a cycle is about a window long, so one often falls in it, the
same for every count), reading each supervisord program's CPU from /proc (bench/common/cpu.py), and
prints CPU-ms per acknowledged upsert, whether an optimize ran in the window after all (its child's
CPU is the worker's) and whether every replica was still awake at the end.

`--replicas awake,idle` (the default) runs each count twice: once as above, and once with every
replica search-idle (no search since the start, so each drops the stream and the worker, with
every node idle, broadcasts nothing): what an added api process costs a write with no stream to
apply (its own idle work, the upserts spread thinner over more processes, more processes than
cores). The difference of the two is what the replicas' apply costs.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import sys
import time
from dataclasses import dataclass

import httpx
from redis.asyncio import Redis

from bench.ceiling import traffic
from bench.common import cpu
from bench.common.memory import program_pids
from bench.load import workload
from core.heartbeats import SEARCH_NODE_BEAT_S, SearchNodeBeat, parse_search_nodes
from core.names import RedisKeys
from harness.stack import DEFAULT_ENV, Stack
from store.edge.optimize import OPTIMIZING

WARMUP_S = 10.0
OPTIMIZE_WAIT_S = 600.0
STAMP = "2026-02-01T00:00:00Z"
WAKE_LIMIT_S = 120.0
MODES = ("awake", "idle")


class Optimizes:
    """Watches the worker's optimize copy of the collection (there exactly while one runs)."""

    def __init__(self, stack: Stack) -> None:
        self._copy = stack.data_dir / "store" / f"{OPTIMIZING}{workload.COLLECTION}"
        self.started = 0

    async def watch(self, stop: asyncio.Event) -> None:
        running = False
        while not stop.is_set():
            now = self._copy.exists()
            self.started += now and not running
            running = now
            await asyncio.sleep(0.2)

    async def first_done(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.started and not self._copy.exists():
                return True
            await asyncio.sleep(0.5)
        return False


def bodies(count: int) -> list[bytes]:
    fake = workload.seeded(7)
    chosen = random.Random(7)
    return [
        json.dumps(workload.document(fake, chosen.randrange(100_000), STAMP)).encode()
        for _ in range(count)
    ]


@dataclass
class Window:
    """What one stack's measured window found."""

    processes: int
    replicas: str  # "awake" (applying the stream) or "idle" (dropping it)
    upserts_s: float
    cpu_ms: dict[str, float]  # per acknowledged upsert, by group
    optimizes: int  # started in the window
    awake: int  # replicas awake at the end
    restarted: list[str]

    @property
    def total(self) -> float:
        return sum(self.cpu_ms.values())


async def beats(stack: Stack) -> dict[str, SearchNodeBeat]:
    board = Redis.from_url(stack.redis_url)
    try:
        return parse_search_nodes(await board.hgetall(RedisKeys.searchers()))
    finally:
        await board.aclose()


async def wake(stack: Stack, processes: int) -> None:
    """Search, a new connection each time, until every search node beat awake after the first."""
    encoded = [json.dumps(body).encode() for body in traffic.bodies(50, 11)]
    started = time.time()
    for n in itertools.count():
        found = await beats(stack)
        awake = [b for b in found.values() if b.ts > started + SEARCH_NODE_BEAT_S and not b.idle]
        if len(awake) >= processes:
            return
        if time.time() - started > WAKE_LIMIT_S:
            raise RuntimeError(f"{len(awake)} of {processes} replicas awake after a search each")
        async with httpx.AsyncClient(base_url=stack.base_url, timeout=60.0) as client:
            response = await client.post(
                f"{traffic.BASE}/search", content=encoded[n % len(encoded)], headers=traffic.JSON
            )
            response.raise_for_status()
        await asyncio.sleep(0.2)


async def quiet(stack: Stack, processes: int) -> None:
    """Wait until every search node beats idle (none searched since its start)."""
    started = time.time()
    while True:
        found = await beats(stack)
        fresh = [b for b in found.values() if b.ts > started]
        if len(fresh) >= processes and all(b.idle for b in fresh):
            return
        if time.time() - started > WAKE_LIMIT_S:
            raise RuntimeError(f"the {processes} replicas did not all beat idle")
        await asyncio.sleep(0.5)


async def upserts(
    stack: Stack, processes: int, replicas: str, users: int, pause_s: float, seconds: float
) -> Window:
    encoded = bodies(3000)
    numbers = itertools.count()
    acknowledged = [0]
    stop = asyncio.Event()
    path = f"/v1/collections/{workload.COLLECTION}/documents"
    headers = {"content-type": "application/json"}

    async def user(client: httpx.AsyncClient) -> None:
        while not stop.is_set():
            n = next(numbers)
            body = encoded[n % len(encoded)].replace(STAMP.encode(), workload.now_iso().encode())
            body = body.replace(b'"content": "', b'"content": "n%d ' % n, 1)  # a new text
            response = await client.post(path, content=body, headers=headers)
            acknowledged[0] += response.status_code == 200
            await asyncio.sleep(pause_s)

    limits = httpx.Limits(max_connections=users)
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=60.0, limits=limits) as client:
        optimizes = Optimizes(stack)
        tasks = [asyncio.create_task(user(client)) for _ in range(users)]
        tasks.append(asyncio.create_task(optimizes.watch(stop)))
        try:
            say("writing until the worker's first optimize is done")
            if not await optimizes.first_done(OPTIMIZE_WAIT_S):
                say(f"no optimize within {OPTIMIZE_WAIT_S:.0f} s; measuring anyway")
            await asyncio.sleep(WARMUP_S)
            pids = await asyncio.to_thread(program_pids, stack, {})
            started = optimizes.started
            count0, start, before = acknowledged[0], time.monotonic(), cpu.read(pids)
            await asyncio.sleep(seconds)
            count1, end, after = acknowledged[0], time.monotonic(), cpu.read(pids)
            in_window = optimizes.started - started
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        restarted = cpu.restarted(pids, await asyncio.to_thread(program_pids, stack, pids))
    done = count1 - count0
    spent = cpu.by_group(cpu.spent(before, after))
    awake = sum(not b.idle for b in (await beats(stack)).values())
    return Window(
        processes,
        replicas,
        done / (end - start),
        {group: used * 1000 / done for group, used in spent.items()},
        in_window,
        awake,
        restarted,
    )


def table(windows: list[Window]) -> list[str]:
    """A row a window, each ÷ the first window of its replicas' mode; then, where a count ran
    both ways, what the replicas' apply added (awake less idle)."""
    groups = [g for g in cpu.GROUPS if any(w.cpu_ms.get(g, 0.0) >= 0.005 for w in windows)]
    first = {w.replicas: w.total for w in reversed(windows)}
    lines = [
        "| api processes | replicas | upserts/s | "
        + " | ".join(f"{g} CPU-ms" for g in groups)
        + " | total CPU-ms an upsert | ÷ the first | optimizes in the window | replicas awake |",
        "|---" * (len(groups) + 7) + "|",
    ]
    for w in windows:
        cells = " | ".join(f"{w.cpu_ms.get(g, 0.0):.2f}" for g in groups)
        lines.append(
            f"| {w.processes} | {w.replicas} | {w.upserts_s:.1f} | {cells} | **{w.total:.2f}** | "
            f"{w.total / first[w.replicas]:.2f} | {w.optimizes} | {w.awake} of {w.processes} |"
        )
    lines += [
        f"restarted in the window (their CPU is wrong): {', '.join(w.restarted)}"
        for w in windows
        if w.restarted
    ]
    return lines + split(windows)


def split(windows: list[Window]) -> list[str]:
    """Per count run both ways: the total with the replicas idle and what applying added."""
    by = {(w.processes, w.replicas): w.total for w in windows}
    counts = [w.processes for w in windows if w.replicas == "awake" and (w.processes, "idle") in by]
    if not counts:
        return []
    lines = [
        "",
        "| api processes | replicas idle, CPU-ms an upsert | the replicas' apply adds | awake |",
        "|---|---|---|---|",
    ]
    for n in counts:
        idle, awake = by[(n, "idle")], by[(n, "awake")]
        lines.append(f"| {n} | {idle:.2f} | {awake - idle:+.2f} | {awake:.2f} |")
    return lines


def say(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def measure(env: dict[str, str], count: int, mode: str, args: argparse.Namespace) -> Window:
    """One stack: pre-populate, every replica awake (or idle), then the window."""
    # An hour keeps a woken replica applying; an idle one never searched, so it drops the stream.
    stack_env = env | {"BRAID_API_PROCESSES": str(count), "BRAID_REPLICA_IDLE_S": "3600"}
    shown = DEFAULT_ENV | stack_env
    say(f"stack, replicas {mode}: {', '.join(f'{k}={v}' for k, v in shown.items())}")
    with Stack(stack_env) as stack:
        asyncio.run(traffic.prepare(stack, args.documents, say))
        asyncio.run(wake(stack, count) if mode == "awake" else quiet(stack, count))
        return asyncio.run(upserts(stack, count, mode, args.users, args.pause, args.seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api-processes", default="1,2,4", help="counts, one stack each")
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--pause", type=float, default=0.08, help="seconds after each answer")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the stack")
    parser.add_argument(
        "--replicas", default=",".join(MODES), help="awake, idle or both: a stack each a count"
    )
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    counts = [int(n) for n in args.api_processes.split(",")]
    modes = [m for m in args.replicas.split(",") if m]
    if not modes or set(modes) - set(MODES):
        parser.error(f"--replicas takes {' or '.join(MODES)}, comma-separated")
    windows = []
    for count in counts:
        for mode in modes:
            windows.append(measure(env, count, mode, args))
            say(f"{count} api processes, {mode}: {windows[-1].total:.2f} CPU-ms an upsert")
    print(f"{args.documents:,} documents pre-populated; {args.seconds:.0f} s a window")
    print("\n".join(table(windows)))


if __name__ == "__main__":
    main()
