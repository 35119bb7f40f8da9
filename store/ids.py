"""Point ids and the private payload key that map store points back to Braid document ids."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from store.protocol import StoredPoint, VectorValue

# Fixed forever: changing it would orphan every stored point.
_NAMESPACE = uuid.UUID("6f1c1d0e-5b7a-4c39-9a55-0b6a1e2f7d31")

# Qdrant ids must be ints or UUIDs, so the document id also travels in the payload.
DOC_ID_KEY = "_doc_id"


def point_id(doc_id: str) -> str:
    """The store point id of a document: a uuid5 of its id, the same in every backend."""
    return str(uuid.uuid5(_NAMESPACE, doc_id))


def stored_payload(doc_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as stored: the caller's fields plus the private document id."""
    return {**payload, DOC_ID_KEY: doc_id}


def split_payload(stored: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """(document id, caller's payload) from a stored payload."""
    payload = dict(stored or {})
    return str(payload.pop(DOC_ID_KEY)), payload


def stored_point(
    payload: dict[str, Any] | None,
    vectors: Any,
    with_vectors: bool,
    from_engine: Callable[[Any], VectorValue],
) -> StoredPoint:
    """A point as the Store protocol gives it back, from an engine record's payload and named
    vectors; `from_engine` converts one of the backend's vectors."""
    doc_id, caller_payload = split_payload(payload)
    if not with_vectors:
        return StoredPoint(doc_id, caller_payload)
    named = vectors if isinstance(vectors, dict) else {}
    return StoredPoint(doc_id, caller_payload, {k: from_engine(v) for k, v in named.items()})


class DocIds:
    """Point ids and document ids, both ways, for the points this process has met: point_id is a
    one-way hash (uuid5), slow in Python, and reading a hit's payload to learn its document id
    cost the engine more than the search itself (docs/architecture.md, Store). An entry is never
    wrong, the hash being fixed, only perhaps of a point since deleted, which no query returns.

    Entries are keyed by the point id's 128-bit integer (`UUID.int`), not by UUID objects: an int
    hashes and compares in C where a UUID runs Python code, and a table of ints and strings is
    nothing the garbage collector walks (a replica's UUIDs made every full collection walk
    another 80,000 objects). An entry takes ~200 bytes; past `limit` entries (~50 MB) it starts
    over and learns again, so a larger collection's queries read some ids as they all did before."""

    def __init__(self, limit: int = 250_000) -> None:
        self._docs: dict[int, str] = {}
        self._points: dict[str, int] = {}
        self._limit = limit
        # The document id of a point id the engine gave (by its `UUID.int`), if this process has
        # met it: the table's own `get`, no Python frame per hit.
        self.doc_of: Callable[[int], str | None] = self._docs.get

    def point(self, doc_id: str) -> uuid.UUID:
        """The point id of `doc_id` (point_id's, as a UUID), remembered."""
        number = self._points.get(doc_id)
        if number is None:
            point = uuid.uuid5(_NAMESPACE, doc_id)
            self.learn(point, doc_id)
            return point
        return uuid.UUID(int=number)

    def __len__(self) -> int:
        return len(self._docs)

    def learn(self, point: object, doc_id: str) -> None:
        if len(self._docs) >= self._limit:
            self._docs.clear()
            self._points.clear()
        number = point.int if isinstance(point, uuid.UUID) else uuid.UUID(str(point)).int
        self._docs[number] = doc_id
        self._points[doc_id] = number
