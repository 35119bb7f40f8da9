"""Indexed metadata values against their index type (API.md §4), value by value."""

from __future__ import annotations

from typing import Any

import pytest

from app.services.metadata import check_metadata
from core.errors import InvalidInput
from core.schemas.collection import CollectionConfig
from core.schemas.document import Document

TYPES = ("string", "integer", "float", "boolean", "datetime")
CONFIG = CollectionConfig(metadata_indexes=[{"key": t, "type": t} for t in TYPES])
WHEN = {"value": "2024-05-01T10:00:00Z", "type": "datetime"}

# (index type, value, accepted)
CASES: list[tuple[str, Any, bool]] = [
    ("string", "red", True),
    ("string", 3, False),
    ("string", True, False),
    ("string", ["red"], False),
    ("integer", 3, True),
    ("integer", 3.5, False),
    ("integer", True, False),
    ("integer", "3", False),
    ("float", 3.5, True),
    ("float", 3, True),
    ("float", False, False),
    ("float", "3.5", False),
    ("boolean", True, True),
    ("boolean", 1, False),
    ("boolean", "true", False),
    ("datetime", WHEN, True),
    ("datetime", "not a date", False),
    ("datetime", 1714557600, False),
    ("datetime", {"nested": 1}, False),
]


def _doc(metadata: dict[str, Any]) -> Document:
    return Document(id="d", timestamp="2026-01-01T00:00:00Z", metadata=metadata)


@pytest.mark.parametrize(("kind", "value", "accepted"), CASES)
def test_indexed_value_must_match_its_index_type(kind: str, value: Any, accepted: bool) -> None:
    document = _doc({kind: value})
    if accepted:
        check_metadata(CONFIG, document)
        return
    with pytest.raises(InvalidInput, match=f"Metadata key '{kind}' value does not match"):
        check_metadata(CONFIG, document)


def test_null_absent_and_unindexed_keys_are_not_checked() -> None:
    check_metadata(CONFIG, _doc({"integer": None, "other": "anything", "x": [1, {"a": 2}]}))
    check_metadata(CONFIG, _doc({}))
    check_metadata(CollectionConfig(), _doc({"integer": "not checked without an index"}))
