"""The unchanged amgix-client 1.6.6 drives Braid: create, bulk upsert, wait, search, get, delete."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import amgix_client
from amgix_client.models import (
    BulkUploadRequest,
    CollectionConfig,
    Document,
    SearchQuery,
    VectorConfig,
)

from tests.integration.helpers import MODEL


async def _drive(base_url: str) -> None:
    name = f"amgix{uuid.uuid4().hex[:8]}"
    async with amgix_client.ApiClient(amgix_client.Configuration(host=base_url)) as api_client:
        api = amgix_client.AmgixApi(api_client)
        config = CollectionConfig(
            vectors=[
                VectorConfig(name="kw", type="wmtr", index_fields=["name", "content"]),
                VectorConfig(
                    name="dense", type="dense_model", model=MODEL, index_fields=["content"]
                ),
            ]
        )
        assert (await api.create_collection(name, config)).ok is True
        now = datetime(2026, 2, 1, tzinfo=UTC)
        docs = [
            Document(
                id="p1", timestamp=now, name="Pasta", content="Boil the spaghetti in salted water."
            ),
            Document(
                id="p2",
                timestamp=now,
                name="Bikes",
                content="Adjust the derailleur of the bicycle.",
            ),
        ]
        await api.upsert_documents_bulk(name, BulkUploadRequest(documents=docs))
        for _ in range(300):
            stats = await api.get_collection_stats(name)
            if stats.doc_count == 2 and stats.queue.total == 0:
                break
            await asyncio.sleep(0.2)
        assert stats.doc_count == 2
        found = await api.search(name, SearchQuery(query="how to cook spaghetti", limit=5))
        assert found.results[0].id == "p1"
        got = await api.get_document(name, "p2")
        assert got.name == "Bikes" and got.timestamp == now
        await api.delete_document(name, "p2", request_timestamp=datetime(2026, 3, 1, tzinfo=UTC))
        for _ in range(300):
            if (await api.get_collection_stats(name)).doc_count == 1:
                break
            await asyncio.sleep(0.2)
        assert (await api.get_collection_stats(name)).doc_count == 1
        assert (await api.collection_exists(name)).exists is True
        await api.delete_collection(name)


def test_amgix_client_works_unchanged(stack) -> None:  # type: ignore[no-untyped-def]
    asyncio.run(_drive(stack.base_url))
