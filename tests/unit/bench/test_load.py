"""Pieces of the load runner and the scale table that decide what the report says."""

from __future__ import annotations

import math
from pathlib import Path

from bench.common.measure import slope as _slope
from bench.common.pyspy import summarize as summarize_profile
from bench.common.report import Report
from bench.load.collection import Bulk
from bench.load.driver import failure_counts as _failure_counts
from bench.load.driver import number as _number
from bench.load.plan import ConfigResult, Level, Plan
from bench.load.report import config_section
from bench.load.run import peer_rates
from bench.load.scale import knee, report


def test_queue_growth_is_the_least_squares_slope_of_the_samples() -> None:
    assert _slope([(0.0, 10), (2.0, 10), (4.0, 10)]) == 0.0
    assert math.isclose(_slope([(0.0, 0), (2.0, 4), (4.0, 8)]), 2.0)
    # A spike in the middle of a flat queue is not growth.
    assert _slope([(0.0, 5), (2.0, 50), (4.0, 5)]) == 0.0
    assert _slope([(0.0, 3)]) == 0.0


def test_503s_are_counted_apart_from_errors() -> None:
    failures = [
        {"Method": "POST", "Name": "upsert", "Error": "HTTP 503", "Occurrences": "7"},
        {"Method": "POST", "Name": "search", "Error": "HTTP 504: timeout", "Occurrences": "2"},
        {"Method": "DELETE", "Name": "delete", "Error": "HTTP 0: refused", "Occurrences": "1"},
    ]
    assert _failure_counts(failures) == (3, 7)
    assert _failure_counts([]) == (0, 0)


def test_locust_numbers_without_samples_read_as_nan() -> None:
    assert _number("12.5") == 12.5
    assert math.isnan(_number("N/A")) and math.isnan(_number(None)) and math.isnan(_number(""))


def test_the_profile_summary_ranks_self_time_and_braids_own_frames() -> None:
    collapsed = "\n".join(
        [
            "main (worker/__main__.py:10);search (search/querying.py:40);dot (numpy/core.py:1) 60",
            "main (worker/__main__.py:10);parse (core/filters.py:5) 30",
            "poll (asyncio/events.py:80) 10",
        ]
    )
    lines = summarize_profile(collapsed)
    assert lines[0] == "100 samples; self time:"
    assert lines[1].split() == ["60.0%", "dot", "(numpy/core.py:1)"]
    inclusive = lines[lines.index("inclusive time (Braid's own code):") + 1 :]
    assert inclusive[0].split()[:2] == ["90.0%", "main"]
    assert not any("asyncio" in line or "numpy" in line for line in inclusive)
    assert summarize_profile("") == ["no samples"]


def _level(users: int, rps: float, p50: float, growth: float = 0.0) -> Level:
    return Level(
        users=users, rps=rps, search_rps=rps * 0.8, search_p50=p50, search_p95=p50 * 1.5,
        search_p99=p50 * 2, upsert_p50=5.0, server_p95=p50, braid_cpu=100.0, braid_rss_gb=1.0,
        locust_cpu=10.0, machine_cpu=50.0, doc_queue_start=5, doc_queue_end=5,
        doc_queue_growth_per_s=growth, search_queue_start=0, search_queue_end=0, requests=100,
        errors=0, overloaded=0, hottest="api 100%",
    )  # fmt: skip


def test_the_scale_table_names_each_counts_last_level_under_both_limits() -> None:
    found = {
        1: [_level(6, 180.9, 30), _level(14, 193.9, 60)],
        # More throughput past the knee does not count: its document queue grows.
        8: [_level(48, 1327.5, 25), _level(112, 1483.9, 59, growth=12.2)],
        2: [_level(12, 412.3, 120)],
    }
    assert knee(found[8]) is found[8][0]
    assert knee(found[2]) is None
    out = Report(title="scale", command="bench.load.scale", runs_heading="test")
    report(out, found, "all match", Plan(configs=["keyword"]))
    text = out.markdown()
    assert "**Knee by api processes:** 1: 193.9 RPS at 14 users; 2: —; 8: 1327.5 RPS at 48" in text
    assert "| 8 | 48 (knee) | 1327.5 |" in text and "| 8 | 112 | 1483.9 |" in text


def _prepopulation_line(bulk: Bulk) -> str:
    out = Report(title="load", command="bench.load", runs_heading="test")
    config_section(out, ConfigResult(config="keyword", bulk=bulk), {})
    (line,) = [text for text in out.markdown().splitlines() if "pre-populated" in text]
    return line


def test_the_prepopulation_line_holds_braid_to_each_peer_of_the_same_run() -> None:
    bulk = Bulk(documents=20_000, seconds=10.0, sent_seconds=4.0)  # 2,000 docs/s
    bulk.peers = {"Milvus Lite": 4_000.0, "`encode()` on bfloat16": 1_600.0}
    line = _prepopulation_line(bulk)
    assert "**2000.0 documents/s**" in line
    assert "Milvus Lite 4,000.0/s (Braid 0.50×)" in line
    assert "`encode()` on bfloat16 1,600.0/s (Braid 1.25×)" in line


def test_a_smoke_run_measures_no_peer_and_its_line_names_none(tmp_path: Path) -> None:
    plan = Plan.smoke_test(["keyword", "hybrid"])
    assert peer_rates(plan, "keyword", tmp_path) == {}
    assert peer_rates(plan, "hybrid", tmp_path) == {}
    assert "same documents" not in _prepopulation_line(Bulk(300, 3.0, 1.0))
