"""What a PointFilter means in Qdrant terms, written once for both backends.

`build_filter` walks the store-neutral filter and asks a backend's `FilterParts` for each piece
(match, range, is-empty, has-id, and the must/should/must_not combinators), so the two stores
differ only in the classes they construct. `index_fields` lists the payload indexes a collection
gets. Payload layout: see store/payload.py (metadata under `metadata.<key>`, tags under `tags`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, TypeVar

from core.enums import MetadataType
from core.filters import AllOf, AnyOf, Condition, Expr, FilterOp, Negation
from store.protocol import CollectionSchema, PointFilter, StoreError

C = TypeVar("C")
TAGS = "tags"
METADATA = "metadata"
# metadata index type -> payload index kind (the backends map kinds to their own enums); read
# with the plain strings a stored CollectionSchema holds
INDEX_KINDS: dict[str, str] = {
    MetadataType.STRING: "keyword",
    MetadataType.INTEGER: "integer",
    MetadataType.FLOAT: "float",
    MetadataType.BOOLEAN: "bool",
    MetadataType.DATETIME: "datetime",
}
_BOUNDS = {FilterOp.LT: "lt", FilterOp.GT: "gt", FilterOp.LTE: "lte", FilterOp.GTE: "gte"}


class FilterParts(Protocol[C]):
    """The pieces of a backend's filter; a combined filter is itself a condition."""

    def combine(self, must: list[C], should: list[C], must_not: list[C]) -> C: ...

    def match(self, key: str, value: str | int | bool) -> C: ...

    def match_any(self, key: str, values: list[str] | list[int]) -> C: ...

    def number_range(self, key: str, bounds: dict[str, float]) -> C: ...

    def datetime_range(self, key: str, bounds: dict[str, str]) -> C: ...

    def is_empty(self, key: str) -> C:
        """The key is missing, null or an empty list."""

    def has_documents(self, doc_ids: list[str]) -> C: ...


def metadata_path(key: str) -> str:
    return f"{METADATA}.{key}"


def index_fields(schema: CollectionSchema) -> list[tuple[str, str]]:
    """(payload path, index kind) of every payload index: the metadata indexes and the tags."""
    fields = [(metadata_path(k), INDEX_KINDS[t]) for k, t in schema.metadata_indexes.items()]
    return [*fields, (TAGS, "keyword")]


def build_filter(point_filter: PointFilter | None, parts: FilterParts[C]) -> C | None:
    """The backend filter for `point_filter`; None when it restricts nothing."""
    if point_filter is None:
        return None
    must: list[C] = []
    if point_filter.metadata is not None:
        must.append(_expr(point_filter.metadata, parts))
    if point_filter.tags:
        if point_filter.tags_match_all:
            must.extend(parts.match(TAGS, tag) for tag in point_filter.tags)
        else:
            must.append(parts.match_any(TAGS, list(point_filter.tags)))
    if point_filter.doc_ids is not None:
        must.append(parts.has_documents(list(point_filter.doc_ids)))
    return parts.combine(must, [], []) if must else None


def _expr(expr: Expr, parts: FilterParts[C]) -> C:
    match expr:
        case Condition():
            return _condition(expr, parts)
        case AllOf(items):
            return parts.combine([_expr(item, parts) for item in items], [], [])
        case AnyOf(items):
            if not items:
                return _nothing(parts)
            return parts.combine([], [_expr(item, parts) for item in items], [])
        case Negation(item):
            return parts.combine([], [], [_expr(item, parts)])
    raise StoreError(f"not a filter expression: {expr!r}")


def _condition(condition: Condition, parts: FilterParts[C]) -> C:
    key, op, value = metadata_path(condition.key), condition.op, condition.value
    if op is FilterOp.EQ:
        return _equals(key, value, parts)
    if op is FilterOp.NEQ:  # documents without the key are "not equal" too
        return parts.combine([], [], [_equals(key, value, parts)])
    if op is FilterOp.IS_NULL:
        empty = parts.is_empty(key)
        return empty if value else parts.combine([], [], [empty])
    if op is FilterOp.IN:
        return _one_of(key, value, parts)
    return _range(key, {_BOUNDS[op]: value}, parts)


def _equals(key: str, value: Any, parts: FilterParts[C]) -> C:
    # Floats and datetimes are equal when they are within [value, value]: an exact match on a
    # float payload is not something Qdrant's match offers, and datetimes compare as instants.
    if isinstance(value, float | datetime):
        return _range(key, {"gte": value, "lte": value}, parts)
    if isinstance(value, str | int):  # bool is an int
        return parts.match(key, value)
    raise StoreError(f"cannot compare {key} with {value!r}")


def _range(key: str, bounds: dict[str, Any], parts: FilterParts[C]) -> C:
    if all(isinstance(v, datetime) for v in bounds.values()):
        return parts.datetime_range(key, {k: v.isoformat() for k, v in bounds.items()})
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in bounds.values()):
        return parts.number_range(key, {k: float(v) for k, v in bounds.items()})
    raise StoreError(f"cannot order {key} by {bounds!r}")


def _one_of(key: str, values: tuple[Any, ...], parts: FilterParts[C]) -> C:
    strings = [v for v in values if isinstance(v, str)]
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    others = [v for v in values if not isinstance(v, str | int) or isinstance(v, bool)]
    options = [parts.match_any(key, group) for group in (strings, ints) if group]
    options.extend(_equals(key, v, parts) for v in others)
    if not options:
        return _nothing(parts)
    return options[0] if len(options) == 1 else parts.combine([], options, [])


def _nothing(parts: FilterParts[C]) -> C:
    """A condition no point meets: an empty choice matches nothing."""
    return parts.has_documents([])
