"""Point ids and the private payload key that map store points back to Braid document ids."""

from __future__ import annotations

import uuid
from typing import Any

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
