"""Pieces of the load runner that decide what the report says."""

from __future__ import annotations

import math

from bench.locustdriver import failure_counts as _failure_counts
from bench.locustdriver import number as _number
from bench.measure import slope as _slope
from bench.pyspy import summarize as summarize_profile


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
            "main (worker/__main__.py:10);search (worker/querying.py:40);dot (numpy/core.py:1) 60",
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
