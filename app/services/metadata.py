"""Indexed metadata values must have their index's type (API.md §4: else 400)."""

from __future__ import annotations

from core.errors import InvalidInput
from core.metadata import EXPECTED, typed_value
from core.schemas.collection import CollectionConfig
from core.schemas.document import Document

WRAPPED_DATETIME = 'an ISO 8601 datetime given as {"value": "...", "type": "datetime"}'


def check_metadata(config: CollectionConfig, document: Document) -> None:
    """Every indexed key the document sets (not null) must match its index type."""
    metadata = document.metadata or {}
    for index in config.metadata_indexes or []:
        value = metadata.get(index.key)
        if value is None:
            continue
        # A datetime must come in the typed wrapper: a bare string is only a string.
        wrapped = index.type != "datetime" or index.key in document.datetime_keys
        if wrapped and typed_value(index.type, value) is not None:
            continue
        expected = WRAPPED_DATETIME if index.type == "datetime" else EXPECTED[index.type]
        shown = repr(value) if len(repr(value)) <= 100 else repr(value)[:100] + "..."
        raise InvalidInput(
            f"Metadata key '{index.key}' value does not match the index type "
            f"'{index.type}': expected {expected}, got {shown}"
        )
