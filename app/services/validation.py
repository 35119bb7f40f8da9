"""Checks of a document against its collection's config (the 400s of API.md §4)."""

from __future__ import annotations

from core.errors import InvalidInput
from core.schemas.collection import CollectionConfig
from core.schemas.document import Document


def check_document(config: CollectionConfig, document: Document) -> None:
    for custom in document.custom_vectors or []:
        vector = config.vector(custom.vector_name)
        if vector is None:
            raise InvalidInput(
                f"Document '{document.id}': custom vector "
                f"'{custom.vector_name}' is not in the collection"
            )
