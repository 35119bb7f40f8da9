"""Field rules shared by several wire models: names, strict types, forbidden extras."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    WithJsonSchema,
)

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,100}$")
NAME_RULE = "1..100 characters: letters, numbers, underscores, and hyphens"  # Amgix's words

# The work one request may ask for (API.md §7, plus Braid's own caps listed in the README).
MAX_VECTORS = 32  # vectors per collection
MAX_ARMS = 3 * MAX_VECTORS  # vector_options, custom_vectors or precomputed vectors per request
MAX_VECTOR_ENTRIES = 10_000  # values of one vector: sparse top_k ≤ 10,000, dense dims ≤ 8,192
MAX_SPARSE_INDEX = 2**32 - 1
MAX_MULTIVECTOR_ROWS = 256
MAX_METADATA_INDEXES = 64
MAX_GROUP = 100  # group_max: documents per group
MAX_GROUP_FETCHES = 10  # group_max_fetches: each refetch doubles the window
# Nesting: the parsers and FastAPI's error encoder recurse, so depth is refused before they meet
# it. Objects and arrays count one level each, so an object-form and/or takes two of a body's:
# a body's limit leaves room for a filter at its own limit inside the body's objects.
MAX_FILTER_DEPTH = 32  # and/or/not levels (parentheses or NOT in the string form) of a filter
MAX_JSON_DEPTH = 2 * MAX_FILTER_DEPTH + 8  # 72 objects and arrays open at once, in any body


def check_name(value: str) -> str:
    """Collection, vector, metadata key and document id rule (API.md §1)."""
    if not value.strip():
        raise ValueError("must not be empty")
    if not NAME_RE.match(value):
        raise ValueError(f"must be {NAME_RULE}")
    return value


def require_utc(value: datetime) -> datetime:
    """Timestamps must carry a timezone, and it must be UTC (API.md §4)."""
    offset = value.utcoffset()
    if offset is None:
        raise ValueError("timestamp must include a timezone (UTC, e.g. 2024-01-01T00:00:00Z)")
    if offset != timedelta(0):
        raise ValueError("timestamp must be in UTC (offset +00:00 or Z)")
    return value


def _iso_8601_only(value: object) -> object:
    """pydantic reads a number as Unix time; the wire takes ISO 8601 text only (API.md §4)."""
    numeric = isinstance(value, str) and value.strip().lstrip("+-").replace(".", "", 1).isdigit()
    if numeric or isinstance(value, int | float):
        raise ValueError("must be an ISO 8601 UTC time, e.g. 2026-01-01T00:00:00Z")
    return value


def _integral(value: object) -> object:
    """JSON has one number type: 6.0 is the integer 6 (JSON Schema agrees), 6.5 is not."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _strip(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


# What the validators enforce, told to /openapi.json too (the validators give better messages).
NAME_SCHEMA = {"pattern": NAME_RE.pattern, "minLength": 1, "maxLength": 100}
DOCUMENT_ID_SCHEMA = {"pattern": r"^\s*[a-zA-Z0-9_-]{1,100}\s*$"}  # trimmed first

# RFC 3339 in UTC. Days stop at 28 so that every string the pattern allows is a real date;
# the server takes the 29th to the 31st too (and naive or other offsets → 422, API.md §4).
UTC_SCHEMA = {
    "type": "string",
    "description": "UTC time, ISO 8601 (e.g. 2026-01-01T00:00:00Z)",
    "pattern": (
        r"^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
        r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|\+00:00)$"
    ),
}
UtcTimestamp = Annotated[
    datetime,
    BeforeValidator(_iso_8601_only),
    AfterValidator(require_utc),
    WithJsonSchema(UTC_SCHEMA),
]


def _real(value: object) -> object:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


# Put last in an Annotated number, after its bounds, so /openapi.json keeps them.
INTEGRAL = BeforeValidator(_integral)
REAL = BeforeValidator(_real)
WholeNumber = Annotated[StrictInt, INTEGRAL]
Name = Annotated[StrictStr, AfterValidator(check_name), Field(json_schema_extra=NAME_SCHEMA)]
DocumentId = Annotated[
    StrictStr,
    BeforeValidator(_strip),
    AfterValidator(check_name),
    Field(json_schema_extra=DOCUMENT_ID_SCHEMA),
]


class WireModel(BaseModel):
    """A request/response body: unknown keys are refused (API.md §1)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class OkResponse(BaseModel):
    ok: bool = True


Number = StrictFloat | StrictInt
VectorValues = Annotated[list[Number], Field(max_length=MAX_VECTOR_ENTRIES)]
MultiVectorValues = Annotated[list[VectorValues], Field(max_length=MAX_MULTIVECTOR_ROWS)]
