"""The worker's RPC handlers for collections and synchronous document operations."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from core.catalog import Catalog
from core.enums import EmbedKind, OpType, VectorType
from core.errors import CollectionNotFound, Conflict, InvalidInput
from core.ledger import Ledger
from core.messages import (
    Ack,
    CountDocuments,
    CountReply,
    CreateCollection,
    DocumentReply,
    DropCollection,
    EmptyCollection,
    FetchDocuments,
    GetDocument,
    Ping,
    PingReply,
    SyncDelete,
    SyncUpsert,
    SystemInfo,
    SystemInfoReply,
    WorkerCall,
)
from core.schemas.collection import CollectionConfig, VectorConfig
from store.payload import holds_write, public_document
from store.protocol import CollectionExists, Store, StoreReader
from store.slots import slots, store_schema
from store.vectorizer import Vectorizer
from worker.browsing import Browser, vector_data
from worker.indexing import Indexer, Outcome, Write
from worker.lexstats import LexicalStats


class Admin:
    def __init__(
        self,
        store: Store,
        catalog: Catalog,
        ledger: Ledger,
        indexer: Indexer,
        vectorizer: Vectorizer,
        stats: LexicalStats,
        browser: Browser,
    ) -> None:
        self._store = store
        self._catalog = catalog
        self._ledger = ledger
        self._indexer = indexer
        self._vectorizer = vectorizer
        self._stats = stats
        self._browser = browser

    async def handle(self, call: WorkerCall) -> BaseModel:
        request = call.request
        match request:
            case CreateCollection():
                return await self.create(request.name, request.config)
            case DropCollection():
                return await self.drop(request.name)
            case EmptyCollection():
                return await self.empty(request.name)
            case CountDocuments():
                await self._require(request.name)
                return CountReply(count=await self._store.count(request.name))
            case GetDocument():
                return await self.get_document(request)
            case FetchDocuments():
                return await self._browser.fetch(request)
            case SyncUpsert():
                return await self.sync_upsert(request)
            case SyncDelete():
                return await self.sync_delete(request)
            case Ping():
                return PingReply(store_ok=await store_ok(self._store))
            case SystemInfo():
                info = await self._store.describe()
                return SystemInfoReply(
                    database_kind=info.kind, database_version=info.version, dense_vectors=True
                )
        raise InvalidInput("unknown worker request")

    async def create(self, name: str, config: CollectionConfig) -> Ack:
        if await self._catalog.exists(name):
            raise Conflict(f"Collection '{name}' already exists")
        vectors = [await self._discover_dimensions(v) for v in config.vectors or []]
        config = config.model_copy(update={"vectors": vectors})
        try:
            await self._store.create_collection(name, store_schema(config))
        except CollectionExists:  # left behind by an interrupted drop: start clean
            await self._store.delete_collection(name)
            await self._store.create_collection(name, store_schema(config))
        if not await self._catalog.put(name, config):
            raise Conflict(f"Collection '{name}' already exists")
        return Ack()

    async def _discover_dimensions(self, vector: VectorConfig) -> VectorConfig:
        """Load and probe a dense model once: its output size is the collection's dimensions."""
        if vector.type is VectorType.SPARSE_MODEL:  # probed so that a bad model fails create
            await self._vectorizer.sparse(vector, EmbedKind.DOCUMENT, ["probe"])
            if vector.query_model:
                await self._vectorizer.sparse(vector, EmbedKind.QUERY, ["probe"])
            return vector
        if vector.type is not VectorType.DENSE_MODEL:
            return vector
        found = len((await self._vectorizer.embed(vector, EmbedKind.DOCUMENT, ["probe"]))[0])
        if vector.query_model:
            query_dims = len((await self._vectorizer.embed(vector, EmbedKind.QUERY, ["probe"]))[0])
            if query_dims != found:
                raise InvalidInput(
                    f"Model validation failed: query_model produces {query_dims} dimensions"
                    f" but model produces {found}"
                )
        if vector.dimensions is not None and vector.dimensions != found:
            raise InvalidInput(
                f"Model validation failed: dimensions {vector.dimensions} do not match model"
                f" '{vector.model}' ({found})"
            )
        return vector.model_copy(update={"dimensions": found})

    async def drop(self, name: str) -> Ack:
        await self._require(name)
        await self._catalog.remove(name)
        await self._ledger.drop(name)
        await self._store.delete_collection(name)
        return Ack()

    async def empty(self, name: str) -> Ack:
        await self._require(name)
        await self._store.empty(name)
        await self._ledger.drop(name)
        return Ack()

    async def get_document(self, request: GetDocument) -> DocumentReply:
        config = await self._catalog.require(request.collection)
        points = await self._store.retrieve(
            request.collection, [request.doc_id], with_vectors=request.with_vectors
        )
        point = points.get(request.doc_id)
        if point is None:
            return DocumentReply(document=None)
        document: dict[str, Any] = public_document(point.payload)
        document["vectors"] = vector_data(point.vectors, config) if request.with_vectors else None
        return DocumentReply(document=document)

    async def sync_upsert(self, request: SyncUpsert) -> Ack:
        doc = request.document
        outcome = (
            await self._indexer.apply(
                request.collection, [Write(OpType.UPSERT, doc.id, doc.timestamp, doc)]
            )
        )[doc.id]
        if outcome is Outcome.GONE:
            raise CollectionNotFound()
        if outcome is Outcome.STALE and not await self._holds(request):
            raise Conflict(
                f"Document '{doc.id}' has a stored version with an equal or newer timestamp"
            )
        return Ack()

    async def sync_delete(self, request: SyncDelete) -> Ack:
        await self._require(request.collection)
        await self._ledger.record_delete(request.collection, request.doc_id, request.timestamp)
        await self._indexer.apply(
            request.collection, [Write(OpType.DELETE, request.doc_id, request.timestamp)]
        )
        return Ack()

    async def _holds(self, request: SyncUpsert) -> bool:
        """Whether the store holds this very write already (see payload.holds_write)."""
        config = await self._catalog.get(request.collection)
        doc = request.document
        stored = (await self._store.retrieve(request.collection, [doc.id])).get(doc.id)
        if config is None or stored is None:
            return False
        hashes = {slot.name: slot.text_hash(doc) for slot in slots(config)}
        return holds_write(stored.payload, doc, config.store_content, hashes)

    async def _require(self, name: str) -> None:
        if not await self._catalog.exists(name):
            raise CollectionNotFound()


async def store_ok(store: StoreReader) -> bool:
    """Whether the store answers at all (readiness)."""
    try:
        await store.list_collections()
        return True
    except Exception:  # any store failure means "not ready"
        return False
