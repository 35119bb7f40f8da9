"""One configuration of the load study, start to end: its own stack (harness/stack.py: the
repo's supervisord.conf on free ports in a temporary folder), the collection created and bulk
pre-populated, Locust (locustfile.py, through driver.py) at each user count, the overload and the
recovery, the queue drained and every document checked against the acknowledged writes
(harness/verify.py). What it finds goes into plan.py's ConfigResult; __main__.py reports it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from bench.common import procs, pyspy, scrape
from bench.common.measure import slope
from bench.ingest import baseline, milvus
from bench.load import workload
from bench.load.collection import Gauges, LoadCollection
from bench.load.driver import LocustProcess, failure_counts, number
from bench.load.plan import P50_LIMIT_MS, ConfigResult, Level, Overload, Plan, Slice
from core.bus import Bus
from harness.stack import REPO_ROOT, Stack

OUT_DIR = REPO_ROOT / "docs" / "load"
RUNS_HEADING = "## Runs of bench/load"
SAMPLE_S = 2.0  # queue depths are sampled this often during a level

# --- the runner ---------------------------------------------------------------------------------


class Run:
    def __init__(self, plan: Plan, config: str, stack: Stack, scratch: Path) -> None:
        self.plan = plan
        self.config = config
        self.stack = stack
        self.scratch = scratch
        self.client = httpx.AsyncClient(base_url=stack.base_url, timeout=120.0)
        self.braid = procs.TreeMeter(lambda: procs.session_tree(stack.supervisord_pid))

    def say(self, message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {self.config}: {message}", flush=True)

    async def measure(self, locust: LocustProcess, gauges: Gauges, users: int) -> Level:
        await locust.ramp(users)
        self.say(f"{users} users: settling {self.plan.settle_s:.0f} s")
        await asyncio.sleep(self.plan.settle_s)
        await locust.reset()
        histogram0 = scrape.buckets(await self.exposition())
        self.braid.usage()
        locust.meter.usage()
        busy0, total0 = procs.machine_busy_s()
        started = time.monotonic()
        doc_samples: list[tuple[float, int]] = []
        search_samples: list[int] = []
        while True:
            doc_samples.append((time.monotonic() - started, await gauges.doc_queue()))
            search_samples.append(await gauges.search_queue())
            if time.monotonic() - started >= self.plan.window_s:
                break
            await asyncio.sleep(SAMPLE_S)
        stats = await locust.stats()
        failures = await locust.failures()
        histogram1 = scrape.buckets(await self.exposition())
        elapsed = time.monotonic() - started
        braid = self.braid.usage()
        generator = locust.meter.usage()
        busy1, total1 = procs.machine_busy_s()
        errors, overloaded = failure_counts(failures)
        search, upsert, total = (
            stats.get("search", {}),
            stats.get("upsert", {}),
            stats["Aggregated"],
        )
        level = Level(
            users=users,
            rps=number(total.get("Request Count")) / elapsed,
            search_rps=number(search.get("Request Count")) / elapsed,
            search_p50=number(search.get("50%")),
            search_p95=number(search.get("95%")),
            search_p99=number(search.get("99%")),
            upsert_p50=number(upsert.get("50%")),
            server_p95=scrape.quantile_ms(0.95, histogram0, histogram1),
            braid_cpu=braid.cpu_percent,
            braid_rss_gb=braid.rss_gb,
            locust_cpu=generator.cpu_percent,
            machine_cpu=(busy1 - busy0) / max(1e-9, total1 - total0) * 100.0,
            doc_queue_start=doc_samples[0][1],
            doc_queue_end=doc_samples[-1][1],
            doc_queue_growth_per_s=slope(doc_samples),
            search_queue_start=search_samples[0],
            search_queue_end=search_samples[-1],
            requests=int(number(total.get("Request Count"))),
            errors=errors,
            overloaded=overloaded,
            hottest=", ".join(f"{name} {cpu:.0f}%" for name, cpu in braid.by_process[:3]),
        )
        self.say(
            f"{users} users: {level.rps:.1f} rps, search p50/p95/p99 {level.search_p50:.0f}/"
            f"{level.search_p95:.0f}/{level.search_p99:.0f} ms (Braid's histogram: p95 "
            f"{level.server_p95:.0f}), braid {level.braid_cpu:.0f}%, "
            f"locust {level.locust_cpu:.0f}%, doc queue {level.doc_queue_start}→"
            f"{level.doc_queue_end} ({level.doc_queue_growth_per_s:+.2f}/s), errors {errors}, "
            f"503s {overloaded}; hottest {level.hottest}"
        )
        return level

    async def exposition(self) -> str:
        response = await self.client.get("/v1/metrics/prometheus")
        response.raise_for_status()
        return response.text

    def levels(self) -> list[int]:
        if self.plan.users:
            return list(self.plan.users)
        users, out = self.plan.start_users[self.config], []
        for _ in range(self.plan.max_levels):
            out.append(users)
            users = max(users + 1, round(users * 1.5))
        return out

    async def sweep(self, locust: LocustProcess, gauges: Gauges, result: ConfigResult) -> None:
        for users in self.levels():
            level = await self.measure(locust, gauges, users)
            result.levels.append(level)
            if level.under_limits:
                result.knee = level
            elif not self.plan.users:
                break  # past the knee: one level over the limits is in the table

    async def slice(
        self, locust: LocustProcess, gauges: Gauges, at: float, seconds: float
    ) -> Slice:
        await locust.reset()
        self.braid.usage()
        started = time.monotonic()
        await asyncio.sleep(seconds)
        stats = await locust.stats()
        errors, overloaded = failure_counts(await locust.failures())
        elapsed = time.monotonic() - started
        search, total = stats.get("search", {}), stats["Aggregated"]
        return Slice(
            at_s=at,
            users=await locust.users(),
            rps=number(total.get("Request Count")) / elapsed,
            search_p50=number(search.get("50%")),
            search_p99=number(search.get("99%")),
            errors=errors,
            overloaded=overloaded,
            doc_queue=await gauges.doc_queue(),
            search_queue=await gauges.search_queue(),
            braid_cpu=self.braid.usage().cpu_percent,
        )

    async def overload(self, locust: LocustProcess, gauges: Gauges, knee: Level) -> Overload:
        users = knee.users * self.plan.overload_factor
        self.say(f"overload: {users} users for {self.plan.overload_s:.0f} s")
        before_queue = await gauges.doc_queue()
        started = time.monotonic()
        await locust.swarm(users, max(1.0, users / 10))
        slices = []
        step = 30.0 if not self.plan.smoke else 5.0
        while time.monotonic() - started < self.plan.overload_s:
            slices.append(await self.slice(locust, gauges, time.monotonic() - started, step))
            last = slices[-1]
            self.say(
                f"overload +{last.at_s:.0f}s: {last.users} users, {last.rps:.0f} rps, p50 "
                f"{last.search_p50:.0f} ms, p99 {last.search_p99:.0f} ms, doc queue "
                f"{last.doc_queue}, search queue {last.search_queue}, errors {last.errors}, "
                f"503s {last.overloaded}"
            )
        await locust.swarm(knee.users, max(1.0, users / 10))
        down = time.monotonic()
        target = min(P50_LIMIT_MS, 1.25 * knee.search_p50)
        recovered = queue_back = None
        while time.monotonic() - down < self.plan.recovery_limit_s:
            piece = await self.slice(locust, gauges, time.monotonic() - started, 5.0)
            slices.append(piece)
            since = time.monotonic() - down
            if recovered is None and piece.search_p50 <= target and piece.users == knee.users:
                recovered = since
            if queue_back is None and piece.doc_queue <= max(before_queue, knee.doc_queue_end) + 20:
                queue_back = since
            if recovered is not None and queue_back is not None:
                break
        self.say(f"overload: latency back after {recovered} s, document queue after {queue_back} s")
        over_s = self.plan.overload_s
        return Overload(
            users=users,
            base_users=knee.users,
            base_p50=knee.search_p50,
            slices=slices,
            recovered_after_s=recovered,
            queue_back_after_s=queue_back,
            seconds=over_s,
            errors=sum(piece.errors for piece in slices),
            overloaded=sum(piece.overloaded for piece in slices),
        )

    async def profile(self, locust: LocustProcess, users: int, result: ConfigResult) -> None:
        """py-spy on the stack's hottest Python process, at the knee, for `profile_s`."""
        if self.plan.profile_s <= 0:
            return
        await locust.ramp(users)
        await asyncio.sleep(10)
        self.braid.usage()
        await asyncio.sleep(10)
        ranked = self.braid.usage().by_process
        python = [(name, cpu) for name, cpu in ranked if name.startswith("python")]
        if not python:
            return
        name, cpu = python[0]
        pid = name.rsplit("(", 1)[1].rstrip(")")
        out = self.scratch / f"profile-{self.config}.txt"
        self.say(f"profiling {name} ({cpu:.0f}% CPU) for {self.plan.profile_s:.0f} s")
        failure = await pyspy.record(pid, self.plan.profile_s, out)
        if failure:
            result.profile = [failure]
            return
        result.profiled = f"{name}, {cpu:.0f}% of a core at {users} users"
        result.profile = pyspy.summarize(out.read_text())

    async def run(self) -> ConfigResult:
        bus = await Bus.connect(self.stack.amqp_url, retry_for_s=30)
        gauges = Gauges(self.client, bus)
        collection = LoadCollection(self.client, gauges, self.say)
        try:
            await collection.create(self.config)
            bulk = await collection.prepopulate(self.plan.documents, self.plan.prepopulate_minutes)
            result = ConfigResult(config=self.config, bulk=bulk)
            result.encoders = (
                f"BRAID_ENCODERS={self.stack.env['BRAID_ENCODERS']}, "
                f"BRAID_ENCODER_MODELS={self.stack.env['BRAID_ENCODER_MODELS']}"
            )
            oplog = self.scratch / f"oplog-{self.config}.txt"
            locust = LocustProcess(
                self.stack.base_url,
                oplog,
                self.scratch / f"locust-{self.config}.log",
                seed=1,
                processes=self.plan.locust_processes,
            )
            try:
                await locust.ready()
                await self.sweep(locust, gauges, result)
                knee = result.knee or (result.levels[0] if result.levels else None)
                if knee is not None:
                    await self.profile(locust, knee.users, result)
                    if self.plan.overload_s > 0:
                        result.overload = await self.overload(locust, gauges, knee)
                result.totals = await locust.totals()
                result.promtool = scrape.promtool_problems(await self.exposition()) or "clean"
            finally:
                await locust.stop()
            self.say("waiting for the document queue to drain")
            result.drain_s = await collection.drain()
            result.verdict = await collection.check(oplog)
            self.say(f"check: {result.verdict.summary()}")
            return result
        finally:
            await bus.close()
            await self.client.aclose()


# What a user could run instead, held against the bulk load on the same documents: for hybrid,
# sentence-transformers' `encode()` with its defaults and on the model cast to bfloat16 (the
# fastest a user could pick where the CPU has native bfloat16) on the first ENCODE_TEXTS
# contents; for keyword, Milvus Lite's BM25 collection on every pre-populated document
# (bench/ingest, which holds Braid to the same peers). Each runs in a process of its own before
# the stack starts, so that it has the machine to itself.
ENCODE_TEXTS = 512


def peer_rates(plan: Plan, config: str, scratch: Path) -> dict[str, float]:
    """Docs/s of each peer on this configuration's documents; none in a smoke run."""
    if plan.smoke:
        return {}
    fake = workload.seeded(plan.documents)
    if config == "hybrid":
        contents = [workload.document(fake, i, "")["content"] for i in range(ENCODE_TEXTS)]
        return {
            "`encode()` with defaults": baseline.measure(contents, scratch),
            "`encode()` on bfloat16": baseline.measure(contents, scratch, bf16=True),
        }
    documents = [
        workload.document(fake, number, workload.PREPOPULATED_AT)
        for number in range(plan.documents)
    ]
    return {"Milvus Lite": milvus.measure(documents, 0, scratch).docs_s}


async def run_config(plan: Plan, config: str, scratch: Path) -> ConfigResult:
    env = {"BRAID_ENCODERS": "2", "BRAID_ENCODER_MODELS": "1", **plan.env}
    peers = await asyncio.to_thread(peer_rates, plan, config, scratch)
    for name, rate in peers.items():
        print(f"{name}: {rate:,.1f} documents/s on these documents", flush=True)
    with Stack(env) as stack:
        result = await Run(plan, config, stack, scratch).run()
    result.bulk.peers = peers
    return result
