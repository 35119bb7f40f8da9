"""Metadata values and index types: the one rule for whether a value fits a type, used by the
writes (`check_metadata`), the filters (queries) and the document schema (the typed wrapper)."""

from __future__ import annotations

import math
import re
from collections.abc import Container, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from core.enums import MetadataType
from core.errors import InvalidInput

# The range every store index holds for integers (and JSON bodies may carry at all).
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# The `{"value": v, "type": t}` wrapper also takes objects (Amgix does); no index has that type.
OBJECT = "object"
WRAPPER_TYPES = (*MetadataType, OBJECT)
# The datetime forms the store's datetime index reads as written (RFC 3339 and its near kin).
RFC_3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?([Zz]|[+-]\d{2}:\d{2})?$"
)
# Read with plain strings too (a stored schema's index types): they equal the members.
EXPECTED: dict[str, str] = {
    MetadataType.STRING: "a string",
    MetadataType.INTEGER: f"an integer between {INT64_MIN} and {INT64_MAX}",
    MetadataType.FLOAT: "a finite number",
    MetadataType.BOOLEAN: "true or false",
    MetadataType.DATETIME: "an ISO 8601 datetime",
}
WRAPPED_DATETIME = 'an ISO 8601 datetime given as {"value": "...", "type": "datetime"}'


def parse_datetime(value: Any) -> datetime | None:
    """An aware datetime (naive means UTC), or None if `value` is no ISO 8601 datetime."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def typed_value(kind: str, value: Any) -> Any:
    """`value` as an index of type `kind` holds and compares it, or None when it does not fit.

    bool is an int in Python: it fits only "boolean".
    """
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == MetadataType.STRING:
        return value if isinstance(value, str) else None
    if kind == MetadataType.BOOLEAN:
        return value if isinstance(value, bool) else None
    if kind == MetadataType.INTEGER:
        fits = number and isinstance(value, int) and INT64_MIN <= value <= INT64_MAX
        return value if fits else None
    if kind == MetadataType.FLOAT:
        return float(value) if number and math.isfinite(value) else None
    if kind == MetadataType.DATETIME:
        return parse_datetime(value)
    raise ValueError(f"unknown metadata type {kind!r}")


class IndexedKey(Protocol):
    """A metadata index as the check reads it (the schemas' MetadataIndex; this module sits below
    the schemas, which import it)."""

    @property
    def key(self) -> str: ...

    @property
    def type(self) -> str: ...


def check_metadata(
    indexes: Iterable[IndexedKey], metadata: Mapping[str, Any], datetime_keys: Container[str]
) -> None:
    """Every indexed key the document sets (not null) must match its index type (API.md §4:
    else InvalidInput, a 400). `datetime_keys`: the keys the document gave in the typed wrapper."""
    for index in indexes:
        value = metadata.get(index.key)
        if value is None:
            continue
        # A datetime must come in the typed wrapper: a bare string is only a string.
        is_datetime = MetadataType(index.type) is MetadataType.DATETIME
        wrapped = not is_datetime or index.key in datetime_keys
        if wrapped and typed_value(index.type, value) is not None:
            continue
        expected = WRAPPED_DATETIME if is_datetime else EXPECTED[index.type]
        shown = repr(value) if len(repr(value)) <= 100 else repr(value)[:100] + "..."
        raise InvalidInput(
            f"Metadata key '{index.key}' value does not match the index type "
            f"'{index.type}': expected {expected}, got {shown}"
        )
