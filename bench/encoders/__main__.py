"""Encoder benchmark: raw model vs Braid's pool, query latency idle and under a flood, K=1 vs K=2.

    python -m bench.encoders            # about 10 minutes on 2 cores; appends to docs/benchmarks.md
    python -m bench.encoders --quick    # fewer texts and rounds, to try the harness

Everything runs in one process tree on one machine, back to back: the raw model is called in this
process (the loader and runners a holder uses, same thread count), Braid's numbers go through
RabbitMQ to stacks this script starts (harness/stack.py: supervisord on free ports, in a
temporary data folder). Each measurement repeats `--rounds` times, raw and Braid alternating, and
reports the median with the range, because the machine may be shared.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import raw, texts
from bench.common.measure import median, percentile, spread
from bench.common.report import Report
from bench.encoders import pool
from bench.ingest.baseline import measure as ingest_baseline
from core.bus import Bus
from core.enums import EmbedKind, EncoderBackend
from core.errors import BraidError
from core.names import encoder_queue, holder_queue
from core.settings import Settings
from harness.stack import Stack, StackError

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
RUNS_HEADING = "## Runs of bench/encoders"
N = 2  # encoder processes in every stack here
QUERY = EmbedKind.QUERY


@dataclass
class Sizes:
    documents: int = 960
    seeds: int = 240
    queries: int = 200
    rounds: int = 3

    @classmethod
    def quick(cls) -> Sizes:
        return cls(documents=160, seeds=48, queries=60, rounds=1)


@dataclass
class Corpus:
    documents: list[str]
    seeds: list[str]
    queries: list[str]

    @classmethod
    def make(cls, sizes: Sizes) -> Corpus:
        return cls(
            texts.documents(sizes.documents),
            texts.seed_documents(sizes.seeds),
            texts.queries(sizes.queries * (2 * sizes.rounds + 4)),
        )

    def kinds(self) -> list[tuple[str, list[str]]]:
        return [
            ("documents, ~60 words", self.documents),
            ("seed-style, 5 paragraphs (truncated at 256 tokens)", self.seeds),
        ]

    def take_queries(self, count: int) -> list[str]:
        taken, self.queries = self.queries[:count], self.queries[count:]
        return taken


@dataclass
class Found:
    raw: dict[str, list[float]] = field(default_factory=dict)  # side by side, as a holder
    raw_intra: dict[str, list[float]] = field(default_factory=dict)  # intra-op threads
    raw_torch: dict[str, list[float]] = field(default_factory=dict)
    encode: dict[str, list[float]] = field(default_factory=dict)  # sentence-transformers' own
    braid: dict[str, list[float]] = field(default_factory=dict)
    idle: list[list[pool.Timing]] = field(default_factory=list)
    flood: list[list[pool.Timing]] = field(default_factory=list)
    flood_rates: list[float] = field(default_factory=list)
    direct: list[pool.Timing] = field(default_factory=list)
    routed: list[pool.Timing] = field(default_factory=list)
    raw_query_ms: list[float] = field(default_factory=list)
    k2_throughput: list[float] = field(default_factory=list)
    k2_direct: list[pool.Timing] = field(default_factory=list)
    holder_backend: str = "unknown"


def holder_backend(stack: Stack) -> str:
    """What encoder-1 says it loaded the model on ('cpu/onnx', 'cpu/torch', ...)."""
    found = re.search(r"loaded model \S+ from \S+ on (\S+)", stack.logs("encoder-1"))
    return found.group(1) if found else "unknown"


def settings_for(holders: int) -> Settings:
    return Settings(encoders=N, encoder_models=holders)


async def warm(bus: Bus, corpus: Corpus, holders: int) -> None:
    """Load the model on every holder (first use exports ONNX) and run both lanes once."""
    for index in range(1, holders + 1):
        await pool.first_answer(bus, encoder_queue(index), MODEL)
        await pool.throughput(bus, encoder_queue(index), MODEL, corpus.documents[:32], 4)


@dataclass
class RawModels:
    intra: raw.LoadedModel  # the default backend, one call at a time on all threads
    single: raw.LoadedModel  # the default backend, single-threaded calls (run side by side)
    torch: raw.LoadedModel

    @classmethod
    def load(cls, scratch: Path) -> RawModels:
        settings = settings_for(1)
        model = raw.load(settings.encoder_backend, scratch, MODEL)
        intra = raw.with_threads(
            model, scratch, settings.threads_per_encoder, settings.embed_batch_size
        )
        single = raw.with_threads(model, scratch, 1, settings.embed_batch_size)
        return cls(intra, single, raw.load(EncoderBackend.TORCH, scratch, MODEL))


async def measure_k1(
    stack: Stack, models: RawModels, corpus: Corpus, sizes: Sizes, found: Found
) -> None:
    settings = settings_for(1)
    bus = await Bus.connect(stack.amqp_url, retry_for_s=60)
    try:
        await warm(bus, corpus, 1)
        found.holder_backend = holder_backend(stack)
        for round_ in range(sizes.rounds):
            print(f"K=1 round {round_ + 1}/{sizes.rounds}", flush=True)
            await throughput_round(bus, models, settings, corpus, found)
            await latency_round(bus, stack, corpus, sizes, found)
        found.raw_query_ms = raw.latencies(models.intra, corpus.take_queries(sizes.queries), QUERY)
        hop = await pool.alternating(
            bus, [encoder_queue(1), encoder_queue(2)], MODEL, corpus.take_queries(sizes.queries)
        )
        found.direct, found.routed = hop[encoder_queue(1)], hop[encoder_queue(2)]
    finally:
        await bus.close()


async def throughput_round(
    bus: Bus, models: RawModels, settings: Settings, corpus: Corpus, found: Found
) -> None:
    """Raw (default backend, both ways), Braid, raw torch: back to back for each kind of text."""
    queue = holder_queue(EmbedKind.DOCUMENT)
    size, threads = settings.embed_batch_size, settings.threads_per_encoder
    for name, texts_ in corpus.kinds():
        found.raw.setdefault(name, []).append(
            raw.throughput(models.single, texts_, size, workers=threads)
        )
        found.braid.setdefault(name, []).append(await pool.throughput(bus, queue, MODEL, texts_))
        found.raw_intra.setdefault(name, []).append(raw.throughput(models.intra, texts_, size))
        with raw.torch_threads(threads):
            found.raw_torch.setdefault(name, []).append(raw.throughput(models.torch, texts_, size))
        with tempfile.TemporaryDirectory() as scratch:
            found.encode.setdefault(name, []).append(ingest_baseline(texts_, Path(scratch)))


async def latency_round(bus: Bus, stack: Stack, corpus: Corpus, sizes: Sizes, found: Found) -> None:
    queue = holder_queue(QUERY)
    idle = await pool.query_latencies(bus, queue, MODEL, corpus.take_queries(sizes.queries))
    found.idle.append(idle)
    with pool.Flood(stack.amqp_url, MODEL, corpus.documents) as flood:
        await flood.running()
        before, started = flood.texts(), time.perf_counter()
        found.flood.append(
            await pool.query_latencies(bus, queue, MODEL, corpus.take_queries(sizes.queries))
        )
        found.flood_rates.append((flood.texts() - before) / (time.perf_counter() - started))


async def measure_k2(stack: Stack, corpus: Corpus, sizes: Sizes, found: Found) -> None:
    bus = await Bus.connect(stack.amqp_url, retry_for_s=60)
    try:
        await warm(bus, corpus, 2)
        for round_ in range(sizes.rounds):
            print(f"K=2 round {round_ + 1}/{sizes.rounds}", flush=True)
            found.k2_throughput.append(
                await pool.throughput(
                    bus, holder_queue(EmbedKind.DOCUMENT), MODEL, corpus.documents
                )
            )
        hop = await pool.alternating(
            bus, [encoder_queue(1), encoder_queue(2)], MODEL, corpus.take_queries(sizes.queries)
        )
        found.k2_direct = hop[encoder_queue(1)] + hop[encoder_queue(2)]
    finally:
        await bus.close()


def run_stack(holders: int, body) -> None:  # type: ignore[no-untyped-def]
    env = {"BRAID_ENCODERS": str(N), "BRAID_ENCODER_MODELS": str(holders)}
    with Stack(env) as stack:
        try:
            asyncio.run(body(stack))
        except BraidError:
            print(stack.log_tails(), flush=True)
            raise


def p50(timings: list[pool.Timing], attr: str = "total_ms") -> float:
    return percentile([getattr(t, attr) for t in timings], 50)


def p99(timings: list[pool.Timing]) -> float:
    return percentile([t.total_ms for t in timings], 99)


def write(report: Report, found: Found, sizes: Sizes, k2: bool) -> None:
    settings = settings_for(1)
    report.text(
        f"Stack N={N}, K=1: backend {settings.encoder_backend} (the holder ran the model on "
        f"{found.holder_backend}), document lane {settings.threads_per_encoder} threads "
        f"({settings.document_workers} batch at a time) at nice +{settings.document_nice}, batch "
        f"{settings.embed_batch_size} / {settings.embed_batch_wait_ms:g} ms; query lane "
        f"{settings.query_threads} thread, batch {settings.query_batch_size} / "
        f"{settings.query_batch_wait_ms:g} ms. Braid's throughput: {pool.CHUNK}-text requests, "
        f"16 in flight, to the holders' document queue. {sizes.rounds} rounds; median (range)."
    )
    report.text()
    throughput_table(report, found)
    latency_table(report, found)
    k_table(report, found, k2)


def throughput_table(report: Report, found: Found) -> None:
    rows = []
    for name in found.raw:
        best = [max(a, b) for a, b in zip(found.raw[name], found.raw_intra[name], strict=True)]
        ratios = [b / r for b, r in zip(found.braid[name], best, strict=True)]
        to_encode = [b / r for b, r in zip(found.braid[name], found.encode[name], strict=True)]
        rows.append(
            [
                name,
                spread(found.encode[name]),
                spread(found.raw_torch[name]),
                spread(found.raw_intra[name]),
                spread(found.raw[name]),
                spread(found.braid[name]),
                f"{median(ratios):.0%} ({min(ratios):.0%}–{max(ratios):.0%})",
                f"{median(to_encode):.0%} ({min(to_encode):.0%}–{max(to_encode):.0%})",
            ]
        )
    threads = settings_for(1).threads_per_encoder
    report.text(
        "**Throughput, texts/s.** Raw: the model called directly in one process, "
        f"{threads} threads, either one call at a time with {threads} intra-op threads or "
        f"{threads} single-threaded calls side by side. Braid / raw: against the better raw "
        "ONNX figure of the same round. `encode()`: the baseline a user would pick, "
        "sentence-transformers' own `encode(texts, batch_size=32)` with its default threads, in "
        "a process of its own (bench/ingest/baseline.py); bench/ingest holds the whole ingest "
        "path to it."
    )
    report.text()
    report.table(
        ["texts", "encode()", "raw torch", "raw ONNX, intra-op", "raw ONNX, side by side",
         "Braid pool", "Braid / raw", "Braid / encode()"],
        rows,
    )  # fmt: skip


def latency_table(report: Report, found: Found) -> None:
    idle = [p50(r) for r in found.idle]
    flood = [p50(r) for r in found.flood]
    ratios = [f / i for f, i in zip(flood, idle, strict=True)]
    report.text("**Query embedding latency, 1 text, ms** (sequential, to the holders' query queue)")
    report.text()
    report.table(
        ["", "p50", "p99", "holder inference p50", "document texts/s meanwhile"],
        [
            ["raw model, in process", f"{percentile(found.raw_query_ms, 50):.1f}",
             f"{percentile(found.raw_query_ms, 99):.1f}", "", ""],
            ["Braid, idle", spread(idle), spread([p99(r) for r in found.idle]),
             spread([p50(r, "inference_ms") for r in found.idle]), ""],
            ["Braid, during a bulk flood", spread(flood), spread([p99(r) for r in found.flood]),
             spread([p50(r, "inference_ms") for r in found.flood]), spread(found.flood_rates)],
        ],
    )  # fmt: skip
    report.text(
        f"Flood p50 / idle p50 (same round): {median(ratios):.2f}× "
        f"({min(ratios):.2f}–{max(ratios):.2f})."
    )
    report.text()


def k_table(report: Report, found: Found, k2: bool) -> None:
    docs = next(iter(found.braid))
    extra = p50(found.routed) - p50(found.direct)
    rows = [
        ["1", spread(found.braid[docs]), f"{p50(found.direct, 'inference_ms'):.1f}",
         f"{p50(found.direct):.1f}", f"{p50(found.routed):.1f} (+{extra:.1f})"],
    ]  # fmt: skip
    if k2:
        rows.append(
            ["2", spread(found.k2_throughput), f"{p50(found.k2_direct, 'inference_ms'):.1f}",
             f"{p50(found.k2_direct):.1f}", "no router"]
        )  # fmt: skip
    report.text(f"**K=1 vs K=2, N={N}** ({docs}; latencies: 1-text queries, p50 ms)")
    report.text()
    report.table(
        ["K", "throughput, texts/s", "inference", "direct to a holder", "routed via a router"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python3 -m bench.encoders", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    parser.add_argument("--rounds", type=int, help="repetitions of each measurement")
    parser.add_argument("--no-k2", action="store_true", help="skip the K=2 stack")
    parser.add_argument("--no-write", action="store_true", help="print, do not append to docs")
    args = parser.parse_args()
    sizes = Sizes.quick() if args.quick else Sizes()
    if args.rounds:
        sizes.rounds = args.rounds
    corpus, found = Corpus.make(sizes), Found()
    report = Report(
        "encoder pool" + (" (quick)" if args.quick else ""),
        command=shlex.join(["python", "-m", "bench.encoders", *sys.argv[1:]]),
        runs_heading=RUNS_HEADING,
    )
    with tempfile.TemporaryDirectory(prefix="braid-bench-") as scratch:
        models = RawModels.load(Path(scratch))
        run_stack(1, lambda stack: measure_k1(stack, models, corpus, sizes, found))
    k2 = not args.no_k2
    if k2:
        try:
            run_stack(2, lambda stack: measure_k2(stack, corpus, sizes, found))
        except (BraidError, StackError) as exc:  # keep the K=1 numbers; say what went wrong
            print(f"K=2 failed: {exc}", flush=True)
            report.text(f"K=2 stack failed: {type(exc).__name__}: {str(exc)[:300]}")
            report.text()
            k2 = False
    write(report, found, sizes, k2)
    print(report.markdown())
    if not args.no_write:
        report.append_to()


if __name__ == "__main__":
    main()
