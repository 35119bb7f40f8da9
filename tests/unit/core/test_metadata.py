"""One rule for whether a metadata value fits an index type (writes and filters share it), and
the write check built on it: indexed metadata values against their index type (API.md §4)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, get_args

import pytest

from core.enums import MetadataType
from core.errors import InvalidInput
from core.metadata import check_metadata, typed_value
from core.schemas.collection import CollectionConfig, MetadataIndexType
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


def test_metadata_types_are_the_wire_strings() -> None:
    assert tuple(MetadataType) == TYPES
    assert CONFIG.model_dump(mode="json")["metadata_indexes"][0] == {
        "key": "string",
        "type": "string",
    }


@pytest.mark.parametrize(
    ("kind", "value", "typed"),
    [
        ("integer", 7, 7),
        ("integer", 2**63 - 1, 2**63 - 1),
        ("integer", -(2**63), -(2**63)),
        ("integer", 2**63, None),
        ("integer", True, None),
        ("integer", 7.0, None),
        ("float", 7, 7.0),
        ("float", float("inf"), None),
        ("float", float("nan"), None),
        ("float", False, None),
        ("boolean", True, True),
        ("boolean", 1, None),
        ("string", "x", "x"),
        ("string", 5, None),
        ("datetime", "2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("datetime", "2024-05-01T10:00:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("datetime", "yesterday", None),
        ("datetime", 1714557600, None),
    ],
)
def test_a_value_fits_its_type_or_not(kind: str, value: Any, typed: Any) -> None:
    assert typed_value(kind, value) == typed
    if typed is not None:
        assert type(typed_value(kind, value)) is type(typed)


@pytest.mark.parametrize(("kind", "value", "accepted"), CASES)
def test_indexed_value_must_match_its_index_type(kind: str, value: Any, accepted: bool) -> None:
    document = _doc({kind: value})
    if accepted:
        _check(CONFIG, document)
        return
    with pytest.raises(InvalidInput, match=f"Metadata key '{kind}' value does not match"):
        _check(CONFIG, document)


def test_a_mismatch_names_key_type_expectation_and_value() -> None:
    with pytest.raises(InvalidInput) as caught:
        _check(CONFIG, _doc({"integer": "3"}))
    assert caught.value.status == 400
    assert caught.value.message == (
        "Metadata key 'integer' value does not match the index type 'integer': expected an "
        f"integer between {-(2**63)} and {2**63 - 1}, got '3'"
    )


def test_a_bare_datetime_string_asks_for_the_wrapper() -> None:
    with pytest.raises(InvalidInput, match=r'given as \{"value": "...", "type": "datetime"\}'):
        _check(CONFIG, _doc({"datetime": "2024-05-01T10:00:00Z"}))


def test_null_absent_and_unindexed_keys_are_not_checked() -> None:
    _check(CONFIG, _doc({"integer": None, "other": "anything", "x": [1, {"a": 2}]}))
    _check(CONFIG, _doc({}))
    _check(CollectionConfig(), _doc({"integer": "not checked without an index"}))


def _check(config: CollectionConfig, document: Document) -> None:
    check_metadata(config.metadata_indexes or [], document.metadata or {}, document.datetime_keys)


def test_the_wire_literal_names_exactly_the_metadata_types() -> None:
    assert set(get_args(MetadataIndexType)) == {str(kind) for kind in MetadataType}
