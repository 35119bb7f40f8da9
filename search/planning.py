"""How a search is planned: its arms (one per vector and field), the retrievers fusion ranks,
and how many candidates each arm fetches."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from core.enums import IndexField, VectorType
from core.errors import InvalidInput
from core.lexical import is_lookup
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery, VectorSearchOption
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
    # The query's codes (tokens mixing letters and digits) keep their trigrams in this arm even
    # where the main-field rule leaves its words alone: a part number sits in a title as often
    # as in a body, and its partial forms match only by trigrams.
    code_trigrams: bool = False


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

    Custom vectors take part only with a query vector from `custom_vectors`. Under Braid's
    default fusion a query that asks only for a code (core.lexical.is_lookup) leaves the model's
    vectors out while a lexical one is searched: a model reads a part number as noise, and its
    scores, spread over the pool, outvoted the one document holding the code (recall@1 of
    titles 0.125 → 1.0 on bench/relevance/codes.py; docs/relevance.md).
    """
    arms = _arms(config, query)
    if query.fusion_mode is None and is_lookup(query.query):
        lexical = [arm for arm in arms if not arm.slot.kind.uses_model]
        if any(arm.slot.kind.is_lexical for arm in lexical):
            return lexical
    return arms


def _arms(config: CollectionConfig, query: SearchQuery) -> list[Arm]:
    customs = _custom_vectors(config, query)
    available = {(s.vector.name, s.field.value): s for s in slots(config)}
    if not query.vector_options:
        names = list(dict.fromkeys(s.vector.name for s in available.values()))
        return [
            _main_field_arm(
                slot, 1.0, slot.vector.index_fields, customs, names.index(slot.vector.name)
            )
            for slot in available.values()
            if not slot.kind.is_custom or slot.vector.name in customs
        ]
    chosen = [(o, _option_slots(config, o, available, customs)) for o in query.vector_options]
    if query.fusion_mode is None:
        return _vector_retrievers(chosen, customs)
    return [
        Arm(slot, float(o.weight), float(o.wmtr_trigram_weight), customs.get(slot.vector.name), n)
        for n, (o, found) in enumerate(chosen)
        for slot in found
        if o.weight != 0
    ]


def _option_slots(
    config: CollectionConfig,
    option: VectorSearchOption,
    available: dict[tuple[str, str], Slot],
    customs: dict[str, Any],
) -> list[Slot]:
    """The slots one `vector_options` entry searches: its field, or every field of its vector
    (none for a noop vector); a 400 says what is wrong with it."""
    vector = config.vector(option.vector_name)
    if vector is None:
        raise InvalidInput(f"vector_options: unknown vector_name '{option.vector_name}'")
    if vector.type is VectorType.NOOP:
        return []
    if vector.type.is_custom and vector.name not in customs:
        raise InvalidInput(
            f"vector_options: custom vector '{vector.name}' needs a query vector in custom_vectors"
        )
    found = []
    for index_field in [option.field] if option.field else vector.index_fields:
        slot = available.get((vector.name, index_field.value))
        if slot is None:
            raise InvalidInput(
                f"vector_options: vector '{vector.name}' does not index field '{index_field.value}'"
            )
        found.append(slot)
    return found


def _vector_retrievers(
    chosen: list[tuple[VectorSearchOption, list[Slot]]], customs: dict[str, Any]
) -> list[Arm]:
    """Braid's default fusion: every option naming one vector is an arm of that vector's one
    retriever, however the request lists them (`{"vector_name": "kw", "field": "name"}` and
    `{..., "field": "content"}` as Amgix clients send them, or the vector with no field), so its
    fields are summed by their weights, as when the vector is asked whole, instead of fused by
    rank as rivals (docs/relevance.md). Trigrams follow the main-field rule unless an option
    sets its own `wmtr_trigram_weight`."""
    names = list(dict.fromkeys(slot.vector.name for _, found in chosen for slot in found))
    fields: dict[str, list[IndexField]] = {name: [] for name in names}  # searched, by vector
    for option, found in chosen:
        for slot in found:
            if option.weight != 0:
                fields[slot.vector.name].append(slot.field)
    arms = []
    for option, found in chosen:
        for slot in found:
            if option.weight == 0:
                continue
            number = names.index(slot.vector.name)
            if "wmtr_trigram_weight" in option.model_fields_set:
                trigrams = float(option.wmtr_trigram_weight)
                custom = customs.get(slot.vector.name)
                arms.append(Arm(slot, float(option.weight), trigrams, custom, number))
            else:
                weight = float(option.weight)
                arms.append(
                    _main_field_arm(slot, weight, fields[slot.vector.name], customs, number)
                )
    return arms


def _main_field_arm(
    slot: Slot, weight: float, fields: list[IndexField], customs: dict[str, Any], number: int
) -> Arm:
    """An arm of a vector's retriever over `fields`: the query's trigrams go to the main field
    only, its codes' trigrams to every field."""
    main = slot.field is _main_field(fields)
    custom = customs.get(slot.vector.name)
    return Arm(slot, weight, 1.0 if main else 0.0, custom, number, code_trigrams=not main)


def _main_field(fields: list[IndexField]) -> IndexField | None:
    """The field of a vector's default retriever that carries the query's trigrams."""
    return max(fields, key=FIELD_WEIGHTS.__getitem__, default=None)


def plan_retrievers(arms: list[Arm], lookup: bool = False) -> list[Retriever]:
    """One retriever per number the arms carry (a vector's, or an option's under an explicit
    fusion_mode), summing its arms' raw scores with FIELD_WEIGHTS times each arm's share of the
    retriever's weight, the largest of its arms' (equal weights: FIELD_WEIGHTS alone).

    `lookup`: the query asks for a code (core.lexical.is_lookup). A match of an identifier is as
    good in a title as in a body, so its fields weigh alike there."""
    groups: dict[int, list[int]] = {}
    for index, arm in enumerate(arms):
        groups.setdefault(arm.retriever, []).append(index)
    retrievers = []
    for members in groups.values():
        weight = max(arms[i].weight for i in members)
        shares = (_field_weight(arms[i], lookup) * arms[i].weight / weight for i in members)
        retrievers.append(Retriever(tuple(members), weight, tuple(shares)))
    return retrievers


def _field_weight(arm: Arm, lookup: bool) -> float:
    return 1.0 if lookup and arm.slot.kind.is_lexical else FIELD_WEIGHTS[arm.slot.field]


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
