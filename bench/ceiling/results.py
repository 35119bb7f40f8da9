"""What the ceiling run found and how it reads: one row per measurement (Braid end to end, the
engine alone in 1 and N threads), CPU-milliseconds per search by process, and the Markdown section
with the method and the table. Pure: no stack, no engine, so the arithmetic and the table are
unit-tested."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from bench.common.cpu import GROUPS
from bench.common.report import Report

HEADING = "## Engine ceiling (bench/ceiling)"
ENGINE = "engine"  # the CPU column of the rows measured in the benchmark's own process
COLUMNS = (*GROUPS, ENGINE)
DASH = "–"


def ms_per_search(cpu_s: float, searches: int) -> float:
    """CPU milliseconds per search; NaN when nothing was searched."""
    return cpu_s * 1000.0 / searches if searches > 0 else math.nan


@dataclass(frozen=True)
class Row:
    """One measured window: searches answered in it, its length, and CPU seconds per column."""

    name: str
    searches: int
    seconds: float
    cpu_s: Mapping[str, float]  # column (COLUMNS) -> CPU seconds used in the window
    p50_ms: float = math.nan
    p99_ms: float = math.nan
    generator_cpu_s: float = math.nan  # the load generator (end to end only), not in the total
    errors: int = 0

    @property
    def per_s(self) -> float:
        return self.searches / self.seconds if self.seconds > 0 else math.nan

    def ms(self, column: str) -> float:
        """CPU-ms per search of one column; NaN where the row has no such process."""
        if column not in self.cpu_s:
            return math.nan
        return ms_per_search(self.cpu_s[column], self.searches)

    @property
    def total_ms(self) -> float:
        return ms_per_search(sum(self.cpu_s.values()), self.searches)

    @property
    def cores(self) -> float:
        """CPU in use over the window, in cores: whether more threads bought more CPU."""
        return sum(self.cpu_s.values()) / self.seconds if self.seconds > 0 else math.nan

    @property
    def generator_ms(self) -> float:
        return ms_per_search(self.generator_cpu_s, self.searches)


def ratio(braid: Row, row: Row) -> float:
    """How many times the CPU of a search through Braid is the CPU of one in `row`."""
    if not row.total_ms > 0:
        return math.nan
    return braid.total_ms / row.total_ms


@dataclass
class Ceiling:
    documents: int
    concurrency: int
    seconds: float
    threads: int
    queries: int  # distinct query texts, cycled
    braid: Row
    engine: list[Row] = field(default_factory=list)
    agreement: tuple[int, int] = (0, 0)  # queries whose top 10 matched Braid's answer, compared
    restarted: list[str] = field(default_factory=list)
    engine_version: str = ""


def cell(value: float, digits: int = 2) -> str:
    return DASH if math.isnan(value) else f"{value:,.{digits}f}"


HEADER = [
    "run", "searches/s", "p50 ms", "p99 ms",
    *(f"{column} CPU-ms" for column in COLUMNS),
    "total CPU-ms", "Braid total ÷ this", "load generator CPU-ms",
]  # fmt: skip


def table_rows(result: Ceiling) -> list[list[str]]:
    """The table's cells, Braid end to end first; CPU in milliseconds per search."""
    out = []
    for row in [result.braid, *result.engine]:
        times = ratio(result.braid, row)
        out.append(
            [
                row.name,
                cell(row.per_s, 1),
                cell(row.p50_ms, 1),
                cell(row.p99_ms, 1),
                *(cell(row.ms(column)) for column in COLUMNS),
                f"**{cell(row.total_ms)}**",
                DASH if math.isnan(times) else f"{times:.1f}×",
                cell(row.generator_ms),
            ]
        )
    return out


def method(result: Ceiling) -> list[str]:
    same, compared = result.agreement
    return [
        f"{result.documents:,} documents of the load study's keyword collection (`load`: one "
        "`keyword` vector over name and content, so two sparse arms per search), bulk-loaded and "
        f"indexed. **Braid end to end**: {result.queries:,} seed-workload queries (Faker "
        "`sentence(5)`, limit 10, every default, searches only) sent over HTTP by an asyncio "
        f"client in the benchmark's process, {result.concurrency} at a time, "
        f"{result.seconds:.0f} s measured after a warm-up; CPU of each supervisord program's "
        "process tree from /proc over the window (api: every api process, each answering its "
        "searches with its own search node; broker: "
        "RabbitMQ and epmd; other: supervisord). **Engine**: then the worker is stopped (it "
        "closes the store) and the same "
        f"shard folder is opened with qdrant-edge-py {result.engine_version} in the benchmark's "
        "process, with Braid's engine settings (one search thread); each search is the query a "
        "search node sends (built with Braid's own code: the arms as prefetches, lexical query "
        "vectors, IDF as the store counts it for a shard this size, the candidate window, a "
        "formula summing the arms with the field weights), then for '+ retrieve' the payloads of "
        "its top 10, as a search node fetches them; 'the arms' batch' is each arm's hits alone, "
        "which a search node sent before and fused in Python (fusion not timed); 'without its "
        "trigram terms' is the same query with the WMTR query vectors' words only (a ranking "
        "change, timed for what those terms cost the engine). Last, a fifth "
        "of the points is overwritten with themselves (same vectors and payloads: the state the "
        "worker's writes leave just before it optimizes a shard, old versions deleted in the "
        "indexed segment, new ones in the appendable one) and Braid's query timed again. "
        "1 thread, then "
        f"{result.threads} (one per core), {result.seconds:.0f} s each; CPU is the process's CPU "
        "time over the window. The engine's top 10 matched "
        f"Braid's answer for {same:,} of {compared:,} queries.",
        "",
    ]


def busy(result: Ceiling) -> str:
    """One line: CPU in use per row, in cores (CPU seconds ÷ window)."""
    braid = result.braid
    generator = cell(braid.generator_cpu_s / braid.seconds)
    parts = [f"{braid.name} {cell(braid.cores)} (load generator {generator})"]
    parts += [f"{row.name} {cell(row.cores)}" for row in result.engine]
    return "CPU in use, in cores (CPU seconds ÷ window): " + "; ".join(parts) + "."


def section(report: Report, result: Ceiling) -> None:
    """The method, the table and what to watch for, into `report`."""
    for line in method(result):
        report.text(line)
    report.table(HEADER, table_rows(result))
    report.text(busy(result))
    report.text()
    if result.braid.errors:
        report.text(f"Braid answered {result.braid.errors} searches with an error in the window.")
    if result.restarted:
        names = ", ".join(result.restarted)
        report.text(f"Restarted during the window (their CPU reads low): {names}.")
