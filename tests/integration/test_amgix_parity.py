"""Every amgix-client 1.6.6 call that the other tests make over raw HTTP, through the client:
the answers deserialize into the client's models and say the same thing."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import amgix_client
from amgix_client.models import (
    CollectionConfig,
    Document,
    MetadataIndex,
    SearchQuery,
    VectorConfig,
)

from harness.stack import Stack

NOW = datetime(2026, 3, 1, tzinfo=UTC)
LATER = datetime(2026, 3, 2, tzinfo=UTC)


async def _doc_count_reaches(api: amgix_client.AmgixApi, name: str, count: int) -> bool:
    """Poll the stats until the async write shows (False after 60 s)."""
    for _ in range(300):
        if (await api.get_collection_stats(name)).doc_count == count:
            return True
        await asyncio.sleep(0.2)
    return False


async def _drive(base_url: str) -> None:
    name = f"parity{uuid.uuid4().hex[:8]}"
    configuration = amgix_client.Configuration(host=base_url)
    async with amgix_client.ApiClient(configuration) as api_client:
        api = amgix_client.AmgixApi(api_client)
        assert (await api.version()).version.endswith("(Braid One)")
        assert (await api.health_check()).ok is True
        ready = await api.health_ready()
        assert ready.ready is True and ready.index is True and ready.query is True
        config = CollectionConfig(
            vectors=[VectorConfig(name="kw", type="keyword", index_fields=["name", "content"])],
            metadata_indexes=[MetadataIndex(key="year", type="integer")],
            store_content=True,
        )
        await api.create_collection(name, config)
        assert name in await api.list_collections()
        echoed = await api.get_collection_config(name)
        assert echoed.vectors[0].type == "wmtr" and echoed.metadata_indexes[0].key == "year"
        info = await api.system_info()
        assert info.collection_count >= 1 and info.database_features["dense_vectors"] is True

        sync_doc = Document(id="s1", timestamp=NOW, content="saffron rice", metadata={"year": 2024})
        assert (await api.upsert_document_sync(name, sync_doc)).ok is True
        status = await api.get_document_status(name, "s1")
        assert [s.status for s in status.statuses] == ["indexed"]
        queue = await api.get_collection_queue_info(name)
        assert queue.total == 0
        found = await api.search(name, SearchQuery(query="saffron"))
        assert [r.id for r in found.results] == ["s1"]

        assert (await api.delete_document_sync(name, "s1", request_timestamp=LATER)).ok is True
        assert (await api.get_collection_stats(name)).doc_count == 0

        async_doc = Document(id="a1", timestamp=NOW, content="saffron tea")
        await api.upsert_document(name, async_doc)
        assert await _doc_count_reaches(api, name, 1)
        assert (await api.empty_collection(name)).ok is True
        assert (await api.get_collection_stats(name)).doc_count == 0
        assert (await api.delete_collection_queue(name)).ok is True
        assert (await api.get_collection_queue_info(name)).total == 0
        await api.delete_collection(name)
        assert (await api.collection_exists(name)).exists is False


def test_every_amgix_client_call_works_against_braid(stack: Stack) -> None:
    asyncio.run(_drive(stack.base_url))
