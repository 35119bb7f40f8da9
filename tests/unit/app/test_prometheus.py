"""The Prometheus exposition: by the book (promtool), exact, labelled by node and role."""

from __future__ import annotations

import pytest

from app.metrics.prometheus import render
from bench.common.scrape import promtool_problems
from core.metrics import (
    COLLECTION,
    EMBEDDED_TEXTS,
    HTTP_REQUEST_SECONDS,
    LATENCY_BUCKETS,
    QUEUE_DEPTH,
    SEARCH_SECONDS,
    Recorder,
)
from core.metrics_publish import LIVE_WITHIN_S, NodeState
from core.process_stats import ProcessReader

NOW = 1_800_000_000.0


def exposition() -> str:
    api, encoder = Recorder(), Recorder()
    api.observe(
        HTTP_REQUEST_SECONDS, 0.02, route="/v1/collections/{name}", method="GET", status_class="2xx"
    )
    api.observe(SEARCH_SECONDS, 0.031, collection='odd "name"')
    encoder.inc(EMBEDDED_TEXTS, 16_777_217, model="m", lane="document")  # past float32's exact
    api.observe(SEARCH_SECONDS, 0.5, collection="dropped")
    api.forget(COLLECTION, {"dropped"})
    for recorder in (api, encoder):
        ProcessReader().record(recorder)  # this test's process: Linux's /proc, or nothing
    cluster = Recorder()
    cluster.set(QUEUE_DEPTH, 4, queue="braid.documents")
    nodes = [
        NodeState("api-1", "api", NOW, api.state(), retired=api.retired()),
        NodeState("encoder-1", "encoder:model_holder", NOW - LIVE_WITHIN_S - 1, encoder.state()),
    ]
    return render(nodes, cluster.state(), NOW)


def test_the_exposition_passes_promtool() -> None:
    assert promtool_problems(exposition()) == ""


def test_counters_are_exact_and_histograms_cumulative_in_seconds() -> None:
    text = exposition()
    assert (
        'braid_embedded_texts_total{model="m",lane="document",node="encoder-1",'
        'role="encoder:model_holder"} 16777217\n' in text
    )
    search = 'collection="odd \\"name\\"",node="api-1",role="api"'
    assert f'braid_search_duration_seconds_bucket{{{search},le="0.03"}} 0\n' in text
    assert f'braid_search_duration_seconds_bucket{{{search},le="0.035"}} 1\n' in text
    assert f'braid_search_duration_seconds_bucket{{{search},le="+Inf"}} 1\n' in text
    assert f"braid_search_duration_seconds_sum{{{search}}} 0.031\n" in text
    assert f"braid_search_duration_seconds_count{{{search}}} 1\n" in text
    assert text.count("braid_search_duration_seconds_bucket{") == len(LATENCY_BUCKETS) + 1
    assert "# TYPE braid_search_duration_seconds histogram\n" in text


def test_cluster_gauges_have_no_node_and_a_silent_process_is_down() -> None:
    text = exposition()
    assert 'braid_queue_depth{queue="braid.documents"} 4\n' in text
    assert 'braid_process_up{node="api-1",role="api"} 1\n' in text
    assert 'braid_process_up{node="encoder-1",role="encoder:model_holder"} 0\n' in text
    assert 'braid_process_last_seen_timestamp_seconds{node="api-1",role="api"} 1800000000\n' in text


def test_series_of_an_unknown_metric_are_left_out() -> None:
    state = NodeState("worker", "worker", NOW, [["braid_from_the_future_total", [], 3]])
    assert "from_the_future" not in render([state], [], NOW)


def test_a_forgotten_collection_and_the_retired_totals_are_not_exposed() -> None:
    text = exposition()
    assert "dropped" not in text
    assert 'collection=""' not in text


def test_each_process_has_the_standard_process_series_with_node_and_role() -> None:
    text = exposition()
    if "process_cpu_seconds_total" not in text:
        pytest.skip("no /proc here")
    for name, kind in (
        ("process_cpu_seconds_total", "counter"),
        ("process_resident_memory_bytes", "gauge"),
        ("process_open_fds", "gauge"),
        ("process_start_time_seconds", "gauge"),
    ):
        assert f"# TYPE {name} {kind}\n" in text
        assert f'\n{name}{{node="api-1",role="api"}} ' in text
        assert f'\n{name}{{node="encoder-1",role="encoder:model_holder"}} ' in text
