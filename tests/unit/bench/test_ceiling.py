"""Pieces of the engine-ceiling benchmark that decide its numbers and its table (no network)."""

from __future__ import annotations

import math

from bench.ceiling.results import (
    ENGINE,
    HEADER,
    HEADING,
    Ceiling,
    Row,
    ms_per_search,
    ratio,
    section,
    table_rows,
)
from bench.ceiling.traffic import Answer, window_row
from bench.common import cpu
from bench.common.procs import Proc
from bench.common.report import Report


def proc(pid: int, ppid: int, cpu_s: float) -> Proc:
    return Proc(pid=pid, ppid=ppid, session=1, cpu_s=cpu_s, rss_bytes=0, command="x")


def braid_row(searches: int = 1000) -> Row:
    cpu_s = {"api": 3.0, "worker": 6.0, "broker": 1.0, "redis": 0.5, "encoders": 0.0, "other": 0.1}
    return Row("Braid end to end (8 concurrent)", searches, 10.0, cpu_s, 40.0, 90.0, 2.0)


def engine_row(searches: int = 20_000, cpu_s: float = 10.0) -> Row:
    return Row("engine, 1 thread, query only", searches, 10.0, {ENGINE: cpu_s})


def ceiling() -> Ceiling:
    return Ceiling(
        documents=80_000,
        concurrency=8,
        seconds=10.0,
        threads=2,
        queries=2000,
        braid=braid_row(),
        engine=[engine_row()],
        agreement=(199, 200),
        engine_version="0.9.0",
    )


def test_cpu_ms_per_search_is_cpu_seconds_over_searches_in_milliseconds() -> None:
    assert ms_per_search(6.0, 1000) == 6.0
    assert ms_per_search(0.5, 1000) == 0.5
    assert math.isnan(ms_per_search(1.0, 0))


def test_a_row_sums_its_processes_and_leaves_absent_ones_out() -> None:
    row = braid_row()
    assert row.per_s == 100.0
    assert row.ms("worker") == 6.0
    assert math.isclose(row.total_ms, 10.6)
    assert row.generator_ms == 2.0  # reported beside Braid's, not in its total
    assert math.isnan(row.ms(ENGINE))
    assert math.isnan(engine_row().ms("api"))


def test_the_ratio_is_braids_cpu_per_search_over_the_rows() -> None:
    assert math.isclose(ratio(braid_row(), engine_row()), 10.6 / 0.5)
    assert ratio(braid_row(), braid_row()) == 1.0
    assert math.isnan(ratio(braid_row(), engine_row(searches=0)))


def test_program_cpu_counts_each_programs_tree_and_supervisord_alone() -> None:
    table = [
        proc(1, 0, 0.5),  # supervisord
        proc(10, 1, 1.0),  # rabbitmq launcher
        proc(11, 10, 7.0),  # beam.smp
        proc(12, 11, 0.25),  # erl_child_setup
        proc(20, 1, 3.0),  # worker
        proc(21, 20, 2.0),  # optimize child
    ]
    roots = {"supervisord": 1, "rabbitmq": 10, "worker": 20, "redis": 30}
    assert cpu.program_cpu(table, roots) == {"supervisord": 0.5, "rabbitmq": 8.25, "worker": 5.0}


def test_cpu_spent_is_the_difference_and_never_negative() -> None:
    before = {"worker": 10.0, "api-1": 4.0}
    after = {"worker": 16.0, "api-1": 3.5, "api-2": 2.0}
    assert cpu.spent(before, after) == {"worker": 6.0, "api-1": 0.0, "api-2": 2.0}


def test_programs_group_into_the_tables_columns() -> None:
    spent = {
        "api-1": 1.0, "api-2": 2.0, "worker": 6.0, "rabbitmq": 1.5, "epmd": 0.5,
        "redis": 0.25, "encoder-1": 0.1, "encoder-2": 0.1, "supervisord": 0.05,
    }  # fmt: skip
    grouped = cpu.by_group(spent)
    assert list(grouped) == list(cpu.GROUPS)
    assert grouped["api"] == 3.0 and grouped["broker"] == 2.0 and grouped["worker"] == 6.0
    assert math.isclose(grouped["encoders"], 0.2) and grouped["other"] == 0.05
    assert cpu.by_group({})["redis"] == 0.0


def test_a_program_whose_pid_changed_or_vanished_is_a_restart() -> None:
    before = {"worker": 20, "api-1": 30, "redis": 40}
    assert cpu.restarted(before, {"worker": 21, "api-1": 30}) == ["redis", "worker"]
    assert cpu.restarted(before, dict(before)) == []


def test_the_window_keeps_answers_that_finished_inside_it_and_counts_errors_apart() -> None:
    answers = [
        Answer(finished=0.5, latency_s=0.9, status=200),  # warm-up
        Answer(finished=1.0, latency_s=0.010, status=200),
        Answer(finished=2.0, latency_s=0.030, status=200),
        Answer(finished=2.5, latency_s=0.020, status=503),
        Answer(finished=3.0, latency_s=0.9, status=200),  # after the window
    ]
    row = window_row("braid", answers, 1.0, 3.0, {"worker": 0.02}, 0.01)
    assert (row.searches, row.errors, row.seconds) == (2, 1, 2.0)
    assert row.p50_ms == 10.0 and row.p99_ms == 30.0
    assert row.ms("worker") == 10.0 and row.generator_ms == 5.0


def test_cores_in_use_tell_whether_more_threads_bought_more_cpu() -> None:
    assert math.isclose(braid_row().cores, 1.06)
    assert engine_row(cpu_s=9.5).cores == 0.95
    assert math.isnan(Row("empty", 0, 0.0, {}).cores)


def test_the_table_puts_braid_first_with_dashes_where_a_row_has_no_such_process() -> None:
    rows = table_rows(ceiling())
    assert len(rows) == 2 and all(len(row) == len(HEADER) for row in rows)
    braid, engine = (dict(zip(HEADER, row, strict=True)) for row in rows)
    assert braid["searches/s"] == "100.0" and braid["worker CPU-ms"] == "6.00"
    assert braid["engine CPU-ms"] == "–" and braid["Braid total ÷ this"] == "1.0×"
    assert braid["total CPU-ms"] == "**10.60**" and braid["load generator CPU-ms"] == "2.00"
    assert engine["api CPU-ms"] == "–" and engine["p50 ms"] == "–"
    assert engine["engine CPU-ms"] == "0.50" and engine["Braid total ÷ this"] == "21.2×"
    assert engine["searches/s"] == "2,000.0"


def test_the_section_says_the_method_and_flags_errors_and_restarts() -> None:
    result = ceiling()
    report = Report(title="engine ceiling", command="test", runs_heading=HEADING)
    section(report, result)
    text = report.markdown()
    assert "80,000 documents" in text and "8 at a time" in text and "199 of 200" in text
    assert "| Braid end to end (8 concurrent) |" in text
    assert "with an error" not in text and "Restarted" not in text
    assert "Braid end to end (8 concurrent) 1.06 (load generator 0.20)" in text
    assert "engine, 1 thread, query only 1.00." in text
    result.braid = Row("b", 10, 1.0, {"worker": 0.1}, errors=3)
    result.restarted = ["worker"]
    again = Report(title="engine ceiling", command="test", runs_heading=HEADING)
    section(again, result)
    assert "3 searches with an error" in again.markdown()
    assert "Restarted during the window (their CPU reads low): worker." in again.markdown()
