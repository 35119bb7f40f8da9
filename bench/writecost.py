"""`python3 -m bench.writecost`: the CPU an async upsert costs, summed over every process of the
stack and by process group, at the keyword load study's write rate.

It starts a stack (two encoders, one holding the model, plus any `--env`), pre-populates the load
study's keyword collection (80,000 documents, bench/ceiling/traffic.py), waits for the worker's
optimize to finish, then sends async upserts of load-study documents (`POST …/documents`, each
with a new text, so each is indexed anew; the collection has no model) from `--users` users,
each pausing `--pause` s after an answer: ~85 a second by default, the writes of the keyword
knee. It measures `--seconds` from the end of the first optimize the writes bring about (the
worker optimizes a keyword shard when a fifth of it is dead versions: at this rate, four in five
writes overwriting, every ~4 minutes, and the window is shorter than that), reading each
supervisord program's CPU from /proc (bench/common/cpu.py), and prints CPU-ms per acknowledged
upsert and whether an optimize ran in the window after all (its child's CPU is the worker's).
Nothing searches meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import time

import httpx

from bench.ceiling import traffic
from bench.common import cpu
from bench.common.memory import program_pids
from bench.load import workload
from harness.stack import DEFAULT_ENV, Stack
from store.edge.optimize import OPTIMIZING

WARMUP_S = 10.0
OPTIMIZE_WAIT_S = 600.0
STAMP = "2026-02-01T00:00:00Z"


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


async def upserts(stack: Stack, users: int, pause_s: float, seconds: float) -> None:
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
            print("writing until the worker's first optimize is done", flush=True)
            if not await optimizes.first_done(OPTIMIZE_WAIT_S):
                print(f"no optimize within {OPTIMIZE_WAIT_S:.0f} s; measuring anyway")
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
    cells = ", ".join(f"{group} {seconds_ * 1000 / done:.2f}" for group, seconds_ in spent.items())
    print(f"{done / (end - start):.1f} upserts/s acknowledged over {end - start:.0f} s")
    print(f"CPU-ms an upsert: {cells}; total {sum(spent.values()) * 1000 / done:.2f}")
    print(f"optimizes started in the window: {in_window}")
    if restarted:
        print(f"restarted during the window (their CPU is wrong): {', '.join(restarted)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=80_000)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--pause", type=float, default=0.08, help="seconds after each answer")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the stack")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    shown = DEFAULT_ENV | env
    print(f"stack: {', '.join(f'{k}={v}' for k, v in shown.items())}", flush=True)
    with Stack(env) as stack:
        asyncio.run(traffic.prepare(stack, args.documents, lambda m: print(m, flush=True)))
        asyncio.run(upserts(stack, args.users, args.pause, args.seconds))


if __name__ == "__main__":
    main()
