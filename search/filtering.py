"""The PointFilter of a request: its metadata filter checked against the collection, plus tags."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.errors import InvalidInput
from core.filters import AllOf, Expr, parse_filter, typed_filter
from core.schemas.collection import CollectionConfig
from store.protocol import PointFilter


def metadata_indexes(config: CollectionConfig) -> dict[str, str]:
    return {index.key: index.type for index in config.metadata_indexes or []}


def metadata_expr(config: CollectionConfig, raw: Mapping[str, Any] | str | None) -> Expr | None:
    """The typed expression of a wire `metadata_filter` (400 if it names keys not indexed)."""
    if raw is None:
        return None
    try:
        expr = parse_filter(raw)
    except ValueError as exc:  # the schemas refuse bad syntax first; this is a second guard
        raise InvalidInput(f"metadata_filter: {exc}") from exc
    return typed_filter(expr, metadata_indexes(config))


def point_filter(
    config: CollectionConfig,
    raw_metadata: Mapping[str, Any] | str | None = None,
    tags: list[str] | None = None,
    tags_match_all: bool = False,
    extra: Expr | None = None,
) -> PointFilter | None:
    """What a search arm or a fetch may return; None when nothing restricts it."""
    parts = [e for e in (metadata_expr(config, raw_metadata), extra) if e is not None]
    expr: Expr | None = parts[0] if len(parts) == 1 else AllOf(tuple(parts)) if parts else None
    clean_tags = tuple(t.strip() for t in tags or [] if t.strip())
    if expr is None and not clean_tags:
        return None
    return PointFilter(metadata=expr, tags=clean_tags, tags_match_all=tags_match_all)


def require_indexed(config: CollectionConfig, key: str, what: str) -> str:
    """The index type of `key`; 400 when the key is not among the collection's metadata_indexes."""
    kind = metadata_indexes(config).get(key)
    if kind is None:
        raise InvalidInput(
            f"{what}: metadata key '{key}' is not in the collection's metadata_indexes"
        )
    return kind
