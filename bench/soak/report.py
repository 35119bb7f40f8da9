"""The soak's results as files and text: the per-minute rows as CSV, a chart (RSS and anonymous
memory per process, search latency over time) as PNG, and a Markdown section for
docs/benchmarks.md. It renders what bench/soak/findings.py computed and judged; it decides nothing.

Memory is shown both ways, RSS beside anonymous, because the verdict judges the anonymous part
and a reader seeing only RSS would take the store's mapped segment files for a leak."""

from __future__ import annotations

import math
import time
from pathlib import Path

from bench.common.report import Report, write_csv
from bench.load.workload import COLLECTION, VARIED_WORDS, Lengths
from bench.soak.findings import (
    GROWTH_LIMIT_MIB,
    GROWTH_LIMIT_PCT,
    Growth,
    Minute,
    SoakResult,
    Verdict,
    latency,
    programs,
)
from harness.stack import REPO_ROOT

OUT_DIR = REPO_ROOT / "docs" / "soak"
HEADING = "## Soak (bench/soak)"
CONFIG_WORDS = {"keyword": "keyword", "hybrid": "hybrid: keyword and the model's dense vector"}
LENGTH_WORDS = {
    Lengths.SEED: "documents of the seed workload (five Faker paragraphs, ~70 words)",
    Lengths.VARIED: f"documents of {VARIED_WORDS[0]} to {VARIED_WORDS[1]} words, uniformly (every "
    "32-token length the model's document lane pads to, up to its 256 and past it)",
}


def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.0f}"


def _mib(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.1f}"


def rows(minutes: list[Minute]) -> list[dict[str, object]]:
    """One flat dict per minute, the same columns in every row (RSS, then anonymous memory: one
    column per program each)."""
    names = programs(minutes)
    return [
        {
            "minute": row.minute,
            "seconds": round(row.seconds, 1),
            "users": row.users,
            "requests": row.answers.requests,
            "rps": round(row.rps, 2),
            "errors": row.answers.errors,
            "503s": row.answers.overloaded,
            "error_kinds": "; ".join(f"{k}: {n}" for k, n in sorted(row.answers.kinds.items())),
            "search_p50_ms": row.search_p50,
            "search_p95_ms": row.search_p95,
            "search_p99_ms": row.search_p99,
            "doc_queue": row.doc_queue,
            "doc_queue_max": row.doc_queue_max,
            "documents": row.documents,
            "stack_cpu_pct": round(row.braid_cpu, 1),
            "restarted": " ".join(row.restarted),
            **{f"rss_{name}_mib": round(row.rss_mib.get(name, math.nan), 1) for name in names},
            **{f"anon_{name}_mib": round(row.anon_mib.get(name, math.nan), 1) for name in names},
        }
        for row in minutes
    ]


def plot(path: Path, result: SoakResult) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = result.minutes
    at = [row.minute for row in minutes]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7), dpi=110, sharex=True)
    for name in programs(minutes):
        rss = [row.rss_mib.get(name, math.nan) for row in minutes]
        anon = [row.anon_mib.get(name, math.nan) for row in minutes]
        (line,) = top.plot(at, rss, "-", label=name)
        top.plot(at, anon, "--", color=line.get_color(), linewidth=0.9)
    top.plot([], [], "k--", linewidth=0.9, label="dashed: anonymous")
    top.set_ylabel("MiB per process tree: RSS —, anon --")
    top.set_ylim(bottom=0)
    size = top.twinx()
    size.plot(at, [row.documents for row in minutes], "k:", label="documents (right)")
    size.set_ylabel("documents in the collection")
    size.set_ylim(bottom=0)
    handles, labels = top.get_legend_handles_labels()
    more, names = size.get_legend_handles_labels()
    top.legend(handles + more, labels + names, loc="upper left", fontsize=7, ncol=3)
    for axis in (top, bottom):
        axis.axvline(result.warmup, color="grey", linewidth=0.8, linestyle=":")
    bottom.plot(at, [row.search_p50 for row in minutes], "o-", markersize=3, label="search p50")
    bottom.plot(at, [row.search_p95 for row in minutes], "s--", markersize=3, label="search p95")
    bottom.set_ylabel("ms (each minute)")
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel("minutes under load (dotted: end of the warm-up)")
    bottom.legend(loc="upper left", fontsize=8)
    top.set_title(f"Braid soak: {result.users} users, {result.config}, {len(minutes)} min")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_files(result: SoakResult, started: float, out: Path) -> dict[str, str]:
    """CSV and PNG under `out`; returns their links relative to docs/."""
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M", time.gmtime(started))
    write_csv(out / f"{stamp}.csv", rows(result.minutes))
    plot(out / f"{stamp}.png", result)
    return {"per-minute CSV": f"soak/{stamp}.csv", "chart": f"soak/{stamp}.png"}


def _pair(rss: float, anon: float, sign: str = "") -> str:
    """`RSS / anon` in one cell."""

    def one(value: float) -> str:
        return "–" if math.isnan(value) else f"{value:{sign}.1f}"

    return f"{one(rss)} / {one(anon)}"


def _memory_table(report: Report, result: SoakResult, verdict: Verdict) -> None:
    """One row per process, each cell `RSS / anonymous` in MiB (growth and slope too)."""
    last = result.minutes[-1].minute if result.minutes else 0
    warm = max(1, result.warmup)
    rss = {item.program: item for item in result.growth("rss")}
    anon = {item.program: item for item in result.growth("anon")}
    nothing = Growth("", "rss", math.nan, math.nan, math.nan, math.nan)
    names = [name for name in programs(result.minutes) if name in rss or name in anon]
    table = []
    for name in names:
        r, a = rss.get(name, nothing), anon.get(name, nothing)
        table.append(
            [
                name + (" **over the limit**" if name in verdict.grown else ""),
                _pair(r.first_mib, a.first_mib),
                _pair(r.baseline_mib, a.baseline_mib),
                _pair(r.end_mib, a.end_mib),
                _pair(r.growth_mib, a.growth_mib, "+"),
                _pair(r.growth_pct, a.growth_pct, "+"),
                _pair(r.slope_mib_h, a.slope_mib_h, "+"),
            ]
        )
    report.table(
        [
            "process (RSS / anon)",
            "minute 1, MiB",
            f"after the warm-up (least of min {warm}+)",
            f"end (least of the last, to min {last})",
            "growth, MiB",
            "growth, %",
            "slope, MiB/h",
        ],
        table,
    )


def section(report: Report, result: SoakResult, verdict: Verdict, files: dict[str, str]) -> None:
    """Adds the run to `report`."""
    minutes = result.minutes
    bulk, answers, lat = result.bulk, result.answers, latency(minutes)
    seconds = sum(row.seconds for row in minutes)
    rps = [row.rps for row in minutes]
    report.text(
        f"- stack: {result.stack_env}, embedded store; collection `{COLLECTION}` "
        f"({CONFIG_WORDS.get(result.config, result.config)}), {bulk.documents:,} documents "
        f"pre-populated in {bulk.seconds:.0f} s ({bulk.docs_s:.0f}/s); "
        f"{LENGTH_WORDS[result.lengths]}"
    )
    early = " (**stopped early**)" if result.stopped_early else ""
    report.text(
        f"- load: bench/load/locustfile.py (the {result.config} mix: 80 % search, 19 % upsert of a "
        f"random id of {result.id_space:,}, 1 % delete, no wait) at "
        f"**{result.users} users for {seconds / 60:.1f} min**{early} of "
        f"{result.minutes_planned} planned, a row a minute; growth and slope leave out the first "
        f"{result.warmup} min (warm-up)"
    )
    kinds = ", ".join(f"{kind}: {n:,}" for kind, n in sorted(answers.kinds.items()))
    report.text(
        f"- answers: {answers.requests:,} requests ({answers.requests / max(seconds, 1e-9):.1f}/s; "
        f"per minute {min(rps, default=0):.1f}–{max(rps, default=0):.1f}); **errors other than "
        f"503: {answers.errors:,}**" + (f" ({kinds})" if kinds else "") + f", **503s: "
        f"{answers.overloaded:,}**"
    )
    report.text(
        f"- search latency per minute: median p50 {_ms(lat.p50_median)} ms (worst minute "
        f"{_ms(lat.p50_worst)}), worst p95 {_ms(lat.p95_worst)} ms, worst p99 "
        f"{_ms(lat.p99_worst)} ms"
    )
    if minutes:
        report.text(
            f"- collection: {minutes[0].documents:,} documents at minute 1, "
            f"{minutes[-1].documents:,} at the end (the workload upserts ids 0–"
            f"{result.id_space - 1:,}: memory that follows the collection's size is data, not "
            "necessarily a leak)"
        )
    report.text(
        f"- document queue: at most {max((row.doc_queue_max for row in minutes), default=0):,} "
        f"(samples every 5 s), {minutes[-1].doc_queue if minutes else 0:,} at the end"
    )
    restarted = ", ".join(result.restarted) or "none"
    report.text(f"- processes restarted by supervisord during the run: {restarted}")
    report.text(
        "- memory: the verdict judges anonymous memory (RssAnon), not RSS, because RSS also counts "
        "the file-backed pages of the store's memory-mapped segments, reclaimable page cache that "
        "grows with the appendable segment and drops when an optimize swaps in a compacted copy"
    )
    report.text("")
    _memory_table(report, result, verdict)
    if result.check is not None:
        report.text(
            f"- nothing lost: after the queue drained ({result.drain_s:.0f} s), "
            f"{result.check.summary()}"
        )
    if files:
        report.text("- files: " + ", ".join(f"[{name}]({link})" for name, link in files.items()))
    outcome = "pass" if verdict.ok else "FAIL: " + "; ".join(verdict.reasons)
    report.text(
        f"- **verdict: {outcome}** (fails on an error other than 503, a lost write, a restart, "
        f"or a process whose anonymous memory grew more than {GROWTH_LIMIT_MIB:.0f} MiB and "
        f"{GROWTH_LIMIT_PCT:.0f} % after the warm-up)"
    )
    report.text("")
