"""Rules that JSON Schema cannot state, told to schemathesis's generator (SCHEMATHESIS_HOOKS).

/openapi.json carries every rule a schema can (types, bounds, patterns, unique items). What is
left are the rules written as validators in the wire models: they look across fields or inside
list items (a dense_model vector needs a model; vector names, metadata index keys and trimmed
tags are unique) or read a grammar (`metadata_filter`, and `join` in the worker), integer
literals past int64 (which JSON Schema reads as numbers like any other), and nesting past
MAX_JSON_DEPTH (a filter's own depth is a validator rule). A body that
breaks only such rules is invalid (422, as API.md says) although the schema allows it, so a
*positive* case that does is left out instead of reported. A body that fails a rule the schema
does state is kept: that mismatch is exactly what the run must catch. Negative cases are all kept.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from pydantic import BaseModel, ValidationError
from schemathesis.generation import GenerationMode

from app.http.strict_json import nested_past, numbers_in
from core.errors import BraidError
from core.filters import TOO_DEEP
from core.metadata import INT64_MAX, INT64_MIN
from core.schemas.collection import CollectionConfig
from core.schemas.common import MAX_JSON_DEPTH
from core.schemas.document import BulkUpload, Document, DocumentFetchRequest
from core.schemas.search import SearchQuery
from search.joining import join_specs

BODIES: dict[str, type[BaseModel]] = {
    "create_collection": CollectionConfig,
    "upsert_document": Document,
    "upsert_document_sync": Document,
    "upsert_documents_bulk": BulkUpload,
    "fetch_documents": DocumentFetchRequest,
    "search": SearchQuery,
}
# pydantic's type for a ValueError raised by our validators, and a filter's depth refusal
VALIDATOR_ERRORS = frozenset({"value_error", TOO_DEEP})


def breaks_only_validator_rules(model: type[BaseModel], body: Any) -> bool:
    try:
        model.model_validate(body)
    except ValidationError as exc:
        return all(error["type"] in VALIDATOR_ERRORS for error in exc.errors())
    return False


def has_an_integer_beyond_int64(body: Any) -> bool:
    """JSON Schema cannot tell 1e20 from the integer literal 100000000000000000000; Braid can
    (app/http/strict_json.py refuses integers no store index holds exactly, and keeps 1e20)."""
    return any(isinstance(n, int) and not INT64_MIN <= n <= INT64_MAX for n in numbers_in(body))


def join_does_not_read(body: Any) -> bool:
    join = body.get("join") if isinstance(body, dict) else None
    try:
        join_specs(join)
    except (BraidError, TypeError):
        return True
    return False


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    meta = getattr(case, "meta", None)
    if meta is not None and meta.generation.mode == GenerationMode.NEGATIVE:
        return True
    model = BODIES.get(case.operation.definition.raw.get("operationId", ""))
    if model is None:
        return True
    return not (
        breaks_only_validator_rules(model, case.body)
        or join_does_not_read(case.body)
        or has_an_integer_beyond_int64(case.body)
        or nested_past(case.body, MAX_JSON_DEPTH)
    )
