"""GET /v1/system/info: versions of Braid, the store and the broker; the collection count."""

from __future__ import annotations

import asyncio
import re
import uuid
from importlib.metadata import version

import amgix_client
import httpx

from harness.stack import Stack
from tests.integration.helpers import create, keyword_collection


def test_system_info_names_the_embedded_store_and_the_broker(client: httpx.Client) -> None:
    info = client.get("/v1/system/info")
    assert info.status_code == 200, info.text
    body = info.json()
    assert set(body) == {
        "amgix_version",
        "database_kind",
        "database_version",
        "database_features",
        "rabbitmq_version",
        "collection_count",
    }
    assert body["amgix_version"] == client.get("/v1/version").json()["version"]
    assert body["database_kind"] == "qdrant-edge"  # BRAID_QDRANT_URL unset: embedded
    assert body["database_version"] == version("qdrant-edge-py")
    assert body["database_features"] == {"dense_vectors": True}
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", body["rabbitmq_version"]), body["rabbitmq_version"]


def test_collection_count_follows_creates_and_deletes(client: httpx.Client) -> None:
    def count() -> int:
        return int(client.get("/v1/system/info").json()["collection_count"])

    before = count()
    assert before == len(client.get("/v1/collections").json())
    name = f"sys{uuid.uuid4().hex[:8]}"
    create(client, name, keyword_collection())
    assert count() == before + 1
    assert client.delete(f"/v1/collections/{name}").status_code == 200
    assert count() == before


def test_amgix_client_reads_system_info(stack: Stack) -> None:
    async def read() -> amgix_client.SystemInfoResponse:
        configuration = amgix_client.Configuration(host=stack.base_url)
        async with amgix_client.ApiClient(configuration) as api_client:
            return await amgix_client.AmgixApi(api_client).system_info()

    info = asyncio.run(read())
    assert info.database_kind == "qdrant-edge" and info.database_features == {"dense_vectors": True}
