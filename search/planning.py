"""How a search is planned: its arms (one per vector and field), the retrievers fusion ranks,
and how many candidates each arm fetches."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from core.enums import IndexField, VectorType
from core.errors import InvalidInput
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery
from search.fusion import Retriever
from store.slots import Slot, slots

FACET_MIN_WINDOW = 50
MAX_WINDOW = 10_000  # candidates per arm, however many group refetches ask for

# A vector searched without a field (every vector when vector_options is empty) is one retriever
# summing its fields' raw scores with these weights: a title match counts, but less than the
# body's. When several arms are fused, each fetches at least DEFAULT_WINDOW candidates, so the
# fusion sees every retriever's scores well past its top few. Measured on SciFact in
# docs/relevance.md.
FIELD_WEIGHTS = {IndexField.NAME: 0.4, IndexField.DESCRIPTION: 0.7, IndexField.CONTENT: 1.0}
# In that retriever only the vector's main field (the heaviest of FIELD_WEIGHTS it indexes) is
# asked for the query's WMTR trigrams. A short field keeps every trigram of its text, so in the
# others they were most of the engine's work (0.40 of 1.35 ms a load-study search) for nothing
# measurable: SciFact's keyword nDCG@10 0.699 → 0.698, and 0.660 → 0.660 with a typo in every
# query, where the main field's trigrams still match it (docs/relevance.md).
DEFAULT_WINDOW = 100
# The default fusion scores the whole pool in every retriever: 50 candidates per arm rank as well
# there as 100 did (docs/relevance.md) and halve the pool.
POOL_WINDOW = 50


@dataclass(frozen=True)
class Arm:
    slot: Slot
    weight: float
    trigram_weight: float
    custom: Any = None  # the query's own vector, for custom slots
    retriever: int = 0  # arms with the same number are fused as one retriever


def arm_limit(limit: int) -> int:
    return max(5, math.floor(1.5 * limit))


def candidate_window(query: SearchQuery, arms: int, pooled: bool = False) -> int:
    """Candidates per arm: more when facets count the pool (API.md §5, FacetOptions), and at
    least DEFAULT_WINDOW when several arms are fused (POOL_WINDOW when fused `pooled`)."""
    window = arm_limit(query.limit)
    if arms > 1:
        window = max(window, POOL_WINDOW if pooled else DEFAULT_WINDOW)
    if query.facets:
        multiplier = query.facet_options.prefetch_multiplier if query.facet_options else 2
        window = max(window, FACET_MIN_WINDOW, query.limit * multiplier)
    return window


def plan_arms(config: CollectionConfig, query: SearchQuery) -> list[Arm]:
    """One arm per (vector, field) with a non-zero weight (API.md §5).

    Custom vectors take part only with a query vector from `custom_vectors`.
    """
    customs = _custom_vectors(config, query)
    available = {(s.vector.name, s.field.value): s for s in slots(config)}
    if not query.vector_options:
        names = list(dict.fromkeys(s.vector.name for s in available.values()))
        return [
            Arm(
                slot,
                1.0,
                1.0 if slot.field is _main_field(slot.vector.index_fields) else 0.0,
                customs.get(slot.vector.name),
                names.index(slot.vector.name),
            )
            for slot in available.values()
            if not slot.kind.is_custom or slot.vector.name in customs
        ]
    arms = []
    for number, option in enumerate(query.vector_options):
        vector = config.vector(option.vector_name)
        if vector is None:
            raise InvalidInput(f"vector_options: unknown vector_name '{option.vector_name}'")
        if vector.type is VectorType.NOOP:
            continue
        if vector.type.is_custom and vector.name not in customs:
            raise InvalidInput(
                f"vector_options: custom vector '{vector.name}' needs a query vector in "
                "custom_vectors"
            )
        fields = [option.field] if option.field else vector.index_fields
        for index_field in fields:
            slot = available.get((vector.name, index_field.value))
            if slot is None:
                raise InvalidInput(
                    f"vector_options: vector '{vector.name}' does not index field "
                    f"'{index_field.value}'"
                )
            if option.weight != 0:
                arms.append(
                    Arm(
                        slot,
                        float(option.weight),
                        float(option.wmtr_trigram_weight),
                        customs.get(vector.name),
                        number,
                    )
                )
    return arms


def _main_field(fields: list[IndexField]) -> IndexField | None:
    """The field of a vector's default retriever that carries the query's trigrams."""
    return max(fields, key=FIELD_WEIGHTS.__getitem__, default=None)


def plan_retrievers(arms: list[Arm]) -> list[Retriever]:
    """One retriever per vector searched without a field, summing its fields with FIELD_WEIGHTS;
    an option naming a field is an arm alone. Each keeps its weight."""
    groups: dict[int, list[int]] = {}
    for index, arm in enumerate(arms):
        groups.setdefault(arm.retriever, []).append(index)
    return [
        Retriever(
            tuple(indices),
            arms[indices[0]].weight,
            tuple(FIELD_WEIGHTS[arms[i].slot.field] for i in indices),
        )
        for indices in groups.values()
    ]


def store_ranks(query: SearchQuery, retrievers: list[Retriever]) -> bool:
    """Whether the store can rank the search alone (`Store.query_summed`): one retriever, and
    nothing that needs each arm's hits or the whole pool (groups, facets, raw scores)."""
    return (
        len(retrievers) == 1 and not query.group_field and not query.facets and not query.raw_scores
    )


def _custom_vectors(config: CollectionConfig, query: SearchQuery) -> dict[str, Any]:
    customs: dict[str, Any] = {}
    for custom in query.custom_vectors or []:
        vector = config.vector(custom.vector_name)
        if vector is None or not vector.type.is_custom:
            raise InvalidInput(
                f"custom_vectors: '{custom.vector_name}' is not a dense_custom or sparse_custom "
                "vector of the collection"
            )
        customs[custom.vector_name] = custom.vector
    return customs
