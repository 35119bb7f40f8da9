"""Metrics routes (API.md §2): shapes over raw HTTP and amgix-client; counters move with traffic."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import amgix_client
import httpx
import pytest

from harness.stack import Stack
from tests.integration.helpers import create, keyword_collection, wait_until

SAMPLE = re.compile(r'^braid_searches\{node="api",role="api"\} (\S+)$', re.MULTILINE)


def _range(minutes: int = 10) -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "since": (now - timedelta(minutes=minutes)).isoformat(),
        "until": (now + timedelta(minutes=1)).isoformat(),
    }


def _searches_counter(client: httpx.Client) -> float:
    found = SAMPLE.search(client.get("/v1/metrics/prometheus").text)
    return float(found.group(1)) if found else 0.0


def _search(client: httpx.Client, times: int) -> None:
    name = f"met{uuid.uuid4().hex[:8]}"
    create(client, name, keyword_collection())
    for _ in range(times):
        response = client.post(f"/v1/collections/{name}/search", json={"query": "anything"})
        assert response.status_code == 200, response.text


def test_current_has_a_node_per_process_with_windowed_series(client: httpx.Client) -> None:
    def api_keys(nodes: dict[str, Any]) -> set[str]:
        return {s["key"] for s in nodes.get("api", {}).get("metrics", []) if s["windows"]}

    # The api's own requests (these calls included) reach Redis within about a second.
    nodes = wait_until(
        lambda: (
            (n := client.get("/v1/metrics/current", params={"window": 30}).json()["nodes"])
            and "http_request_ms_sum" in api_keys(n)
            and n
        )
    )
    assert {"worker", "api", "encoder-1", "encoder-2"} <= set(nodes)
    for node in nodes.values():
        assert {"role", "is_leader", "last_seen", "meta", "metrics"} <= set(node)
        for series in node["metrics"]:
            assert set(series) == {"key", "dims", "windows", "last_seen"}
            assert series["dims"] == []
    api_series = {s["key"]: s for s in nodes["api"]["metrics"]}
    sample = api_series["http_request_ms_sum"]["windows"]["30"]
    assert sample["value"] >= 0 and isinstance(sample["n"], int)


def test_current_keeps_only_the_asked_keys(client: httpx.Client) -> None:
    nodes = client.get("/v1/metrics/current", params={"keys": ["served"]}).json()["nodes"]
    keys = {s["key"] for node in nodes.values() for s in node["metrics"]}
    assert keys == {"served"}


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
    assert {"searches", "http_requests", "served", "inference_ms_sum"} <= set(by_key)
    assert by_key["inference_ms_sum"]["unit"] == "ms"


def test_searches_raise_the_prometheus_counter_and_the_trend(client: httpx.Client) -> None:
    before = _searches_counter(client)
    _search(client, 3)
    wait_until(lambda: _searches_counter(client) >= before + 3, timeout=15)
    response = client.get("/v1/metrics/prometheus")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "# TYPE braid_searches counter\n" in response.text

    def trend_total() -> float:
        params = {**_range(), "resolution": 60, "keys": ["searches"]}
        (trend,) = client.get("/v1/metrics/trends", params=params).json()
        assert trend["key"] == "searches" and trend["bucket_seconds"] == 60
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
    assert any(d.key == "searches" for d in got["definitions"])
    assert "braid_node_last_seen_seconds" in got["prometheus"]
