"""Checks of a document against its collection's config (the 400s of API.md §4)."""

from __future__ import annotations

from core.metadata import check_metadata
from core.schemas.collection import CollectionConfig
from core.schemas.document import Document
from core.vector_input import document_vectors


def check_document(config: CollectionConfig, document: Document) -> None:
    """Custom and precomputed vectors must fit their collection vectors (InvalidInput, 400)."""
    document_vectors(config, document)
    check_metadata(config.metadata_indexes or [], document.metadata or {}, document.datetime_keys)
