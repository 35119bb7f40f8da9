"""A histogram quantile over a window, as Prometheus's histogram_quantile reads it."""

from __future__ import annotations

import math

import pytest

from bench.common.scrape import buckets, quantile_ms

TEXT = """\
braid_search_duration_seconds_bucket{collection="a",node="api-1",role="api",le="0.01"} 10
braid_search_duration_seconds_bucket{collection="a",node="api-1",role="api",le="0.02"} 60
braid_search_duration_seconds_bucket{collection="a",node="api-1",role="api",le="+Inf"} 100
braid_search_duration_seconds_bucket{collection="a",node="api-2",role="api",le="0.01"} 0
braid_search_duration_seconds_bucket{collection="a",node="api-2",role="api",le="0.02"} 40
braid_search_duration_seconds_bucket{collection="a",node="api-2",role="api",le="+Inf"} 100
braid_http_request_duration_seconds_bucket{route="/x",le="0.01"} 999
"""


def test_buckets_sum_every_series_of_the_histogram_only() -> None:
    assert buckets(TEXT) == {0.01: 10, 0.02: 100, math.inf: 200}


def test_a_quantile_is_linear_inside_its_bucket_over_the_window_only() -> None:
    before = {0.01: 10, 0.02: 10, math.inf: 10}  # what was there when the window opened
    after = {0.01: 10, 0.02: 60, math.inf: 110}
    # 100 searches in the window: 50 in (10 ms, 20 ms], 50 above
    assert quantile_ms(0.25, before, after) == pytest.approx(15.0)
    assert quantile_ms(0.5, before, after) == pytest.approx(20.0)
    assert quantile_ms(0.95, before, after) == pytest.approx(20.0)  # +Inf: the last bound
    assert math.isnan(quantile_ms(0.5, after, after))
