"""Indexed metadata values must have their index's type (API.md §4: else 400)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from core.errors import InvalidInput
from core.schemas.collection import CollectionConfig
from core.schemas.document import Document


def _is_datetime(value: Any) -> bool:
    """The Document schema unwraps `{value, type: "datetime"}` to an ISO 8601 string."""
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


# bool is an int in Python: it matches only "boolean".
MATCHES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "datetime": _is_datetime,
}
EXPECTED = {
    "string": "a string",
    "integer": "an integer",
    "float": "a number",
    "boolean": "true or false",
    "datetime": 'an ISO 8601 datetime given as {"value": "...", "type": "datetime"}',
}


def _matches(kind: str, key: str, value: Any, document: Document) -> bool:
    # A datetime must come in the typed wrapper: a bare string is only a string.
    return MATCHES[kind](value) and (kind != "datetime" or key in document.datetime_keys)


def check_metadata(config: CollectionConfig, document: Document) -> None:
    """Every indexed key the document sets (not null) must match its index type."""
    metadata = document.metadata or {}
    for index in config.metadata_indexes or []:
        value = metadata.get(index.key)
        if value is None or _matches(index.type, index.key, value, document):
            continue
        shown = repr(value) if len(repr(value)) <= 100 else repr(value)[:100] + "..."
        raise InvalidInput(
            f"Metadata key '{index.key}' value does not match the index type "
            f"'{index.type}': expected {EXPECTED[index.type]}, got {shown}"
        )
