"""Facet counts over a candidate pool and per-value caps for grouped results (API.md §5)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any


def facet_key(value: Any) -> str:
    """How a metadata value is written as a facet key: JSON-like for booleans."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _values(metadata: dict[str, Any] | None, key: str) -> list[Any]:
    value = (metadata or {}).get(key)
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [v for v in items if v is not None and not isinstance(v, dict | list)]


def facet_counts(
    metadatas: Iterable[dict[str, Any] | None], keys: list[str], max_values: int
) -> dict[str, dict[str, int]]:
    """Per indexed key, how many pool documents carry each value; the `max_values` commonest."""
    pool = list(metadatas)
    counts: dict[str, dict[str, int]] = {}
    for key in keys:
        counter: Counter[str] = Counter()
        for metadata in pool:
            counter.update({facet_key(v) for v in _values(metadata, key)})
        top = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:max_values]
        counts[key] = dict(top)
    return counts


def group_value(metadata: dict[str, Any] | None, key: str) -> str | None:
    """The group of a document: its value of `key` (lists as a whole); None when it has none."""
    value = (metadata or {}).get(key)
    if value is None:
        return None
    return facet_key(value) if not isinstance(value, list) else repr(sorted(map(facet_key, value)))


def cap_groups(
    ranked: list[str], groups: dict[str, str | None], group_max: int, limit: int
) -> list[str]:
    """The best `limit` ids keeping at most `group_max` per group. Documents without a value
    form one more group, capped like the others (as Amgix does)."""
    taken: Counter[str | None] = Counter()
    kept = []
    for doc_id in ranked:
        group = groups.get(doc_id)
        if taken[group] >= group_max:
            continue
        taken[group] += 1
        kept.append(doc_id)
        if len(kept) == limit:
            break
    return kept
