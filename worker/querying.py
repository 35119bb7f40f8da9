"""The query pipeline: query vectors, one batched store query with an arm per slot, fusion."""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass

from core.catalog import Catalog
from core.errors import InvalidInput, NotFound
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery, SearchResponse, SearchResult, VectorScore
from worker.fusion import fuse
from worker.payload import public_document
from worker.slots import Slot, slots
from worker.store.protocol import ArmQuery, Store
from worker.vectorizer import Vectorizer


@dataclass(frozen=True)
class Arm:
    slot: Slot
    weight: float
    trigram_weight: float


def arm_limit(limit: int) -> int:
    return max(5, math.floor(1.5 * limit))


def plan_arms(config: CollectionConfig, query: SearchQuery) -> list[Arm]:
    """One arm per (vector, field) with a non-zero weight (API.md §5)."""
    available = {(s.vector.name, s.field.value): s for s in slots(config)}
    if not query.vector_options:
        return [Arm(slot, 1.0, 1.0) for slot in available.values()]
    arms = []
    for option in query.vector_options:
        vector = config.vector(option.vector_name)
        if vector is None:
            raise InvalidInput(f"vector_options: unknown vector_name '{option.vector_name}'")
        fields = [option.field] if option.field else vector.index_fields
        for index_field in fields:
            slot = available.get((vector.name, index_field.value))
            if slot is None:
                raise InvalidInput(
                    f"vector_options: vector '{vector.name}' does not index field "
                    f"'{index_field.value}'"
                )
            if option.weight != 0:
                arms.append(Arm(slot, float(option.weight), float(option.wmtr_trigram_weight)))
    return arms


class Searcher:
    def __init__(self, store: Store, vectorizer: Vectorizer, catalog: Catalog) -> None:
        self._store = store
        self._vectorizer = vectorizer
        self._catalog = catalog

    async def search(self, collection: str, query: SearchQuery) -> SearchResponse:
        started = time.perf_counter()
        config = await self._catalog.get(collection)
        if config is None:
            raise NotFound("Configuration not found")
        arms = plan_arms(config, query)
        results = await self._ranked(collection, arms, query) if arms else []
        elapsed_ms = (time.perf_counter() - started) * 1000
        return SearchResponse(results=results, query_time_ms=round(elapsed_ms, 3))

    async def _ranked(
        self, collection: str, arms: list[Arm], query: SearchQuery
    ) -> list[SearchResult]:
        vectors = await asyncio.gather(
            *(self._vectorizer.query(a.slot, query.query, a.trigram_weight) for a in arms)
        )
        per_arm = arm_limit(query.limit)
        hits = await self._store.query_arms(
            collection,
            [ArmQuery(a.slot.name, v, per_arm) for a, v in zip(arms, vectors, strict=True)],
        )
        ranked = fuse(hits, [a.weight for a in arms], query.fusion_mode)
        if query.score_threshold is not None:
            ranked = [f for f in ranked if f.score >= query.score_threshold]
        ranked = ranked[: query.limit]
        points = await self._store.retrieve(collection, [f.doc_id for f in ranked])
        results = []
        for fused in ranked:
            point = points.get(fused.doc_id)
            if point is None:  # deleted between the arms and the fetch
                continue
            document = public_document(point.payload)
            for excluded in query.exclude or []:
                document[excluded] = None
            scores = (
                [
                    VectorScore(
                        field=arms[i].slot.field.value,
                        vector=arms[i].slot.vector.name,
                        score=raw,
                        rank=rank,
                    )
                    for i, (raw, rank) in sorted(fused.arm_scores.items())
                ]
                if query.raw_scores
                else []
            )
            results.append(SearchResult(**document, score=fused.score, vector_scores=scores))
        return results
