"""Metrics routes (API.md §2): shapes over raw HTTP and amgix-client; counters move with traffic;
the Prometheus exposition passes promtool with every process in it, names only collections that
exist, and has each program's standard process series."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import amgix_client
import httpx
import pytest

from bench.common.scrape import promtool_problems
from harness.stack import Stack
from tests.integration.helpers import (
    create,
    hybrid_collection,
    keyword_collection,
    metric_total,
    wait_until,
)

SEARCH_COUNT = "braid_search_duration_seconds_count"


def _range(minutes: int = 10) -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "since": (now - timedelta(minutes=minutes)).isoformat(),
        "until": (now + timedelta(minutes=1)).isoformat(),
    }


def _searches_counted(client: httpx.Client, collection: str) -> float:
    """Searches of `collection` in the exposition, summed over the api processes."""
    text = client.get("/v1/metrics/prometheus").text
    return metric_total(text, SEARCH_COUNT, collection=collection)


def _search(client: httpx.Client, times: int) -> str:
    name = f"met{uuid.uuid4().hex[:8]}"
    create(client, name, keyword_collection())
    for _ in range(times):
        response = client.post(f"/v1/collections/{name}/search", json={"query": "anything"})
        assert response.status_code == 200, response.text
    return name


def test_current_has_a_node_per_process_with_windowed_series(client: httpx.Client) -> None:
    ok_time = 'braid_http_request_duration_seconds_sum{status_class="2xx"}'

    def api_series(nodes: dict[str, Any]) -> dict[str, Any]:
        return {
            s["key"]: s
            for node_id, node in nodes.items()
            if node_id.startswith("api-")
            for s in node["metrics"]
            if s["windows"]
        }

    # The api's own requests (these calls included) reach Redis within about a second.
    nodes = wait_until(
        lambda: (
            (n := client.get("/v1/metrics/current", params={"window": 30}).json()["nodes"])
            and ok_time in api_series(n)
            and n
        )
    )
    assert {"worker", "encoder-1", "encoder-2"} <= set(nodes)
    assert any(node_id.startswith("api-") for node_id in nodes)
    for node in nodes.values():
        assert {"role", "is_leader", "last_seen", "meta", "metrics"} <= set(node)
        for series in node["metrics"]:
            assert set(series) == {"key", "dims", "windows", "last_seen"}
            assert series["dims"] == []
    assert nodes["encoder-1"]["role"].startswith("encoder:")
    sample = api_series(nodes)[ok_time]["windows"]["30"]
    assert sample["value"] >= 0 and isinstance(sample["n"], int)


def test_current_keeps_only_the_asked_keys(client: httpx.Client) -> None:
    ok = 'braid_http_responses_total{status="200"}'
    nodes = client.get("/v1/metrics/current", params={"keys": [ok]}).json()["nodes"]
    keys = {s["key"] for node in nodes.values() for s in node["metrics"]}
    assert keys == {ok}


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/metrics/current", {"window": 45}),
        ("/v1/metrics/trends", {**_range(), "resolution": 120}),
        ("/v1/metrics/trends", {"since": "yesterday", "until": "now"}),
        ("/v1/metrics/trends", {}),
    ],
)
def test_bad_metrics_parameters_are_422(
    client: httpx.Client, path: str, params: dict[str, Any]
) -> None:
    assert client.get(path, params=params).status_code == 422


def test_definitions_describe_each_known_counter(client: httpx.Client) -> None:
    definitions = client.get("/v1/metrics/definitions").json()
    assert all(set(d) == {"key", "unit", "description"} for d in definitions)
    by_key = {d["key"]: d for d in definitions}
    assert {SEARCH_COUNT, "braid_http_responses_total", "braid_embedded_texts_total"} <= set(by_key)
    assert by_key["braid_embed_batch_duration_seconds_sum"]["unit"] == "s"


def test_searches_raise_the_prometheus_histogram_and_the_trend(client: httpx.Client) -> None:
    collection = _search(client, 3)
    wait_until(lambda: _searches_counted(client, collection) == 3, timeout=15)
    response = client.get("/v1/metrics/prometheus")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "# TYPE braid_search_duration_seconds histogram\n" in response.text

    def trend_total() -> float:
        params = {**_range(), "resolution": 60, "keys": [SEARCH_COUNT]}
        (trend,) = client.get("/v1/metrics/trends", params=params).json()
        assert trend["key"] == SEARCH_COUNT and trend["bucket_seconds"] == 60
        for bucket in trend["buckets"]:
            assert {"key", "dims", "bucket_start", "bucket_seconds", "value", "n"} <= set(bucket)
            assert bucket["bucket_start"] % 60 == 0
        return sum(b["value"] for b in trend["buckets"])

    # The stack started minutes ago at most, so its buckets cover every search it answered.
    wait_until(lambda: trend_total() >= 3, timeout=15)


async def _through_client(base_url: str) -> dict[str, Any]:
    configuration = amgix_client.Configuration(host=base_url)
    async with amgix_client.ApiClient(configuration) as api_client:
        api = amgix_client.AmgixApi(api_client)
        now = datetime.now(UTC)
        return {
            "current": await api.metrics_current(window=60),
            "trends": await api.metrics_trends(
                since=now - timedelta(minutes=10), until=now, resolution=300
            ),
            "definitions": await api.metrics_definitions(),
            "prometheus": await api.metrics_prometheus(),
        }


def test_amgix_client_reads_every_metrics_route(stack: Stack, client: httpx.Client) -> None:
    _search(client, 1)
    got = asyncio.run(_through_client(stack.base_url))
    assert "worker" in got["current"].nodes
    assert got["trends"] and all(t.bucket_seconds == 300 for t in got["trends"])
    assert any(d.key == SEARCH_COUNT for d in got["definitions"])
    assert "braid_process_up" in got["prometheus"]


def test_the_live_exposition_passes_promtool_with_every_process_up(client: httpx.Client) -> None:
    """After traffic of every kind (writes embedded by the encoders, searches through an api
    process's search node), every process is in the exposition, up, and promtool finds nothing
    to fix."""
    name = f"met{uuid.uuid4().hex[:8]}"
    create(client, name, hybrid_collection())
    document = {"id": "d", "content": "metrics by the book", "timestamp": "2026-01-01T00:00:00Z"}
    sync = client.post(f"/v1/collections/{name}/documents/sync", json=document)
    assert sync.status_code == 200, sync.text
    found = client.post(f"/v1/collections/{name}/search", json={"query": "the book"})
    assert found.status_code == 200, found.text
    roles = ("api", "worker", "encoder:model_holder", "encoder:router")
    expected = (
        # the sync write's document embedded by the holder, then applied by the worker
        'braid_embedded_texts_total{model="sentence-transformers/all-MiniLM-L6-v2",lane="document"',
        f'braid_document_writes_total{{collection="{name}",op="upsert",outcome="applied"',
        f'braid_collection_documents{{collection="{name}",node="worker",role="worker"}} 1',
        # the search's query embedded: an RPC from the api's search node to the holders
        'braid_rpc_duration_seconds_count{call="braid.embed.holders.query"',
    )

    def exposition() -> str | None:
        text = client.get("/v1/metrics/prometheus").text
        up = re.findall(r'^braid_process_up\{node="[^"]+",role="([^"]+)"\} 1$', text, re.M)
        stages = re.findall(
            r'^braid_search_stage_duration_seconds_count\{stage="(\w+)"', text, re.M
        )
        ready = set(roles) <= set(up) and len(set(stages)) == 3
        return text if ready and all(series in text for series in expected) else None

    text = wait_until(exposition, timeout=20)
    assert promtool_problems(text) == ""


def test_gauges_are_trends_of_levels(client: httpx.Client) -> None:
    """Document counts and queue depths are in the trends: a bucket is the level at its end."""
    name = f"met{uuid.uuid4().hex[:8]}"
    create(client, name, keyword_collection())
    for i in range(2):
        document = {"id": f"d{i}", "content": "counted", "timestamp": "2026-01-01T00:00:00Z"}
        sync = client.post(f"/v1/collections/{name}/documents/sync", json=document)
        assert sync.status_code == 200, sync.text
    stored, depth = "braid_collection_documents", 'braid_queue_depth{queue="braid.documents"}'

    def levels() -> dict[str, float] | None:
        """The trends' bucket in progress (it ends now), once it shows the level the exposition
        shows: every document stored, not just those stored since the bucket began."""
        params = {**_range(), "resolution": 60, "keys": [stored, depth]}
        trends = {
            t["key"]: t["buckets"] for t in client.get("/v1/metrics/trends", params=params).json()
        }
        last = {key: buckets[-1]["value"] for key, buckets in trends.items() if buckets}
        exposed = metric_total(client.get("/v1/metrics/prometheus").text, stored)
        return last if last.get(stored) == exposed >= 2 else None

    last = wait_until(levels, timeout=15)
    assert last[depth] >= 0
    definitions = {d["key"]: d for d in client.get("/v1/metrics/definitions").json()}
    assert definitions["braid_queue_depth"]["unit"] == "level"


def _naming(client: httpx.Client, collection: str) -> list[str]:
    """The exposition's series labelled with `collection`."""
    text = client.get("/v1/metrics/prometheus").text
    return [line for line in text.splitlines() if f'collection="{collection}"' in line]


def test_a_dropped_collection_leaves_no_series_and_made_again_counts_from_zero(
    client: httpx.Client,
) -> None:
    """Its searches (api processes), writes and document count (worker) and queue (cluster)
    all go once it is dropped; made again under its name, it starts at zero."""
    name = f"met{uuid.uuid4().hex[:8]}"
    create(client, name, keyword_collection())
    document = {"id": "d", "content": "gone soon", "timestamp": "2026-01-01T00:00:00Z"}
    sync = client.post(f"/v1/collections/{name}/documents/sync", json=document)
    assert sync.status_code == 200, sync.text
    for _ in range(3):
        found = client.post(f"/v1/collections/{name}/search", json={"query": "gone"})
        assert found.status_code == 200, found.text
    expected = (SEARCH_COUNT, "braid_document_writes_total", "braid_collection_documents")
    wait_until(
        lambda: all(any(line.startswith(m) for line in _naming(client, name)) for m in expected),
        timeout=20,
    )

    assert client.delete(f"/v1/collections/{name}").status_code == 200
    wait_until(lambda: not _naming(client, name), timeout=20)
    assert name not in client.get("/v1/metrics/current").text

    create(client, name, keyword_collection())
    found = client.post(f"/v1/collections/{name}/search", json={"query": "gone"})
    assert found.status_code == 200, found.text
    wait_until(lambda: _searches_counted(client, name) == 1, timeout=20)
    assert client.delete(f"/v1/collections/{name}").status_code == 200


def _process_series(text: str, node: str) -> dict[str, float]:
    found = re.findall(rf'^(process_\w+)\{{node="{node}",role="[^"]+"\}} (\S+)$', text, re.M)
    return {metric: float(value) for metric, value in found}


def test_each_program_exposes_its_cpu_memory_and_file_descriptors(client: httpx.Client) -> None:
    nodes = ("api-1", "worker", "encoder-1")
    names = {
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    }

    def exposition() -> str | None:
        text = client.get("/v1/metrics/prometheus").text
        return text if all(set(_process_series(text, n)) == names for n in nodes) else None

    text = wait_until(exposition, timeout=20)
    for node in nodes:
        series = _process_series(text, node)
        assert series["process_cpu_seconds_total"] > 0, node
        assert series["process_resident_memory_bytes"] > 10_000_000, node  # a Python program
        assert series["process_open_fds"] >= 3, node
        assert time.time() - 86_400 < series["process_start_time_seconds"] <= time.time(), node
    for name in names:
        assert text.count(f"# TYPE {name} ") == 1
    assert promtool_problems(text) == ""
