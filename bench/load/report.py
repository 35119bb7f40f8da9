"""The load study's tables (Markdown), CSV files and plots (PNG), and the comparison with the
numbers Amgix published for Amgix One."""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from bench.common.report import Report, write_csv
from bench.load.plan import GROWTH_LIMIT

if TYPE_CHECKING:
    from bench.load.plan import ConfigResult, Level, Plan

# "Amgix One Under Load": 4 cores of a Ryzen 9 5900X, CPU, pre-populated collection.
PUBLISHED = {
    "keyword": {"users": 225, "rps": 550.0, "p50": 86.0, "cores": 4},
    "hybrid": {"users": 12, "rps": 30.0, "p50": 94.0, "cores": 4},
}


def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.0f}"


def _queue(start: int, end: int, growth: float) -> str:
    trend = "growing" if growth > GROWTH_LIMIT else "stable"
    return f"{start:,} → {end:,} ({trend}, {growth:+.1f}/s)"


def level_table(report: Report, levels: list[Level]) -> None:
    report.table(
        [
            "users",
            "RPS (all)",
            "search p50 ms",
            "p95",
            "p99",
            "p95, Braid's histogram",
            "Braid CPU %",
            "Braid RSS GB",
            "document queue (start → end)",
            "search queue",
            "errors / 503s",
            "load gen. CPU %",
            "machine CPU %",
        ],  # fmt: skip
        [
            [
                str(level.users),
                f"{level.rps:.1f}",
                _ms(level.search_p50),
                _ms(level.search_p95),
                _ms(level.search_p99),
                _ms(level.server_p95),
                f"{level.braid_cpu:.0f}",
                f"{level.braid_rss_gb:.2f}",
                _queue(level.doc_queue_start, level.doc_queue_end, level.doc_queue_growth_per_s),
                f"{level.search_queue_start} → {level.search_queue_end}",
                f"{level.errors} / {level.overloaded}",
                f"{level.locust_cpu:.0f}",
                f"{level.machine_cpu:.0f}",
            ]
            for level in levels
        ],
    )


def plot_levels(path: Path, result: ConfigResult) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    users = [level.users for level in result.levels]
    fig, left = plt.subplots(figsize=(8, 4.5), dpi=110)
    for attr, style in (("search_p50", "o-"), ("search_p95", "s--"), ("search_p99", "^:")):
        left.plot(users, [getattr(level, attr) for level in result.levels], style, label=attr[7:])
    left.axhline(100, color="grey", linewidth=0.8)
    left.set_xlabel("users")
    left.set_ylabel("search latency, ms")
    left.set_yscale("log")
    right = left.twinx()
    right.plot(users, [level.rps for level in result.levels], "k*-", label="RPS (all requests)")
    right.set_ylabel("requests per second")
    right.set_ylim(bottom=0)
    handles = left.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    labels = left.get_legend_handles_labels()[1] + right.get_legend_handles_labels()[1]
    left.legend(handles, labels, loc="upper left", fontsize=8)
    left.set_title(f"Braid, {result.config}: latency and throughput vs users")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_overload(path: Path, result: ConfigResult) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    assert result.overload is not None
    slices = result.overload.slices
    at = [piece.at_s / 60 for piece in slices]
    fig, left = plt.subplots(figsize=(8, 4.5), dpi=110)
    left.plot(at, [piece.search_p50 for piece in slices], "o-", markersize=3, label="search p50")
    left.plot(at, [piece.search_p99 for piece in slices], ":", label="search p99")
    left.set_yscale("log")
    left.set_xlabel("minutes since the overload started")
    left.set_ylabel("ms")
    right = left.twinx()
    right.plot(at, [piece.doc_queue for piece in slices], "k-", label="document queue")
    right.set_ylabel("queued writes")
    right.set_ylim(bottom=0)
    handles = left.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    labels = left.get_legend_handles_labels()[1] + right.get_legend_handles_labels()[1]
    left.legend(handles, labels, loc="upper right", fontsize=8)
    left.set_title(
        f"Braid, {result.config}: {result.overload.users} users, then {result.overload.base_users}"
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def config_section(report: Report, result: ConfigResult, files: dict[str, str]) -> bool:
    """One configuration's part of the report; True when something failed."""
    failed = False
    bulk = result.bulk
    report.text(f"#### {result.config}")
    report.text("")
    line = (
        f"- pre-populated: {bulk.documents:,} documents, bulk-loaded (100 a request, 4 in flight) "
        f"and indexed in {bulk.seconds:.0f} s: **{bulk.docs_s:.1f} documents/s** "
        f"(all acknowledged after {bulk.sent_seconds:.0f} s)"
    )
    if bulk.peers:
        line += "; in this run, on the same documents: " + ", ".join(
            f"{name} {rate:,.1f}/s (Braid {bulk.docs_s / rate:.2f}×)"
            for name, rate in bulk.peers.items()
        )
    report.text(line)
    report.text(f"- stack: {result.encoders}, embedded store")
    report.text("")
    level_table(report, result.levels)
    if result.knee is not None:
        knee = result.knee
        report.text(
            f"**Knee: {knee.users} users, {knee.rps:.1f} RPS** (search {knee.search_rps:.1f}/s) "
            f"with search p50 {knee.search_p50:.0f} ms and stable queues; hottest processes "
            f"there: {knee.hottest}."
        )
    else:
        report.text("No level met search p50 < 100 ms with stable queues.")
    report.text("")
    for level in result.levels:
        failed |= level.errors > 0
    if result.overload is not None:
        over = result.overload
        during = [piece for piece in over.slices if piece.users == over.users]
        worst_p50 = max((piece.search_p50 for piece in during), default=math.nan)
        max_queue = max((piece.doc_queue for piece in over.slices), default=0)
        max_search = max((piece.search_queue for piece in over.slices), default=0)
        rps = [piece.rps for piece in during]
        report.text(
            f"- overload: {over.users} users ({over.users // max(1, over.base_users)}× the knee) "
            f"for {over.seconds / 60:.0f} min: {sum(rps) / max(1, len(rps)):.1f} RPS, search "
            f"p50 up to {_ms(worst_p50)} ms, document queue up to {max_queue:,}, search queue up "
            f"to {max_search}; **errors {over.errors}, 503s {over.overloaded}**"
        )
        report.text(
            f"- back to {over.base_users} users: search p50 within "
            f"{min(100.0, 1.25 * over.base_p50):.0f} ms after "
            + (f"{over.recovered_after_s:.0f} s" if over.recovered_after_s is not None else "—")
            + ", document queue back to its depth before the overload after "
            + (f"{over.queue_back_after_s:.0f} s" if over.queue_back_after_s is not None else "—")
        )
        failed |= over.errors > 0
    totals = result.totals
    statuses = ", ".join(f"{key}: {value:,}" for key, value in sorted(totals.items()))
    report.text(f"- every answer of the run, by kind and status: {statuses}")
    report.text(
        f"- `promtool check metrics` on /v1/metrics/prometheus after the load: {result.promtool}"
    )
    failed |= result.promtool != "clean"
    if result.verdict is not None:
        report.text(
            f"- nothing lost: after the queue drained ({result.drain_s:.0f} s), "
            f"{result.verdict.summary()}"
        )
        failed |= not result.verdict.ok
    report.text("- files: " + ", ".join(f"[{name}]({target})" for name, target in files.items()))
    report.text("")
    if result.profile:
        report.text(f"Profile at the knee (py-spy, {result.profiled}):")
        report.text("")
        report.text("```")
        report.lines.extend(result.profile)
        report.text("```")
        report.text("")
    return failed


def comparison(report: Report, results: list[ConfigResult]) -> None:
    cores = os.cpu_count() or 1
    rows = []
    for result in results:
        theirs = PUBLISHED.get(result.config)
        if theirs is None or result.knee is None:
            continue
        knee = result.knee
        ours_per_core = knee.rps / cores
        theirs_per_core = theirs["rps"] / theirs["cores"]
        rows.append(
            [
                result.config,
                f"{theirs['users']} users, {theirs['rps']:.0f} RPS, p50 {theirs['p50']:.0f} ms",
                f"{theirs_per_core:.1f}",
                f"{knee.users} users, {knee.rps:.1f} RPS, p50 {knee.search_p50:.0f} ms",
                f"{ours_per_core:.1f}",
                f"{ours_per_core / theirs_per_core:.2f}×",
            ]
        )
    if rows:
        report.text("#### Against Amgix One's published numbers")
        report.text("")
        report.table(
            [
                "config",
                "Amgix One (4 cores, Ryzen 9 5900X)",
                "their RPS/core",
                f"Braid ({cores} cores, load generator on the same cores)",
                "our RPS/core",
                "ratio",
            ],  # fmt: skip
            rows,
        )


def write(report: Report, plan: Plan, results: list[ConfigResult], out: Path | None) -> bool:
    """Adds the study to `report`, writes CSV and PNG under `out` (None: no files); True when a
    level had errors or the check failed."""
    failed = False
    report.text(
        "Workload: bench/load/locustfile.py (80 % search, 19 % upsert, 1 % delete, no wait), "
        f"levels measured for {plan.window_s:.0f} s after {plan.settle_s:.0f} s of settling; "
        "CPU in % of one core."
    )
    report.text("")
    stamp = time.strftime("%Y%m%dT%H%M", time.gmtime(report.started))
    for result in results:
        files: dict[str, str] = {}
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            base = f"{stamp}-{result.config}"
            write_csv(out / f"{base}.csv", [asdict(level) for level in result.levels])
            plot_levels(out / f"{base}.png", result)
            files = {"levels CSV": f"load/{base}.csv", "plot": f"load/{base}.png"}
            if result.overload is not None:
                rows = [asdict(piece) for piece in result.overload.slices]
                write_csv(out / f"{base}-overload.csv", rows)
                plot_overload(out / f"{base}-overload.png", result)
                files["overload CSV"] = f"load/{base}-overload.csv"
                files["overload plot"] = f"load/{base}-overload.png"
        failed |= config_section(report, result, files)
    comparison(report, results)
    return failed
