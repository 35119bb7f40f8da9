"""Metadata values and index types: the one rule for whether a value fits a type, used by the
api (writes), the filters (queries) and the document schema (the typed wrapper)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

# The range every store index holds for integers (and JSON bodies may carry at all).
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
METADATA_TYPES = ("string", "integer", "float", "boolean", "datetime")
# The `{"value": v, "type": t}` wrapper also takes objects (Amgix does); no index has that type.
WRAPPER_TYPES = (*METADATA_TYPES, "object")
# The datetime forms the store's datetime index reads as written (RFC 3339 and its near kin).
RFC_3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?([Zz]|[+-]\d{2}:\d{2})?$"
)
EXPECTED = {
    "string": "a string",
    "integer": f"an integer between {INT64_MIN} and {INT64_MAX}",
    "float": "a finite number",
    "boolean": "true or false",
    "datetime": "an ISO 8601 datetime",
}


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
    if kind == "string":
        return value if isinstance(value, str) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "integer":
        fits = number and isinstance(value, int) and INT64_MIN <= value <= INT64_MAX
        return value if fits else None
    if kind == "float":
        return float(value) if number and math.isfinite(value) else None
    if kind == "datetime":
        return parse_datetime(value)
    raise ValueError(f"unknown metadata type {kind!r}")
