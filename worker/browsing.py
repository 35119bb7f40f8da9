"""Browsing a collection: one cursor page of documents for POST …/documents/fetch (and export).

A page is a store scroll in point id order under the request's filter (metadata, tags); the
cursor the client gets back is the store's (the id of the next page's first point).
"""

from __future__ import annotations

import uuid
from typing import Any

from core.catalog import Catalog
from core.errors import InvalidInput
from core.messages import FetchDocuments, FetchReply
from core.schemas.collection import CollectionConfig
from search.filtering import point_filter
from search.joining import Joiner, join_specs
from store.payload import public_document
from store.protocol import StoredPoint, StoreReader


class Browser:
    def __init__(self, store: StoreReader, catalog: Catalog, joiner: Joiner) -> None:
        self._store = store
        self._catalog = catalog
        self._joiner = joiner

    async def fetch(self, call: FetchDocuments) -> FetchReply:
        config = await self._catalog.require(call.collection)
        request = call.request
        where = point_filter(
            config,
            request.metadata_filter,
            request.document_tags,
            request.document_tags_match_all,
        )
        page = await self._store.scroll(
            call.collection, where, _cursor(request.after), request.page_size, request.with_vectors
        )
        documents = [_shape(p, config, request.with_vectors) for p in page.points]
        await self._joiner.attach(documents, join_specs(request.join))
        return FetchReply(documents=documents, after=page.after)


def _cursor(after: str | None) -> str | None:
    """The store cursor in `after`: only ever one that a previous page handed out."""
    if after is None or not after.strip():
        return None
    try:
        return str(uuid.UUID(after.strip()))
    except ValueError as exc:
        message = f"after: '{after}' is not a cursor returned by a previous fetch"
        raise InvalidInput(message) from exc


def _shape(point: StoredPoint, config: CollectionConfig, with_vectors: bool) -> dict[str, Any]:
    document = public_document(point.payload)
    document["vectors"] = vector_data(point.vectors, config) if with_vectors else None
    return document


def vector_data(vectors: dict[str, Any] | None, config: CollectionConfig) -> list[dict[str, Any]]:
    """Stored vectors as the wire's VectorData; amgix-client requires `vector_type` on each."""
    out = []
    for slot_name, value in sorted((vectors or {}).items()):
        vector_name, _, field = slot_name.rpartition(".")
        vector = config.vector(vector_name)
        if vector is None:  # not a collection vector (the noop placeholder)
            continue
        entry: dict[str, Any] = {
            "vector_name": vector_name,
            "field": field,
            "vector_type": vector.type.value,
        }
        if isinstance(value, list):
            entry["dense_vector"] = value
        else:
            entry["sparse_indices"], entry["sparse_values"] = value.indices, value.values
        out.append(entry)
    return out
