"""Typed payloads of every queue message and RPC request/reply."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from core.enums import EmbedKind, EmbedOutput, OpType
from core.schemas.collection import CollectionConfig
from core.schemas.document import Document, DocumentFetchRequest
from core.schemas.search import SearchQuery
from core.vectors import SparseVector

# Writes a documents-queue message carries at most. A bulk request's documents travel together:
# one publish, one confirm, one delivery and one ack for up to this many, where each of those
# cost the broker and its two clients ~0.8 CPU-ms a message (docs/benchmarks.md, issue 32); the
# worker's prefetch is counted in messages, so this also sets how many documents it holds.
WRITES_PER_MESSAGE = 8


class DocumentWrite(BaseModel):
    """One queued write: the whole document for an upsert, the id for a delete. Each has its own
    ledger item (queue_id): status, tries and cancelling stay per document."""

    queue_id: str
    op: OpType
    doc_id: str
    timestamp: datetime
    document: Document | None = None


class DocumentMessage(BaseModel):
    """A message on the documents queue: up to WRITES_PER_MESSAGE writes to one collection."""

    collection: str
    writes: list[DocumentWrite]

    @classmethod
    def carrying(cls, collection: str, writes: list[DocumentWrite]) -> list[DocumentMessage]:
        """`writes`, in order, in messages of up to WRITES_PER_MESSAGE."""
        return [
            cls(collection=collection, writes=writes[i : i + WRITES_PER_MESSAGE])
            for i in range(0, len(writes), WRITES_PER_MESSAGE)
        ]

    @model_validator(mode="before")
    @classmethod
    def _one_write(cls, data: Any) -> Any:
        """A message of one write, as Braid queued every write before messages held several,
        reads as a message of that one write: an upgrade leaves nothing queued unreadable."""
        if isinstance(data, dict) and "writes" not in data and "queue_id" in data:
            return {"collection": data.get("collection"), "writes": [data]}
        return data


class EmbedRequest(BaseModel):
    model: str
    revision: str | None = None
    kind: EmbedKind
    texts: list[str]
    normalize: bool = True
    keep_case: bool = False
    output: EmbedOutput = EmbedOutput.DENSE
    top_k: int = Field(128, ge=1, le=10_000)  # sparse output: entries kept per vector


class EmbedReply(BaseModel):
    """One vector per text, in request order: `vectors` (dense) or `sparse_vectors` (sparse)."""

    vectors: list[list[float]] = Field(default_factory=list)
    sparse_vectors: list[SparseVector] = Field(default_factory=list)
    holder: int
    inference_ms: float


class Ack(BaseModel):
    ok: bool = True


class CreateCollection(BaseModel):
    op: Literal["create_collection"] = "create_collection"
    name: str
    config: CollectionConfig


class DropCollection(BaseModel):
    op: Literal["drop_collection"] = "drop_collection"
    name: str


class EmptyCollection(BaseModel):
    op: Literal["empty_collection"] = "empty_collection"
    name: str


class CountDocuments(BaseModel):
    op: Literal["count_documents"] = "count_documents"
    name: str


class GetDocument(BaseModel):
    op: Literal["get_document"] = "get_document"
    collection: str
    doc_id: str
    with_vectors: bool = False


class SyncUpsert(BaseModel):
    op: Literal["sync_upsert"] = "sync_upsert"
    collection: str
    document: Document


class SyncDelete(BaseModel):
    op: Literal["sync_delete"] = "sync_delete"
    collection: str
    doc_id: str
    timestamp: datetime


class Ping(BaseModel):
    op: Literal["ping"] = "ping"


class FetchDocuments(BaseModel):
    """One cursor page of documents (POST …/documents/fetch; export reads page after page)."""

    op: Literal["fetch_documents"] = "fetch_documents"
    collection: str
    request: DocumentFetchRequest


class SystemInfo(BaseModel):
    op: Literal["system_info"] = "system_info"


class CopyStore(BaseModel):
    """A search node asks the worker for a copy of its shards, to start a replica from."""

    op: Literal["copy_store"] = "copy_store"
    target: str  # an empty folder the worker writes the collections into
    collections: list[str] | None = None  # None: every collection
    held: tuple[int, int] | None = None  # the position the asker holds: no copy if the newest


WorkerRequest = Annotated[
    CreateCollection
    | DropCollection
    | EmptyCollection
    | CountDocuments
    | GetDocument
    | SyncUpsert
    | SyncDelete
    | Ping
    | FetchDocuments
    | SystemInfo
    | CopyStore,
    Field(discriminator="op"),
]


class WorkerCall(BaseModel):
    """Envelope that lets one queue carry the worker's typed requests."""

    request: WorkerRequest


class CountReply(BaseModel):
    count: int


class DocumentReply(BaseModel):
    document: dict[str, Any] | None


class PingReply(BaseModel):
    store_ok: bool


class FetchReply(BaseModel):
    documents: list[dict[str, Any]]
    after: str | None = None


class SystemInfoReply(BaseModel):
    database_kind: str  # "qdrant" (server) or "qdrant-edge" (embedded)
    database_version: str
    dense_vectors: bool


class StoreCopied(BaseModel):
    """The replication position the copy holds every write up to (none after); `copied` False:
    the asker held that position already, and nothing was copied."""

    epoch: int
    seq: int
    copied: bool = True


class SearchRequest(BaseModel):
    collection: str
    query: SearchQuery
