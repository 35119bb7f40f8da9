"""Documents: async, sync and bulk upsert; get, fetch and export; async and sync delete; status."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from app.deps import CollectionName, Context, DocumentIdPath
from app.http.strict_json import StrictJSONRoute
from app.services.export import export_filename, export_stream, fetch_page
from app.services.ingest import enqueue_delete, enqueue_upserts
from app.services.validation import check_document
from app.services.worker import call_worker, require_collection
from core.enums import DocumentStatus
from core.errors import NotFound
from core.messages import Ack, DocumentReply, GetDocument, SyncDelete, SyncUpsert
from core.schemas.common import OkResponse, UtcTimestamp
from core.schemas.document import (
    BulkUpload,
    Document,
    DocumentFetchRequest,
    DocumentFetchResponse,
    DocumentStatusResponse,
    StatusEntry,
)

router = APIRouter(
    prefix="/v1/collections/{collection_name}/documents",
    tags=["documents"],
    route_class=StrictJSONRoute,
)


RequestTimestamp = Annotated[
    UtcTimestamp,
    Query(description="UTC time of the delete request (ISO 8601, e.g. 2026-01-01T00:00:00Z)"),
]


# Normally shadowed: app/fast_routes.py answers first and passes on what it can't serve here.
@router.post("", response_model=OkResponse)
async def upsert_document(
    collection_name: CollectionName, document: Document, ctx: Context
) -> OkResponse:
    await enqueue_upserts(ctx, collection_name, [document])
    return OkResponse()


@router.post("/bulk", response_model=OkResponse)
async def bulk_upsert(
    collection_name: CollectionName, body: BulkUpload, ctx: Context
) -> OkResponse:
    await enqueue_upserts(ctx, collection_name, body.documents)
    return OkResponse()


@router.post("/sync", response_model=OkResponse)
async def upsert_document_sync(
    collection_name: CollectionName, document: Document, ctx: Context
) -> OkResponse:
    config = await require_collection(ctx, collection_name)
    check_document(config, document)
    await call_worker(ctx, SyncUpsert(collection=collection_name, document=document), Ack)
    return OkResponse()


@router.post("/fetch", response_model=DocumentFetchResponse)
async def fetch_documents(
    collection_name: CollectionName, body: DocumentFetchRequest, ctx: Context
) -> DocumentFetchResponse:
    """One page of documents in a stable order; pass `after` from the answer for the next page
    (null on the last one). Filters: `metadata_filter`, `document_tags`."""
    await require_collection(ctx, collection_name)
    reply = await fetch_page(ctx, collection_name, body)
    return DocumentFetchResponse(documents=reply.documents, after=reply.after)


EXPORT_DESCRIPTION = """Every document of the collection as a gzip-compressed JSON array
(`[{...},{...}]`), streamed page by page, never held whole in memory.

A document whose id is `export` is shadowed by this route: read it with
`GET …/documents/export?document=true` (404 if there is none)."""


@router.get(
    "/export",
    description=EXPORT_DESCRIPTION,
    response_model=None,
    responses={200: {"content": {"application/gzip": {}}, "description": "gzip JSON array"}},
)
async def export_documents(
    collection_name: CollectionName,
    ctx: Context,
    with_vectors: bool = False,
    document: Annotated[
        bool, Query(description="Return the document whose id is `export` instead")
    ] = False,
) -> StreamingResponse | dict[str, Any]:
    if document:
        return await get_document(collection_name, "export", ctx, with_vectors)
    await require_collection(ctx, collection_name)
    stream = await export_stream(ctx, collection_name, with_vectors)
    disposition = f'attachment; filename="{export_filename(collection_name)}"'
    return StreamingResponse(
        stream, media_type="application/gzip", headers={"Content-Disposition": disposition}
    )


@router.get("/{document_id}")
async def get_document(
    collection_name: CollectionName,
    document_id: DocumentIdPath,
    ctx: Context,
    with_vectors: bool = False,
) -> dict[str, Any]:
    await require_collection(ctx, collection_name)
    reply = await call_worker(
        ctx,
        GetDocument(collection=collection_name, doc_id=document_id, with_vectors=with_vectors),
        DocumentReply,
    )
    if reply.document is None:
        raise NotFound(f"Document '{document_id}' not found")
    return reply.document


@router.delete("/{document_id}", response_model=OkResponse)
async def delete_document(
    collection_name: CollectionName,
    document_id: DocumentIdPath,
    request_timestamp: RequestTimestamp,
    ctx: Context,
) -> OkResponse:
    await enqueue_delete(ctx, collection_name, document_id, request_timestamp)
    return OkResponse()


@router.delete("/{document_id}/sync", response_model=OkResponse)
async def delete_document_sync(
    collection_name: CollectionName,
    document_id: DocumentIdPath,
    request_timestamp: RequestTimestamp,
    ctx: Context,
) -> OkResponse:
    await require_collection(ctx, collection_name)
    request = SyncDelete(
        collection=collection_name,
        doc_id=document_id,
        timestamp=request_timestamp,
    )
    await call_worker(ctx, request, Ack)
    return OkResponse()


@router.get("/{document_id}/status", response_model=DocumentStatusResponse)
async def document_status(
    collection_name: CollectionName, document_id: DocumentIdPath, ctx: Context
) -> DocumentStatusResponse:
    await require_collection(ctx, collection_name)
    statuses = await ctx.ledger.statuses(collection_name, document_id)
    indexed_at = await ctx.ledger.indexed_at(collection_name, document_id)
    if indexed_at is not None:
        statuses.append(StatusEntry(status=DocumentStatus.INDEXED, timestamp=indexed_at))
    if not statuses:
        raise NotFound(f"Document '{document_id}' not found")
    statuses.sort(key=lambda s: s.timestamp, reverse=True)
    return DocumentStatusResponse(statuses=statuses)
