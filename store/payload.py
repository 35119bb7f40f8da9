"""How a document is kept as a store payload, and how it comes back out."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from core.ledger import to_micros
from core.schemas.document import Document

PRIVATE = "_braid"
DOCUMENT_FIELDS = (
    "id",
    "timestamp",
    "tags",
    "name",
    "description",
    "content",
    "content_hash",
    "metadata",
)


def content_hash(content: str | None) -> str | None:
    return hashlib.sha256(content.encode()).hexdigest() if content is not None else None


def to_payload(
    document: Document, store_content: bool, hashes: dict[str, str], lengths: dict[str, int]
) -> dict[str, Any]:
    return {
        "id": document.id,
        "timestamp": document.timestamp.isoformat(),
        "tags": document.tags,
        "name": document.name,
        "description": document.description,
        "content": document.content if store_content else None,
        "content_hash": content_hash(document.content),
        "metadata": document.metadata,
        PRIVATE: {"ts_us": to_micros(document.timestamp), "hashes": hashes, "lengths": lengths},
    }


def stored_micros(payload: dict[str, Any]) -> int:
    return int(payload.get(PRIVATE, {}).get("ts_us", -1))


def stored_hashes(payload: dict[str, Any]) -> dict[str, str]:
    return dict(payload.get(PRIVATE, {}).get("hashes", {}))


def stored_lengths(payload: dict[str, Any]) -> dict[str, int]:
    return dict(payload.get(PRIVATE, {}).get("lengths", {}))


def public_document(payload: dict[str, Any]) -> dict[str, Any]:
    """The Document fields of a payload, every one present (nulls included)."""
    doc = {key: payload.get(key) for key in DOCUMENT_FIELDS}
    doc["timestamp"] = (
        datetime.fromisoformat(payload["timestamp"]).isoformat().replace("+00:00", "Z")
    )
    doc["custom_vectors"] = None
    return doc


def holds_write(
    payload: dict[str, Any], document: Document, store_content: bool, hashes: dict[str, str]
) -> bool:
    """Whether a stored payload is this very write: its version, its slot texts and vectors
    (`hashes`) and every field it keeps. A sync write the worker applied and then took again
    (its request redelivered after a crash) is this, not a stale write."""
    if stored_micros(payload) != to_micros(document.timestamp) or stored_hashes(payload) != hashes:
        return False
    written = to_payload(document, store_content, hashes, {})
    return all(payload.get(key) == written[key] for key in DOCUMENT_FIELDS)
